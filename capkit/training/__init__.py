"""Training code for capkit's learned metrics. Inference code (``capkit.models``, ``capkit.metrics``)
never imports this package.

* ``corpus``: which captions a metric may learn from, with every benchmark's images held out;
* ``i2ce``: the two-stage auto-encoder training of I2CE (``capkit train i2ce``).
"""
