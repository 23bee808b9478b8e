"""METEOR 1.5 without Java: its parts against the jar's, the whole against pycocoevalcap 1.2.

Expected values in this file were produced by meteor-1.5.jar (pycocoevalcap 1.2) itself. The
full parity test (9 COCO Karpathy-test systems) is marked slow; Java tests skip without Java
(reason "java:", tests/skip_policy.py); a missing pycocoevalcap or a wrong snowballstemmer fails.
The first test that needs the resources builds capkit's binary cache (~30 s, once a machine).
"""
import gzip
import subprocess
import sys
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from capkit.metrics.meteor.metric import (STATS, corpus_stats, lexicon, meteor, meteor_from_stats,
                                   python_meteor_stats)
from capkit.metrics.meteor.normalize import english_stemmer, java_hash, normalize_line
from skip_policy import needs_java


# (caption, references, score from meteor-1.5.jar -stdio -l en -norm)
JAR_SCORES = [
    ("a man riding a horse on the beach", ["a person rides a horse along the shore", "a dog"],
     0.394106507048595),
    ("two dogs are playing in the snow", ["a couple of dogs play in snow",
                                          "dogs running through snow"], 0.4123877794862508),
    ("a kitchen with a stove and a sink",
     ["a small kitchen has a sink a stove and a refrigerator"], 0.3020510730259522),
    ("a group of people standing around a table",
     ["several persons stand near a table", "people gathered at a desk"], 0.22971585531279243),
    ("the cat sat on the mat", ["the cat sat on the mat"], 1.0),
]


@pytest.fixture(scope="module")
def lex():
    return lexicon()


# ---------------------------------------------------------------- parts of the jar, one by one

@pytest.mark.parametrize("text, expected", [
    ("Hello, world U.S. -- it's 1990's dog's ... Mr. Smith ''quoted'' e.g. a-b",
     "hello , world us - it 's 1990 's dog 's ... mr. smith \" quoted \" eg a b"),
    ("The U.S.-based firm, No. 5 and no. five", "the us based firm , no. 5 and no. five"),
    ("it\u2019s \u201cfine\u201d \u2014 ok \u2013 yes", "it 's \" fine \" \u2014 ok - yes"),
    ("a man 's hat , 3,000 dogs .", "a man ' s hat , 3,000 dogs ."),
    ("e.g. a cat... DOTMULTI test", "eg a cat ... . test"),
])
def test_normaliser_equals_the_jar(lex, text, expected):
    assert normalize_line(text, lex.res.nonbreaking).lower() == expected


def test_java_hash_codes():
    assert java_hash("hello") == 99162322
    assert java_hash("Aa") == java_hash("BB") == 2112          # a real Java collision
    assert java_hash("\u00e9") == 233
    assert java_hash("\U0001F600") == 31 * 0xD83D + 0xDE00     # UTF-16 surrogates
    assert java_hash("hello world this is long") == -693482484  # wraps to signed 32 bits


def test_stemmer_is_the_jars_snowball():
    # Snowball >= 3 stems these differently from the 2010 stemmer inside meteor-1.5.jar
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        stem = english_stemmer().stemWord
    assert stem("biologist") == "biologist", ("snowballstemmer >= 3 is installed; capkit needs "
                                              "snowballstemmer==2.2.0 (pip install it) for parity")
    assert [stem(w) for w in ("added", "evening", "riding", "generously")] == \
        ["ad", "even", "ride", "generous"]


def test_synonyms_use_wordnet_morphology(lex):
    assert lex.morph("dogs") == "dog" and lex.morph("glass") == "glass"
    assert lex.synsets("rides") & lex.synsets("riding")
    assert lex.synsets("mice") == lex.synsets("mouse") | lex.res.synsets("mice")   # exception
    assert not lex.synsets("qzxv")


def test_score_formula_on_the_jars_statistics():
    # SCORE output of the jar for the first JAR_SCORES pair, mapped to capkit's columns
    stats = np.array([8, 8, 4, 3, 1, 1, 0, 1, 1, 1, 1, 1, 3, 0, 1, 0, 3, 0, 0, 0, 1.0])
    assert len(stats) == len(STATS)
    assert meteor_from_stats(stats) == pytest.approx(0.394106507048595, abs=1e-15)
    # a caption matched whole in one chunk adds no chunk to the corpus statistics
    perfect = np.array([3, 3, 0, 0, 3, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1.0])
    assert corpus_stats(np.stack([stats, perfect]))[20] == 1


