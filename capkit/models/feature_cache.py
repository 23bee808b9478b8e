"""An on-disk cache of encoder outputs, one entry per text or image, shared by every caller.

Encoding is the slow part of every learned metric; a second run on the same texts or images with
the same model should not pay for it again, nor should a second benchmark that shares texts with
the first (Flickr8k-Expert and -CF share 4,993). So an entry is one item (a text, an image),
keyed by the item's sha256 inside a *namespace*: the model's signature and revision (when
known), what was computed (``kind``: token states of layer 5, CLIP text features...) and the
``torch`` and ``transformers`` versions, so that an upgrade never reuses features the new code
would compute differently.

Layout: ``<cache dir>/features/<namespace hash>/<pack>.npz``, where the cache dir is
``$CAPKIT_CACHE_DIR`` or ``~/.cache/capkit``. A *pack* holds the items one call computed, each
field concatenated along its first axis with an offsets array (token states of different lengths
fit), plus the item keys and the namespace's full key text (so a hash collision is detected, not
trusted). Its name is the sha256 of its keys: content-addressed, written once, never edited.
Entries of the earlier layout (``features/<2 hex>/<sha256>.npz``, one per whole input list, keyed
without library versions) are never read; ``FeatureCache.clear()`` removes them.

Why packs: one file per text costs a file (and an fsync) per text, ~10k of them for one
benchmark; shards per key prefix, rewritten in place, would rewrite all of them to add a few
texts. A pack is one write per call, whatever its size, and a lookup reads each pack's key list
(small) and then only the rows it needs (the big arrays are memory-mapped), except that the
first read of a pack in a process checks each member's CRC-32 once, reading it whole (memory maps
skip zipfile's check, and a pack damaged in place must not be read back as right). A namespace
holding more than ``MAX_PACKS`` packs has its smallest merged, so lookups stay a few file opens.
Measured on 10k texts of MiniLM-sized token states (215 MB): 1.1 s to write, 0.17 s to read all,
~0.1 s to read 5 of them the first time in a process (the CRC pass) and 2-15 ms after that; one
file per text took ~7 s to write and ~1.3 s to read.

Concurrency and damage (``capkit.cache_files``): packs are written atomically (temporary file,
fsync, rename) under the namespace's lock ``<namespace hash>.lock``; readers take no lock. Two
processes that compute the same texts at once each write a pack; the copies are harmless (the
first found is used) and merging drops them. A pack that cannot be read, or whose memory-mapped
arrays fail their CRC-32 (checked once per pack in a process: +0.1 s on a 215 MB pack), is deleted
under the lock and its items computed again, with one ``CacheWarning`` naming it; a cache folder
that cannot be written means the features are computed in memory, with one warning.
Explained in notebooks/03_embedding_metrics.ipynb, section 3 "BERTScore".
"""
from __future__ import annotations

import functools
import hashlib
import os
import struct
import zipfile
import zlib
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np

from capkit.cache_files import (CACHE_ENV, cache_dir, file_lock, open_npz, unreadable,
                                unreadable_message, unwritable_message, warn, write_atomic)
from capkit.cache_trust import make_private_folder, trust_problem, untrusted_message

__all__ = ["CACHE_ENV", "FeatureCache", "cache_dir", "checksum", "model_revision",
           "resolve_cache", "text_key", "runtime_versions"]

MAX_PACKS = 32              # more than this in a namespace: merge the MERGE smallest into one
MERGE = 16
_KEYS, _KEY_TEXT, _OFFSETS = "__keys__", "__key_text__", ".offsets"
_LOCAL_HEADER = struct.Struct("<4s5H3L2H")    # a zip member's local header (30 bytes)


def checksum(items: Iterable[str]) -> str:
    """sha256 over strings, length-prefixed so that ("ab", "c") and ("a", "bc") differ."""
    h = hashlib.sha256()
    for item in items:
        data = item.encode("utf-8")
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


