"""capkit.models.feature_cache: per-text entries, keys, damaged packs, read-only folders, merging,
concurrent writers."""
from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from capkit.cache_files import CacheWarning
from capkit.models import feature_cache as fc
from capkit.models.feature_cache import FeatureCache, cache_dir, checksum, resolve_cache, text_key
from capkit.models.presets import load_model
from capkit.models.text_encoders import encode_tokens

REPO = Path(__file__).resolve().parents[1]
TEXTS = ["A dog runs on the grass.", "Two men play football in a muddy field near the trees.",
         "a cat", "An orange cat and a grey cat are lying together on a blanket."]


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CAPKIT_CACHE_DIR", str(tmp_path / "cache"))


class Counter:
    """A ``compute`` for ``get_or_compute_items`` that records the rows it was asked for."""

    def __init__(self, keys):
        self.keys, self.calls = keys, []

    def __call__(self, rows):
        self.calls.append([self.keys[r] for r in rows])
        return [{"x": np.full((len(self.keys[r]), 3), len(self.keys[r]), np.float32),
                 "n": np.array([r])} for r in rows]

    @property
    def computed(self):
        return [k for call in self.calls for k in call]


def packs(cache: FeatureCache) -> list[Path]:
    return sorted(cache.root.rglob("*.npz"))


def test_cache_folder_comes_from_the_environment(tmp_path):
    assert cache_dir() == tmp_path / "cache"
    assert FeatureCache().root == tmp_path / "cache" / "features"
    assert resolve_cache(False) is None and resolve_cache(None) is None
    assert resolve_cache(True).root == tmp_path / "cache" / "features"
    assert resolve_cache(tmp_path / "x").root == tmp_path / "x" / "features"
    with pytest.raises(ValueError, match="cache must be"):
        resolve_cache(3)


def test_cache_computes_once_and_keys_on_signature_kind_and_input(tmp_path):
    cache, calls = FeatureCache(tmp_path), []

    def compute():
        calls.append(1)
        return {"x": np.arange(3.0), "scalar": np.float64(2.0)}

    key = checksum(["a", "b"])
    for _ in range(2):
        got = cache.get_or_compute("m", "k", key, compute)
        np.testing.assert_array_equal(got["x"], np.arange(3.0))
        assert got["scalar"].shape == () and got["scalar"] == 2.0
    assert len(calls) == 1
    cache.get_or_compute("m2", "k", key, compute)
    cache.get_or_compute("m", "k2", key, compute)
    cache.get_or_compute("m", "k", checksum(["ab"]), compute)
    assert len(calls) == 4 and checksum(["a", "b"]) != checksum(["ab"])
    assert cache.clear() == 4 and packs(cache) == []


def test_entries_are_per_item_and_found_in_any_order(tmp_path):
    cache, keys = FeatureCache(tmp_path), ["aa", "b", "cccc", "b"]
    first = Counter(keys)
    got = cache.get_or_compute_items("m", "k", keys, first)
    assert first.calls == [["aa", "b", "cccc"]]                    # a repeated key once
    assert [g["x"].shape for g in got] == [(2, 3), (1, 3), (4, 3), (1, 3)]
    again = Counter(keys[::-1])
    assert [g["x"].shape for g in cache.get_or_compute_items("m", "k", keys[::-1], again)] == \
        [(1, 3), (4, 3), (1, 3), (2, 3)]
    assert again.calls == [] and len(packs(cache)) == 1


def test_two_benchmarks_sharing_texts_share_entries(tmp_path, monkeypatch):
    """Flickr8k-Expert and -CF share 4,993 texts: the second encodes only what the first did not."""
    enc, cache = load_model("tiny-bert"), FeatureCache(tmp_path)
    encoded = []
    real = enc.token_states

    def spy(texts, *args, **kwargs):
        encoded.extend(texts)
        return real(texts, *args, **kwargs)
    monkeypatch.setattr(enc, "token_states", spy)
    expert, cf = TEXTS[:3], TEXTS[1:]
    a = encode_tokens(enc, expert, 2, cache=cache)
    b = encode_tokens(enc, cf, 2, cache=cache)
    assert encoded == expert + [TEXTS[3]]
    for text in TEXTS[1:3]:                                # the shared texts: the same states
        np.testing.assert_array_equal(a[expert.index(text)][1], b[cf.index(text)][1])
    fresh = real(cf, 2)
    np.testing.assert_allclose(b.states, fresh.states, atol=1e-5)
    np.testing.assert_array_equal(b.ids, fresh.ids)
    np.testing.assert_array_equal(b.offsets, fresh.offsets)