# ---------------------------------------------------------------- the metric

def test_scores_equal_the_jar():
    cands = [c for c, _, _ in JAR_SCORES] + ["..."]
    refs = [r for _, r, _ in JAR_SCORES] + [["a cat"]]
    s = meteor(cands, refs, tokenizer="split")
    np.testing.assert_allclose(s.per_caption[:-1], [x for _, _, x in JAR_SCORES], atol=1e-12)
    assert s.per_caption[-1] == 0.0
    assert s.parts["stats"].shape == (6, 21) and "backend:python" in s.signature


def test_empty_candidate_scores_zero_with_a_warning():
    with pytest.warns(UserWarning, match="no tokens"):
        s = meteor({"a": "...", "b": "a cat"}, {"a": ["a cat"], "b": ["a cat"]})
    assert s.by_id() == {"a": 0.0, "b": 1.0}


def test_long_lines_take_the_one_pair_path():
    words = [f"w{k}" for k in range(70)]
    long_caption = " ".join(words)
    shuffled = " ".join(words[35:] + words[:35])
    s = meteor([long_caption, "a dog"], [[shuffled, "a cat"], ["a dog"]], tokenizer="split")
    assert 0 < s.per_caption[0] < 1 and s.per_caption[1] == 1.0
    assert s.parts["stats"][0, 20] == 2          # two chunks: the halves swapped


def test_array_search_equals_the_one_pair_reference(shared_data, lex):
    from capkit.data import load
    from capkit.metrics.meteor.metric import _pair_stats, _segments
    corpus = load("coco_karpathy_test")
    ids = list(corpus.systems["zs_zerocap"])[:60]
    hyps = [corpus.systems["zs_zerocap"][i].lower() for i in ids]
    refs = [[r.lower() for r in corpus.references[i]] for i in ids]
    stats, best = python_meteor_stats(hyps, refs)
    for k in range(len(ids)):
        h = lex.segment(_segments(lex, [hyps[k]])[0])
        rs = [lex.segment(w) for w in _segments(lex, refs[k])]
        expected = _pair_stats(lex, h, rs)
        np.testing.assert_array_equal(stats[k], expected[best[k]])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.lists(st.sampled_from("a the dog dogs man men run running on in "
                                                   "red big small cat".split()), min_size=1,
                                   max_size=9),
                          st.lists(st.lists(st.sampled_from("a the dog puppy man person runs "
                                                            "ran on at red large little cat "
                                                            "kitten".split()), min_size=1,
                                            max_size=9), min_size=1, max_size=3)),
                min_size=2, max_size=6))
def test_each_caption_is_scored_on_its_own(items):
    cands = [" ".join(c) for c, _ in items]
    refs = [[" ".join(r) for r in rs] for _, rs in items]
    whole = meteor(cands, refs, tokenizer="split").per_caption
    assert np.all((whole >= 0) & (whole <= 1))
    reversed_ = meteor(cands[::-1], refs[::-1], tokenizer="split").per_caption
    np.testing.assert_array_equal(reversed_[::-1], whole)
    np.testing.assert_array_equal(meteor(cands[:1], refs[:1], tokenizer="split").per_caption,
                                  whole[:1])


def test_user_errors_say_what_to_do(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="choose 'python'"):
        meteor(["a"], [["a"]], backend="c++")
    from capkit.metrics.meteor.resources import meteor_files
    with pytest.raises(FileNotFoundError, match="pycocoevalcap==1.2"):
        meteor_files(tmp_path)
    from capkit.metrics.meteor.java import find_java
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("CAPKIT_JAVA", raising=False)
    with pytest.raises(FileNotFoundError, match="backend='python'"):
        find_java()


