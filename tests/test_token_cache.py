"""capkit.metrics.token_cache: the PTB tokens of a reference stream, kept on disk between runs.

The cached tokens must be the tokenizer's own (checked on the real COCO Karpathy-test
references), a changed stream must never read another's file, a damaged file is rebuilt with a
warning, a folder that cannot be written costs a warning and nothing else, and the folder stays
bounded."""
from __future__ import annotations

import os
import warnings

import numpy as np
import pytest

from capkit.cache_files import CacheWarning
from capkit.metrics import token_cache
from capkit.metrics.inputs import prepare
from capkit.metrics.ngrams import encode_flat, join_encoded
from capkit.text import ptb_cache, ptb_tokenize


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CAPKIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv(ptb_cache.ENV, raising=False)
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


def _tokens(stream):
    """The stream's tokens as ``prepare`` gets them: read from the cache, or made and saved."""
    entry = token_cache.lookup(stream)
    if entry is not None and entry.text is not None:
        return entry.text
    text = ptb_tokenize(stream)
    if entry is not None:
        entry.save(text, None)
    return text


def _no_tokenizing(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("tokenised again: the cache was not read")
    import capkit.metrics.inputs as inputs
    import capkit.metrics.ngrams as ngrams
    import capkit.text as text
    monkeypatch.setattr(text, "ptb_tokenize", refuse)
    monkeypatch.setattr(inputs, "encode_flat", refuse)
    monkeypatch.setattr(ngrams, "encode_flat", refuse)


def test_a_second_run_reads_the_tokens_and_ids(cache, karpathy, monkeypatch):
    cands, refs = karpathy
    stream = _stream(refs)
    off = prepare(cands, refs, token_cache=False)
    prepare(cands, refs)                                        # written
    path, = _files(cache)
    entry = token_cache.lookup(stream)
    assert entry.path == path and entry.text == ptb_tokenize(stream)
    alone = encode_flat([t for line in entry.text for t in line.split()],
                        np.array([len(line.split()) for line in entry.text]))
    assert entry.encoding.vocab == alone.vocab                  # as if encoded alone
    assert (entry.encoding.tokens == alone.tokens).all()
    assert (entry.encoding.starts == alone.starts).all()
    assert (entry.encoding.lengths == alone.lengths).all()
    # the candidates' tokens are still made (the cache holds references only)
    from capkit.metrics.inputs import tokenized_text
    cand_text = tokenized_text(list(cands.values()), "ptb")
    _no_tokenizing(monkeypatch)
    monkeypatch.setattr("capkit.metrics.inputs.tokenized_text",
                        lambda texts, tokenizer, memo=None: cand_text)
    cached = prepare(cands, refs)                               # read back
    assert cached.candidates == off.candidates and cached.references == off.references
    for field in ("tokens", "lengths", "starts"):
        assert (getattr(cached.encoded(), field) == getattr(off.encoded(), field)).all()
    assert cached.encoded().vocab == off.encoded().vocab


def test_join_encoded_numbers_words_as_encode_flat():
    """What ``prepare`` does on every path, first run, repeated run or no cache: the references
    encoded alone, the candidates joined in front, give the ids of encoding them together."""
    cand = [["a", "dog"], ["the", "cat", "a"]]
    ref = [["a", "big", "cat"], ["zebra", "dog"], []]
    ref_flat = [t for r in ref for t in r]
    alone = encode_flat(ref_flat, np.array([len(r) for r in ref]))
    cand_flat = [t for c in cand for t in c]
    joined = join_encoded(cand_flat, np.array([len(c) for c in cand]), alone)
    whole = encode_flat(cand_flat + ref_flat, np.array([len(x) for x in cand + ref]))
    assert joined.vocab == whole.vocab == ["a", "dog", "the", "cat", "big", "zebra"]
    for field in ("tokens", "lengths", "starts"):
        assert (getattr(joined, field) == getattr(whole, field)).all()


def test_join_encoded_on_a_coco_system_equals_encoding_everything_at_once(karpathy):
    cands, refs = karpathy
    cand_text = ptb_tokenize(list(cands.values()))
    cand_flat = " ".join(cand_text).split()
    cand_lengths = np.array([len(t.split()) for t in cand_text])
    ref_text = ptb_tokenize([r for i in cands for r in refs[i]])
    ref_flat = " ".join(ref_text).split()
    ref_lengths = np.array([len(t.split()) for t in ref_text])
    joined = join_encoded(cand_flat, cand_lengths, encode_flat(ref_flat, ref_lengths))
    whole = encode_flat(cand_flat + ref_flat, np.concatenate([cand_lengths, ref_lengths]))
    assert joined.vocab == whole.vocab
    for field in ("tokens", "lengths", "starts"):
        assert (getattr(joined, field) == getattr(whole, field)).all()


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
    os.environ[ptb_cache.ENV] = "0"
    try:
        fresh = score(cands, refs, metrics=names)
    finally:
        del os.environ[ptb_cache.ENV]
    score(cands, refs, metrics=names)                           # writes
    cached = score(cands, refs, metrics=names)                  # reads
    assert _files(cache)
    for name in names:
        assert (cached[name].per_caption == fresh[name].per_caption).all()
        assert cached[name].signature == fresh[name].signature


def test_another_order_or_split_is_another_file(cache, monkeypatch):
    monkeypatch.setattr(ptb_cache, "MIN_CAPTIONS", 2)
    a = ["A man rides a horse.", "A dog.\nA cat", "two birds"]
    b = ["A man rides a horse.", "A dog.", "A cat\ntwo birds"]     # joined, the same text
    assert "\n".join(a) == "\n".join(b)
    assert ptb_cache.stream_key(a) != ptb_cache.stream_key(b)
    assert ptb_cache.stream_key(a) != ptb_cache.stream_key(a[::-1])
    for stream in (a, b, a[::-1]):
        assert _tokens(stream) == ptb_tokenize(stream)
    assert len(_files(cache)) == 3


def test_the_stream_context_is_kept(cache, monkeypatch):
    """The PTB tokenizer reads the stream as one text: "with a t." keeps its period before a
    lower-case line only; the cached tokens are the stream's, not each caption's alone."""
    monkeypatch.setattr(ptb_cache, "MIN_CAPTIONS", 2)
    for stream in (["a man with a t.", "A man runs"], ["a man with a t.", "a man runs"]):
        assert _tokens(stream) == ptb_tokenize(stream)
        assert _tokens(stream) == ptb_tokenize(stream)   # read back
    assert len(_files(cache)) == 2


def test_the_key_names_the_tokenizer_this_process_runs(cache, monkeypatch):
    """Another tokenizer source is another key; and the source is read when the tokenizer is
    imported, so a kernel that imported it before the files changed on disk keys its tokens
    by the code it runs, not by the edited files (which a new process would run)."""
    from pathlib import Path

    from capkit.text import ptb
    before = ptb_cache.stream_key(["a dog"])
    monkeypatch.setattr(Path, "read_bytes", lambda self: b"edited on disk")
    assert ptb_cache.stream_key(["a dog"]) == before
    assert ptb._source_digest() != ptb.SOURCE_DIGEST          # what a new process would see
    monkeypatch.setattr(ptb, "SOURCE_DIGEST", ptb._source_digest())
    assert ptb_cache.stream_key(["a dog"]) != before
    monkeypatch.setattr(ptb, "SOURCE_DIGEST", None)            # sources unreadable: no cache
    assert ptb_cache.stream_key(["a dog"]) is None
    assert token_cache.lookup(["a dog"] * ptb_cache.MIN_CAPTIONS) is None


def _bad_ids(path, stream):
    """A file whose digest is right but whose ids point past its vocabulary."""
    text = ptb_tokenize(stream)
    flat = " ".join(text).split()
    lengths = np.array([len(t.split()) for t in text])
    bad = (["a"], np.full(len(flat), 5).astype("<i4").tobytes(), lengths.astype("<i4").tobytes())
    with open(path, "wb") as f:
        ptb_cache.write(f, text, bad)
    return path.read_bytes()


@pytest.mark.parametrize("damage", ["truncate", "flip", "count", "format", "text_size", "huge",
                                    "empty", "ids"])
def test_a_damaged_file_is_replaced_with_a_warning(cache, monkeypatch, damage):
    """Through ``prepare``, as a run meets it: the warning names the file, the scores' tokens
    are the tokenizer's, and the file is written again whole (ids included)."""
    monkeypatch.setattr(ptb_cache, "MIN_CAPTIONS", 2)
    cands = ["A horse.", "Dogs.", "A cat."]
    refs = [["A man rides a horse."], ["Two dogs play."], ["A cat sleeps on a mat."]]
    stream = _stream(dict(enumerate(refs)))
    expected = prepare(cands, refs, token_cache=False)
    prepare(cands, refs)
    path, = _files(cache)
    data = path.read_bytes()
    header = data.split(b"\n")[0]
    fields = header.split(b" ")

    def with_field(i, value):
        return b" ".join(fields[:i] + [value] + fields[i + 1:]) + data[len(header):]

    def resealed(i, value):            # a changed field under a digest that matches it
        new = fields[:i] + [value] + fields[i + 1:6]
        body = data[len(header) + 1:]
        return b" ".join(new + [ptb_cache.digest(b" ".join(new), body)]) + b"\n" + body
    damaged = {"truncate": data[:-5], "flip": data[:-3] + b"X" + data[-2:],
               "count": with_field(2, b"2"), "format": with_field(1, b"9"),
               "text_size": with_field(3, b"%d" % (int(fields[3]) - 1)),
               "huge": resealed(5, b"99999999999999999999"),
               "empty": b"", "ids": None}[damage]
    if damaged is None:
        damaged = _bad_ids(path, stream)
    assert damaged != data and header.startswith(b"capkit-ptb-tokens 2 3 ")
    path.write_bytes(damaged)
    with pytest.warns(CacheWarning, match="could not be read .* tokenising the references again"):
        batch = prepare(cands, refs)
    assert batch.references == expected.references
    assert (batch.encoded().tokens == expected.encoded().tokens).all()
    assert path.read_bytes() == data                            # written again whole
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert prepare(cands, refs).references == expected.references   # read, no warning


def test_a_files_bytes_depend_on_the_stream_only(cache, monkeypatch):
    """Candidates that are not single-spaced words ("5 1/2" is one token with a no-break
    space) do not keep the references' ids out of the file: every writer writes the same
    bytes, which is why writes take no lock."""
    monkeypatch.setattr(ptb_cache, "MIN_CAPTIONS", 2)
    refs = [["A man rides a horse."], ["Two dogs play."]]
    prepare(["a dog", "5 1/2 cats"], refs)
    path, = _files(cache)
    odd = path.read_bytes()
    path.unlink()
    prepare(["a dog", "a cat"], refs)
    assert path.read_bytes() == odd
    assert token_cache.lookup(_stream(dict(enumerate(refs)))).encoding is not None


def test_lookup_waits_for_an_expected_writer_once_it_knows_the_files_name(cache, monkeypatch):
    """``capkit score``'s child (``commands.tokenize_ahead``) registers its wait with
    ``ptb_cache.expect_writer``: lookup calls it once, after hashing the stream and before
    looking for the file, so a file the writer saves is found; later lookups do not wait."""
    monkeypatch.setattr(ptb_cache, "MIN_CAPTIONS", 2)
    stream = ["A man rides a horse.", "Two dogs play."]
    waits = []

    def writer():                      # what the child does while the parent works
        waits.append(ptb_cache.path_of(stream))
        text = ptb_tokenize(stream)
        ptb_cache.save(waits[-1], text, ptb_cache.encode(text))

    monkeypatch.setattr(ptb_cache, "_writer_wait", None)
    ptb_cache.expect_writer(writer)
    entry = token_cache.lookup(stream)
    assert waits == [entry.path] and entry.text == ["a man rides a horse", "two dogs play"]
    ptb_cache.expect_writer(writer)
    ptb_cache.expect_writer(None)      # (tokenize_ahead.stop: no writer any more)
    assert token_cache.lookup(stream).text is not None and len(waits) == 1


def test_user_token_metrics_get_lists_whatever_the_cache_holds(cache, karpathy):
    """The Scorer hands built-in metrics references split on demand from the cache; a user's
    token metric gets lists on a first run and on a repeated one alike."""
    import json

    from capkit.metrics import MetricSpec, score
    seen = []

    def refs_as_json(batch):
        seen.append(type(batch.references))
        n = json.loads(json.dumps(batch.references))
        return np.array([len(r) for r in n], dtype=float)
    spec = MetricSpec("n_refs_json", refs_as_json, tokens=True, score_range=(0, 100))
    cands, refs = karpathy
    first = score(cands, refs, metrics={"n": spec, "bleu_4": "bleu_4"})
    again = score(cands, refs, metrics={"n": spec, "bleu_4": "bleu_4"})
    assert seen == [list, list] and first["n"] == again["n"]
    assert first["bleu_4"] == again["bleu_4"]
    assert isinstance(prepare(cands, refs).references, list)         # read from the cache
    lazy = prepare(cands, refs, lazy_references=True)
    assert not isinstance(lazy.references, list) and lazy.references == prepare(
        cands, refs, token_cache=False).references
    assert isinstance(lazy.with_lists().references, list)


def test_a_read_only_folder_costs_a_warning(cache, monkeypatch, read_only):
    monkeypatch.setattr(ptb_cache, "MIN_CAPTIONS", 2)
    read_only(cache)
    stream = ["A man rides a horse.", "Two dogs play."]
    with pytest.warns(CacheWarning, match="cannot write its cache"):
        assert _tokens(stream) == ptb_tokenize(stream)
    assert not _files(cache)


_SCORE_AND_SAVE = """
import sys
from capkit.data import load
from capkit.metrics import score
corpus = load("coco_karpathy_test")
cands = corpus.systems[sys.argv[1]]
refs = {i: corpus.references[i] for i in cands}
print(score(cands, refs, metrics=["cider_d"])["cider_d"].corpus)
"""


def test_processes_that_miss_at_once_write_one_whole_file(cache, karpathy):
    """No lock: each process tokenises and writes the same bytes atomically; every one scores
    right, and the file left is whole and read by the next run without a warning."""
    import subprocess
    import sys
    from pathlib import Path

    from capkit.metrics import score
    cands, refs = karpathy
    procs = [subprocess.Popen([sys.executable, "-W", "error", "-c", _SCORE_AND_SAVE,
                               "updown_paddle"], cwd=Path(__file__).resolve().parents[1],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(3)]
    outputs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [err[-2000:] for _, err in outputs]
    assert len({out for out, _ in outputs}) == 1
    path, = _files(cache)
    assert not [p for p in cache.iterdir() if p.name.startswith(".")]   # no temporary file left
    entry = token_cache.lookup(_stream(refs))
    assert entry.path == path and entry.text == ptb_tokenize(_stream(refs))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cached = score(cands, refs, metrics=["cider_d"])["cider_d"].corpus
    assert float(outputs[0][0]) == cached


def test_off_by_environment_or_argument_and_for_short_streams(cache, karpathy, monkeypatch):
    cands, refs = karpathy
    prepare(cands, refs, token_cache=False)
    monkeypatch.setenv(ptb_cache.ENV, "off")
    prepare(cands, refs)
    monkeypatch.delenv(ptb_cache.ENV)
    few = dict(list(refs.items())[:100])                         # 500 references
    prepare({i: cands[i] for i in few}, few)
    prepare(cands, refs, tokenizer="split")
    assert not cache.exists()
    prepare(cands, refs)
    assert len(_files(cache)) == 1


def test_the_folder_is_bounded_least_recently_used_first(cache, monkeypatch):
    monkeypatch.setattr(ptb_cache, "MIN_CAPTIONS", 1)
    streams = [[f"caption number {i}"] for i in range(6)]
    for i, stream in enumerate(streams):
        _tokens(stream)
        os.utime(_newest(cache), (1_000 + i, 1_000 + i))          # written in this order
    _tokens(streams[0])                          # read: now the most recent
    paths = {i: cache / f"ptb-{ptb_cache.stream_key(s)}.txt" for i, s in enumerate(streams)}
    deleted = ptb_cache.prune(paths[5], max_files=3)
    assert set(deleted) == {paths[1], paths[2], paths[3]}
    assert set(_files(cache)) == {paths[0], paths[4], paths[5]}
    size = paths[0].stat().st_size
    assert ptb_cache.prune(paths[5], max_bytes=2 * size) == [paths[4]]
    assert set(_files(cache)) == {paths[0], paths[5]}
    assert ptb_cache.prune(paths[5], max_files=0) == [paths[0]]   # never the one written
    assert _files(cache) == [paths[5]]


def _newest(cache):
    return max(_files(cache), key=lambda p: p.stat().st_mtime_ns)


def test_prune_removes_temporary_files_of_killed_writers_only_when_old(cache, monkeypatch):
    monkeypatch.setattr(ptb_cache, "MIN_CAPTIONS", 1)
    _tokens(["a first stream"])
    written, = _files(cache)
    old, fresh = cache / f".{written.name}.tmp-old123", cache / f".{written.name}.tmp-new456"
    for p in (old, fresh):
        p.write_bytes(b"half a file")
    os.utime(old, (1_000, 1_000))                      # a writer killed long ago
    assert ptb_cache.prune(written) == [old]
    assert fresh.exists() and written.exists()
