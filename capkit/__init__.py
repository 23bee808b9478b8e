"""capkit: image-caption evaluation metrics, reproduced, tested and taught."""
from __future__ import annotations


def __getattr__(name: str):
    # ``capkit.__version__`` is the installed distribution's version (pyproject.toml's), read
    # from its metadata when first asked for: importing capkit reads no file for it.
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version
        try:
            return version("capkit")
        except PackageNotFoundError:        # run from a source tree that was never installed
            return "0+unknown"
    raise AttributeError(f"module 'capkit' has no attribute {name!r}")
