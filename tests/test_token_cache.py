"""capkit.metrics.token_cache: the PTB tokens of a reference stream, kept on disk between runs.

The cached tokens must be the tokenizer's own (checked on the real COCO Karpathy-test
references), a changed stream must never read another's file, a damaged file is rebuilt with a
warning, a folder that cannot be written costs a warning and nothing else, and the folder stays
bounded."""
from __future__ import annotations

import os
import warnings

import pytest

from capkit.cache_files import CacheWarning
from capkit.metrics import token_cache
from capkit.metrics.inputs import prepare
from capkit.text import ptb_tokenize


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CAPKIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv(token_cache.ENV, raising=False)
    return tmp_path / "cache" / "tokens"


@pytest.fixture(scope="module")
def karpathy(shared_data):
    from capkit.data import load
    corpus = load("coco_karpathy_test")
    cands = corpus.systems["updown_paddle"]
    return cands, {i: corpus.references[i] for i in cands}


def _stream(refs):
    return [r for rs in refs.values() for r in rs]


def _files(cache):
    return sorted(cache.glob("ptb-*.txt"))


def _no_tokenizing(monkeypatch):
    def refuse(captions):
        raise AssertionError("tokenised again: the cache was not read")
    monkeypatch.setattr(token_cache, "_tokenize", refuse)


def test_tokens_are_the_tokenizers_and_a_second_run_reads_them(cache, karpathy, monkeypatch):
    stream = _stream(karpathy[1])
    expected = ptb_tokenize(stream)
    assert token_cache.ptb_tokens(stream) == expected          # written
    assert len(_files(cache)) == 1
    _no_tokenizing(monkeypatch)
    assert token_cache.ptb_tokens(stream) == expected          # read back


def test_prepare_gives_the_same_batch_with_and_without_the_cache(cache, karpathy):
    cands, refs = karpathy
    off = prepare(cands, refs, token_cache=False)
    assert not cache.exists()
    first, second = prepare(cands, refs), prepare(cands, refs)
    assert len(_files(cache)) == 1
    for batch in (first, second):
        assert batch.candidates == off.candidates and batch.references == off.references
        assert (batch.encoded().tokens == off.encoded().tokens).all()


def test_scores_are_the_same_from_the_cache(cache, karpathy):
    from capkit.metrics import score
    cands, refs = karpathy
    names = ["bleu_4", "rouge_l", "cider_d"]
    os.environ[token_cache.ENV] = "0"
    try:
        fresh = score(cands, refs, metrics=names)
    finally:
        del os.environ[token_cache.ENV]
    score(cands, refs, metrics=names)                           # writes
    cached = score(cands, refs, metrics=names)                  # reads
    assert _files(cache)
    for name in names:
        assert (cached[name].per_caption == fresh[name].per_caption).all()
        assert cached[name].signature == fresh[name].signature


def test_another_order_or_split_is_another_file(cache, monkeypatch):
    monkeypatch.setattr(token_cache, "MIN_CAPTIONS", 2)
    a = ["A man rides a horse.", "A dog.\nA cat", "two birds"]
    b = ["A man rides a horse.", "A dog.", "A cat\ntwo birds"]     # joined, the same text
    assert "\n".join(a) == "\n".join(b)
    assert token_cache.stream_key(a) != token_cache.stream_key(b)
    assert token_cache.stream_key(a) != token_cache.stream_key(a[::-1])
    for stream in (a, b, a[::-1]):
        assert token_cache.ptb_tokens(stream) == ptb_tokenize(stream)
    assert len(_files(cache)) == 3


def test_the_stream_context_is_kept(cache, monkeypatch):
    """The PTB tokenizer reads the stream as one text: "with a t." keeps its period before a
    lower-case line only; the cached tokens are the stream's, not each caption's alone."""
    monkeypatch.setattr(token_cache, "MIN_CAPTIONS", 2)
    for stream in (["a man with a t.", "A man runs"], ["a man with a t.", "a man runs"]):
        assert token_cache.ptb_tokens(stream) == ptb_tokenize(stream)
        assert token_cache.ptb_tokens(stream) == ptb_tokenize(stream)   # read back
    assert len(_files(cache)) == 2