def text_key(text: str) -> str:
    """A text's item key: the sha256 of its UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@functools.lru_cache(maxsize=1)
def runtime_versions() -> str:
    """The installed torch and transformers versions, part of every key: both change features
    (kernels, tokenizers, model code) without changing a model's name."""
    from importlib.metadata import PackageNotFoundError, version
    parts = []
    for package in ("torch", "transformers"):
        try:
            parts.append(f"{package}={version(package)}")
        except PackageNotFoundError:
            parts.append(f"{package}=none")
    return "|".join(parts)


def model_revision(encoder) -> str | None:
    """The Hugging Face commit of an encoder's weights, when its config records one."""
    config = getattr(getattr(encoder, "model", None), "config", None)
    revision = getattr(config, "_commit_hash", None)
    return str(revision) if revision else None


class FeatureCache:
    """A folder of feature packs; ``get_or_compute_items`` (per text or image) and
    ``get_or_compute`` (one entry for a whole input) are the whole API callers need."""

    def __init__(self, root: str | os.PathLike | None = None):
        self.root = cache_dir(root) / "features"

    def __repr__(self) -> str:
        return f"FeatureCache({str(self.root)!r})"

    @staticmethod
    def key_text(signature: str, kind: str, revision: str | None = None) -> str:
        return f"{signature}\n{kind}\nrevision={revision or 'unknown'}\n{runtime_versions()}"

    def folder(self, signature: str, kind: str, revision: str | None = None) -> Path:
        """The namespace folder of one (model, revision, kind, library versions)."""
        key = self.key_text(signature, kind, revision)
        return self.root / hashlib.sha256(key.encode("utf-8")).hexdigest()[:24]

    def get_or_compute_items(self, signature: str, kind: str, keys: Sequence[str],
                             compute: Callable[[list[int]], list[dict[str, np.ndarray]]], *,
                             revision: str | None = None) -> list[dict[str, np.ndarray]]:
        """One dict of arrays per key, aligned with ``keys``: read from the cache, or made by
        ``compute(rows)`` for the rows of ``keys`` not found (then stored for next time).

        Arrays need at least one dimension; a field's trailing dimensions must agree across
        items (token states: ``(T, D)`` with T free).
        """
        first: dict[str, int] = {}                 # key -> its first row
        for row, k in enumerate(keys):
            first.setdefault(k, row)
        if not first:
            return []
        key_text = self.key_text(signature, kind, revision)
        folder = self.folder(signature, kind, revision)
        problem = trust_problem(folder, self.root.parent)
        if problem is not None:         # not the user's own: neither read nor written
            rows = list(first.values())
            items = compute(rows)
            warn(untrusted_message(problem, "the features"))
            made = {keys[r]: item for r, item in zip(rows, items)}
            return [made[k] for k in keys]
        found, damaged = _lookup(folder, key_text, set(first))
        missing = [first[k] for k in first if k not in found]
        made: dict[str, dict[str, np.ndarray]] = {}
        if missing:
            items = compute(missing)
            if len(items) != len(missing):
                raise ValueError(f"compute returned {len(items)} items for {len(missing)} rows")
            made = {keys[r]: item for r, item in zip(missing, items)}
        if made or damaged:
            _store(folder, key_text, made, damaged)
        return [found[k] if k in found else made[k] for k in keys]

    def get_or_compute(self, signature: str, kind: str, input_checksum: str,
                       compute: Callable[[], dict[str, np.ndarray]], *,
                       revision: str | None = None) -> dict[str, np.ndarray]:
        """The cached arrays of a whole input (keyed by its checksum), or ``compute()``'s."""
        def one(rows):                  # a leading axis of 1 lets any shape be stored
            return [{k: np.asarray(v)[np.newaxis] for k, v in compute().items()}]
        item = self.get_or_compute_items(signature, kind, [input_checksum], one,
                                         revision=revision)[0]
        return {k: v[0] for k, v in item.items()}

    def clear(self) -> int:
        """Delete every entry (and stray temporary files); returns how many packs went.
        Lock files stay: deleting one that another process waits on would break its lock."""
        if not self.root.is_dir():
            return 0
        packs = [p for p in self.root.rglob("*.npz") if p.is_file()]
        for p in packs + [p for p in self.root.rglob(".*.tmp-*") if p.is_file()]:
            p.unlink(missing_ok=True)
        return len(packs)


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


