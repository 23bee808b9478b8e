"""An on-disk cache of encoder outputs, keyed by (model signature, what, input checksum).

Encoding is the slow part of every learned metric; a second run on the same texts or images with
the same model should not pay for it again. One entry is one ``.npz`` file of named arrays under
``<cache dir>/features/<2 hex>/<sha256>.npz``, where the cache dir is ``$CAPKIT_CACHE_DIR`` or
``~/.cache/capkit``.

Safe against interrupted writes: an entry is written to a temporary file in the same folder and
moved into place with ``os.replace`` (atomic on POSIX and Windows), so a reader sees either the
whole entry or none. A file that cannot be read (disk trouble, a manual edit) counts as a miss and
is rewritten. Each entry stores its own key text, so a hash collision is detected, not trusted.
"""
from __future__ import annotations

import hashlib
import os
import tempfile
import zipfile
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np

CACHE_ENV = "CAPKIT_CACHE_DIR"
DEFAULT_CACHE_DIR = "~/.cache/capkit"
_KEY_FIELD = "__capkit_key__"


def cache_dir(path: str | os.PathLike | None = None) -> Path:
    """capkit's cache folder: ``path``, else ``$CAPKIT_CACHE_DIR``, else ``~/.cache/capkit``."""
    return Path(path or os.environ.get(CACHE_ENV) or DEFAULT_CACHE_DIR).expanduser()


def checksum(items: Iterable[str]) -> str:
    """sha256 over strings, length-prefixed so that ("ab", "c") and ("a", "bc") differ."""
    h = hashlib.sha256()
    for item in items:
        data = item.encode("utf-8")
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


class FeatureCache:
    """A folder of ``.npz`` entries; ``get_or_compute`` is the whole API most callers need."""

    def __init__(self, root: str | os.PathLike | None = None):
        self.root = cache_dir(root) / "features"

    def __repr__(self) -> str:
        return f"FeatureCache({str(self.root)!r})"

    @staticmethod
    def key_text(signature: str, kind: str, input_checksum: str) -> str:
        return f"{signature}\n{kind}\n{input_checksum}"

    def path(self, signature: str, kind: str, input_checksum: str) -> Path:
        key = hashlib.sha256(self.key_text(signature, kind, input_checksum).encode()).hexdigest()
        return self.root / key[:2] / f"{key}.npz"

    def load(self, signature: str, kind: str, input_checksum: str) -> dict[str, np.ndarray] | None:
        path = self.path(signature, kind, input_checksum)
        if not path.is_file():
            return None
        try:
            with np.load(path, allow_pickle=False) as f:
                arrays = {k: f[k] for k in f.files}
        except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile):
            path.unlink(missing_ok=True)        # unreadable: recompute and rewrite
            return None
        if str(arrays.pop(_KEY_FIELD, "")) != self.key_text(signature, kind, input_checksum):
            return None
        return arrays

    def save(self, signature: str, kind: str, input_checksum: str,
             arrays: dict[str, np.ndarray]) -> Path:
        if _KEY_FIELD in arrays:
            raise ValueError(f"{_KEY_FIELD!r} is reserved; rename that array")
        path = self.path(signature, kind, input_checksum)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".npz")
        try:
            with os.fdopen(fd, "wb") as f:
                np.savez(f, **arrays,
                         **{_KEY_FIELD: np.array(self.key_text(signature, kind, input_checksum))})
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return path

    def get_or_compute(self, signature: str, kind: str, input_checksum: str,
                       compute: Callable[[], dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
        """The cached arrays, or ``compute()``'s, stored for next time."""
        found = self.load(signature, kind, input_checksum)
        if found is not None:
            return found
        arrays = compute()
        self.save(signature, kind, input_checksum, arrays)
        return arrays

    def clear(self) -> int:
        """Delete every entry (and stray temporary files); returns how many files went."""
        if not self.root.is_dir():
            return 0
        files = [p for p in self.root.rglob("*.npz") if p.is_file()]
        for p in files:
            p.unlink()
        return len(files)


def resolve_cache(cache) -> FeatureCache | None:
    """A metric's ``cache=`` argument: False/None (off), True (capkit's folder), a folder, or a
    ``FeatureCache``."""
    if cache is None or cache is False:
        return None
    if cache is True:
        return FeatureCache()
    if isinstance(cache, FeatureCache):
        return cache
    if isinstance(cache, (str, os.PathLike)):
        return FeatureCache(cache)
    raise ValueError(f"cache must be True, False, a folder or a FeatureCache, got {cache!r}")