def test_an_edited_tokenizer_is_another_key(cache, monkeypatch):
    monkeypatch.setattr(token_cache, "MIN_CAPTIONS", 1)
    before = token_cache.stream_key(["a dog"])
    token_cache.tokenizer_key.cache_clear()
    monkeypatch.setattr(token_cache, "_SOURCES", token_cache._SOURCES[:2])
    try:
        assert token_cache.stream_key(["a dog"]) != before
    finally:
        token_cache.tokenizer_key.cache_clear()


@pytest.mark.parametrize("damage", ["truncate", "flip", "count", "format", "empty"])
def test_a_damaged_file_is_rebuilt_with_a_warning(cache, monkeypatch, damage):
    monkeypatch.setattr(token_cache, "MIN_CAPTIONS", 2)
    stream = ["A man rides a horse.", "Two dogs play.", "A cat sleeps on a mat."]
    expected = token_cache.ptb_tokens(stream)
    path, = _files(cache)
    data = path.read_bytes()
    damaged = {"truncate": data[:-5], "flip": data[:-3] + b"X" + data[-2:],
               "count": data.replace(b" 3 ", b" 2 ", 1), "format": data.replace(b" 1 ", b" 9 ", 1),
               "empty": b""}[damage]
    assert damaged != data
    path.write_bytes(damaged)
    with pytest.warns(CacheWarning, match="rebuilt tokenised references"):
        assert token_cache.ptb_tokens(stream) == expected
    assert path.read_bytes() == data                            # rewritten whole
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert token_cache.ptb_tokens(stream) == expected       # and read without a warning


def test_a_read_only_folder_costs_a_warning(cache, monkeypatch, read_only):
    monkeypatch.setattr(token_cache, "MIN_CAPTIONS", 2)
    read_only(cache)
    stream = ["A man rides a horse.", "Two dogs play."]
    with pytest.warns(CacheWarning, match="cannot write"):
        assert token_cache.ptb_tokens(stream) == ptb_tokenize(stream)
    assert not _files(cache)


def test_off_by_environment_or_argument_and_for_short_streams(cache, karpathy, monkeypatch):
    cands, refs = karpathy
    prepare(cands, refs, token_cache=False)
    monkeypatch.setenv(token_cache.ENV, "off")
    prepare(cands, refs)
    monkeypatch.delenv(token_cache.ENV)
    few = dict(list(refs.items())[:100])                         # 500 references
    prepare({i: cands[i] for i in few}, few)
    prepare(cands, refs, tokenizer="split")
    assert not cache.exists()
    prepare(cands, refs)
    assert len(_files(cache)) == 1


def test_the_folder_is_bounded_least_recently_used_first(cache, monkeypatch):
    monkeypatch.setattr(token_cache, "MIN_CAPTIONS", 1)
    streams = [[f"caption number {i}"] for i in range(6)]
    for i, stream in enumerate(streams):
        token_cache.ptb_tokens(stream)
        os.utime(_newest(cache), (1_000 + i, 1_000 + i))          # written in this order
    token_cache.ptb_tokens(streams[0])                          # read: now the most recent
    paths = {i: cache / f"ptb-{token_cache.stream_key(s)}.txt" for i, s in enumerate(streams)}
    deleted = token_cache.prune(paths[5], max_files=3)
    assert set(deleted) == {paths[1], paths[2], paths[3]}
    assert set(_files(cache)) == {paths[0], paths[4], paths[5]}
    size = paths[0].stat().st_size
    assert token_cache.prune(paths[5], max_bytes=2 * size) == [paths[4]]
    assert set(_files(cache)) == {paths[0], paths[5]}
    assert token_cache.prune(paths[5], max_files=0) == [paths[0]]   # never the one written
    assert _files(cache) == [paths[5]]


def _newest(cache):
    return max(_files(cache), key=lambda p: p.stat().st_mtime_ns)
