"""Fetch capkit's datasets into its data directory, verified and atomically.

    python -m data_scripts.fetch [DATASET ...|--all] [--mirror DIR] [--data-dir DIR] [--force]

Run from the repository root. ``manifest.json`` lists every file of a dataset with its size,
sha256 and, when the file is a byte copy of a public one, its URL pinned to a commit. Without
``--mirror`` files are downloaded from those URLs. Files the kit maintainers built or reformatted
(``"url": null``) are only available from a mirror such as ``--mirror ../shared/data``, laid out
as ``DIR/<dataset>/<path>``.

A dataset is assembled in a hidden folder next to its target and every file is checked against
the manifest; only then is the folder renamed into place and the marker ``.complete-<dataset>``
written, last. A dataset whose marker matches the manifest is skipped, so re-running is cheap;
``--force`` fetches again. A failed or interrupted fetch leaves no marker, and loaders treat a
folder without its marker as absent. The data directory is ``--data-dir``, else
$CAPKIT_DATA_DIR, else ~/.cache/capkit/data (``capkit.data.paths.data_dir``).

Fetches of the same dataset may run at once (several notebooks, a test run): the check, the
transfer and the install happen under the lock ``.<dataset>.lock`` beside the folder, so one
process copies while the others wait and then find the dataset present. Work folders left by a
killed fetch (``.<dataset>.partial-*``, ``.<dataset>.old-*``) are removed only by the lock
holder, who knows they are nobody's. Replacing a complete copy (``--force``) swaps the two
folders in one step where the system allows it (Linux ``renameat2``), so a reader always finds a
complete dataset; elsewhere there is a gap of two renames.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
import textwrap
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from capkit.cache_files import (file_lock, replace_folder, staging_folder, work_folders,
                                write_atomic)
from capkit.data.paths import DATASETS, data_dir, marker_path

MANIFEST = Path(__file__).with_name("manifest.json")
CHUNK = 1 << 20
TIMEOUT_S = 60


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
        raise ValueError(f"Cannot read the manifest {path} ({e}); restore it from git.") from None
    missing = [d for d in DATASETS if d not in datasets]
    if missing:
        raise ValueError(f"The manifest {path} lacks {missing}; restore it from git.")
    return datasets


def manifest_hash(entry: dict) -> str:
    """sha256 of a dataset's manifest entry, stored in its marker: a changed entry means refetch."""
    return hashlib.sha256(json.dumps(entry, sort_keys=True).encode("utf-8")).hexdigest()


def is_complete(dataset: str, entry: dict, root: Path) -> bool:
    """Marker present, written for this manifest entry, and every file there with its size."""
    try:
        marker = json.loads(marker_path(dataset, root).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(marker, dict) or marker.get("manifest_sha256") != manifest_hash(entry):
        return False
    folder = root / dataset
    return all((folder / f["path"]).is_file() and (folder / f["path"]).stat().st_size == f["size"]
               for f in entry["files"])


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


def _transfer(dataset: str, spec: dict, mirror: Path | None, dest: Path) -> None:
    """Copy one file to ``dest``, hashing as it streams; a size or sha256 mismatch is an error."""
    digest, size = hashlib.sha256(), 0
    dest.parent.mkdir(parents=True, exist_ok=True)
    with _open_source(dataset, spec, mirror) as src, open(dest, "wb") as out:
        while chunk := src.read(CHUNK):
            digest.update(chunk)
            size += len(chunk)
            out.write(chunk)
    if size != spec["size"] or digest.hexdigest() != spec["sha256"]:
        origin = f"mirror {mirror}" if mirror is not None else spec["url"]
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
    if mirror is None:
        mirror_only = [f["path"] for f in entry["files"] if f["url"] is None]
        if mirror_only:
            raise ValueError(f"{', '.join(mirror_only)} {'is' if len(mirror_only) == 1 else 'are'} "
                             "only available from a mirror (built or reformatted by the kit "
                             "maintainers; no public origin): rerun with --mirror DIR, e.g. "
                             "--mirror ../shared/data.")
    elif not (mirror / dataset).is_dir():
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
    complete = is_complete(dataset, entry, root)     # again: the last holder may have fetched it
    if complete and not force:
        return FetchResult(dataset, "present", f"already present in {root / dataset}")
    if not complete:  # a stale marker goes now; a valid one (--force) stays until the swap
        marker_path(dataset, root).unlink(missing_ok=True)
    _clean_leftovers(dataset, root)
    staged = staging_folder(root / dataset)
    try:
        for spec in entry["files"]:
            _transfer(dataset, spec, mirror, staged / spec["path"])
        source = f"mirror {mirror}" if mirror is not None else "public origin"
        _install(dataset, staged, root, {
            "dataset": dataset, "manifest_sha256": manifest_hash(entry), "source": source,
            "files": len(entry["files"]), "bytes": sum(f["size"] for f in entry["files"])})
    except BaseException:
        shutil.rmtree(staged, ignore_errors=True)
        raise
    n_files, n_bytes = len(entry["files"]), sum(f["size"] for f in entry["files"])
    return FetchResult(dataset, "fetched", f"fetched {n_files} file{'s' * (n_files != 1)} "
                       f"({n_bytes / 1e6:.1f} MB) from {source} into {root / dataset}")


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


def _report(result: FetchResult, entry: dict) -> str:
    status = "FAILED: " if result.status == "failed" else ""
    lines = [f"{result.dataset}: {status}{result.detail}"]
    if result.status == "fetched":
        for label in ("terms", "citation"):
            lines += textwrap.wrap(f"{label}: {entry[label]}", width=100, initial_indent="    ",
                                   subsequent_indent="      ")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m data_scripts.fetch", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("datasets", nargs="*", metavar="DATASET",
                        help=f"one or more of: {', '.join(DATASETS)}")
    parser.add_argument("--all", action="store_true", help="fetch every dataset")
    parser.add_argument("--mirror", metavar="DIR", help="copy from DIR/<dataset>/<path> instead of "
                        "downloading (e.g. ../shared/data)")
    parser.add_argument("--data-dir", metavar="DIR", help="target folder (default: "
                        "$CAPKIT_DATA_DIR, else ~/.cache/capkit/data)")
    parser.add_argument("--force", action="store_true", help="fetch again even if present")
    args = parser.parse_args(argv)
    if bool(args.datasets) == args.all:
        parser.error("name one or more datasets, or use --all (not both)")
    try:
        results = fetch(None if args.all else args.datasets, mirror=args.mirror,
                        data_dir=args.data_dir, force=args.force)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    manifest = load_manifest()
    for r in results:
        print(_report(r, manifest[r.dataset]), file=sys.stdout if r.ok else sys.stderr, flush=True)
    return 0 if all(r.ok for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
