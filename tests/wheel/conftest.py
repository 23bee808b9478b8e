"""The wheel test builds and installs capkit in a fresh environment (needs PyPI or pip's cache).

Run by ``make test-wheel`` only (``make test`` leaves this folder out)."""