def test_cache_file_is_written_atomically(tmp_path, monkeypatch):
    from capkit.metrics.meteor import resources as R
    monkeypatch.setenv("CAPKIT_CACHE_DIR", str(tmp_path))
    jar, table = R.meteor_files()
    path = R._cache_path(jar, table)
    assert path.parent == tmp_path / "meteor"
    R.read_or_rebuild(path, R._read_cache, lambda: {"x": np.arange(3)}, R._write_cache, what="x")
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name, path.name + ".lock"]
    with np.load(path) as z:                                         # (no temporary left)
        np.testing.assert_array_equal(z["x"], np.arange(3))


@pytest.fixture
def mini_meteor(tmp_path, monkeypatch):
    """A tiny stand-in for pycocoevalcap's meteor folder: its cache builds in milliseconds."""
    from capkit.metrics.meteor import resources as R
    folder = tmp_path / "meteor"
    (folder / "data").mkdir(parents=True)
    with zipfile.ZipFile(folder / "meteor-1.5.jar", "w") as z:
        z.writestr("function/english.words", "a\nthe\n")
        z.writestr("synonym/english.synsets", "dog\n1 2\ncat\n3\n")
        z.writestr("synonym/english.exceptions", "go\nwent gone\n")
        z.writestr("nonbreaking/english.prefixes", "Mr\n")
    with gzip.open(folder / "data" / "paraphrase-en.gz", "wt", encoding="utf-8") as f:
        f.write("0.5\na dog\na puppy\n0.25\ncat\nkitten\n")
    monkeypatch.setenv("CAPKIT_CACHE_DIR", str(tmp_path / "cache"))
    R.load_resources.cache_clear()
    yield str(folder)
    R.load_resources.cache_clear()


def test_the_cache_is_named_by_content_so_installations_share_it(mini_meteor, tmp_path):
    # each venv (per project, per CI run) installs the same files at another path and time:
    # one cache file for all of them (it was keyed by path and mtime: 52 MB per venv), and
    # another one only when the content differs
    import os
    import shutil

    from capkit.metrics.meteor import resources as R
    copy = tmp_path / "elsewhere" / "meteor"
    shutil.copytree(mini_meteor, copy)
    for p in copy.rglob("*"):
        os.utime(p, ns=(10**18, 10**18))
    path = R._cache_path(*R.meteor_files(mini_meteor))
    assert R._cache_path(*R.meteor_files(copy)) == path
    with gzip.open(copy / "data" / "paraphrase-en.gz", "wt", encoding="utf-8") as f:
        f.write("0.5\na dog\na puppy\n0.75\ncat\nkitten\n")         # one probability
    assert R._cache_path(*R.meteor_files(copy)) != path
    shutil.copy(Path(mini_meteor) / "data" / "paraphrase-en.gz", copy / "data")
    with zipfile.ZipFile(copy / "meteor-1.5.jar", "w") as z:
        for name, text in [("function/english.words", "a\nthe\n"),
                           ("synonym/english.synsets", "dog\n1 2\ncat\n4\n"),   # one id
                           ("synonym/english.exceptions", "go\nwent gone\n"),
                           ("nonbreaking/english.prefixes", "Mr\n")]:
            z.writestr(name, text)
    assert R._cache_path(*R.meteor_files(copy)) != path


def _load_recording_warnings(meteor_dir):
    from capkit.metrics.meteor import resources as R
    R.load_resources.cache_clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        resources = R.load_resources(meteor_dir)
    return resources, caught


