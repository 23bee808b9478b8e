"""``capkit.compat.pycocoevalcap`` against pycocoevalcap 1.2: one script, two imports, same output.

``evaluation_script`` is what a user's script does (PTB-tokenise references and candidates,
then score); it runs once with ``pycocoevalcap``'s classes (Java tokenizer and METEOR jar) and
once with capkit's, and the outputs must have the same structure, the same types, and values
within 1e-9 (overall and per caption). The full-data tests (9 COCO Karpathy-test systems, METEOR
on 2 of them, COCOEvalCap on one) are marked slow; the Java ones are marked ``java`` and skip
only without a ``java`` executable.
"""
import collections
import importlib
import math
import pickle
import re
import shutil
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from capkit.metrics import DocumentFrequencies, document_frequencies
from reference_metrics import reference_cider_given_df

TOL = 1e-9
REPO = Path(__file__).resolve().parents[1]
HAS_JAVA = shutil.which("java") is not None
needs_java = [pytest.mark.java, pytest.mark.skipif(not HAS_JAVA, reason="needs Java")]
SYSTEMS = ["updown_paddle", "show_attend_tell_paddle", "transformer_cil", "zs_magic",
           "zs_zerocap", "zs_clipre", "zs_contrastive", "zs_topk_run1", "zs_nucleus_run1"]
METEOR_SYSTEMS = ("updown_paddle", "zs_zerocap")     # the jar takes ~30 s per system
MODULES = {"PTBTokenizer": "tokenizer.ptbtokenizer", "Bleu": "bleu.bleu", "Rouge": "rouge.rouge",
           "Cider": "cider.cider", "Meteor": "meteor.meteor", "Spice": "spice.spice",
           "COCOEvalCap": "eval", "BleuScorer": "bleu.bleu_scorer",
           "CiderScorer": "cider.cider_scorer"}

# already tokenised text with the cases that trip up re-implementations: an empty candidate, a
# whitespace-only one, double and trailing spaces (ROUGE-L splits on " "), punctuation-only
# tokens, an empty reference, a single reference, repeated n-grams, unsorted integer ids
TOKENISED_GTS = {
    7: ["a dog runs on the grass", "a brown dog runs outside", "the dog is running"],
    3: ["a cat sits on a mat", "cat on mat", ""],
    12: ["two birds fly over the sea", "birds"],
    5: ["a  man rides a horse ", "a man riding a horse on a beach"],
    1: ["a red bus on a street", "a bus", "the red bus the red bus"],
    9: ["people at a table", "a group of people eat"],
}
TOKENISED_RES = {7: [""], 3: ["a cat sits on a mat"], 12: ["   "], 5: ["a man rides  a horse"],
                 1: ["!? ..."], 9: ["the the the people"]}
# raw captions for the tokenizer: empty and punctuation-only candidates among normal ones
RAW_REFS = {
    "a": ["A dog runs on the grass.", "A brown dog, running outside!"],
    "b": ["A cat sits on a mat.", "Cat on a mat..."],
    "c": ["Two birds fly over the sea.", "Birds over water"],
    "d": ["A man rides a horse.", "A man riding a horse on a beach."],
    "e": ["A red bus on a street.", "The red bus (parked)."],
}
RAW_CANDS = {"a": "", "b": "A cat sits on a mat.", "c": "...", "d": "!!", "e": "A red bus."}


def namespace(root: str) -> types.SimpleNamespace:
    """The classes a script imports, from ``root`` (pycocoevalcap or capkit's compat layer)."""
    return types.SimpleNamespace(**{name: getattr(importlib.import_module(f"{root}.{path}"), name)
                                    for name, path in MODULES.items()})


@pytest.fixture(scope="module")
def theirs():
    return namespace("pycocoevalcap")      # a dev dependency: missing it is a failure


@pytest.fixture(scope="module")
def ours():
    return namespace("capkit.compat.pycocoevalcap")


