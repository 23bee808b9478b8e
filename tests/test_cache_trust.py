"""No file that someone else can write may change a score (capkit.cache_trust, applied by
capkit.cache_files: "Only your own files"): every cache that feeds a score is read only from a place that only the current user can
write, and a crafted file under the right name, with a valid format, changes nothing.

Tests run as root here, and root ignores permission bits: so they test the ownership and mode
decision (another owner is played by making ``os.geteuid`` return another id, or by a group- or
other-writable mode), never an EACCES.
"""
from __future__ import annotations

import json
import os
import resource
import stat
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from capkit import cache_files
from capkit.cache_files import CacheWarning, cache_dir, read_or_rebuild, write_atomic
from capkit.cache_trust import make_private_folder, ownership_problem, trust_problem
from capkit.models.feature_cache import FeatureCache
from tests.test_meteor import mini_meteor  # noqa: F401 (the fixture: a tiny METEOR folder)

ROOT = Path(__file__).resolve().parents[1]


def record(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = fn()
    return value, [w for w in caught if issubclass(w.category, CacheWarning)]


@pytest.fixture
def someone_else(monkeypatch):
    """Every existing file now belongs to another user (this process runs as user id 4242)."""
    monkeypatch.setattr(os, "geteuid", lambda: 4242)


# ---- the decision ---------------------------------------------------------------------------
@pytest.mark.parametrize("owner, mode, user, why", [
    (1000, 0o40700, 1000, None),
    (1000, 0o100644, 1000, None),
    (1000, 0o40755, 1000, None),
    (0, 0o100644, 0, None),
    (1001, 0o100644, 1000, "owned by user id 1001, not by you (user id 1000)"),
    (1000, 0o100644, 0, "owned by user id 1000, not by you (user id 0)"),   # root is no exception
    (1000, 0o100664, 1000, "group or others can write it (mode -rw-rw-r--)"),
    (1000, 0o40757, 1000, "group or others can write it (mode drwxr-xrwx)"),
    (1000, 0o41777, 1000, "group or others can write it"),                   # /tmp's mode
])
def test_only_the_users_own_unwritable_by_others_files_are_trusted(owner, mode, user, why):
    problem = ownership_problem(owner, mode, user)
    assert (problem is None) if why is None else why in problem


def test_every_folder_from_the_cache_folder_down_is_checked(tmp_path):
    root = make_private_folder(tmp_path / "cache" / "meteor", tmp_path / "cache").parent
    file = root / "meteor" / "x.npz"
    file.write_bytes(b"x")
    os.chmod(file, 0o644)
    assert trust_problem(file, root) is None
    assert trust_problem(root / "meteor" / "missing" / "y", root) is None   # made private later
    for place in (root, root / "meteor", file):
        mode = place.stat().st_mode
        os.chmod(place, mode | stat.S_IWOTH)
        assert trust_problem(file, root).startswith(f"{place}: group or others can write it")
        os.chmod(place, mode)
    with pytest.raises(ValueError, match="not inside the cache folder"):
        trust_problem(tmp_path / "elsewhere", root)


def test_another_users_cache_folder_is_not_trusted(tmp_path, someone_else):
    (tmp_path / "c").mkdir()
    assert "not by you (user id 4242)" in trust_problem(tmp_path / "c" / "f", tmp_path / "c")


def test_cache_folders_are_made_private_and_files_never_writable_by_others(tmp_path):
    old = os.umask(0o002)           # a user-private-group umask: files would be group-writable
    try:
        folder = make_private_folder(tmp_path / "root" / "a" / "b", tmp_path / "root")
        path = write_atomic(folder / "f.bin", lambda f: f.write(b"data"))
    finally:
        os.umask(old)
    for place in (tmp_path / "root", tmp_path / "root" / "a", folder):
        assert stat.S_IMODE(place.stat().st_mode) == 0o700, place
    assert stat.S_IMODE(path.stat().st_mode) & 0o022 == 0
    assert trust_problem(path, tmp_path / "root") is None


def test_the_default_cache_folder_is_the_platforms(monkeypatch, tmp_path):
    monkeypatch.delenv("CAPKIT_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    if sys.platform.startswith("linux"):
        assert cache_dir() == tmp_path / "xdg" / "capkit"
    monkeypatch.setenv("CAPKIT_CACHE_DIR", str(tmp_path / "mine"))
    assert cache_dir() == tmp_path / "mine"


# ---- read_or_rebuild (METEOR's resources) ---------------------------------------------------
def _json_cache(tmp_path, builds):
    path = tmp_path / "cache" / "t" / "v.json"

    def build():
        builds.append(1)
        return {"answer": 42}

    return lambda: read_or_rebuild(path, lambda p: json.loads(p.read_text()), build,
                                   lambda f, v: f.write(json.dumps(v).encode()), what="answers",
                                   root=tmp_path / "cache"), path


def test_a_planted_file_others_can_write_is_not_read(tmp_path):
    builds: list = []
    get, path = _json_cache(tmp_path, builds)
    assert get() == {"answer": 42} and len(builds) == 1
    path.write_text(json.dumps({"answer": 13}))         # valid format, under the right name
    os.chmod(path, 0o666)
    value, caught = record(get)
    assert value == {"answer": 42} and len(builds) == 2
    assert len(caught) == 1 and "anyone who can write there could change your scores" in \
        str(caught[0].message) and str(path) in str(caught[0].message)
    assert json.loads(path.read_text()) == {"answer": 13}   # neither read nor replaced


def test_a_cache_folder_of_another_user_is_neither_read_nor_written(tmp_path, monkeypatch):
    builds: list = []
    get, path = _json_cache(tmp_path, builds)
    get()
    path.write_text(json.dumps({"answer": 13}))
    monkeypatch.setattr(os, "geteuid", lambda: 4242)
    value, caught = record(get)
    assert value == {"answer": 42} and len(caught) == 1 and "not by you" in str(caught[0].message)
    assert json.loads(path.read_text()) == {"answer": 13}


def test_meteor_ignores_planted_resources(mini_meteor):
    """A crafted resources file (a valid .npz of another vocabulary) under the cache file's name,
    in a folder others can write: METEOR scores as with the true resources, one warning."""
    import importlib

    from capkit.metrics.meteor import meteor
    from capkit.metrics.meteor import resources as R
    meteor_module = importlib.import_module("capkit.metrics.meteor")
    folder = mini_meteor
    cands, refs = ["a puppy sat on the mat"], [["a dog sat on the mat"]]
    R.load_resources.cache_clear()
    meteor_module.lexicon.cache_clear()
    want = meteor(cands, refs, meteor_dir=str(folder)).per_caption
    path = R._cache_path(*R.meteor_files(str(folder)))
    with np.load(path) as z:
        arrays = dict(z)
    arrays["par_hash"] = np.zeros_like(arrays["par_hash"])     # no paraphrase found any more
    write_atomic(path, lambda f: np.savez(f, **arrays))

    def score():
        R.load_resources.cache_clear()
        meteor_module.lexicon.cache_clear()
        return record(lambda: meteor(cands, refs, meteor_dir=str(folder)).per_caption)

    planted, caught = score()            # your own file is trusted: the plant would matter
    assert caught == [] and planted[0] < want[0]
    os.chmod(path.parent, 0o777)         # ... but here others could have written it
    got, caught = score()
    R.load_resources.cache_clear()
    meteor_module.lexicon.cache_clear()
    np.testing.assert_array_equal(got, want)
    assert len(caught) == 1 and str(path.parent) in str(caught[0].message)


# ---- the feature cache (BERTScore, CLIPScore and the learned metrics' encoders) -------------
class Counter:
    def __init__(self, keys):
        self.keys, self.calls = keys, []

    def __call__(self, rows):
        self.calls.append([self.keys[r] for r in rows])
        return [{"x": np.full((2, 3), float(r + 1))} for r in rows]


def _plant(cache: FeatureCache, value: float) -> Path:
    """Every pack's arrays replaced by ``value``, under the same names: a valid, crafted pack."""
    [folder] = [p for p in cache.root.iterdir() if p.is_dir()]
    packs = sorted(folder.glob("*.npz"))
    for pack in packs:
        with np.load(pack) as z:
            arrays = dict(z)
        arrays = {k: (np.full_like(v, value) if v.dtype.kind == "f" else v) for k, v in arrays.items()}
        write_atomic(pack, lambda f, a=arrays: np.savez(f, **a))
    return folder


def test_a_planted_feature_pack_is_not_read(tmp_path):
    keys = ["t1", "t2"]
    cache = FeatureCache(tmp_path / "c")
    want = cache.get_or_compute_items("m", "k", keys, Counter(keys))
    folder = _plant(cache, -7.0)
    pack = next(folder.glob("*.npz"))
    os.chmod(pack, 0o666)                       # a file others can write, in your folder
    counter = Counter(keys)
    got, caught = record(lambda: cache.get_or_compute_items("m", "k", keys, counter))
    assert counter.calls == [keys] and all((g["x"] == w["x"]).all() for g, w in zip(got, want))
    assert len(caught) == 1 and "group or others can write it" in str(caught[0].message)
    # deleted, and the recomputed pack (the same name: named by its keys) is yours
    assert stat.S_IMODE(pack.stat().st_mode) & 0o022 == 0
    assert cache.get_or_compute_items("m", "k", keys, counter)[0]["x"][0, 0] == 1.0
    assert len(counter.calls) == 1


def test_a_feature_cache_of_another_user_is_not_used(tmp_path, monkeypatch):
    keys = ["t1", "t2"]
    cache = FeatureCache(tmp_path / "c")
    cache.get_or_compute_items("m", "k", keys, Counter(keys))
    folder = _plant(cache, -7.0)
    monkeypatch.setattr(os, "geteuid", lambda: 4242)
    counter = Counter(keys + ["t3"])
    got, caught = record(lambda: cache.get_or_compute_items("m", "k", keys + ["t3"], counter))
    assert counter.calls == [keys + ["t3"]] and got[0]["x"][0, 0] == 1.0
    assert len(caught) == 1 and "not by you" in str(caught[0].message)
    assert len(list(folder.glob("*.npz"))) == 1  # nothing written there


def test_bertscore_is_unchanged_by_planted_features(tmp_path):
    from capkit.metrics import bertscore
    cands, refs = ["a dog runs on the grass"], [["a brown dog runs outside", "a dog on grass"]]
    want = bertscore(cands, refs, cache=tmp_path / "c").per_caption
    _plant(FeatureCache(tmp_path / "c"), 0.5)
    os.chmod(tmp_path / "c", 0o777)              # the cache folder itself: others can write
    got, caught = record(lambda: bertscore(cands, refs, cache=tmp_path / "c").per_caption)
    np.testing.assert_array_equal(got, want)
    assert caught and "could change your scores" in str(caught[0].message)


# ---- the official SPICE's parse cache and CoreNLP jars ---------------------------------------
def test_spice_parse_cache_and_jars_must_be_the_users_own(tmp_path, monkeypatch):
    from capkit.metrics.spice import official
    root = tmp_path / "cache"
    folder = official.parse_cache(root / "spice" / "parse-cache", root)
    assert folder is not None and stat.S_IMODE(root.stat().st_mode) == 0o700
    os.chmod(folder, 0o777)
    got, caught = record(lambda: official.parse_cache(folder, root))
    assert got is None and len(caught) == 1
    monkeypatch.setenv("CAPKIT_CACHE_DIR", str(root))
    monkeypatch.delenv(official.CORENLP_ENV, raising=False)
    jars_dir = official.corenlp_dir()
    jars_dir.mkdir(parents=True)
    for name in official.CORENLP_JARS:
        (jars_dir / name).write_bytes(b"PK")
    assert official.find_corenlp()[0].parent == jars_dir
    os.chmod(jars_dir / official.CORENLP_JARS[0], 0o666)
    with pytest.raises(PermissionError, match="could run code as you"):
        official.find_corenlp()


# ---- capkit score as a process ---------------------------------------------------------------
def test_score_runs_in_300_mb_of_address_space_with_a_cache_folder_it_cannot_make(tmp_path):
    cands = {str(i): f"a dog number {i} runs on the grass" for i in range(300)}
    refs = {str(i): [f"a dog runs across the grass {i}", "a brown dog outside"] for i in range(300)}
    (tmp_path / "c.json").write_text(json.dumps(cands))
    (tmp_path / "r.json").write_text(json.dumps(refs))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CAPKIT_CACHE_DIR": "/dev/null/cache"}

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (300_000 * 1024, 300_000 * 1024))

    done = subprocess.run([sys.executable, "-m", "capkit", "score", "--candidates",
                           str(tmp_path / "c.json"), "--references", str(tmp_path / "r.json"),
                           "--metrics", "bleu_4,rouge_l,cider_d", "--format", "json"],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120,
                          preexec_fn=limit)
    assert done.returncode == 0, done.stderr[-2000:]
    from capkit.metrics import score
    lib = score(cands, refs, ["bleu_4", "rouge_l", "cider_d"])
    out = json.loads(done.stdout)["metrics"]
    for name, s in lib.items():
        assert out[name]["corpus"] == pytest.approx(s.corpus, abs=1e-12)


def test_nothing_of_the_removed_speed_machinery_remains():
    for name in ("text/pattern_cache.py", "commands/tokenize_ahead.py", "commands/huge_pages.py",
                 "text/ptb_cache.py", "metrics/token_cache.py"):
        assert not (ROOT / "capkit" / name).exists(), name
    words = ("_sre", "re._compiler", "mallopt", "os.fork", "os._exit", "atexit._run_exitfuncs")
    for path in (ROOT / "capkit").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert not [w for w in words if w in text], path
    assert cache_files.__doc__ and "Only your own files" in cache_files.__doc__


def test_the_default_data_folder_is_in_the_platforms_cache_folder(monkeypatch, tmp_path):
    from capkit.data.paths import data_dir
    monkeypatch.delenv("CAPKIT_DATA_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    if sys.platform.startswith("linux"):
        assert data_dir() == tmp_path / "xdg" / "capkit" / "data"
    monkeypatch.setenv("CAPKIT_DATA_DIR", str(tmp_path / "shared"))
    assert data_dir() == tmp_path / "shared" and data_dir(tmp_path / "x") == tmp_path / "x"
