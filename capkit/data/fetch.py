"""Fetch capkit's datasets into its data directory, verified and atomically.

    capkit data fetch [DATASET ...|--all] [--mirror DIR] [--data-dir DIR] [--force]

(``python -m data_scripts.fetch`` in a clone is the same command.) ``manifest.json``, beside
this module, lists every file of a dataset with its size, sha256 and, when the file is a byte
copy of a public one, its URL pinned to a commit. Without ``--mirror`` files are downloaded from
those URLs. Files the kit maintainers built or reformatted (``"url": null``) are only available
from a mirror such as ``--mirror ../shared/data``, laid out as ``DIR/<dataset>/<path>``.

A dataset is assembled in a hidden folder next to its target and every file is checked against
the manifest; only then is the folder renamed into place and the marker ``.complete-<dataset>``
written, last. A dataset whose marker matches the manifest and whose every file has the
manifest's size and sha256 is skipped, so re-running is cheap (hashing all ten datasets takes
tens of milliseconds); a damaged file (edited, truncated) is named and fetched again, the
verified ones being copied from the old folder; ``--force`` fetches everything again. A failed
or interrupted fetch leaves no marker, and loaders treat a folder without its marker as absent.
The data directory is ``--data-dir``, else $CAPKIT_DATA_DIR, else capkit's default data folder
(``capkit.data.paths.data_dir``; ``capkit data list`` prints it).

Fetches of the same dataset may run at once (several notebooks, a test run): the check, the
transfer and the install happen under the lock ``.<dataset>.lock`` beside the folder, so one
process copies while the others wait and then find the dataset present. Work folders left by a
killed fetch (``.<dataset>.partial-*``, ``.<dataset>.old-*``) are removed only by the lock
holder, who knows they are nobody's. Replacing a complete copy (``--force``) swaps the two
folders in one step where the system allows it (Linux ``renameat2``), so a reader always finds a
complete dataset; elsewhere there is a gap of two renames.
"""
from __future__ import annotations

import hashlib
import json
import shutil
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from capkit.cache_files import (file_lock, replace_folder, staging_folder, work_folders,
                                write_atomic)
from capkit.data.paths import DATASETS, data_dir, marker_path

MANIFEST = Path(__file__).with_name("manifest.json")
CHUNK = 1 << 20
TIMEOUT_S = 60
_RESTORE = ("restore it: `git checkout capkit/data/manifest.json` in a clone, `pip install "
            "--force-reinstall --no-deps capkit` otherwise.")


@dataclass(frozen=True)
class FetchResult:
    dataset: str
    status: str  # "fetched", "present" or "failed"
    detail: str

    @property
    def ok(self) -> bool:
        return self.status != "failed"


def load_manifest(path: Path = MANIFEST) -> dict:
    """The manifest's ``datasets`` table: name -> {description, terms, citation, files: [...]}."""
    try:
        datasets = json.loads(path.read_text(encoding="utf-8"))["datasets"]
    except (OSError, ValueError, KeyError) as e:
        raise ValueError(f"Cannot read the manifest {path} ({e}); {_RESTORE}") from None
    missing = [d for d in DATASETS if d not in datasets]
    if missing:
        raise ValueError(f"The manifest {path} lacks {missing}; {_RESTORE}")
    return datasets


def manifest_hash(entry: dict) -> str:
    """sha256 of a dataset's manifest entry, stored in its marker: a changed entry means refetch."""
    return hashlib.sha256(json.dumps(entry, sort_keys=True).encode("utf-8")).hexdigest()


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def damaged_files(dataset: str, entry: dict, root: Path) -> dict[str, str]:
    """The files of ``root/<dataset>`` that differ from the manifest: path -> what is wrong
    (missing, its size, its sha256). Every present file is hashed: about 10 ms for the largest
    dataset (coco_karpathy_test, 8.4 MB) and 35 ms for all ten, so ``fetch`` can afford it on
    every run (loaders, through ``capkit.data.paths.require``, check only the marker)."""
    folder, damaged = root / dataset, {}
    for f in entry["files"]:
        path = folder / f["path"]
        try:
            size = path.stat().st_size
            if size != f["size"]:
                damaged[f["path"]] = f"{size:,} bytes, the manifest says {f['size']:,}"
            elif _sha256(path) != f["sha256"]:
                damaged[f["path"]] = "its sha256 differs from the manifest's"
        except OSError as e:        # missing, a folder, unreadable
            damaged[f["path"]] = "missing" if isinstance(e, FileNotFoundError) else str(e)
    return damaged


