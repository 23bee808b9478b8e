"""Acceptance parity: the 9 COCO Karpathy-test systems, raw text in, against pycocoevalcap 1.2.

pycocoevalcap tokenises with the Java PTB tokenizer (as COCOEvalCap does); capkit uses its own
pure-Python tokenizer. Corpus and every per-caption BLEU-1..4, ROUGE-L and CIDEr-D must agree
within 1e-9 absolute.
"""
import numpy as np
import pytest

from capkit.data import load
from capkit.metrics import suite

CLASSIC = suite("classic")
from capkit.systems import score_systems
from reference_metrics import reference_scores
from skip_policy import needs_java

pytestmark = [pytest.mark.slow, pytest.mark.java, needs_java]
TOL = 1e-9


@pytest.fixture(scope="module")
def corpus(shared_data):
    return load("coco_karpathy_test")


@pytest.fixture(scope="module")
def ours(corpus):
    return score_systems(corpus, CLASSIC)


def _java_tokenized(corpus, system):
    from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer
    cands = corpus.systems[system]
    tok = PTBTokenizer()
    gts = tok.tokenize({k: [{"caption": c} for c in corpus.references[k]] for k in cands})
    res = tok.tokenize({k: [{"caption": c}] for k, c in cands.items()})
    return gts, res


def test_nine_systems_are_scored(corpus, ours):
    assert len(corpus.systems) == 9
    assert {len(s["cider_d"]) for s in ours.values()} == {4982, 5000}


@pytest.mark.parametrize("system", ["updown_paddle", "show_attend_tell_paddle",
                                    "transformer_cil", "zs_magic", "zs_zerocap", "zs_clipre",
                                    "zs_contrastive", "zs_topk_run1", "zs_nucleus_run1"])
def test_equal_to_pycocoevalcap(corpus, ours, system):
    gts, res = _java_tokenized(corpus, system)
    theirs = reference_scores(gts, res)
    for name in CLASSIC:
        s = ours[system][name]
        corpus_ref, per_ref = theirs[name]
        assert list(s.ids) == list(res), "capkit must keep the candidates' id order"
        assert abs(s.corpus - corpus_ref) <= TOL, (name, s.corpus, corpus_ref)
        np.testing.assert_allclose(s.per_caption, per_ref, rtol=0, atol=TOL, err_msg=name)


def test_regression_values_from_benchmarks_md(ours):
    # pycocoevalcap 1.2 corpus scores listed in ../shared/docs/BENCHMARKS.md (4 decimals)
    table = {"updown_paddle": (0.7606, 0.3503, 0.5615, 1.1072),
             "zs_zerocap": (0.4979, 0.0698, 0.3180, 0.3447)}
    for system, expected in table.items():
        got = tuple(ours[system][m].corpus for m in ("bleu_1", "bleu_4", "rouge_l", "cider_d"))
        np.testing.assert_allclose(got, expected, atol=6e-5)


def test_empty_references_equal_pycocoevalcap(corpus):
    """pycocoevalcap scores a reference that is empty (it matches nothing); so does capkit, with
    a warning. One reference in 20 of a real system blanked, raw text through both tokenizers."""
    from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer

    from capkit.metrics import score
    rng = np.random.default_rng(0)
    cands = corpus.systems["updown_paddle"]
    refs = {k: ["" if rng.random() < 0.05 else r for r in corpus.references[k]] for k in cands}
    n_empty = sum(r == "" for rs in refs.values() for r in rs)
    tok = PTBTokenizer()
    gts = tok.tokenize({k: [{"caption": c} for c in refs[k]] for k in cands})
    res = tok.tokenize({k: [{"caption": c}] for k, c in cands.items()})
    theirs = reference_scores(gts, res)
    with pytest.warns(UserWarning, match=rf"{n_empty} reference\(s\) are empty"):
        ours = score(cands, refs, CLASSIC)
    for name in CLASSIC:
        assert abs(ours[name].corpus - theirs[name][0]) <= TOL, name
        np.testing.assert_allclose(ours[name].per_caption, theirs[name][1], rtol=0, atol=TOL,
                                   err_msg=name)
