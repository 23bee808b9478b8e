"""capkit.data.fetch: manifest, mirror copies, verification, atomicity, idempotence, and its
command line (`capkit data fetch`, `capkit data list`, `python -m data_scripts.fetch`)."""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from capkit import cache_files
from capkit.data import paths
from capkit.data import fetch as fetch_mod
from capkit.cli import main as capkit_main
from capkit.data.fetch import fetch, fetch_dataset, load_manifest

REPO = Path(__file__).resolve().parents[1]
MIRROR = Path(os.environ.get("CAPKIT_SHARED_DATA", REPO.parent / "shared" / "data"))
PINNED_URL = r"https://raw\.githubusercontent\.com/[^/]+/[^/]+/[0-9a-f]{40}/.+"
SMALL = "clipscore_example"  # 5 files, 0.3 MB: quick to copy again and again


@pytest.fixture
def data(tmp_path, monkeypatch):
    """An empty data directory, also set as $CAPKIT_DATA_DIR."""
    root = tmp_path / "data"
    monkeypatch.setenv(paths.DATA_DIR_ENV, str(root))
    return root


@pytest.fixture(scope="session")
def mirror(request) -> Path:
    """The data mirror: ../shared/data ($CAPKIT_SHARED_DATA), else the datasets `make data`
    fetched, which have the same layout; with neither, ``shared_data`` fails saying `make data`
    (a failure, not a skip: #17.8)."""
    return MIRROR if MIRROR.is_dir() else request.getfixturevalue("shared_data")


@pytest.fixture
def small_mirror(tmp_path, mirror):
    """A private copy of one dataset's mirror folder, safe to corrupt."""
    private = tmp_path / "mirror"
    shutil.copytree(mirror / SMALL, private / SMALL)
    return private


def main(argv: list[str]) -> int:
    """`capkit data fetch ARGV`."""
    return capkit_main(["data", "fetch", *argv])


def hidden_leftovers(root: Path) -> list[str]:
    """Hidden entries other than markers and lock files (which stay, as lock files must)."""
    return sorted(p.name for p in root.glob(".*")
                  if not p.name.startswith(".complete-") and not p.name.endswith(".lock"))


# ---- manifest -------------------------------------------------------------------------------

def test_manifest_lists_every_dataset_with_terms_and_citation():
    manifest = load_manifest()
    assert list(manifest) == list(paths.DATASETS)
    for name, entry in manifest.items():
        assert entry["terms"] and entry["citation"] and entry["files"], name
        for f in entry["files"]:
            assert re.fullmatch(r"[0-9a-f]{64}", f["sha256"]) and f["size"] > 0, (name, f["path"])
            if f["url"] is not None:  # pinned to a full commit on raw.githubusercontent.com
                assert re.fullmatch(PINNED_URL, f["url"]), f["url"]
            else:
                assert f.get("note"), (name, f["path"])


def test_a_damaged_or_short_manifest_says_how_to_restore_it(tmp_path):
    bad = tmp_path / "manifest.json"
    bad.write_text("{")
    with pytest.raises(ValueError, match=r"Cannot read the manifest .*git checkout capkit/data/"
                                         r"manifest\.json.*pip install --force-reinstall"):
        load_manifest(bad)
    bad.write_text(json.dumps({"datasets": {"thumb": {}}}))
    with pytest.raises(ValueError, match=r"lacks \['flickr8k'.*; restore it: `git checkout"):
        load_manifest(bad)


def test_public_datasets_are_exactly_those_without_mirror_only_files():
    manifest = load_manifest()
    public = {n for n, e in manifest.items() if all(f["url"] for f in e["files"])}
    assert public == paths.PUBLIC_DATASETS


def test_manifest_covers_every_mirror_file(mirror):
    manifest = load_manifest()
    for name, entry in manifest.items():
        on_disk = {p.relative_to(mirror / name).as_posix() for p in (mirror / name).rglob("*")
                   if p.is_file() and p.name != "SOURCE.md"}
        assert on_disk == {f["path"] for f in entry["files"]}, name


# ---- fetching ---------------------------------------------------------------------------------

def test_fetch_all_from_mirror_then_skip(data, mirror):
    first = fetch(mirror=mirror)
    assert [r.status for r in first] == ["fetched"] * len(paths.DATASETS)
    for name in paths.DATASETS:
        assert paths.require(name) == data / name
        marker = json.loads(paths.marker_path(name).read_text())
        assert marker["manifest_sha256"] == fetch_mod.manifest_hash(load_manifest()[name])
    assert hidden_leftovers(data) == []
    second = fetch(mirror=mirror)
    assert [r.status for r in second] == ["present"] * len(paths.DATASETS)


