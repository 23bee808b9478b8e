"""capkit.cache_files: locks beside what they guard, atomic writes (files and whole folders),
read-or-rebuild."""
from __future__ import annotations

import errno
import json
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from capkit import cache_files
from capkit.cache_files import (CacheWarning, cache_dir, file_lock, lock_path, read_or_rebuild,
                                write_atomic, write_folder)

REPO = Path(__file__).resolve().parents[1]


def read_json(path: Path):
    return json.loads(path.read_text(encoding="utf-8"))


def write_json(f, value) -> None:
    f.write(json.dumps(value).encode("utf-8"))


def rebuild(path: Path, builds: list):
    def build():
        builds.append(1)
        return {"answer": 42}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = read_or_rebuild(path, read_json, build, write_json, what="the answers")
    return value, caught


def test_cache_dir_and_lock_names(tmp_path, monkeypatch):
    monkeypatch.setenv("CAPKIT_CACHE_DIR", str(tmp_path / "c"))
    assert cache_dir() == tmp_path / "c" and cache_dir(tmp_path / "x") == tmp_path / "x"
    assert lock_path(tmp_path / "a.npz") == tmp_path / "a.npz.lock"
    with file_lock(tmp_path / "new" / "a.npz"):          # creates the folder it needs
        assert (tmp_path / "new" / "a.npz.lock").is_file()


def test_write_atomic_replaces_whole_files_only(tmp_path):
    path = tmp_path / "f.bin"
    write_atomic(path, lambda f: f.write(b"old"))
    assert path.read_bytes() == b"old" and path.stat().st_mode & 0o777 != 0o600

    def interrupted(f):
        f.write(b"half of the new")
        raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        write_atomic(path, interrupted)
    assert path.read_bytes() == b"old" and [p.name for p in tmp_path.iterdir()] == ["f.bin"]


def interrupt_at(name: str):
    """A ``write_atomic`` that is killed (Ctrl-C) when it reaches the file ``name``."""
    real = cache_files.write_atomic

    def write(path, writer):
        if Path(path).name == name:
            raise KeyboardInterrupt
        return real(path, writer)
    return write


@pytest.mark.parametrize("exchange", [True, False], ids=["one-step swap", "two renames"])
def test_write_folder_replaces_the_whole_folder_or_nothing(tmp_path, monkeypatch, exchange):
    if not exchange:  # as on systems without renameat2
        monkeypatch.setattr(cache_files, "exchange_folders", lambda a, b: False)
    out = tmp_path / "model"
    old = {"config.json": b"old config", "weights": b"old weights", "meta.json": b"old meta"}
    new = {name: data.replace(b"old", b"new") for name, data in old.items()}
    assert write_folder(out, old) == out

    def contents():
        return {p.name: p.read_bytes() for p in out.iterdir()}
    with monkeypatch.context() as m:
        m.setattr(cache_files, "write_atomic", interrupt_at("weights"))
        with pytest.raises(KeyboardInterrupt):
            write_folder(out, new)
    assert contents() == old                        # not new config beside old weights
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]       # no staging left
    write_folder(out, new)
    assert contents() == new and sorted(p.name for p in tmp_path.iterdir()) == ["model"]


