"""Shared fixtures: the real datasets, fetched from the local mirror when not already present."""
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
MIRROR = Path(os.environ.get("CAPKIT_SHARED_DATA", REPO.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def shared_data(tmp_path_factory):
    """Every dataset available to ``capkit.data.load``; returns the data directory.

    Uses $CAPKIT_DATA_DIR when every dataset is complete there (``make data`` did it); otherwise
    fetches from the mirror (``../shared/data`` or $CAPKIT_SHARED_DATA) into a temporary folder.
    """
    from capkit.data.paths import DATASETS, data_dir, marker_path
    if all(marker_path(d).is_file() for d in DATASETS):
        yield data_dir()
        return
    if not MIRROR.is_dir():
        pytest.skip(f"datasets not fetched and no mirror at {MIRROR}; run `make data`")
    from data_scripts.fetch import fetch
    root = tmp_path_factory.mktemp("capkit-data")
    results = fetch(list(DATASETS), mirror=MIRROR, data_dir=root)
    failed = [r for r in results if not r.ok]
    assert not failed, f"fetch from the mirror failed: {failed}"
    patch = pytest.MonkeyPatch()
    patch.setenv("CAPKIT_DATA_DIR", str(root))
    yield root
    patch.undo()