@pytest.mark.parametrize("damage", ["truncated", "empty", "other arrays"])
def test_a_damaged_cache_is_rebuilt_with_one_warning(mini_meteor, damage):
    from capkit.cache_files import CacheWarning
    from capkit.metrics.meteor import resources as R
    first, caught = _load_recording_warnings(mini_meteor)
    path = R._cache_path(*R.meteor_files(mini_meteor))
    assert caught == [] and path.is_file() and first.synsets("dog") == {1, 2}
    with np.load(path) as z:
        assert sorted(z.files) == sorted(R._CACHED)                 # the reader reads them all
    if damage == "truncated":                # as a killed copy or a full disk leaves it
        path.write_bytes(path.read_bytes()[:path.stat().st_size // 2])
    elif damage == "empty":
        path.write_bytes(b"")
    else:
        with open(path, "wb") as f:
            np.savez(f, x=np.arange(3))
    again, caught = _load_recording_warnings(mini_meteor)
    assert [w.category for w in caught] == [CacheWarning]
    assert str(path) in str(caught[0].message) and "rebuilt METEOR" in str(caught[0].message)
    assert again.synsets("dog") == {1, 2} and again.exceptions == first.exceptions
    assert _load_recording_warnings(mini_meteor)[1] == []            # the rebuilt file reads


def test_two_processes_building_the_cache_at_once(mini_meteor):
    from capkit.metrics.meteor import resources as R
    code = ("import sys; from capkit.metrics.meteor.resources import load_resources; "
            "assert load_resources(sys.argv[1]).synsets('dog') == {1, 2}")
    procs = [subprocess.Popen([sys.executable, "-W", "error", "-c", code, mini_meteor],
                              cwd=Path(__file__).resolve().parents[1], stderr=subprocess.PIPE,
                              text=True) for _ in range(2)]
    errors = [p.communicate(timeout=300)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], errors
    path = R._cache_path(*R.meteor_files(mini_meteor))
    assert sorted(R._read_cache(path)) == sorted(R._CACHED)
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name, path.name + ".lock"]


def test_a_read_only_cache_folder_builds_in_memory(mini_meteor, read_only, monkeypatch, tmp_path):
    from capkit.cache_files import CacheWarning
    monkeypatch.setenv("CAPKIT_CACHE_DIR", str(read_only(tmp_path / "ro")))
    resources, caught = _load_recording_warnings(mini_meteor)
    assert resources.synsets("cat") == {3}
    assert [w.category for w in caught] == [CacheWarning] and "in memory" in str(caught[0].message)
    assert list((tmp_path / "ro").iterdir()) == []


def _other_cache_files(folder: Path) -> tuple[list[str], list[str]]:
    """Put cache files of other formats and keys in ``folder``: (names a rebuild of this format
    deletes, names it keeps)."""
    from capkit.metrics.meteor import resources as R
    v = R.FORMAT_VERSION
    unnamed = f"meteor-1.5-en-{'b' * 16}.npz"   # no format in the name: 5 at most (5 is read)
    stale = [f"meteor-1.5-en-v{v - 1}-{'a' * 16}.npz"] + [unnamed] * (v > R.UNNAMED_FORMAT)
    kept = [f"meteor-1.5-en-v{v}-{'c' * 16}.npz",     # this format, another jar or stemmer
            f"meteor-1.5-en-v{v + 1}-{'d' * 16}.npz",  # a newer capkit's, beside this one
            *[unnamed] * (v <= R.UNNAMED_FORMAT),
            f"meteor-1.5-en-v{v - 1}-{'e' * 8}.npz", "notes.txt"]       # not capkit's names
    folder.mkdir(parents=True, exist_ok=True)
    ours = [n for n in stale + kept if R._CACHE_NAME.fullmatch(n)]   # with a lock file beside
    for name in stale + kept:
        (folder / name).write_bytes(b"old")
        if name in ours:
            (folder / f"{name}.lock").write_bytes(b"")
    (folder / f"meteor-1.5-en-v{v - 2}-{'f' * 16}.npz.lock").write_bytes(b"")   # lock alone
    return ([*stale, *(f"{n}.lock" for n in stale), f"meteor-1.5-en-v{v - 2}-{'f' * 16}.npz.lock"],
            [*kept, *(f"{n}.lock" for n in kept if n in ours)])


def test_a_rebuild_deletes_the_cache_files_of_older_formats_only(mini_meteor, tmp_path):
    # each FORMAT_VERSION (or key scheme) left its 52 MB file behind for ever: 12 in one folder
    from capkit.metrics.meteor import resources as R
    folder = tmp_path / "cache" / "meteor"
    _, kept = _other_cache_files(folder)
    resources, caught = _load_recording_warnings(mini_meteor)
    assert resources.synsets("dog") == {1, 2} and caught == []
    path = R._cache_path(*R.meteor_files(mini_meteor))
    assert path.name.startswith(f"meteor-1.5-en-v{R.FORMAT_VERSION}-")     # format in the name
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [*kept, path.name, f"{path.name}.lock"])
    assert _load_recording_warnings(mini_meteor)[1] == []            # the new file reads