def test_encode_tokens_reads_back_from_the_cache(tmp_path):
    enc, cache = load_model("tiny-bert"), FeatureCache(tmp_path)
    texts = TEXTS + TEXTS[:2]
    first = encode_tokens(enc, texts, 2, cache=cache)
    assert len(packs(cache)) == 1
    second = encode_tokens(enc, texts, 2, cache=cache)
    np.testing.assert_array_equal(first.states, second.states)
    np.testing.assert_array_equal(first[4][1], first[0][1])     # repeats share one encoding
    assert len(encode_tokens(enc, [], 2, cache=cache)) == 0


def test_keys_hold_revision_and_library_versions(tmp_path, monkeypatch):
    from importlib.metadata import version
    cache, keys = FeatureCache(tmp_path), ["t1", "t2"]
    text = cache.key_text("m", "k", "abc123")
    assert f"torch={version('torch')}" in text and f"transformers={version('transformers')}" \
        in text and "revision=abc123" in text
    counter = Counter(keys)
    cache.get_or_compute_items("m", "k", keys, counter, revision="abc123")
    cache.get_or_compute_items("m", "k", keys, counter, revision="abc123")
    assert len(counter.calls) == 1
    cache.get_or_compute_items("m", "k", keys, counter, revision="def456")      # new weights
    assert len(counter.calls) == 2
    monkeypatch.setattr(fc, "runtime_versions", lambda: "torch=99.0|transformers=99.0")
    cache.get_or_compute_items("m", "k", keys, counter, revision="abc123")      # an upgrade
    assert len(counter.calls) == 3


def test_an_encoders_revision_comes_from_its_config():
    enc = load_model("tiny-bert")
    assert fc.model_revision(enc) is None
    enc.model.config._commit_hash = "0123456789abcdef"
    try:
        assert fc.model_revision(enc) == "0123456789abcdef"
    finally:
        enc.model.config._commit_hash = None
    assert fc.model_revision(object()) is None


