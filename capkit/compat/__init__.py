"""Drop-in replacements for other evaluation toolkits, backed by capkit's own metrics.

``capkit.compat.pycocoevalcap`` mirrors pycocoevalcap 1.2 module for module: change
``from pycocoevalcap...`` to ``from capkit.compat.pycocoevalcap...`` and the same script gives
the same numbers without Java (``tests/test_compat_pycocoevalcap.py``).
"""
