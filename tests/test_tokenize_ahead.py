"""capkit.commands.tokenize_ahead: a first `capkit score` run's references, tokenised by a child.

The child must write the very file the parent would have written (checked on the real COCO
Karpathy-test references), start only where it can help and cannot consume the parent's input,
and never change a score: with it or without it, `capkit score` prints the same bytes."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from capkit.commands import tokenize_ahead
from capkit.metrics.inputs import prepare
from capkit.text import ptb_cache

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CAPKIT_CACHE_DIR", str(tmp_path / "cache"))
    for name in (ptb_cache.ENV, tokenize_ahead.ENV):
        monkeypatch.delenv(name, raising=False)
    return tmp_path / "cache" / "tokens"


@pytest.fixture(scope="module")
def karpathy(shared_data, tmp_path_factory):
    from capkit.data import load
    corpus = load("coco_karpathy_test")
    cands = corpus.systems["updown_paddle"]
    refs = {i: corpus.references[i] for i in cands}
    folder = tmp_path_factory.mktemp("karpathy")
    c, r = folder / "cands.json", folder / "refs.json"
    c.write_text(json.dumps(cands))
    r.write_text(json.dumps(refs))
    return c, r


def _file_bytes(cache):
    files = sorted(cache.glob("ptb-*.txt"))
    assert len(files) == 1, files
    return files[0].name, files[0].read_bytes()


def test_the_child_writes_the_file_prepare_writes_on_coco(karpathy, cache, tmp_path, monkeypatch):
    c, r = karpathy
    assert tokenize_ahead.tokenize_references(str(c), str(r))
    child = _file_bytes(cache)
    assert not tokenize_ahead.tokenize_references(str(c), str(r))     # there already
    monkeypatch.setenv("CAPKIT_CACHE_DIR", str(tmp_path / "other"))
    cands, refs = json.loads(c.read_text()), json.loads(r.read_text())
    prepare(cands, {i: refs[i] for i in cands})
    assert _file_bytes(tmp_path / "other" / "tokens") == child
    assert child[1].split(b" ")[4] != b"-1"                          # ids saved too


@pytest.mark.parametrize("refs", [
    # a no-break space kept inside "5 1/2": the text alone, no ids
    {str(i): [f"a cake cut into 5 1/2 pieces number {i}", "a dog"] for i in range(600)},
    # empty references, double spaces, a clitic, a line break and the full lexer's cases
    {str(i): ["", f"it's  a dog {i}.", "Mr. Smith\nat 5:30", "a t.v. on a (red) table"]
     for i in range(300)},
])
def test_the_child_writes_the_same_bytes_on_odd_streams(refs, cache, tmp_path, monkeypatch):
    cands = {i: "a dog" for i in refs}
    c, r = tmp_path / "c.json", tmp_path / "r.json"
    c.write_text(json.dumps(cands))
    r.write_text(json.dumps(refs))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")              # (the empty references)
        prepare(cands, refs)
    parent = _file_bytes(cache)
    monkeypatch.setenv("CAPKIT_CACHE_DIR", str(tmp_path / "other"))
    assert tokenize_ahead.tokenize_references(str(c), str(r))
    assert _file_bytes(tmp_path / "other" / "tokens") == parent


def test_it_starts_only_where_it_can_help(tmp_path, cache, monkeypatch):
    c, r = tmp_path / "c.json", tmp_path / "r.json"
    c.write_text("{}")
    r.write_text("{}")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    base = ["score", "--candidates", str(c), "--references", str(r)]
    assert tokenize_ahead.wanted(base) == (str(c), str(r))
    assert tokenize_ahead.wanted(["score", f"--candidates={c}", f"--references={r}",
                                  "--tokenizer=ptb"]) == (str(c), str(r))
    for argv in (base + ["--tokenizer", "split"], base + ["--tokenizer=split"],
                 ["score", "--candidates", "-", "--references", str(r)],      # standard input
                 ["score", "--candidates", str(c), "--references", str(fifo)],  # a pipe
                 ["score", "--candidates", str(c), "--references", str(tmp_path)],  # a folder
                 ["score", "--candidates", str(c)], ["score", "--cand", str(c), "--references",
                                                     str(r)]):
        assert tokenize_ahead.wanted(argv) is None, argv
    for env in ({ptb_cache.ENV: "0"}, {tokenize_ahead.ENV: "off"}):
        assert tokenize_ahead.wanted(base, {**os.environ, **env}) is None
    size = tokenize_ahead.MAX_FILE_BYTES
    monkeypatch.setattr(tokenize_ahead, "MAX_FILE_BYTES", 3)
    assert tokenize_ahead.wanted(base) is None                        # files too large
    monkeypatch.setattr(tokenize_ahead, "MAX_FILE_BYTES", size)
    assert tokenize_ahead.wanted(base) == (str(c), str(r))
    monkeypatch.setattr(tokenize_ahead, "_cpus", lambda: 1)
    assert tokenize_ahead.wanted(base) is None


def test_an_input_scored_in_chunks_is_left_to_the_parent(tmp_path, cache, monkeypatch):
    from capkit.metrics.chunked import CHUNK_SIZE
    assert tokenize_ahead.MAX_CANDIDATES == CHUNK_SIZE
    monkeypatch.setattr(tokenize_ahead, "MAX_CANDIDATES", 10)
    c, r = tmp_path / "c.json", tmp_path / "r.json"
    c.write_text(json.dumps({str(i): "a dog" for i in range(11)}))
    r.write_text("not even read")
    assert not tokenize_ahead.tokenize_references(str(c), str(r))


def _score(c, r, cache_dir, ahead, *extra):
    env = {**os.environ, "PYTHONPATH": str(REPO), "CAPKIT_CACHE_DIR": str(cache_dir),
           tokenize_ahead.ENV: "1" if ahead else "0"}
    env.pop(ptb_cache.ENV, None)
    return subprocess.run([sys.executable, "-m", "capkit", "score", "--candidates", str(c),
                           "--references", str(r), "--metrics", "bleu_4,rouge_l,cider_d",
                           "--format", "json", *extra], env=env, capture_output=True,
                          timeout=300)


def test_a_first_run_prints_the_same_bytes_with_or_without_the_child(karpathy, tmp_path):
    c, r = karpathy
    with_child = _score(c, r, tmp_path / "with", True)
    without = _score(c, r, tmp_path / "without", False)
    assert with_child.returncode == without.returncode == 0, with_child.stderr
    assert with_child.stdout == without.stdout and with_child.stderr == without.stderr == b""
    assert _file_bytes(tmp_path / "with" / "tokens") == _file_bytes(tmp_path / "without" / "tokens")
    again = _score(c, r, tmp_path / "with", True)                # a repeated run, child too
    assert again.stdout == without.stdout


def test_a_stream_the_parent_does_not_score_changes_nothing(tmp_path, cache):
    """References with a lone surrogate: ``align`` drops it, so the child's stream (as read)
    names another file than the parent's; the parent tokenises on its own, same scores."""
    cands = {str(i): f"a dog number {i}" for i in range(600)}
    refs = {str(i): [f"a dog \ud800 number {i}", "a brown dog"] for i in range(600)}
    c, r = tmp_path / "c.json", tmp_path / "r.json"
    c.write_text(json.dumps(cands))
    r.write_text(json.dumps(refs))
    outs = [_score(c, r, tmp_path / f"cache{ahead}", ahead) for ahead in (True, False)]
    assert outs[0].returncode == 0, outs[0].stderr
    assert outs[0].stdout == outs[1].stdout
    child = tokenize_ahead.wanted(["--candidates", str(c), "--references", str(r)]) is not None
    assert len(list((tmp_path / "cacheTrue" / "tokens").glob("ptb-*.txt"))) == 1 + child