def _damage(path: Path, how: str) -> None:
    data = path.read_bytes()
    if how == "empty":
        path.write_bytes(b"")
    elif how == "garbage":
        path.write_bytes(b"not a zip at all " * 10)
    elif how == "truncated":
        path.write_bytes(data[:len(data) // 2])
    elif how == "npy":                      # a valid numpy file of the wrong kind
        np.save(path.with_suffix(".tmp.npy"), np.arange(3))
        path.with_suffix(".tmp.npy").replace(path)
    elif how == "other npz":
        with open(path, "wb") as f:
            np.savez(f, x=np.arange(3))
    elif how == "same size, other bytes":   # the zip opens; only the members' CRC-32 sees it
        at = data.index(np.full(5, len("t1"), np.float32).tobytes())   # inside the "x" rows
        path.write_bytes(data[:at] + np.float32(123.0).tobytes() + data[at + 4:])


@pytest.mark.parametrize("how", ["empty", "garbage", "truncated", "npy", "other npz",
                                 "same size, other bytes"])
def test_a_damaged_entry_is_rebuilt_with_one_warning_naming_it(tmp_path, how):
    cache, keys = FeatureCache(tmp_path), ["t1", "t2", "t3"]
    counter = Counter(keys)
    expected = cache.get_or_compute_items("m", "k", keys, counter)
    [pack] = packs(cache)
    _damage(pack, how)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = cache.get_or_compute_items("m", "k", keys, counter)
    assert [w.category for w in caught] == [CacheWarning], [str(w.message) for w in caught]
    assert str(pack) in str(caught[0].message) and "could not be read" in str(caught[0].message)
    assert counter.calls == [keys, keys]
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(g["x"], e["x"])
    assert 123.0 not in np.concatenate([g["x"].ravel() for g in got])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cache.get_or_compute_items("m", "k", keys, counter)
    assert caught == [] and len(counter.calls) == 2 and len(packs(cache)) == 1


def test_an_interrupted_write_leaves_no_entry_and_no_temp_file(tmp_path, monkeypatch):
    cache = FeatureCache(tmp_path)

    def broken_savez(f, **arrays):
        f.write(b"PK\x03\x04 half a zip")
        raise KeyboardInterrupt

    monkeypatch.setattr(np, "savez", broken_savez)
    with pytest.raises(KeyboardInterrupt):
        cache.get_or_compute("m", "k", "c", lambda: {"x": np.zeros(2)})
    left = [p.name for p in cache.root.rglob("*") if p.is_file()]
    assert [n for n in left if not n.endswith(".lock")] == []


def test_a_read_only_cache_folder_computes_in_memory_with_one_warning(tmp_path, read_only):
    keys = ["t1", "t2"]
    cache = FeatureCache(read_only(tmp_path / "ro"))
    counter = Counter(keys)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = cache.get_or_compute_items("m", "k", keys, counter)
    assert [w.category for w in caught] == [CacheWarning]
    message = str(caught[0].message)
    assert "cannot write its cache" in message and "CAPKIT_CACHE_DIR" in message
    assert [g["x"].shape for g in got] == [(2, 3), (2, 3)] and counter.calls == [keys]
    assert not cache.root.exists()


def test_a_read_only_cache_is_still_read(tmp_path, read_only):
    keys = ["t1", "t2"]
    cache = FeatureCache(tmp_path / "shared")
    counter = Counter(keys + ["t3"])       # rows index the keys of each call: t3 comes last
    cache.get_or_compute_items("m", "k", keys, counter)
    read_only(cache.root)
    read_only(cache.folder("m", "k"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cache.get_or_compute_items("m", "k", keys, counter)             # all found: silent
        assert caught == [] and len(counter.calls) == 1
        cache.get_or_compute_items("m", "k", keys + ["t3"], counter)    # a miss: one warning
    assert [w.category for w in caught] == [CacheWarning] and counter.calls[-1] == ["t3"]


def test_many_small_calls_are_merged_into_few_packs(tmp_path, monkeypatch):
    monkeypatch.setattr(fc, "MAX_PACKS", 4)
    monkeypatch.setattr(fc, "MERGE", 3)
    cache, keys = FeatureCache(tmp_path), [f"t{i}" for i in range(12)]
    counter = Counter(keys)
    for i in range(len(keys)):
        cache.get_or_compute_items("m", "k", keys[i:i + 1], Counter(keys[i:i + 1]))
        assert len(packs(cache)) <= 4
    got = cache.get_or_compute_items("m", "k", keys, counter)
    assert counter.calls == [] and [g["x"].shape[0] for g in got] == [len(k) for k in keys]


_WRITER = """
import sys, numpy as np
from capkit.models import feature_cache as fc
fc.MAX_PACKS, fc.MERGE = 3, 2
cache, me = fc.FeatureCache(sys.argv[1]), int(sys.argv[2])
for start in range(0, 40, 4):   # overlapping batches: every key is written by several processes
    keys = [f"t{(start + me + j) % 40}" for j in range(6)]
    got = cache.get_or_compute_items("m", "k", keys, lambda rows: [
        {"x": np.full(3, int(keys[r][1:]), np.float32)} for r in rows])
    assert [int(g["x"][0]) for g in got] == [int(k[1:]) for k in keys]
"""


def test_processes_writing_one_namespace_at_once(tmp_path):
    procs = [subprocess.Popen([sys.executable, "-W", "error::UserWarning", "-c", _WRITER,
                               str(tmp_path), str(i)], cwd=REPO, stderr=subprocess.PIPE,
                              text=True) for i in range(4)]
    errors = [p.communicate(timeout=300)[1] for p in procs]
    assert [p.returncode for p in procs] == [0] * 4, errors
    cache, keys = FeatureCache(tmp_path), [f"t{i}" for i in range(40)]
    counter = Counter(keys)
    got = cache.get_or_compute_items("m", "k", keys, counter)
    assert counter.calls == [] and [int(g["x"][0]) for g in got] == list(range(40))


def test_text_keys_are_content_hashes():
    assert text_key("a cat") == text_key("a cat") != text_key("a cat ")
    assert len(text_key("")) == 64