# ------------------------------------------------------------------------- packs on disk

def _packs(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.npz")) if folder.is_dir() else []


def _member(path: Path, npz, name: str) -> np.ndarray:
    """Member ``name`` of an open npz, memory-mapped when stored uncompressed (``np.savez``), so
    that reading a few rows of a large pack reads only those rows."""
    info = npz.zip.getinfo(name + ".npy")
    if info.compress_type != zipfile.ZIP_STORED:
        return npz[name]                         # zipfile checks the CRC-32 as it reads
    with open(path, "rb") as f:
        f.seek(info.header_offset)
        header = _LOCAL_HEADER.unpack(f.read(_LOCAL_HEADER.size))
        if header[0] != b"PK\x03\x04":
            raise ValueError(f"bad zip member header for {name}")
        start = info.header_offset + _LOCAL_HEADER.size + header[-2] + header[-1]
        _check_crc(f, start, info)
        f.seek(start)
        version = np.lib.format.read_magic(f)
        read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                       else np.lib.format.read_array_header_2_0)
        shape, fortran, dtype = read_header(f)
        offset = f.tell()
        if dtype.hasobject:                      # never unpickle: capkit writes no objects
            raise ValueError(f"{name} holds Python objects")
        if int(np.prod(shape)) == 0:
            return np.zeros(shape, dtype)
        # mapped from the file just checked, not reopened by name (a rename could swap it)
        return np.memmap(f, dtype, "r", offset, shape, "F" if fortran else "C")


_CHECKED: set[tuple] = set()    # (device, inode, size, mtime, member) whose CRC-32 matched


def _check_crc(f, start: int, info: zipfile.ZipInfo) -> None:
    """Raise ``BadZipFile`` unless the member at ``start`` matches its CRC-32 in the zip
    directory. zipfile checks it on every read, a memory map never does, so a pack damaged in
    place (same size, other bytes) would be trusted. Once per pack file and member in a process:
    packs are written once and never edited, and a rewrite changes the file's identity."""
    st = os.fstat(f.fileno())
    seen = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, info.filename)
    if seen in _CHECKED:
        return
    f.seek(start)
    crc, left = 0, info.file_size
    while left:
        chunk = f.read(min(left, 1 << 22))
        if not chunk:
            raise EOFError(f"{info.filename} ends {left} bytes early")
        crc, left = zlib.crc32(chunk, crc), left - len(chunk)
    if crc != info.CRC:
        raise zipfile.BadZipFile(f"bad CRC-32 for {info.filename}: its bytes were changed")
    _CHECKED.add(seen)


def _read_pack(path: Path, key_text: str, wanted: set[str],
               found: dict[str, dict[str, np.ndarray]]) -> None:
    """Copy the items of ``wanted`` that ``path`` holds (and ``found`` lacks) into ``found``."""
    with open_npz(path) as npz:
        if str(npz[_KEY_TEXT]) != key_text:      # another namespace with the same hash
            return
        hits = [(pos, k) for pos, k in enumerate(npz[_KEYS].tolist())
                if k in wanted and k not in found]
        if not hits:
            return
        fields = [n[:-len(_OFFSETS)] for n in npz.files if n.endswith(_OFFSETS)]
        columns = {f: (npz[f + _OFFSETS], _member(path, npz, f)) for f in fields}
    for pos, k in hits:
        found[k] = {f: np.array(data[offsets[pos]:offsets[pos + 1]])
                    for f, (offsets, data) in columns.items()}