def test_after_format_5_unnamed_files_go_too(mini_meteor, tmp_path, monkeypatch):
    from capkit.metrics.meteor import resources as R
    monkeypatch.setattr(R, "FORMAT_VERSION", R.UNNAMED_FORMAT + 1)
    folder = tmp_path / "cache" / "meteor"
    stale, kept = _other_cache_files(folder)
    assert f"meteor-1.5-en-{'b' * 16}.npz" in stale
    assert _load_recording_warnings(mini_meteor)[1] == []
    path = R._cache_path(*R.meteor_files(mini_meteor))
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [*kept, path.name, f"{path.name}.lock"])


def test_this_formats_file_under_the_unnamed_name_is_read_not_rebuilt(mini_meteor, tmp_path,
                                                                       monkeypatch):
    """Was: naming the format moved every format-5 cache to a new name, so each one (a read-only
    shared cache too) was built again (~20 s) and the old name, which older capkits read,
    deleted."""
    from capkit.metrics.meteor import resources as R
    assert _load_recording_warnings(mini_meteor)[1] == []            # built: v5 name
    named = R._cache_path(*R.meteor_files(mini_meteor))
    unnamed = named.with_name(named.name.replace(f"-v{R.FORMAT_VERSION}-", "-"))
    named.rename(unnamed)
    monkeypatch.setattr(R, "_read_jar", lambda jar: pytest.fail("built again"))
    resources, caught = _load_recording_warnings(mini_meteor)
    assert resources.synsets("dog") == {1, 2} and caught == []
    assert R._cache_path(*R.meteor_files(mini_meteor)) == unnamed and unnamed.is_file()
    assert not named.exists()


def test_a_stale_cache_file_another_process_is_building_is_kept(mini_meteor, tmp_path,
                                                                hold_lock):
    from capkit.metrics.meteor import resources as R
    folder = tmp_path / "cache" / "meteor"
    stale, kept = _other_cache_files(folder)
    busy = folder / stale[0]
    with hold_lock(busy):
        resources, caught = _load_recording_warnings(mini_meteor)
    assert resources.synsets("cat") == {3} and caught == []
    path = R._cache_path(*R.meteor_files(mini_meteor))
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [*kept, busy.name, f"{busy.name}.lock", path.name, f"{path.name}.lock"])
    path.unlink()                                      # the next rebuild deletes it, now idle
    assert _load_recording_warnings(mini_meteor)[1] == []
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [*kept, path.name, f"{path.name}.lock"])


@pytest.mark.parametrize("why", ["no permission", "read-only folder"])
def test_stale_cache_files_that_cannot_be_deleted_never_fail_scoring(mini_meteor, tmp_path,
                                                                     monkeypatch, read_only, why):
    import os

    from capkit.cache_files import CacheWarning
    from capkit.metrics.meteor import resources as R
    folder = tmp_path / "cache" / "meteor"
    stale, kept = _other_cache_files(folder)
    if why == "no permission":            # e.g. another user's files in a shared sticky folder
        real_unlink = os.unlink

        def unlink(path, *args, **kwargs):
            if Path(path).name in stale:
                raise PermissionError(13, "Permission denied", os.fsdecode(path))
            return real_unlink(path, *args, **kwargs)
        monkeypatch.setattr(os, "unlink", unlink)
    else:                                 # the folder turns read-only once the cache is written
        remove_stale = R._remove_stale

        def read_only_then_remove(path):
            read_only(path.parent)
            remove_stale(path)
        monkeypatch.setattr(R, "_remove_stale", read_only_then_remove)
    resources, caught = _load_recording_warnings(mini_meteor)
    assert resources.synsets("dog") == {1, 2} and resources.exceptions["went"] == ("go",)
    path = R._cache_path(*R.meteor_files(mini_meteor))
    assert set(p.name for p in folder.iterdir()) == {*stale, *kept, path.name, f"{path.name}.lock"}
    assert [w.category for w in caught] == [CacheWarning]      # one warning, naming what is left
    assert all(f"{name} (" in str(caught[0].message) for name in stale if name.endswith(".npz"))


# ---------------------------------------------------------------- against the jar itself

