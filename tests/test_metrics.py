"""Classic metrics: exact agreement with pycocoevalcap on generated inputs, and input errors.

The full-data parity test (9 COCO Karpathy-test systems, Java tokenizer) is in
test_parity_coco.py; here the inputs are pre-tokenised (tokenizer="split") so the arithmetic
alone is compared.
"""
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from capkit.metrics import (suite, bleu, cider_d, document_frequencies, get_metric, rouge_l,
                            score)
from reference_metrics import reference_scores

TOL = 1e-9
WORDS = st.sampled_from("a the dog cat on in runs red big small of".split())
CAPTION = st.lists(WORDS, min_size=1, max_size=14).map(" ".join)


def _compare(cands: dict[str, str], refs: dict[str, list[str]]):
    ours = score(cands, refs, suite("classic"), tokenizer="split")
    theirs = reference_scores(refs, {k: [v] for k, v in cands.items()})
    for name in suite("classic"):
        corpus, per = theirs[name]
        assert ours[name].corpus == pytest.approx(corpus, abs=TOL), name
        np.testing.assert_allclose(ours[name].per_caption, per, rtol=0, atol=TOL, err_msg=name)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(CAPTION, st.lists(CAPTION, min_size=1, max_size=5)),
                min_size=2, max_size=12))
def test_matches_pycocoevalcap_on_generated_captions(items):
    cands = {str(i): c for i, (c, _) in enumerate(items)}
    refs = {str(i): r for i, (_, r) in enumerate(items)}
    _compare(cands, refs)


def test_long_candidates_use_the_unbounded_lcs_path():
    # over 64 tokens the 64-bit LCS cannot hold a row; the Python-int path must agree
    rng = np.random.default_rng(0)
    vocab = "a b c d e f g h".split()
    cands = {str(i): " ".join(rng.choice(vocab, size=70 + i)) for i in range(4)}
    refs = {str(i): [" ".join(rng.choice(vocab, size=s)) for s in (5, 66, 90)] for i in range(4)}
    _compare(cands, refs)


def test_closest_reference_length_ties_go_to_the_shorter():
    cands = {"a": "w w w w", "b": "x y"}
    refs = {"a": ["w w w", "w w w w w"], "b": ["x", "x y z"]}
    _compare(cands, refs)


def test_corpus_bleu_pools_counts_and_is_not_the_mean():
    cands = {"a": "a dog runs on the grass", "b": "a cat"}
    refs = {"a": ["a dog runs on the green grass"], "b": ["a small cat sleeps"]}
    s = bleu(cands, refs, n=4, tokenizer="split")
    assert s.corpus != pytest.approx(s.per_caption.mean())
    assert set(s.parts) >= {"bleu_1", "corpus_bleu_1", "correct", "guess"}
    # the no-4-gram caption gets pycocoevalcap's smoothed ~1e-5 instead of 0
    assert 0 < s.per_caption[1] < 1e-3


def test_scores_do_not_depend_on_candidate_order():
    cands = {str(i): c for i, c in enumerate(["a dog", "a red cat", "the big dog runs",
                                              "a cat on a mat"])}
    refs = {k: ["a dog runs", "a cat sits on a mat", "the red dog"] for k in cands}
    a = score(cands, refs, suite("classic"), tokenizer="split")
    rev = dict(reversed(list(cands.items())))
    b = score(rev, refs, suite("classic"), tokenizer="split")
    for name in suite("classic"):
        assert a[name].by_id() == pytest.approx(b[name].by_id(), abs=1e-12)


def test_cider_with_given_document_frequencies_equals_corpus_ones():
    cands = {"a": "a dog runs", "b": "a cat sleeps", "c": "two birds fly"}
    refs = {"a": ["a dog is running"], "b": ["a cat is sleeping", "a cat naps"],
            "c": ["birds in the sky"]}
    df = document_frequencies(refs, tokenizer="split", name="same-refs")
    own = cider_d(cands, refs, tokenizer="split")
    given_ = cider_d(cands, refs, tokenizer="split", document_frequency=df)
    np.testing.assert_allclose(own.per_caption, given_.per_caption, atol=1e-12)
    assert "df:same-refs" in given_.signature and "df:corpus" in own.signature
    # with given df a single image is well defined
    one = cider_d({"a": "a dog runs"}, {"a": refs["a"]}, tokenizer="split", document_frequency=df)
    assert one.per_caption[0] > 0


def test_signature_records_settings():
    s = rouge_l(["a dog"], [["a dog runs"]], tokenizer="split")
    assert s.signature.startswith("rouge_l|beta:1.2|") and "tok:split" in s.signature
    assert s.ids is None and len(s) == 1


@pytest.mark.parametrize("cands, refs, err, match", [
    ({"a": 3}, {"a": ["x"]}, TypeError, "candidate a must be a string"),
    ({"a": "x"}, {"a": []}, ValueError, "candidate a has no references"),
    ({"a": "x"}, {"a": "just one string"}, ValueError, "no references"),
    ({"a": "x", "b": "y"}, {"a": ["x"], "c": ["z"]}, ValueError, r"ids must match exactly.*\['b'\]"),
    (["x", "y"], [["x"]], ValueError, "aligned one to one"),
    ({"a": "x"}, [["x"]], TypeError, "must be a mapping"),
    ({7: "x", "7": "y"}, {7: ["x"], "7": ["y"]}, ValueError, r"two different keys.*\['7'\]"),
])
def test_bad_input_gives_a_clear_error(cands, refs, err, match):
    with pytest.raises(err, match=match):
        bleu(cands, refs, tokenizer="split")


