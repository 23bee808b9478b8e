"""capkit: image-caption evaluation metrics, reproduced, tested and taught."""
from __future__ import annotations

# The release version, in one place: pyproject.toml reads it from here at build time
# (setuptools' ``dynamic`` version), and every score signature carries it.
__version__ = "0.2.0"