def close(scorer) -> None:
    """pycocoevalcap's Meteor holds a JVM; its __del__ kills it but leaves the pipes open."""
    proc = getattr(scorer, "meteor_p", None)
    if proc is not None:
        proc.stdin.close()
        proc.kill()
        proc.wait()
        proc.stdout.close()
        proc.stderr.close()


def scores_of(ns, gts: dict, res: dict, meteor: bool) -> dict:
    out = {"Bleu": ns.Bleu(4).compute_score(gts, res, verbose=0),
           "Rouge": ns.Rouge().compute_score(gts, res),
           "Cider": ns.Cider().compute_score(gts, res)}
    if meteor:
        scorer = ns.Meteor()
        try:
            out["Meteor"] = scorer.compute_score(gts, res)
        finally:
            close(scorer)
    return out


def evaluation_script(ns, references: dict, candidates: dict, meteor: bool = False) -> dict:
    """A user's evaluation script, written once against a module namespace."""
    tokenizer = ns.PTBTokenizer()
    gts = tokenizer.tokenize({k: [{"caption": c} for c in references[k]] for k in candidates})
    res = tokenizer.tokenize({k: [{"caption": c}] for k, c in candidates.items()})
    return {"gts": gts, "res": res, **scores_of(ns, gts, res, meteor)}


def assert_same(a, b, path: str = "") -> None:
    """Same structure and types everywhere; floats within TOL; everything else equal."""
    assert type(a) is type(b), f"{path}: {type(a).__name__} vs {type(b).__name__}"
    if isinstance(a, dict):
        assert list(a) == list(b), f"{path}: keys (or their order) differ"
        for k in a:
            assert_same(a[k], b[k], f"{path}[{k!r}]")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), f"{path}: length {len(a)} vs {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{path}[{i}]")
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape, f"{path}: {a.dtype}{a.shape}"
        np.testing.assert_allclose(b, a, rtol=0, atol=TOL, err_msg=path)
    elif isinstance(a, float):
        assert (math.isnan(a) and math.isnan(b)) or abs(a - b) <= TOL, f"{path}: {a} vs {b}"
    else:
        assert a == b, f"{path}: {a!r} vs {b!r}"


# --------------------------------------------------------------------------- imports and API

def test_short_form_exports_the_module_classes(ours):
    import capkit.compat.pycocoevalcap as short
    for name in MODULES:
        assert getattr(short, name) is getattr(ours, name)
    from capkit.compat.pycocoevalcap.cider.cider import CiderD
    assert short.CiderD is CiderD