def test_second_run_copies_nothing(data, small_mirror, monkeypatch):
    assert fetch_dataset(SMALL, mirror=small_mirror).status == "fetched"

    def no_copy(*args):
        raise AssertionError("a complete dataset was copied again")
    monkeypatch.setattr(fetch_mod, "_transfer", no_copy)
    assert fetch_dataset(SMALL, mirror=small_mirror).status == "present"


@pytest.mark.parametrize("exchange", [True, False], ids=["one-step swap", "two renames"])
def test_force_refetches(data, small_mirror, monkeypatch, exchange):
    if not exchange:  # as on systems without renameat2
        monkeypatch.setattr(cache_files, "exchange_folders", lambda a, b: False)
    fetch_dataset(SMALL, mirror=small_mirror)
    (data / SMALL / "refs.json").write_text("{}")  # same marker, damaged file
    assert fetch_dataset(SMALL, mirror=small_mirror, force=True).status == "fetched"
    fresh = (data / SMALL / "refs.json").read_bytes()
    assert fresh == (small_mirror / SMALL / "refs.json").read_bytes()
    assert hidden_leftovers(data) == []


def test_changed_manifest_entry_or_missing_file_means_refetch(data, small_mirror):
    fetch_dataset(SMALL, mirror=small_mirror)
    marker = paths.marker_path(SMALL)
    marker.write_text(json.dumps({"manifest_sha256": "0" * 64}))
    assert fetch_dataset(SMALL, mirror=small_mirror).status == "fetched"
    (data / SMALL / "images" / "image1.jpg").unlink()
    assert fetch_dataset(SMALL, mirror=small_mirror).status == "fetched"


def test_a_damaged_file_of_a_complete_copy_is_named_and_fetched_again(data, small_mirror,
                                                                     monkeypatch, capsys):
    """Same size, one byte changed, marker intact: not "already present" (sizes alone would
    say so); the file is named, fetched again, and the verified ones are kept."""
    fetch_dataset(SMALL, mirror=small_mirror)
    damaged = data / SMALL / "good_captions.json"
    clean = damaged.read_bytes()
    with open(damaged, "r+b") as f:
        f.write(b"{" if clean[:1] != b"{" else b"[")
    assert damaged.stat().st_size == len(clean)
    assert not fetch_mod.is_complete(SMALL, load_manifest()[SMALL], data)
    real_open, opened = fetch_mod._open_source, []

    def counting_open(dataset, spec, mirror):
        opened.append(spec["path"])
        return real_open(dataset, spec, mirror)
    monkeypatch.setattr(fetch_mod, "_open_source", counting_open)
    assert main([SMALL, "--mirror", str(small_mirror)]) == 0
    out = capsys.readouterr().out.splitlines()[0]
    assert out.startswith(f"{SMALL}: damaged copy in {data / SMALL} ")
    assert f"{SMALL}/good_captions.json: its sha256 differs from the manifest's" in out
    assert "fetched 1 file " in out and "kept the 4 verified files" in out
    assert opened == ["good_captions.json"]          # only the damaged file from the mirror
    assert damaged.read_bytes() == clean and hidden_leftovers(data) == []
    assert fetch_dataset(SMALL, mirror=small_mirror).status == "present"
    assert opened == ["good_captions.json"]


def test_sha256_mismatch_is_an_error_naming_the_file(data, small_mirror):
    with open(small_mirror / SMALL / "good_captions.json", "r+b") as f:
        f.write(b"[")  # same size, different bytes
    expected = r"sha256 mismatch for clipscore_example/good_captions\.json"
    with pytest.raises(ValueError, match=expected):
        fetch_dataset(SMALL, mirror=small_mirror)
    assert not (data / SMALL).exists() and not paths.marker_path(SMALL).exists()
    assert hidden_leftovers(data) == []
    with pytest.raises(FileNotFoundError, match="capkit data fetch clipscore_example"):
        paths.require(SMALL)


def test_missing_mirror_file_is_an_error_naming_it(data, small_mirror):
    (small_mirror / SMALL / "refs.json").unlink()
    result = fetch([SMALL], mirror=small_mirror)[0]
    assert result.status == "failed" and "clipscore_example/refs.json is missing" in result.detail


class _Breaks:
    """A source stream that fails after its first chunk, as an interrupted copy would."""

    def __init__(self, stream):
        self.stream, self.reads = stream, 0

    def read(self, n):
        self.reads += 1
        if self.reads > 1:
            raise KeyboardInterrupt("simulated interruption mid-copy")
        return self.stream.read(min(n, 16))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stream.close()