def _identity(path: Path) -> tuple[int, int, int]:
    st = path.stat()
    return st.st_ino, st.st_size, st.st_mtime_ns


def _lookup(folder: Path, key_text: str, wanted: set[str]):
    """(items found by key, [(pack, its identity, error)] of packs that could not be read or
    are not the user's own: ``trust_problem``)."""
    found: dict[str, dict[str, np.ndarray]] = {}
    damaged: list[tuple[Path, tuple, BaseException]] = []
    seen: set[Path] = set()
    for _ in range(3):   # again if a merge in another process removed a pack under our feet
        vanished = False
        for path in _packs(folder):
            if len(found) == len(wanted):
                return found, damaged
            if path in seen:
                continue
            seen.add(path)
            try:
                problem = trust_problem(path, folder)
                if problem is not None:
                    raise PermissionError(problem)
                _read_pack(path, key_text, wanted, found)
            except FileNotFoundError:
                vanished = True
            except unreadable() as err:
                try:
                    damaged.append((path, _identity(path), err))
                except FileNotFoundError:
                    vanished = True
        if not vanished:
            break
    return found, damaged


def _pack_arrays(key_text: str, items: dict[str, dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    keys = list(items)
    arrays = {_KEY_TEXT: np.array(key_text), _KEYS: np.array(keys, dtype=str)}
    for field in items[keys[0]]:
        parts = [np.asarray(items[k][field]) for k in keys]
        if any(p.ndim == 0 for p in parts):
            raise ValueError(f"cached arrays need at least one dimension ({field!r} has none)")
        arrays[field] = np.concatenate(parts)
        arrays[field + _OFFSETS] = np.cumsum([0] + [len(p) for p in parts], dtype=np.int64)
    return arrays


def _write_pack(folder: Path, key_text: str, items: dict[str, dict[str, np.ndarray]]) -> Path:
    name = checksum([key_text, *sorted(items)])[:32]
    arrays = _pack_arrays(key_text, items)
    return write_atomic(folder / f"{name}.npz", lambda f: np.savez(f, **arrays))


def _merge_small_packs(folder: Path, key_text: str) -> None:
    """Merge the ``MERGE`` smallest packs into one (called under the namespace lock)."""
    packs = _packs(folder)
    if len(packs) <= MAX_PACKS:
        return
    small = sorted(packs, key=lambda p: p.stat().st_size)[:MERGE]
    items: dict[str, dict[str, np.ndarray]] = {}
    merged_from = []
    for path in small:
        try:
            with open_npz(path) as npz:
                keys = set(npz[_KEYS].tolist())
            _read_pack(path, key_text, keys, items)
        except unreadable():              # left for the next lookup, which reports it
            continue
        merged_from.append(path)
    merged = _write_pack(folder, key_text, items) if items else None
    for path in merged_from:
        if path != merged:
            path.unlink(missing_ok=True)


def _store(folder: Path, key_text: str, made: dict[str, dict[str, np.ndarray]],
           damaged: list[tuple[Path, tuple, BaseException]]) -> None:
    """Delete damaged packs and add one pack of ``made``; warnings as the module says."""
    deleted: list[tuple[Path, BaseException]] = []
    try:
        make_private_folder(folder, folder.parent.parent)
        with file_lock(folder):
            for path, identity, err in damaged:
                try:              # the same damaged file, not one another process put there?
                    if _identity(path) != identity:
                        continue
                except FileNotFoundError:
                    continue
                path.unlink()
                deleted.append((path, err))
            if made:
                _write_pack(folder, key_text, made)
                _merge_small_packs(folder, key_text)
    except OSError as err:                  # read-only folder, full disk, a stuck lock holder
        gone = {p for p, _ in deleted}
        warn(unwritable_message(folder, err, "the features", [p for p, _, _ in damaged
                                                              if p not in gone]))
        return
    for path, err in deleted:
        warn(unreadable_message(path, err, "deleted it; its features are computed again"))