def test_importing_the_compat_layer_loads_nothing_heavy():
    code = ("import sys; from capkit.compat.pycocoevalcap import *; "
            "heavy = {'torch', 'transformers', 'matplotlib', 'pycocoevalcap', 'pycocotools'}; "
            "print(sorted(heavy & set(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=REPO)
    assert out.stdout.strip() == "[]"


def test_method_names_and_constructors_match(theirs, ours):
    for name in ("Bleu", "Rouge", "Cider"):
        assert getattr(ours, name)().method() == getattr(theirs, name)().method()
    assert ours.Meteor().method() == "METEOR"
    assert ours.Bleu(2).compute_score({1: ["a b"]}, {1: ["a b"]}, verbose=0)[0] \
        == pytest.approx(theirs.Bleu(2).compute_score({1: ["a b"]}, {1: ["a b"]}, verbose=0)[0])
    assert ours.Cider(None, None, 4, 6.0).method() == "CIDEr"     # positional, as the original


def test_tokenised_edge_cases_equal_pycocoevalcap(theirs, ours):
    assert_same(scores_of(theirs, TOKENISED_GTS, TOKENISED_RES, meteor=False),
                scores_of(ours, TOKENISED_GTS, TOKENISED_RES, meteor=False))


@pytest.mark.parametrize("verbose", [1, 2])
def test_bleu_prints_what_the_original_prints(theirs, ours, capsys, verbose):
    printed = []
    for ns in (theirs, ours):
        ns.Bleu(4).compute_score(TOKENISED_GTS, TOKENISED_RES, verbose=verbose)
        printed.append(capsys.readouterr().out)
    assert printed[0] == printed[1] and "ratio: " in printed[1]


def scorer_results(ns, pairs, **options):
    bleu, cider = ns.BleuScorer(n=4, **options.pop("bleu", {})), ns.CiderScorer(n=4)
    for hypothesis, refs in pairs:
        bleu += (hypothesis, refs)
        cider += (hypothesis, refs)
    return {option: bleu.recompute_score(option=option, verbose=0)
            for option in (None, "closest", "shortest", "average")}, cider.compute_score()


def test_bleu_and_cider_scorer_classes_equal_the_original(theirs, ours):
    pairs = [(TOKENISED_RES[k][0], TOKENISED_GTS[k]) for k in TOKENISED_GTS]
    assert_same(scorer_results(theirs, pairs), scorer_results(ours, pairs))
    assert_same(scorer_results(theirs, pairs[:1]), scorer_results(ours, pairs[:1]))
    assert_same(scorer_results(theirs, pairs, bleu={"special_reflen": 5}),
                scorer_results(ours, pairs, bleu={"special_reflen": 5}))
    one = ours.BleuScorer("a dog runs", ["a dog runs fast", "the dog"])     # the constructor's pair
    one += ours.BleuScorer("a cat", ["a cat sits"])                        # another scorer
    assert one.size() == 2
    assert_same(theirs.BleuScorer("a dog runs", ["a dog runs fast", "the dog"]).compute_score(),
                ours.BleuScorer("a dog runs", ["a dog runs fast", "the dog"]).compute_score())


def test_rouge_calc_score_and_my_lcs_equal_the_original(theirs, ours):
    from capkit.compat.pycocoevalcap.rouge.rouge import my_lcs
    from pycocoevalcap.rouge.rouge import my_lcs as their_lcs
    for k in TOKENISED_GTS:
        assert ours.Rouge().calc_score(TOKENISED_RES[k], TOKENISED_GTS[k]) == \
            pytest.approx(theirs.Rouge().calc_score(TOKENISED_RES[k], TOKENISED_GTS[k]), abs=TOL)
        for ref in TOKENISED_GTS[k]:
            a, b = ref.split(" "), TOKENISED_RES[k][0].split(" ")
            assert my_lcs(a, b) == their_lcs(a, b) == my_lcs(b, a)


def test_meteor_takes_what_the_jar_takes():
    from capkit.compat.pycocoevalcap import Meteor
    gts = {k: v for k, v in TOKENISED_GTS.items() if "" not in v}
    res = {k: TOKENISED_RES[k] for k in gts}
    plain = Meteor().compute_score(gts, res)
    assert Meteor().compute_score({k: tuple(v) for k, v in gts.items()},
                                  {k: tuple(v) for k, v in res.items()}) == plain
    # no reference is one empty reference to the jar (which then scores that image 0)
    empty = Meteor().compute_score({**gts, 7: []}, res)
    assert empty == Meteor().compute_score({**gts, 7: [""]}, res) and empty[1][0] == 0.0


@pytest.mark.parametrize("n", [1, 2, 3])
def test_lower_bleu_orders_and_cider_sigma(theirs, ours, n):
    assert_same(theirs.Bleu(n).compute_score(TOKENISED_GTS, TOKENISED_RES, verbose=0),
                ours.Bleu(n).compute_score(TOKENISED_GTS, TOKENISED_RES, verbose=0))
    # (pycocoevalcap's Cider always counts 1..4-grams, so only its sigma can change)
    assert_same(theirs.Cider(sigma=n).compute_score(TOKENISED_GTS, TOKENISED_RES),
                ours.Cider(sigma=n).compute_score(TOKENISED_GTS, TOKENISED_RES))


def test_returned_arrays_are_writable_like_the_original(ours):
    # (self-critical code subtracts a baseline in place; capkit's Scores arrays are read-only)
    for scorer in (ours.Rouge(), ours.Cider()):
        _, per = scorer.compute_score(TOKENISED_GTS, TOKENISED_RES)
        per -= 1.0
    bleu = ours.Bleu(4).compute_score(TOKENISED_GTS, TOKENISED_RES, verbose=0)[1]
    bleu[3][0] = 5.0


def test_a_single_image_scores_cider_zero_like_the_original(theirs, ours):
    gts, res = {"x": ["a dog runs"]}, {"x": ["a dog runs"]}
    assert_same(theirs.Cider().compute_score(gts, res), ours.Cider().compute_score(gts, res))


@pytest.mark.parametrize("gts, res", [
    ({1: ["a"], 2: ["b"]}, {1: ["a"]}),                       # different ids
    ({1: ["a"], 2: ["b"]}, {1: ["a"], 2: ["b", "c"]}),        # two candidates for one id
    ({1: ["a"], 2: []}, {1: ["a"], 2: ["b"]}),                # no references
    ({1: ["a"], 2: "b"}, {1: ["a"], 2: ["b"]}),               # references not a list
])
def test_inputs_the_original_asserts_on_raise_input_error(theirs, ours, gts, res):
    from capkit.compat.pycocoevalcap import InputError
    for name in ("Bleu", "Rouge", "Cider"):
        with pytest.raises(AssertionError):
            args = (gts, res, 0) if name == "Bleu" else (gts, res)
            getattr(theirs, name)().compute_score(*args)
        with pytest.raises(InputError) as err:
            getattr(ours, name)().compute_score(gts, res)
        assert isinstance(err.value, ValueError) and isinstance(err.value, AssertionError)
    if gts[2] == []:        # the jar takes no reference as one empty one (see below)
        return
    with pytest.raises(InputError, match="gts and res must have the same ids|exactly one|"
                                         "non-empty list"):
        ours.Meteor().compute_score(gts, res)


def test_int_against_str_ids_are_named_in_the_drop_ins_words(ours):
    """Was: "ids only in gts: ['1'], only in res: [1]", two lists that look alike."""
    from capkit.compat.pycocoevalcap import InputError
    for gts, res, fix in [({"1": ["a dog"]}, {1: ["a dog"]}, "res = {str(k)"),
                          ({1: ["a dog"]}, {"1": ["a dog"]}, "gts = {str(k)")]:
        with pytest.raises(InputError, match=r"same ids.*typed apart: the results' ids are "
                                             r"(int|str), the ground truths' .*" + re.escape(fix)):
            ours.Bleu(4).compute_score(gts, res)
    with pytest.raises(InputError) as err:                 # nothing typed apart: no such hint
        ours.Bleu(4).compute_score({"1": ["a dog"]}, {"2": ["a dog"]})
    assert "typed apart" not in str(err.value)


def test_bleu_above_four_grams_says_so(ours):
    with pytest.raises(ValueError, match="1, 2, 3 or 4"):
        ours.Bleu(5)


def test_tokenizer_drops_ids_without_captions_like_the_original(ours):
    out = ours.PTBTokenizer().tokenize({1: [{"caption": "A dog."}, {"caption": ""}], 2: [],
                                        3: [{"caption": "x."}]})
    assert out == {1: ["a dog", ""], 3: ["x."]}       # what the jar gives


@pytest.mark.java
@pytest.mark.skipif(not HAS_JAVA, reason="needs Java")
@pytest.mark.parametrize("meteor", [False, True])
def test_raw_text_with_empty_and_punctuation_only_candidates(theirs, ours, meteor):
    assert_same(evaluation_script(theirs, RAW_REFS, RAW_CANDS, meteor),
                evaluation_script(ours, RAW_REFS, RAW_CANDS, meteor))


@pytest.mark.java
@pytest.mark.skipif(not HAS_JAVA, reason="needs Java")
def test_meteor_tokenised_edge_cases(theirs, ours):
    gts = {k: [r for r in v if r] for k, v in TOKENISED_GTS.items()}   # the jar's protocol
    res = {**TOKENISED_RES, 9: ["the ||| people"]}                     # '|||' is removed
    assert_same(scores_of(theirs, gts, res, meteor=True)["Meteor"],
                scores_of(ours, gts, res, meteor=True)["Meteor"])


# ---------------------------------------------------------------------- the 9 COCO systems

@pytest.fixture(scope="module")
def corpus(shared_data):
    from capkit.data import load
    return load("coco_karpathy_test")


@pytest.mark.slow
@pytest.mark.java
@pytest.mark.skipif(not HAS_JAVA, reason="needs Java")
@pytest.mark.parametrize("system", SYSTEMS)
def test_same_script_same_numbers_on_coco(theirs, ours, corpus, system):
    cands = corpus.systems[system]
    meteor = system in METEOR_SYSTEMS
    expected = evaluation_script(theirs, corpus.references, cands, meteor)
    got = evaluation_script(ours, corpus.references, cands, meteor)
    assert_same(expected, got)
    assert len(got["res"]) == len(cands) and list(got["res"]) == list(cands)


# ----------------------------------------------------------------------------- COCOEvalCap

class FakeSpice:
    """Stands in for SPICE (Java + CoreNLP) on both sides: the original's shapes, sorted ids."""

    def compute_score(self, gts, res):
        ids = sorted(gts.keys())
        scores = [{"All": {"f": len(res[k][0]) / 100.0, "pr": 0.5, "re": 0.5}} for k in ids]
        return float(np.mean([s["All"]["f"] for s in scores])), scores

    def method(self):
        return "SPICE"


def coco_pair(corpus, system: str, limit: int | None = None):
    """pycocotools COCO objects for a system: ground truth and ``loadRes`` results, the images
    in a seeded shuffled order (as in COCO's own files, ids are not sorted)."""
    from pycocotools.coco import COCO
    ids = list(corpus.systems[system])[:limit]
    ids = [ids[i] for i in np.random.default_rng(0).permutation(len(ids))]
    gt = COCO()
    gt.dataset = {"images": [{"id": int(k)} for k in ids],
                  "annotations": [{"image_id": int(k), "id": n, "caption": c}
                                  for n, (k, c) in enumerate((k, c) for k in ids
                                                             for c in corpus.references[k])]}
    gt.createIndex()
    res = gt.loadRes([{"image_id": int(k), "caption": corpus.systems[system][k]} for k in ids])
    return gt, res


def run_cocoevalcap(module: str, monkeypatch, coco, coco_res, **options):
    ev_module = importlib.import_module(f"{module}.eval")
    monkeypatch.setattr(ev_module, "Spice", FakeSpice)
    ev = ev_module.COCOEvalCap(coco, coco_res, **options)
    ev.params["image_id"] = coco_res.getImgIds()          # as pycocoevalcap's example does
    ev.evaluate()
    return ev


def without_spice(per_image: dict) -> dict:
    return {k: {m: v for m, v in d.items() if m != "SPICE"} for k, d in per_image.items()}


@pytest.mark.slow
@pytest.mark.java
@pytest.mark.skipif(not HAS_JAVA, reason="needs Java")
def test_cocoevalcap_equals_the_original(theirs, corpus, monkeypatch, capsys):
    from capkit.compat.pycocoevalcap import PTBTokenizer
    coco, coco_res = coco_pair(corpus, "transformer_cil")
    capsys.readouterr()
    expected = run_cocoevalcap("pycocoevalcap", monkeypatch, coco, coco_res)
    printed = capsys.readouterr().out
    got = run_cocoevalcap("capkit.compat.pycocoevalcap", monkeypatch, coco, coco_res)
    assert capsys.readouterr().out == printed and "CIDEr: " in printed     # the same lines
    assert list(got.eval) == ["Bleu_1", "Bleu_2", "Bleu_3", "Bleu_4", "METEOR", "ROUGE_L",
                              "CIDEr", "SPICE"]
    assert_same(expected.eval, got.eval)
    assert_same(without_spice(expected.imgToEval), without_spice(got.imgToEval))
    assert_same(without_spice(dict(enumerate(expected.evalImgs))),
                without_spice(dict(enumerate(got.evalImgs))))
    # per-image SPICE: ours sits under its own image; the original's is shifted to other images
    # because the ids are not sorted (tylin/coco-caption#56)
    ids = coco_res.getImgIds()
    assert ids != sorted(ids)
    res = PTBTokenizer().tokenize({i: coco_res.imgToAnns[i] for i in ids})
    spice = {d["image_id"]: d["SPICE"]["All"]["f"] for d in got.evalImgs}
    assert spice == {i: len(res[i][0]) / 100 for i in ids}
    assert any(expected.imgToEval[i]["SPICE"]["All"]["f"] != spice[i] for i in ids)


def test_cocoevalcap_accepts_any_coco_like_object(ours, monkeypatch, capsys):
    """No pycocotools needed: ``getImgIds`` and ``imgToAnns`` are all COCOEvalCap reads."""
    class MiniCOCO:
        def __init__(self, anns):
            self.imgToAnns = collections.defaultdict(list)
            for a in anns:
                self.imgToAnns[a["image_id"]].append(a)

        def getImgIds(self):
            return list(self.imgToAnns)

    keys = list(RAW_REFS)
    coco = MiniCOCO([{"image_id": k, "caption": c} for k in keys for c in RAW_REFS[k]])
    coco_res = MiniCOCO([{"image_id": k, "caption": RAW_CANDS[k]} for k in keys[::-1]])
    ev = run_cocoevalcap("capkit.compat.pycocoevalcap", monkeypatch, coco, coco_res)
    lines = capsys.readouterr().out.splitlines()
    assert lines[:3] == ["tokenization...", "setting up scorers...", "computing Bleu score..."]
    assert f"CIDEr: {ev.eval['CIDEr']:0.3f}" in lines and "computing SPICE score..." in lines
    order = coco_res.getImgIds()
    assert order == keys[::-1]
    gts = ours.PTBTokenizer().tokenize({k: coco.imgToAnns[k] for k in order})
    res = ours.PTBTokenizer().tokenize({k: coco_res.imgToAnns[k] for k in order})
    direct = scores_of(ours, gts, res, meteor=True)
    assert ev.eval["Bleu_4"] == direct["Bleu"][0][3] and ev.eval["CIDEr"] == direct["Cider"][0]
    assert ev.eval["METEOR"] == direct["Meteor"][0]
    assert [d["image_id"] for d in ev.evalImgs] == order
    assert [d["ROUGE_L"] for d in ev.evalImgs] == list(direct["Rouge"][1])
    # SPICE per image, under its own image whatever the id order
    spice = {d["image_id"]: d["SPICE"]["All"]["f"] for d in ev.evalImgs}
    assert spice == {k: len(res[k][0]) / 100 for k in keys}
    ev = run_cocoevalcap("capkit.compat.pycocoevalcap", monkeypatch, coco, coco_res, spice=False)
    assert "SPICE" not in ev.eval and "METEOR" in ev.eval


def test_spice_without_corenlp_says_how_to_get_it(ours, tmp_path):
    with pytest.raises(FileNotFoundError, match="data_scripts.spice_corenlp"):
        ours.Spice(corenlp_dir=tmp_path, java=sys.executable)
    with pytest.raises(FileNotFoundError, match="Java runtime"):
        ours.Spice(corenlp_dir=tmp_path, java=str(tmp_path / "no-java"))


def test_cocoevalcap_without_corenlp_fails_before_scoring(ours, tmp_path, monkeypatch):
    from capkit.metrics.spice.official import spice_dir
    if all((spice_dir() / "lib" / j).is_file() for j in ("stanford-corenlp-3.6.0.jar",
                                                         "stanford-corenlp-3.6.0-models.jar")):
        pytest.skip("CoreNLP is installed in pycocoevalcap's folder")
    if not HAS_JAVA:
        pytest.skip("without Java, Spice() reports the missing Java first")
    monkeypatch.setenv("CAPKIT_CORENLP_DIR", str(tmp_path))
    coco = types.SimpleNamespace(getImgIds=lambda: [1, 2],
                                 imgToAnns={1: [{"caption": "a dog"}], 2: [{"caption": "a cat"}]})
    coco_res = types.SimpleNamespace(getImgIds=lambda: [1, 2], imgToAnns={
        1: [{"caption": "a dog runs"}], 2: [{"caption": "a cat"}]})
    ev = ours.COCOEvalCap(coco, coco_res)
    with pytest.raises(FileNotFoundError, match="data_scripts.spice_corenlp"):
        ev.evaluate()
    assert ev.eval == {}


# ------------------------------------------------------- CiderD with training-corpus frequencies

def scst_batch(corpus, tokenized_refs: dict, images: int = 50, samples: int = 5, seed: int = 0):
    """self-critical's call: res = [{"image_id": i, "caption": [text]}], one id per sample."""
    rng = np.random.default_rng(seed)
    keys = list(corpus.references)
    chosen = [keys[i] for i in rng.choice(len(keys), images, replace=False)]
    gts, res = {}, []
    for j, img in enumerate(chosen):
        pool = [s[img] for s in corpus.systems.values() if img in s]
        for s in range(samples):
            sid = j * samples + s
            text = pool[rng.integers(len(pool))] if s < samples - 1 else ""   # one empty sample
            res.append({"image_id": sid, "caption": [" ".join(text.lower().split())]})
            gts[sid] = tokenized_refs[img]
    return gts, res


@pytest.fixture(scope="module")
def training_df(corpus):
    """Stand-in training corpus: the Karpathy-test references, capkit-PTB-tokenised."""
    from capkit.text import ptb_tokenize
    keys = list(corpus.references)
    flat = iter(ptb_tokenize([r for k in keys for r in corpus.references[k]]))
    refs = {k: [next(flat) for _ in corpus.references[k]] for k in keys}
    return refs, document_frequencies(list(refs.values()), tokenizer="split", name="karpathy")


@pytest.mark.slow
def test_ciderd_with_given_df_equals_pinned_pycocoevalcap(corpus, training_df):
    from capkit.compat.pycocoevalcap import CiderD
    refs, df = training_df
    scorer = CiderD(df=df)
    for seed in range(3):
        gts, res = scst_batch(corpus, refs, seed=seed)
        expected = reference_cider_given_df(gts, res, collections.defaultdict(float, df.counts),
                                            df.n_documents)
        assert_same(expected, scorer.compute_score(gts, res))
    # a whole system in pycocoevalcap's dict form
    cands = corpus.systems["zs_magic"]
    gts = {k: refs[k] for k in cands}
    res = {k: [" ".join(c.lower().split())] for k, c in cands.items()}
    res_list = [{"image_id": k, "caption": v} for k, v in res.items()]
    expected = reference_cider_given_df(gts, res_list, collections.defaultdict(float, df.counts),
                                        df.n_documents)
    assert_same(expected, scorer.compute_score(gts, res))


def test_ciderd_corpus_mode_takes_the_list_form_like_cider(theirs):
    from capkit.compat.pycocoevalcap import CiderD
    keys = list(TOKENISED_GTS)
    res_list = [{"image_id": k, "caption": TOKENISED_RES[k]} for k in keys]
    res_list.append({"image_id": keys[0], "caption": ["a dog runs"]})     # a second sample
    gts_by_pos = {i: TOKENISED_GTS[r["image_id"]] for i, r in enumerate(res_list)}
    res_by_pos = {i: r["caption"] for i, r in enumerate(res_list)}
    expected = theirs.Cider().compute_score(gts_by_pos, res_by_pos)
    assert_same(expected, CiderD().compute_score(TOKENISED_GTS, res_list))
    assert CiderD().method() == "CIDEr-D"


def _small_df() -> DocumentFrequencies:
    return document_frequencies(list(TOKENISED_GTS.values()), tokenizer="split", name="tiny")


def test_df_forms_give_the_same_scores(tmp_path):
    from capkit.compat.pycocoevalcap import CiderD, save_document_frequencies
    df = _small_df()
    expected = reference_cider_given_df(
        TOKENISED_GTS, [{"image_id": k, "caption": v} for k, v in TOKENISED_RES.items()],
        collections.defaultdict(float, df.counts), df.n_documents)
    sc_dict = {"document_frequency": collections.defaultdict(float, df.counts),
               "ref_len": df.n_documents}
    for form in (df, sc_dict, save_document_frequencies(df, tmp_path / "df.json"),
                 str(save_document_frequencies(df, tmp_path / "df.json.gz"))):
        assert_same(expected, CiderD(df=form).compute_score(TOKENISED_GTS, TOKENISED_RES))


def test_df_file_round_trip(tmp_path):
    from capkit.compat.pycocoevalcap import load_document_frequencies, save_document_frequencies
    df = _small_df()
    df = DocumentFrequencies({**df.counts, ("caf\u00e9", "\u00a0x"): 0.5}, df.n_documents, "tiny")
    for name in ("df.json", "df.json.gz"):
        back = load_document_frequencies(save_document_frequencies(df, tmp_path / name))
        assert back.counts == dict(df.counts) and list(back.counts) == list(df.counts)
        assert back.n_documents == df.n_documents and back.name == "tiny"
        assert all(type(c) is float for c in back.counts.values())


@pytest.mark.parametrize("content, message", [
    ('{"format": "other"}', "not a capkit document-frequency file"),
    ('{"format": "capkit-cider-df", "version": 2}', "version 2"),
    ('{"format": "capkit-cider-df", "version": 1, "n_documents": 3, "ngrams": [[[1, 2], 1]]}',
     "non-empty tuple of string tokens"),
    ('{"format": "capkit-cider-df", "version": 1, "n_documents": 3, "ngrams": [["a b", 1]]}',
     "list of"),
    ('{"format": "capkit-cider-df", "version": 1, "n_documents": 0, "ngrams": []}',
     "number >= 1"),
    ('{"format": "capkit-cider-df", "version": 1, "n_documents": 1, "ngrams": [[["a"], 2]]}',
     "count, not its log"),
    ("not json", "not a capkit document-frequency file"),
])
def test_bad_df_files_say_what_is_wrong(tmp_path, content, message):
    from capkit.compat.pycocoevalcap import CiderD
    path = tmp_path / "df.json"
    path.write_text(content)
    with pytest.raises(ValueError, match=message):
        CiderD(df=path)


def test_missing_df_file_and_wrong_types(tmp_path):
    from capkit.compat.pycocoevalcap import CiderD
    with pytest.raises(FileNotFoundError, match="save_document_frequencies"):
        CiderD(df="coco-train-idxs")
    with pytest.raises(TypeError, match="df must be 'corpus'"):
        CiderD(df=42)
    with pytest.raises(ValueError, match="count, not its log"):
        CiderD(df={"document_frequency": {("a",): 100.0}, "ref_len": math.log(40504)})


class _Touch:
    """A pickle that creates a file when unpickled: proof that a loader unpickled it."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return Path.touch, (self.marker,)


def test_pickles_are_never_unpickled_and_the_error_says_how_to_rebuild(tmp_path):
    from capkit.compat.pycocoevalcap import CiderD, load_document_frequencies
    evil = tmp_path / "evil.p"
    evil.write_bytes(pickle.dumps({"document_frequency": _Touch(tmp_path / "touched"),
                                   "ref_len": 2}))
    with pytest.raises(ValueError, match="does not unpickle.*document_frequencies"):
        CiderD(df=evil)
    assert not (tmp_path / "touched").exists()
    with pytest.raises(FileNotFoundError, match="does not read.*save_document_frequencies"):
        load_document_frequencies(tmp_path / "coco-train-idxs")


@pytest.mark.java
@pytest.mark.skipif(not HAS_JAVA, reason="needs Java")
def test_meteor_takes_what_the_jar_takes_with_its_numbers(theirs, ours):
    gts = {k: v for k, v in TOKENISED_GTS.items() if "" not in v}
    res = {k: TOKENISED_RES[k] for k in gts}
    for g, r in [({**gts, 7: []}, res),
                 ({k: tuple(v) for k, v in gts.items()}, {k: tuple(v) for k, v in res.items()})]:
        jar = theirs.Meteor()
        try:
            expected = jar.compute_score(g, r)
        finally:
            close(jar)
        assert_same(expected, ours.Meteor().compute_score(g, r))