@pytest.mark.parametrize("already_complete", [False, True])
def test_interrupted_fetch_leaves_nothing_that_looks_complete(data, small_mirror, monkeypatch,
                                                             already_complete):
    if already_complete:
        fetch_dataset(SMALL, mirror=small_mirror)
    real_open = fetch_mod._open_source
    opened = []

    def breaking_open(dataset, spec, mirror):
        opened.append(spec["path"])
        stream = real_open(dataset, spec, mirror)
        return _Breaks(stream) if len(opened) == 3 else stream
    monkeypatch.setattr(fetch_mod, "_open_source", breaking_open)
    with pytest.raises(KeyboardInterrupt):
        fetch_dataset(SMALL, mirror=small_mirror, force=True)
    assert len(opened) == 3 and hidden_leftovers(data) == []
    if already_complete:  # the earlier complete copy is untouched and still complete
        assert fetch_mod.is_complete(SMALL, load_manifest()[SMALL], data)
    else:
        assert not (data / SMALL).exists() and not paths.marker_path(SMALL).exists()


def test_killed_fetch_leftovers_are_ignored_then_cleaned(data, small_mirror):
    leftover = data / f".{SMALL}.partial-deadbeef"
    (leftover / "images").mkdir(parents=True)
    with pytest.raises(FileNotFoundError):
        paths.require(SMALL)
    fetch_dataset(SMALL, mirror=small_mirror)
    assert not leftover.exists()


def test_a_folder_without_marker_is_not_complete(data, small_mirror):
    shutil.copytree(small_mirror / SMALL, data / SMALL)
    with pytest.raises(FileNotFoundError, match="no complete fetch"):
        paths.require(SMALL)
    assert fetch_dataset(SMALL, mirror=small_mirror).status == "fetched"


def test_mirror_only_files_need_a_mirror(data):
    result = fetch(["composite"])[0]  # fails before any download: no network needed
    assert result.status == "failed"
    assert "composite_correctness.csv" in result.detail
    assert "only available from a mirror" in result.detail and "--mirror" in result.detail
    assert not (data / "composite").exists()


def test_unknown_dataset_is_rejected_before_fetching(data):
    with pytest.raises(ValueError, match=r"Unknown dataset 'flickr9k'.*flickr8k"):
        fetch(["thumb", "flickr9k"])
    assert not data.exists()


# A wrapper that waits for a "go" file, then runs `python -m data_scripts.fetch ARGS` as if
# started from the shell: Python's start-up would otherwise spread the eight starts over a second.
_AT_ONCE = """
import os, runpy, sys, time
go = sys.argv.pop(1)
while not os.path.exists(go):
    time.sleep(0.005)
runpy.run_module("data_scripts.fetch", run_name="__main__", alter_sys=True)
"""