def test_write_folder_refuses_a_folder_holding_other_files(tmp_path):
    out = tmp_path / "here"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError, match=r"notes\.txt.*Choose a new or empty folder"):
        write_folder(out, {"weights": b"w"})
    assert [p.name for p in out.iterdir()] == ["notes.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["here"]


def test_read_or_rebuild_builds_once_then_reads(tmp_path):
    path, builds = tmp_path / "answers.json", []
    assert rebuild(path, builds) == ({"answer": 42}, [])
    assert rebuild(path, builds) == ({"answer": 42}, []) and len(builds) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["answers.json", "answers.json.lock"]


@pytest.mark.parametrize("content", [b"", b'{"answer": 4', b"\x00garbage\xff"],
                         ids=["empty", "truncated", "garbage"])
def test_an_unreadable_file_is_rebuilt_with_one_warning_naming_it(tmp_path, content):
    path, builds = tmp_path / "answers.json", []
    path.write_bytes(content)
    value, caught = rebuild(path, builds)
    assert value == {"answer": 42} and len(builds) == 1
    assert [w.category for w in caught] == [CacheWarning]
    assert str(path) in str(caught[0].message) and "rebuilt the answers" in str(caught[0].message)
    assert read_json(path) == {"answer": 42}
    assert rebuild(path, builds) == ({"answer": 42}, []) and len(builds) == 1


def test_a_read_only_folder_means_in_memory_with_one_warning(tmp_path, read_only):
    folder = read_only(tmp_path / "ro")
    for path in (folder / "answers.json", folder / "sub" / "answers.json"):
        value, caught = rebuild(path, [])
        assert value == {"answer": 42} and [w.category for w in caught] == [CacheWarning]
        assert str(folder) in str(caught[0].message) and "in memory" in str(caught[0].message)
    assert list(folder.iterdir()) == []


def test_an_unreadable_file_in_a_read_only_folder_is_one_warning(tmp_path, read_only):
    path = tmp_path / "ro" / "answers.json"
    path.parent.mkdir()
    path.write_bytes(b"")
    read_only(path.parent)
    value, caught = rebuild(path, [])
    assert value == {"answer": 42} and len(caught) == 1
    assert "could not be replaced" in str(caught[0].message) and str(path) in str(caught[0].message)


_BUILDER = """
import json, sys, time
from pathlib import Path
from capkit.cache_files import read_or_rebuild
path, log = Path(sys.argv[1]), Path(sys.argv[2])
def build():
    with open(log, "a") as f:
        f.write("built\\n")
    time.sleep(0.5)                      # long enough for every other process to miss too
    return {"answer": 42}
value = read_or_rebuild(path, lambda p: json.loads(p.read_text()), build,
                        lambda f, v: f.write(json.dumps(v).encode()), what="answers")
print(json.dumps(value))
"""


def test_processes_missing_at_once_build_once(tmp_path):
    path, log = tmp_path / "answers.json", tmp_path / "log"
    procs = [subprocess.Popen([sys.executable, "-W", "error", "-c", _BUILDER, str(path), str(log)],
                              cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(6)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0] * 6, [err for _, err in outs]
    assert [json.loads(out) for out, _ in outs] == [{"answer": 42}] * 6
    assert log.read_text() == "built\n" and read_json(path) == {"answer": 42}


def test_remove_unused_deletes_a_file_and_its_lock_unless_the_lock_is_held(tmp_path, hold_lock):
    from capkit.cache_files import remove_unused
    free, busy, alone = tmp_path / "free.npz", tmp_path / "busy.npz", tmp_path / "alone.npz"
    for path in (free, busy):
        path.write_bytes(b"old")
        lock_path(path).write_bytes(b"")
    lock_path(alone).write_bytes(b"")                     # a lock whose file is gone already
    with hold_lock(busy):
        assert [remove_unused(p) for p in (free, busy, alone)] == [True, False, True]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["busy.npz", "busy.npz.lock"]
    assert remove_unused(busy) and list(tmp_path.iterdir()) == []


def test_write_output_names_the_file_it_cannot_write_and_leaves_nothing(tmp_path):
    from capkit.cache_files import OutputError, write_output
    assert write_output(tmp_path / "a.json", "{}\n").read_text() == "{}\n"
    (tmp_path / "taken").mkdir()                       # a folder where the file should go
    with pytest.raises(OutputError) as caught:
        write_output(tmp_path / "taken", b"data")
    assert caught.value.errno == errno.EISDIR and caught.value.filename == str(tmp_path / "taken")
    assert str(caught.value).startswith(f"cannot write {tmp_path / 'taken'} (")
    assert "give a folder you can write to" in str(caught.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json", "taken"]
