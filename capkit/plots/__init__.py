"""Plot helpers: each takes ax=None, returns the axes, never calls show() or changes global style.

Figures that go to files are saved with :func:`save_figure`: drawn into memory, then written
atomically (``capkit.cache_files.write_output``), so a full disk never leaves half a PNG.
"""
from __future__ import annotations

import os
from pathlib import Path


def save_figure(fig, path: str | os.PathLike, **options) -> Path:
    """``fig.savefig(path, **options)``, but rendered into memory first and written with
    ``write_output``: ``path`` holds the whole figure or nothing (and the error names it). The
    format is ``options["format"]``, else ``path``'s suffix."""
    import io

    from capkit.cache_files import write_output
    path = Path(path)
    options.setdefault("format", path.suffix.lstrip(".").lower() or None)
    buffer = io.BytesIO()
    fig.savefig(buffer, **options)
    return write_output(path, buffer.getvalue())