@pytest.mark.java
@needs_java
def test_java_backend_equals_python_backend():
    cands = [c for c, _, _ in JAR_SCORES] + [". . .", "two dogs play|||in the snow",
                                             "a caption with a\nline break", "Ünïcödé café"]
    refs = [r for _, r, _ in JAR_SCORES] + [["a cat"], ["dogs ||| playing in snow"],
                                            ["a line\rbreak"], ["a cafe"]]
    j = meteor(cands, refs, backend="java", tokenizer="split")
    p = meteor(cands, refs, tokenizer="split")
    from capkit.metrics.meteor.java import java_backend
    assert "-Duser.language=en" in java_backend().command      # never the user's locale
    np.testing.assert_array_equal(j.parts["stats"], p.parts["stats"])
    np.testing.assert_allclose(j.per_caption, p.per_caption, rtol=0, atol=1e-15)
    assert j.corpus == pytest.approx(p.corpus, abs=1e-15)
    assert j.per_caption[:5].tolist() == pytest.approx([x for _, _, x in JAR_SCORES])


def _fake_java(tmp_path, body: str) -> str:
    path = tmp_path / "java"
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)
    return str(path)


def test_java_process_command_timeout_and_crash(tmp_path):
    """The protocol around the JVM, with stand-ins for java (no JVM needed)."""
    from capkit.metrics.meteor.java import JavaMeteor
    with JavaMeteor(java=_fake_java(tmp_path, "exec sleep 30"), timeout=0.5) as jm:
        assert jm.command[1:3] == ["-Xmx2G", "-Duser.language=en"]
        assert jm.command[-6:] == ["-", "-", "-stdio", "-l", "en", "-norm"]
        assert "meteor-1.5.jar" in " ".join(jm.command)
        with pytest.raises(TimeoutError, match="Raise timeout="):
            jm.score(["a cat"], [["a cat"]])
    with JavaMeteor(java=_fake_java(tmp_path, "echo 'Error: broken jar' >&2; exit 1")) as jm:
        with pytest.raises(RuntimeError, match="broken jar"):
            jm.score(["a cat"], [["a cat"]])


@pytest.mark.slow
@pytest.mark.java
@needs_java
def test_nine_coco_systems_equal_pycocoevalcap(shared_data):
    """Acceptance: corpus within 1e-4 and >= 99.5% of captions within 1e-3 (we get ~1e-16)."""
    from pycocoevalcap.meteor.meteor import Meteor
    from capkit.data import load
    from capkit.metrics.inputs import prepare
    corpus = load("coco_karpathy_test")
    image_ids = list(corpus.references)
    texts = [r for i in image_ids for r in corpus.references[i]]
    for cands in corpus.systems.values():
        texts += list(cands.values())
    # both sides get the same PTB-tokenised text (METEOR parity, not tokenizer parity)
    batch = prepare(texts, [["x"]] * len(texts))
    tokens = iter(" ".join(t) for t in batch.candidates)
    refs = {i: [next(tokens) for _ in corpus.references[i]] for i in image_ids}
    reference = Meteor()
    try:
        for name, cands in corpus.systems.items():
            res = {i: [next(tokens)] for i in cands}
            gts = {i: refs[i] for i in cands}
            ref_corpus, ref_per = reference.compute_score(gts, res)
            ours = meteor({i: res[i][0] for i in cands}, gts, tokenizer="split")
            diff = np.abs(ours.per_caption - np.asarray(ref_per))
            assert abs(ours.corpus - ref_corpus) <= 1e-4, name
            assert (diff <= 1e-3).mean() >= 0.995, name
            assert diff.max() <= 1e-12, (name, diff.max())     # in fact: bit for bit
    finally:
        reference.meteor_p.stdout.close()     # pycocoevalcap's __del__ leaves these open
        reference.meteor_p.stderr.close()
        del reference


