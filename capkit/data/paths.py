"""Where capkit keeps its datasets, and the check that one has been fetched.

The data directory is ``$CAPKIT_DATA_DIR`` if set, else ``data`` in the platform's user cache
folder for capkit (``platformdirs``: ``$XDG_CACHE_HOME/capkit/data``, by default
``~/.cache/capkit/data``, on Linux; datasets can always be fetched again). Each dataset
is a folder named after it. ``capkit.data.fetch`` moves a folder into place only once every
file in it has been verified, then writes the marker ``.complete-<dataset>`` next to it. A folder
without its marker is treated as absent, so an interrupted fetch never looks complete. The fetcher
imports this module, so the loaders and the fetcher agree on both names.
"""
from __future__ import annotations

import os
from pathlib import Path

DATA_DIR_ENV = "CAPKIT_DATA_DIR"
MIRROR_HINT = "../shared/data"  # the local mirror named in error messages (relative to the repo)

DATASETS = (
    "flickr8k",
    "composite",
    "pascal50s",
    "thumb",
    "nebula",
    "capeval1k",
    "coco_karpathy_test",
    "flickr30k_test",
    "diversity_wang_chan",
    "clipscore_example",
    "sugarcrepe",
)
# Datasets whose every file is a byte copy of a pinned public file, so they can be fetched without a
# mirror. Must agree with capkit/data/manifest.json (tests/test_fetch.py checks it).
PUBLIC_DATASETS = frozenset({"thumb", "nebula", "diversity_wang_chan", "clipscore_example",
                             "sugarcrepe"})


def data_dir(path: str | os.PathLike | None = None) -> Path:
    """The datasets' folder: ``path`` if given, else $CAPKIT_DATA_DIR, else ``data`` in the
    platform's user cache folder (``~/.cache/capkit/data`` on Linux unless $XDG_CACHE_HOME)."""
    if path is None:
        path = os.environ.get(DATA_DIR_ENV)
    if not path:
        import platformdirs
        return Path(platformdirs.user_cache_dir("capkit", appauthor=False)) / "data"
    return Path(path).expanduser()


def check_dataset_name(dataset: str) -> str:
    if dataset not in DATASETS:
        raise ValueError(f"Unknown dataset {dataset!r}: choose one of {', '.join(DATASETS)}.")
    return dataset


def dataset_dir(dataset: str, root: str | os.PathLike | None = None) -> Path:
    return data_dir(root) / check_dataset_name(dataset)


def marker_path(dataset: str, root: str | os.PathLike | None = None) -> Path:
    """The ``.complete-<dataset>`` marker, written last by the fetch script."""
    return data_dir(root) / f".complete-{check_dataset_name(dataset)}"


def fetch_command(dataset: str) -> str:
    """The command that obtains ``dataset`` (``--mirror`` names the course machines' mirror)."""
    if dataset in PUBLIC_DATASETS:
        return (f"capkit data fetch {dataset} --mirror {MIRROR_HINT} "
                f"(or, from the public origin, capkit data fetch {dataset})")
    return (f"capkit data fetch {dataset} --mirror {MIRROR_HINT} "
            "(some of its files exist only in the kit's mirror)")


def require(dataset: str) -> Path:
    """Return the folder of a fetched dataset; raise FileNotFoundError saying how to fetch it.

    Checks the marker only, so that every load stays fast; the fetch command verifies every
    file's sha256 and fetches a damaged one again."""
    folder = dataset_dir(dataset)
    if not marker_path(dataset).is_file() or not folder.is_dir():
        raise FileNotFoundError(
            f"Dataset {dataset!r} is not in {data_dir()} (no complete fetch found). Fetch it with: "
            f"{fetch_command(dataset)}; or set {DATA_DIR_ENV} to the "
            "folder that already holds it.")
    return folder