def _has_marker(dataset: str, entry: dict, root: Path) -> bool:
    """The marker is there and was written for this manifest entry."""
    try:
        marker = json.loads(marker_path(dataset, root).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(marker, dict) and marker.get("manifest_sha256") == manifest_hash(entry)


def is_complete(dataset: str, entry: dict, root: Path) -> bool:
    """Marker present, written for this manifest entry, and every file there with its size and
    sha256 (``damaged_files``)."""
    return _has_marker(dataset, entry, root) and not damaged_files(dataset, entry, root)


def _open_source(dataset: str, spec: dict, mirror: Path | None):
    """A binary stream of one file, from the mirror or from its pinned URL."""
    if mirror is not None:
        src = mirror / dataset / spec["path"]
        if not src.is_file():
            raise FileNotFoundError(f"{dataset}/{spec['path']} is missing from the mirror {mirror} "
                                    f"(looked for {src}).")
        return open(src, "rb")
    request = urllib.request.Request(spec["url"], headers={"User-Agent": "capkit-data-fetch"})
    try:
        return urllib.request.urlopen(request, timeout=TIMEOUT_S)
    except OSError as e:  # URLError and HTTPError are OSErrors
        raise OSError(f"Could not download {dataset}/{spec['path']} from {spec['url']} ({e}); "
                      "check the network or use --mirror DIR.") from None


def _transfer(dataset: str, spec: dict, mirror: Path | None, dest: Path,
              local: Path | None = None) -> None:
    """Copy one file to ``dest``, hashing as it streams; a size or sha256 mismatch is an error.

    The file comes from ``local`` (a copy already in the data directory) if given, else from
    the mirror or its URL."""
    digest, size = hashlib.sha256(), 0
    dest.parent.mkdir(parents=True, exist_ok=True)
    source = open(local, "rb") if local is not None else _open_source(dataset, spec, mirror)
    with source as src, open(dest, "wb") as out:
        while chunk := src.read(CHUNK):
            digest.update(chunk)
            size += len(chunk)
            out.write(chunk)
    if size != spec["size"] or digest.hexdigest() != spec["sha256"]:
        origin = local if local is not None else \
            f"mirror {mirror}" if mirror is not None else spec["url"]
        raise ValueError(
            f"sha256 mismatch for {dataset}/{spec['path']} from {origin}: expected "
            f"{spec['sha256']} ({spec['size']:,} bytes), got {digest.hexdigest()} "
            f"({size:,} bytes). The copy differs from the pinned version: replace it with a "
            "clean copy.")


def _clean_leftovers(dataset: str, root: Path) -> None:
    """Remove hidden work folders of an earlier fetch of ``dataset`` that was killed.

    Call only while holding the dataset's lock: a fetch running beside this one owns its folders.
    """
    for p in work_folders(root / dataset):
        shutil.rmtree(p, ignore_errors=True)


def _install(dataset: str, staged: Path, root: Path, marker: dict) -> None:
    """Swap the verified folder into place, then write the marker (atomically, last).

    A marker present now is valid for this manifest (a stale one was removed before the
    transfer), and it stays valid for the new copy too, so it is left in place during the swap:
    readers of a complete dataset never see it missing.
    """
    replace_folder(staged, root / dataset)
    text = json.dumps(marker, indent=1) + "\n"
    write_atomic(marker_path(dataset, root), lambda f: f.write(text.encode("utf-8")))


def fetch_dataset(dataset: str, *, mirror=None, data_dir_path=None, force: bool = False,
                  manifest: dict | None = None) -> FetchResult:
    """Fetch one dataset; raises (ValueError, OSError) on failure.

    A failure leaves the data directory as it was (but for the lock file): no new folder, no
    marker (with ``force``, an earlier complete copy stays in place and stays complete).
    """
    manifest = load_manifest() if manifest is None else manifest
    if dataset not in manifest:
        raise ValueError(f"Unknown dataset {dataset!r}: choose one of {', '.join(manifest)}.")
    entry, root = manifest[dataset], data_dir(data_dir_path)
    # Checked before locking too, so a complete dataset in a read-only folder is just "present".
    if not force and is_complete(dataset, entry, root):
        return FetchResult(dataset, "present", f"already present in {root / dataset}")
    mirror = None if mirror is None else Path(mirror).expanduser()
    if mirror is not None and not (mirror / dataset).is_dir():
        raise FileNotFoundError(f"The mirror {mirror} has no folder {dataset}/.")
    try:
        lock = file_lock(root / f".{dataset}", timeout=-1)   # a download may take long: wait
        lock.acquire()
    except OSError as e:
        raise OSError(f"Cannot create {root} or the lock file .{dataset}.lock in it ({e}); make "
                      "the folder writable or choose another with --data-dir.") from None
    try:
        return _fetch_locked(dataset, entry, root, mirror, force)
    finally:
        lock.release()


def _fetch_locked(dataset: str, entry: dict, root: Path, mirror: Path | None,
                  force: bool) -> FetchResult:
    """``fetch_dataset``'s work, done by the one process that holds the dataset's lock."""
    # Again: the last holder may have fetched it. A marked copy with damaged files (edited,
    # truncated, bit rot) is fetched again, its verified files copied from it, not transferred.
    damaged = damaged_files(dataset, entry, root) if _has_marker(dataset, entry, root) else None
    if damaged == {} and not force:
        return FetchResult(dataset, "present", f"already present in {root / dataset}")
    kept = [] if force or damaged is None else \
        [f["path"] for f in entry["files"] if f["path"] not in damaged]
    # only the files to transfer need a source: a verified mirror-only file is kept, not fetched
    mirror_only = [f["path"] for f in entry["files"] if f["url"] is None and f["path"] not in kept]
    if mirror is None and mirror_only:
        raise ValueError(f"{', '.join(mirror_only)} {'is' if len(mirror_only) == 1 else 'are'} "
                         "only available from a mirror (built or reformatted by the kit "
                         "maintainers; no public origin): rerun with --mirror DIR, e.g. "
                         "--mirror ../shared/data.")
    if damaged != {}:  # a stale marker goes now; a valid one (--force) stays until the swap
        marker_path(dataset, root).unlink(missing_ok=True)
    _clean_leftovers(dataset, root)
    staged = staging_folder(root / dataset)
    try:
        for spec in entry["files"]:
            if spec["path"] in kept:
                try:
                    _transfer(dataset, spec, mirror, staged / spec["path"],
                              local=root / dataset / spec["path"])
                    continue
                except (OSError, ValueError):    # changed since it was verified: from the source
                    kept.remove(spec["path"])
            _transfer(dataset, spec, mirror, staged / spec["path"])
        source = f"mirror {mirror}" if mirror is not None else "public origin"
        _install(dataset, staged, root, {
            "dataset": dataset, "manifest_sha256": manifest_hash(entry), "source": source,
            "files": len(entry["files"]), "bytes": sum(f["size"] for f in entry["files"])})
    except BaseException:
        shutil.rmtree(staged, ignore_errors=True)
        raise
    fetched = [f for f in entry["files"] if f["path"] not in kept]
    n_files, n_bytes = len(fetched), sum(f["size"] for f in fetched)
    detail = (f"fetched {n_files} file{'s' * (n_files != 1)} ({n_bytes / 1e6:.1f} MB) from "
              f"{source} into {root / dataset}")
    if damaged:
        listed = "; ".join(f"{dataset}/{p}: {why}" for p, why in damaged.items())
        detail = f"damaged copy in {root / dataset} ({listed}): {detail}"
        if kept:
            detail += f", kept the {len(kept)} verified file{'s' * (len(kept) != 1)}"
    return FetchResult(dataset, "fetched", detail)


def fetch(datasets=None, *, mirror=None, data_dir=None, force: bool = False) -> list[FetchResult]:
    """Fetch ``datasets`` (default: all); one result per dataset, failures included, never raised.

    An unknown dataset name raises ValueError before anything is fetched.
    """
    manifest = load_manifest()
    names = list(manifest) if datasets is None else list(datasets)
    unknown = [d for d in names if d not in manifest]
    if unknown:
        raise ValueError(f"Unknown dataset {', '.join(map(repr, unknown))}: choose from "
                         f"{', '.join(manifest)} (or --all).")
    results = []
    for name in dict.fromkeys(names):  # keep order, drop repeats
        try:
            results.append(fetch_dataset(name, mirror=mirror, data_dir_path=data_dir, force=force,
                                         manifest=manifest))
        except Exception as e:  # report and go on with the next dataset
            detail = str(e) if isinstance(e, (ValueError, OSError)) else f"{type(e).__name__}: {e}"
            results.append(FetchResult(name, "failed", detail))
    return results