def test_ids_equal_as_text_but_typed_apart_are_named():
    """COCO results' int image_id against a JSON file's str keys: refused (pairing is by key, as
    in pycocoevalcap), saying which side has which type and how to convert it."""
    cands = {391895: "a man riding a bike", 522418: "a woman cutting a cake"}
    refs = {"391895": ["a man rides a bike"], "522418": ["a woman cuts a cake"]}
    with pytest.raises(ValueError, match=r"ids must match exactly.*; 2 of them are the same id "
                       r"as text, typed apart: the candidates' ids are int, the references' str "
                       r"\(e\.g\. 391895 and '391895'\).*e\.g\. candidates = \{str\(k\): v "
                       r"for k, v in candidates\.items\(\)\}$"):
        bleu(cands, refs, tokenizer="split")
    with pytest.raises(ValueError, match=r"1 of them is the same id as text.*the candidates' ids "
                       r"are str, the references' int.*references = \{str\(k\).*; for the "
                       r"others, score only the ids present in both"):
        bleu({"1": "x"}, {1: ["x"], 2: ["y"]}, tokenizer="split")
    with pytest.raises(ValueError, match=r"\['c'\]\); score only the ids present in both, or fix "
                                         r"the files$"):    # no id typed apart: no such hint
        bleu({"a": "x", "b": "y"}, {"a": ["x"], "c": ["z"]}, tokenizer="split")
    fixed = bleu({str(k): v for k, v in cands.items()}, refs, tokenizer="split")
    assert fixed.ids == ("391895", "522418")


def test_empty_references_score_like_pycocoevalcap_or_raise_when_strict():
    from reference_metrics import reference_scores
    cands = {"a": "a dog runs on the grass", "b": "two cats sleep", "c": "a red bus"}
    refs = {"a": ["a dog is running on the grass", ""], "b": ["   ", "two cats are asleep"],
            "c": ["", " "]}                                     # c: no real reference at all
    with pytest.warns(UserWarning, match=r"4 reference\(s\) are empty.*reference 1 of "
                                         "candidate a"):
        ours = score(cands, refs, ["bleu_4", "rouge_l", "cider_d"], tokenizer="split")
    # pycocoevalcap's scorers on the same tokens (its ROUGE-L splits on " ": "" is one token)
    theirs = reference_scores({k: [" ".join(r.split()) for r in v] for k, v in refs.items()},
                              {k: [c] for k, c in cands.items()})
    for name in ("bleu_4", "rouge_l", "cider_d"):
        assert ours[name].corpus == pytest.approx(theirs[name][0], abs=1e-12), name
        np.testing.assert_allclose(ours[name].per_caption, theirs[name][1], rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="reference 1 of candidate a is empty"):
        score(cands, refs, ["bleu_4"], strict=True)


@pytest.mark.parametrize("empty", ["", "   ", "..."])
def test_empty_candidate_scores_zero_like_pycocoevalcap_or_raises_when_strict(empty):
    cands, refs = {"a": empty, "b": "a dog"}, {"a": ["a cat"], "b": ["a dog runs"]}
    with pytest.warns(UserWarning, match="1 candidate.*(empty|no tokens)"):
        out = score(cands, refs, ["bleu_4", "rouge_l", "cider_d", "meteor"])
    for name, s in out.items():
        assert s.by_id()["a"] == 0.0, name
        assert s.parts["n_empty_candidates"] == 1, name
    with pytest.raises(ValueError, match="empty|no tokens"):
        score(cands, refs, ["bleu_4"], strict=True)


def test_cider_on_a_single_image_explains_why():
    with pytest.raises(ValueError, match="single candidate.*document_frequency"):
        cider_d({"a": "a dog"}, {"a": ["a dog runs"]}, tokenizer="split")


def test_unknown_names_are_rejected():
    with pytest.raises(ValueError, match="unknown tokenizer"):
        bleu(["a"], [["a"]], tokenizer="nltk")
    with pytest.raises(ValueError, match="BLEU order"):
        bleu(["a"], [["a"]], n=5, tokenizer="split")
    with pytest.raises(ValueError, match="unknown metric 'blue'"):
        get_metric("blue")
    with pytest.raises(ValueError, match="cannot import metric"):
        get_metric("no_such_module:f")


def test_candidate_without_tokens_scores_zero_with_a_warning():
    with pytest.warns(UserWarning, match="no tokens"):
        s = score({"a": "...", "b": "a dog"}, {"a": ["a dog"], "b": ["a dog"]},
                  ["bleu_4", "rouge_l", "cider_d"])
    for name in ("bleu_4", "rouge_l", "cider_d"):
        assert s[name].per_caption[0] == 0.0


def test_tokens_with_a_no_break_space_are_split_as_pycocoevalcap_splits_them():
    # the PTB tokenizer emits "5\xa01/2" as one token: BLEU/CIDEr-D split it (str.split()),
    # pycocoevalcap's ROUGE-L does not (split(" ")); both behaviours are reproduced
    from capkit.text import ptb_tokenize
    cands = {"a": "a pole 5 1/2 feet tall", "b": "a dog"}
    refs = {"a": ["a pole 5 1/2 feet tall here"], "b": ["a dog runs"]}
    res = {k: [t] for k, t in zip(cands, ptb_tokenize(list(cands.values())))}
    gts = {k: [t] for k, t in zip(refs, ptb_tokenize([r for v in refs.values() for r in v]))}
    assert "\xa0" in res["a"][0]
    theirs = reference_scores(gts, res)
    ours = score(cands, refs, suite("classic"))
    for name in suite("classic"):
        np.testing.assert_allclose(ours[name].per_caption, theirs[name][1], atol=TOL, err_msg=name)