def test_eight_processes_fetching_one_dataset_at_once(tmp_path, mirror):
    name, root, go = "coco_karpathy_test", tmp_path / "data", tmp_path / "go"
    cmd = [sys.executable, "-c", _AT_ONCE, str(go), name, "--mirror", str(mirror),
           "--data-dir", str(root)]
    procs = [subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(8)]
    time.sleep(1.0)                            # let every process reach the starting line
    go.touch()
    outs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0] * 8, [err for _, err in outs]
    lines = sorted(out.splitlines()[0].split(":")[1].split()[0] for out, _ in outs)
    assert lines == ["already"] * 7 + ["fetched"]      # the lock: one copies, seven wait
    entry = load_manifest()[name]
    assert fetch_mod.is_complete(name, entry, root)
    for f in entry["files"]:
        data = (root / name / f["path"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == f["sha256"], f["path"]
    assert sorted(p.name for p in root.iterdir()) == [f".{name}.lock", f".complete-{name}", name]


def test_a_reader_never_sees_a_complete_dataset_missing_during_force(data, small_mirror):
    fetch_dataset(SMALL, mirror=small_mirror)
    entry, done, misses = load_manifest()[SMALL], threading.Event(), []

    def refetch():
        try:
            for _ in range(5):
                fetch_dataset(SMALL, mirror=small_mirror, force=True)
        finally:
            done.set()
    worker = threading.Thread(target=refetch)
    worker.start()
    while not done.is_set():
        if not fetch_mod.is_complete(SMALL, entry, data):
            misses.append(sorted(p.name for p in data.iterdir()))
    worker.join()
    assert misses == []
    assert hidden_leftovers(data) == []


# ---- data directory ----------------------------------------------------------------------------

def test_data_dir_resolution(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv(paths.DATA_DIR_ENV, raising=False)
    assert paths.data_dir() == tmp_path / "home" / ".cache" / "capkit" / "data"
    monkeypatch.setenv(paths.DATA_DIR_ENV, str(tmp_path / "env"))
    assert paths.data_dir() == tmp_path / "env"
    assert paths.data_dir(tmp_path / "arg") == tmp_path / "arg"


def test_data_dir_option_wins_over_env(data, small_mirror, tmp_path):
    other = tmp_path / "other"
    assert main([SMALL, "--mirror", str(small_mirror), "--data-dir", str(other)]) == 0
    assert (other / SMALL).is_dir() and not data.exists()


# ---- command line ------------------------------------------------------------------------------

def test_cli_one_line_per_dataset_and_exit_codes(data, small_mirror, capsys):
    assert main([SMALL, "--mirror", str(small_mirror)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith(f"{SMALL}: fetched 5 files")
    assert "terms: clipscore repository: MIT" in out and "citation:" in out
    assert main([SMALL, "--mirror", str(small_mirror)]) == 0
    assert capsys.readouterr().out.strip() == f"{SMALL}: already present in {data / SMALL}"
    assert main([SMALL, "composite", "--mirror", str(small_mirror)]) == 1  # no composite/ there
    captured = capsys.readouterr()
    assert captured.out.startswith(f"{SMALL}: already present")
    assert captured.err.startswith("composite: FAILED: The mirror")


def test_cli_usage_errors(data, capsys):
    assert main(["nonesuch"]) == 2
    assert "Unknown dataset 'nonesuch'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        main([])
    assert e.value.code == 2


def test_a_damaged_public_file_is_repaired_without_a_mirror_when_the_mirror_only_ones_are_intact(
        data, small_mirror, monkeypatch):
    """Only the files to transfer need a source: a verified mirror-only file is kept, so a
    damaged public file is fetched again from its URL with no --mirror (it used to ask for one,
    naming an intact file); a damaged mirror-only file still asks, naming only that file."""
    import copy
    manifest = copy.deepcopy(load_manifest())
    files = {f["path"]: f for f in manifest[SMALL]["files"]}
    files["refs.json"]["url"] = None                       # as a maintainers-built file
    fetch_dataset(SMALL, mirror=small_mirror, manifest=manifest)
    real_open, downloaded = fetch_mod._open_source, []

    def from_the_url(dataset, spec, mirror):               # the URL, served offline
        assert mirror is None
        downloaded.append(spec["path"])
        return real_open(dataset, spec, small_mirror)
    monkeypatch.setattr(fetch_mod, "_open_source", from_the_url)
    public = data / SMALL / "good_captions.json"
    clean = public.read_bytes()
    public.write_bytes(clean[:-1] + (b" " if clean[-1:] != b" " else b"\n"))
    assert fetch_dataset(SMALL, manifest=manifest).status == "fetched"
    assert downloaded == ["good_captions.json"] and public.read_bytes() == clean
    only = data / SMALL / "refs.json"
    only.write_bytes(only.read_bytes()[:-1] + b" ")
    with pytest.raises(ValueError, match=r"^refs\.json is only available from a mirror"):
        fetch_dataset(SMALL, manifest=manifest)


def test_data_list_says_what_is_fetched_and_where(data, small_mirror, capsys):
    assert main([SMALL, "--mirror", str(small_mirror)]) == 0
    capsys.readouterr()
    assert capkit_main(["data", "list"]) == 0
    out = capsys.readouterr().out
    rows = {line.split()[0]: line.split() for line in out.splitlines()[2:] if line.strip()}
    assert set(paths.DATASETS) <= set(rows)
    assert rows[SMALL][-1] == "yes" and rows["composite"][-1] == "no"
    assert rows["composite"][-3:-1] == ["mirror", "only"] and rows["thumb"][-3:-1] == ["public",
                                                                                       "URLs"]
    assert f"data folder: {data}" in out


def test_the_clone_entry_runs_the_same_command(tmp_path, small_mirror):
    """`python -m data_scripts.fetch ARGS` (the Makefile's, a clone's) is `capkit data fetch`."""
    out = subprocess.run([sys.executable, "-m", "data_scripts.fetch", SMALL, "--mirror",
                          str(small_mirror), "--data-dir", str(tmp_path / "d")], cwd=REPO,
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"{SMALL}: fetched 5 files")
    bad = subprocess.run([sys.executable, "-m", "data_scripts.fetch", "nonesuch"], cwd=REPO,
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "capkit data: error: Unknown dataset 'nonesuch'" in bad.stderr
