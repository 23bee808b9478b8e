"""Shared fixtures: the real datasets (fetched from the local mirror when not already present),
no network, read-only folders."""
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
    if not MIRROR.is_dir():       # a failure, not a skip: the tests need the data (#17.8)
        pytest.fail(f"the datasets are not fetched (no complete copy in {data_dir()}) and there "
                    f"is no mirror at {MIRROR}: run `make data`, or set $CAPKIT_SHARED_DATA to "
                    "a mirror", pytrace=False)
    from capkit.data.fetch import fetch
    root = tmp_path_factory.mktemp("capkit-data")
    results = fetch(list(DATASETS), mirror=MIRROR, data_dir=root)
    failed = [r for r in results if not r.ok]
    assert not failed, f"fetch from the mirror failed: {failed}"
    patch = pytest.MonkeyPatch()
    patch.setenv("CAPKIT_DATA_DIR", str(root))
    yield root
    patch.undo()


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    """Tests never touch the network: any attempt to open an internet connection fails loudly."""
    import socket

    real_connect = socket.socket.connect

    def guarded(self, address):
        if self.family in (socket.AF_INET, socket.AF_INET6):
            host = address[0] if isinstance(address, tuple) else address
            if host not in ("127.0.0.1", "::1", "localhost"):
                raise RuntimeError(f"a test tried to reach the network ({address!r}); "
                                   "tests must run offline")
        return real_connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", guarded)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")


_HOLD_LOCK = """
import sys
from capkit.cache_files import file_lock
with file_lock(sys.argv[1]):
    print("locked", flush=True)
    sys.stdin.read()
"""


@pytest.fixture
def hold_lock():
    """``with hold_lock(path): ...``: another process holds capkit's cache lock of ``path``
    (``cache_files.file_lock``) until the block ends. A process of its own: a lock taken in
    this one could be re-entered here."""
    import contextlib
    import subprocess
    import sys

    @contextlib.contextmanager
    def hold(path):
        holder = subprocess.Popen([sys.executable, "-c", _HOLD_LOCK, str(path)], cwd=REPO,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            assert holder.stdout.readline() == "locked\n"
            yield
        finally:
            holder.stdin.close()
            holder.wait(timeout=60)
    return hold


@pytest.fixture
def read_only(monkeypatch):
    """``read_only(folder)`` makes ``folder`` read-only (created if missing) for the test.

    chmod 0o555 does it for a normal user; root ignores it (tests may run as root), so when a
    probe file can still be created, creating, renaming or deleting anything inside the folder
    is made to fail with EACCES, as the kernel would for anyone else.
    """
    import errno
    folders: list[Path] = []
    real = {name: getattr(os, name) for name in ("open", "mkdir", "replace", "rename", "unlink")}

    def inside(path) -> bool:
        p = Path(os.path.abspath(os.fsdecode(path)))
        return any(p == f or f in p.parents for f in folders)

    def denied(path):
        return PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fsdecode(path))

    def guard(name):
        def guarded(path, *args, **kwargs):
            if name == "open":
                writes = args[0] & (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC)
                if writes and inside(path):
                    raise denied(path)
            elif name == "mkdir" and os.path.lexists(path) or \
                    name == "unlink" and not os.path.lexists(path):
                pass                             # EEXIST / ENOENT come first, as in the kernel
            elif inside(path) or (name in ("replace", "rename") and inside(args[0])):
                raise denied(path)
            return real[name](path, *args, **kwargs)
        return guarded

    def make(folder: Path) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        folder.chmod(0o555)
        folders.append(folder.absolute())
        probe = folder / ".probe"
        try:
            probe.touch()
        except PermissionError:
            return folder                        # the kernel enforces it: nothing to simulate
        probe.unlink()
        for name in real:
            monkeypatch.setattr(os, name, guard(name))
        return folder

    yield make
    for folder in folders:
        folder.chmod(0o755)                      # so that pytest can delete tmp_path


# CI: property tests explore the same examples on every run, so a red build is reproducible
from hypothesis import settings as _hypothesis_settings  # noqa: E402

_hypothesis_settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    _hypothesis_settings.load_profile("ci")


# ---- skip policy (#17.8) ---------------------------------------------------------------------
# A test may skip only when Java, CoreNLP (official SPICE), hub weights (online) or a GPU is
# missing, with a reason starting "java:", "corenlp:", "hub:" or "gpu:"; any other skip fails
# and says what to install. The run ends with "skipped: N (allowed: java, corenlp, hub, gpu)".
# The hooks live in tests/skip_policy.py; tests/test_skip_policy.py checks them.
from skip_policy import (  # noqa: E402,F401
    pytest_make_collect_report, pytest_runtest_makereport, pytest_terminal_summary,
)