def test_an_error_before_the_wait_ends_the_run_with_its_message(karpathy, tmp_path):
    c, r = karpathy
    done = _score(c, r, tmp_path / "cache", True, "--tokenizer", "ptb", "--chunk-size", "-1")
    assert done.returncode == 2 and b"cannot be negative" in done.stderr
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"<corpus>": "a dog"}))
    done = subprocess.run([sys.executable, "-m", "capkit", "score", "--candidates", str(bad),
                           "--references", str(r), "--format", "csv"], capture_output=True,
                          env={**os.environ, "PYTHONPATH": str(REPO),
                               "CAPKIT_CACHE_DIR": str(tmp_path / "cache")}, timeout=300)
    assert done.returncode == 2 and b"<corpus>" in done.stderr


_HANGING_CHILD = """
import os, sys, time
from capkit.commands import tokenize_ahead
tokenize_ahead.tokenize_references = lambda c, r: time.sleep(60)
tokenize_ahead._cpus = lambda: 2
assert tokenize_ahead.start(["score", "--candidates", sys.argv[1], "--references", sys.argv[2]])
pid = tokenize_ahead._child[0]
start = time.monotonic()
assert tokenize_ahead.wait(timeout=0.5)
waited = time.monotonic() - start
try:
    os.kill(pid, 0)
    print("alive")
except ProcessLookupError:
    print("gone %.1f" % waited)
"""


def test_a_child_that_does_not_finish_is_stopped_after_the_timeout(tmp_path):
    c, r = tmp_path / "c.json", tmp_path / "r.json"
    c.write_text("{}")
    r.write_text("{}")
    env = {**os.environ, "PYTHONPATH": str(REPO), "CAPKIT_CACHE_DIR": str(tmp_path / "cache"),
           tokenize_ahead.ENV: "1"}
    done = subprocess.run([sys.executable, "-c", _HANGING_CHILD, str(c), str(r)], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    state, waited = done.stdout.split()
    assert state == "gone" and float(waited) < 10


def test_a_fork_or_a_file_that_fails_means_no_child_and_no_error(tmp_path, cache, monkeypatch):
    c, r = tmp_path / "c.json", tmp_path / "r.json"
    c.write_text("{}")
    r.write_text("{}")
    argv = ["score", "--candidates", str(c), "--references", str(r)]

    def fails(*args):
        raise OSError(11, "Resource temporarily unavailable")
    monkeypatch.setattr(os, "fork", fails)
    monkeypatch.setattr(tokenize_ahead, "_threads_started", lambda: False)
    fds = len(os.listdir("/proc/self/fd"))
    assert not tokenize_ahead.start(argv) and tokenize_ahead._child is None
    assert len(os.listdir("/proc/self/fd")) == fds                  # the pipe closed again
    monkeypatch.setattr(os.path, "getsize", fails)         # (the file removed meanwhile)
    assert not tokenize_ahead.start(argv) and tokenize_ahead._child is None