def test_speed_benchmark_adds_a_meteor_row_only_when_asked(monkeypatch):
    from capkit import speed
    steps = {"tokenize": 1.0, "bleu": 1.0, "rouge_l": 1.0, "cider_d": 1.0}
    scores = {"bleu_4": 0.3, "rouge_l": 0.5, "cider_d": 1.0}
    monkeypatch.setattr(speed, "_reference_side", lambda c, r, n: (dict(steps), scores))
    monkeypatch.setattr(speed, "_capkit_side", lambda c, r, n: ({**steps, "total": 2.0}, scores))
    monkeypatch.setattr(speed, "_reference_meteor", lambda c, r, n: (10.0, 0.27))
    monkeypatch.setattr(speed, "_capkit_meteor", lambda c, r, n: (1.0, 0.27))
    plain = speed.bench_speed({"a": "x"}, {"a": ["x"]}, repeat=1)
    assert [r[0] for r in plain["rows"]] == ["tokenize", "bleu", "rouge_l", "cider_d", "total"]
    with_meteor = speed.bench_speed({"a": "x"}, {"a": ["x"]}, repeat=1, meteor=True)
    assert with_meteor["rows"][:5] == plain["rows"]
    assert with_meteor["rows"][5] == ("meteor", 10.0, 1.0, 10.0)
    assert with_meteor["meteor_corpus_diff"] == 0.0


@pytest.mark.slow
def test_flickr8k_correlations_match_the_literature(shared_data):
    """PAC-S README: METEOR 41.822 (Expert, tau-c) and 22.269 (CF, tau-b); within 0.1."""
    from capkit.meta_eval import benchmark
    res = benchmark({"meteor": meteor}, ["flickr8k_expert", "flickr8k_cf"], n_boot=10)
    assert res.results["flickr8k_expert"]["meteor"].value == pytest.approx(41.822, abs=0.1)
    assert res.results["flickr8k_cf"]["meteor"].value == pytest.approx(22.269, abs=0.1)


# ---------------------------------------------------------------- the compat drop-in's input

# characters Python's str.split() splits at but the jar keeps inside a word (its -norm and
# StringTokenizer split only at " \t\n\r\f"); the other Unicode spaces the normaliser turns
# into spaces itself (U+00A0, U+2000-U+200A, U+3000...), so both agree on those
KEPT_BY_THE_JAR = ["\x0b", "\x1c", "\x1f", "\x85", "\u1680", "\u2028", "\u2029"]
OTHER_SPACES = ["\t", "\x0c", "\xa0", "\u2000", "\u202f", "\u3000"]


def test_compat_meteor_splits_captions_as_the_jar():
    """pycocoevalcap hands each caption to the jar whole; it is not str.split() first."""
    from capkit.compat.pycocoevalcap import Meteor
    # meteor-1.5.jar (through pycocoevalcap 1.2): the caption "a man\x1criding a horse" has 4
    # words, "man\x1criding" unmatched; as a reference the same string scores 0.4063
    score, per = Meteor().compute_score({0: ["a man riding a horse", "a dog"],
                                         1: ["a man\x1criding a horse", "a dog"]},
                                        {0: ["a man\x1criding a horse"],
                                         1: ["a man riding a horse"]})
    assert per == pytest.approx([0.48079902455437884, 0.4062840465791614], abs=1e-15)
    same = Meteor().compute_score({0: ["a man riding a horse"]}, {0: ["a man\xa0riding a horse"]})
    assert same == (1.0, [1.0])


@pytest.mark.java
@needs_java
def test_compat_meteor_equals_pycocoevalcap_on_unusual_whitespace():
    from pycocoevalcap.meteor.meteor import Meteor as Reference
    from capkit.compat.pycocoevalcap import Meteor
    chars = KEPT_BY_THE_JAR + OTHER_SPACES
    gts = {**{k: ["a man riding a horse", "a dog"] for k in range(len(chars))},
           **{100 + k: [f"a man{c}riding  a horse", "a dog"] for k, c in enumerate(chars)}}
    res = {**{k: [f"a man{c}riding a horse "] for k, c in enumerate(chars)},
           **{100 + k: ["a man riding a horse"] for k in range(len(chars))}}
    reference = Reference()
    try:
        expected = reference.compute_score(gts, res)
    finally:
        reference.meteor_p.stdin.close()
        reference.meteor_p.kill()
        reference.meteor_p.wait()
        reference.meteor_p.stdout.close()
        reference.meteor_p.stderr.close()
    got = Meteor().compute_score(gts, res)
    assert got[0] == pytest.approx(expected[0], abs=1e-15)
    np.testing.assert_allclose(got[1], expected[1], rtol=0, atol=1e-15)
