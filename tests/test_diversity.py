"""capkit.diversity against straightforward implementations of Wang & Chan's formulas.

The parity references follow the authors' code (qingzwang/DiversityMetrics,
pycocoevalcap/diversity_eval.py): Self-CIDEr builds one CIDEr-D per caption pair (here both
capkit.metrics.cider_d on single pairs and a literal port of their CiderScorer), LSA counts
words with ``caption.split(' ')``, mBLEU scores each caption against the rest with BLEU.
"""
from collections import defaultdict

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from capkit.diversity import (
    caption_sets,
    cider_d_kernel,
    distinct_n,
    diversity_from_singular_values,
    lsa_diversity,
    mbleu,
    self_cider,
    singular_values,
)
from capkit.metrics import bleu, cider_d, document_frequencies

TOK = "split"      # the authors do not tokenise; the diversity set is lower-case already


@pytest.fixture(scope="module")
def diversity(shared_data):
    from capkit.data import load
    return load("diversity_wang_chan")


@pytest.fixture(scope="module")
def corpus_df(shared_data):
    """A real reference corpus: the Karpathy-test references, lower-cased, periods dropped."""
    from capkit.data import load
    refs = load("coco_karpathy_test").references
    clean = {k: [r.lower().replace(".", " ") for r in v] for k, v in refs.items()}
    return document_frequencies(clean, tokenizer=TOK, name="karpathy_lower")


@pytest.fixture(scope="module")
def parity_sets(diversity):
    """200 images: the 3 with duplicate captions, the 5 most UNK-heavy, then the first ones."""
    ids = list(diversity)
    dup = [i for i in ids if len(set(diversity[i])) < len(diversity[i])]
    unk = sorted(ids, key=lambda i: -max(c.split().count("UNK") / len(c.split())
                                          for c in diversity[i]))[:5]
    chosen = list(dict.fromkeys(dup + unk + ids))[:200]
    assert len(dup) == 3 and all(i in chosen for i in dup + unk)
    return {i: diversity[i] for i in chosen}


# --- literal re-implementations ------------------------------------------------------------
def _precook(s, n=4):
    words, counts = s.split(), defaultdict(int)
    for k in range(1, n + 1):
        for i in range(len(words) - k + 1):
            counts[tuple(words[i:i + k])] += 1
    return counts


def _authors_cider_pair(test, ref, df, n=4, sigma=6.0):
    """CiderScorer.compute_cider for one (test, [ref]) pair with a df file (Python 3 port)."""
    ref_len = np.log(float(df.n_documents))

    def counts2vec(cnts):
        vec, norm, length = [defaultdict(float) for _ in range(n)], [0.0] * n, 0
        for ngram, tf in cnts.items():
            k = len(ngram) - 1
            vec[k][ngram] = float(tf) * (ref_len - np.log(max(1.0, df.counts.get(ngram, 0.0))))
            norm[k] += vec[k][ngram] ** 2
            if k == 1:
                length += tf
        return vec, [np.sqrt(x) for x in norm], length

    vh, nh, lh = counts2vec(_precook(test))
    vr, nr, lr = counts2vec(_precook(ref))
    val = np.zeros(n)
    for k in range(n):
        for g in vh[k]:
            val[k] += min(vh[k][g], vr[k][g]) * vr[k][g]
        if nh[k] != 0 and nr[k] != 0:
            val[k] /= nh[k] * nr[k]
        val[k] *= np.e ** (-(float(lh - lr) ** 2) / (2 * sigma ** 2))
    return float(np.mean(val)) * 10.0


def _ratio_div(sigma, m, threshold=True):
    s = np.asarray(sigma, dtype=np.float64)
    if threshold:   # capkit's one addition: round-off singular values are zero
        s = np.where(s > s.max() * max(m, m) * np.finfo(float).eps, s, 0.0)
    return s


def _self_cider_reference(captions, pair, threshold=True):
    m = len(captions)
    K = np.zeros((m, m))
    for i in range(m):
        for j in range(i, m):
            K[i, j] = K[j, i] = pair(captions[i], captions[j])
    s = _ratio_div(np.linalg.svd(K, compute_uv=False), m, threshold)
    root = np.sqrt(s)
    return -np.log(root.max() / root.sum()) / np.log(m)


def _lsa_reference(captions):
    vocab = list(dict.fromkeys(t for c in captions for t in c.split(" ")))
    M = np.zeros((len(vocab), len(captions)))
    for j, c in enumerate(captions):
        for t in c.split(" "):
            M[vocab.index(t), j] += 1
    s = np.linalg.svd(M, compute_uv=False)
    return -np.log10(s.max() / s.sum()) / np.log10(len(captions))


# --- parity --------------------------------------------------------------------------------
def test_self_cider_equals_the_authors_pairwise_construction(parity_sets, corpus_df):
    got = self_cider(parity_sets, document_frequency=corpus_df, tokenizer=TOK)
    literal = [_self_cider_reference(c, lambda a, b: _authors_cider_pair(a, b, corpus_df))
               for c in parity_sets.values()]
    np.testing.assert_allclose(got.per_caption, literal, rtol=0, atol=1e-9)
    # without capkit's round-off threshold the authors' numbers move by < 1e-6
    raw = [_self_cider_reference(c, lambda a, b: _authors_cider_pair(a, b, corpus_df), False)
           for c in list(parity_sets.values())[:3]]
    np.testing.assert_allclose(got.per_caption[:3], raw, rtol=0, atol=1e-6)
    assert got.ids == tuple(parity_sets)


def test_self_cider_kernel_is_cider_d_on_each_single_pair(parity_sets, corpus_df):
    sets = caption_sets(parity_sets, TOK)
    K = cider_d_kernel(sets, corpus_df)
    cands, refs, cells = [], [], []
    for n, caps in enumerate(parity_sets.values()):
        for i in range(len(caps)):
            for j in range(i, len(caps)):
                cands.append(caps[i]), refs.append([caps[j]]), cells.append((n, i, j))
    # a fixed df makes every pair's CIDEr-D independent of the others scored with it
    per = cider_d(cands, refs, document_frequency=corpus_df, tokenizer=TOK).per_caption
    n, i, j = np.array(cells).T
    np.testing.assert_allclose(K[n, i, j], per, rtol=0, atol=1e-9)
    np.testing.assert_allclose(K[n, j, i], per, rtol=0, atol=1e-9)
    caps = parity_sets[sets.ids[0]]            # and literally one call per pair
    for i in range(10):
        for j in range(i, 10):
            one = cider_d([caps[i]], [[caps[j]]], document_frequency=corpus_df, tokenizer=TOK)
            assert K[0, i, j] == pytest.approx(one.per_caption[0], abs=1e-12)


def test_lsa_equals_the_authors_term_document_svd(parity_sets):
    got = lsa_diversity(parity_sets, tokenizer=TOK)
    ref = [_lsa_reference(c) for c in parity_sets.values()]
    np.testing.assert_allclose(got.per_caption, ref, rtol=0, atol=1e-9)


def test_mbleu_equals_bleu_of_each_caption_against_the_rest(parity_sets):
    some = dict(list(parity_sets.items())[:40])
    got = mbleu(some, tokenizer=TOK)
    for n, caps in enumerate(some.values()):
        others = [[c for j, c in enumerate(caps) if j != i] for i in range(len(caps))]
        s = bleu(caps, others, n=4, tokenizer=TOK)
        for k in range(1, 5):
            mean = np.mean(s.parts[f"bleu_{k}"])
            assert got.parts[f"mean_bleu_{k}"][n] == pytest.approx(mean, abs=1e-12)
            assert got.parts[f"mbleu_{k}"][n] == pytest.approx(1 - mean, abs=1e-12)
        mix = 1 - np.mean([np.mean(s.parts[f"bleu_{k}"]) for k in range(1, 5)])
        assert got.per_caption[n] == pytest.approx(mix, abs=1e-12)


def test_mbleu_equals_pycocoevalcap_bleu_as_the_authors_call_it(parity_sets, capsys):
    from pycocoevalcap.bleu.bleu import Bleu
    caps = next(iter(parity_sets.values()))
    scores = [Bleu(4).compute_score({0: [c for j, c in enumerate(caps) if j != i]},
                                    {0: [caps[i]]})[0] for i in range(len(caps))]
    capsys.readouterr()
    got = mbleu([caps], tokenizer=TOK)
    np.testing.assert_allclose([got.parts[f"mean_bleu_{k}"][0] for k in range(1, 5)],
                               np.mean(scores, axis=0), rtol=0, atol=1e-12)


# --- edge cases ----------------------------------------------------------------------------
def test_a_single_caption_is_a_clear_error(corpus_df):
    for fn in (lsa_diversity, mbleu):
        with pytest.raises(ValueError, match="m < 2"):
            fn({"img": ["a dog runs"]}, tokenizer=TOK)
    with pytest.raises(ValueError, match="m < 2"):
        self_cider([["a dog runs"], ["x y", "y z"]], document_frequency=corpus_df, tokenizer=TOK)


def test_identical_captions_have_zero_diversity(corpus_df):
    for caps in (["a dog runs on the grass"] * 5, ["dog"] * 3, ["a b c d e f g h"] * 10):
        assert self_cider([caps], document_frequency=corpus_df, tokenizer=TOK).corpus == 0.0
        assert lsa_diversity([caps], tokenizer=TOK).corpus == 0.0
        assert mbleu([caps], tokenizer=TOK).parts["mbleu_1"][0] == pytest.approx(0, abs=1e-8)


def test_all_different_single_words_have_diversity_one(corpus_df):
    caps = ["dog", "cat", "bird", "horse", "zebra"]
    assert self_cider([caps], document_frequency=corpus_df, tokenizer=TOK).corpus == \
        pytest.approx(1.0, abs=1e-12)
    assert lsa_diversity([caps], tokenizer=TOK).corpus == pytest.approx(1.0, abs=1e-12)
    assert mbleu([caps], tokenizer=TOK).corpus == pytest.approx(1.0, abs=1e-8)


def test_an_empty_caption_is_a_zero_row_as_in_the_authors_code(corpus_df):
    caps = ["a man rides horses", "", "two dogs play outside", "   "]
    got = self_cider([caps], document_frequency=corpus_df, tokenizer=TOK).corpus
    ref = _self_cider_reference(caps, lambda a, b: _authors_cider_pair(a, b, corpus_df))
    assert got == pytest.approx(ref, abs=1e-9)
    K = cider_d_kernel(caption_sets([caps], TOK), corpus_df)[0]
    assert not K[1].any() and not K[:, 3].any()
    assert lsa_diversity([caps], tokenizer=TOK).corpus == pytest.approx(np.log(2) / np.log(4))
    with pytest.raises(ValueError, match="no word in any caption"):
        lsa_diversity({"a": ["", " "], "b": ["x", "y"]}, tokenizer=TOK)


def test_ragged_sets_equal_each_set_alone(corpus_df, parity_sets):
    sets = [c[:m] for c, m in zip(list(parity_sets.values())[:6], (2, 10, 3, 7, 5, 10))]
    together = self_cider(sets, document_frequency=corpus_df, tokenizer=TOK).per_caption
    alone = [self_cider([s], document_frequency=corpus_df, tokenizer=TOK).corpus for s in sets]
    np.testing.assert_allclose(together, alone, rtol=0, atol=1e-12)
    lsa_t, lsa_a = lsa_diversity(sets, tokenizer=TOK), [lsa_diversity([s], tokenizer=TOK).corpus
                                                         for s in sets]
    np.testing.assert_allclose(lsa_t.per_caption, lsa_a, rtol=0, atol=1e-12)
    mb_t = mbleu(sets, tokenizer=TOK).per_caption
    np.testing.assert_allclose(mb_t, [mbleu([s], tokenizer=TOK).corpus for s in sets], atol=1e-12)


def test_lsa_and_mbleu_ignore_caption_order_self_cider_nearly(parity_sets, corpus_df):
    caps = next(iter(parity_sets.values()))
    flipped = caps[::-1]
    assert lsa_diversity([flipped], tokenizer=TOK).corpus == \
        pytest.approx(lsa_diversity([caps], tokenizer=TOK).corpus, abs=1e-12)
    assert mbleu([flipped], tokenizer=TOK).corpus == \
        pytest.approx(mbleu([caps], tokenizer=TOK).corpus, abs=1e-12)
    # the clipped CIDEr-D is not symmetric, and the smaller index is the candidate: order
    # matters a little (the authors' construction, kept)
    a = self_cider([caps], document_frequency=corpus_df, tokenizer=TOK).corpus
    b = self_cider([flipped], document_frequency=corpus_df, tokenizer=TOK).corpus
    assert abs(a - b) < 0.02


def test_first_m_and_diversity_from_singular_values():
    sets = caption_sets({"a": ["x y", "y z", "z w", "w v"]}, TOK)
    assert list(sets.first(2).to_dict()["a"]) == ["x y", "y z"]
    with pytest.raises(ValueError, match="between 2"):
        sets.first(5)
    div, r = diversity_from_singular_values(np.array([[2.0, 2.0, 0.0]]), np.array([3]))
    assert r[0] == 0.5 and div[0] == pytest.approx(np.log(2) / np.log(3))
    with pytest.raises(ValueError, match="m >= 2"):
        diversity_from_singular_values(np.ones((1, 2)), np.array([1]))
    assert singular_values(np.ones((1, 3, 3)))[0].tolist() == [3.0, 0.0, 0.0]


def test_inputs_are_checked():
    with pytest.raises(TypeError, match="must be a string"):
        lsa_diversity([["a", 3]], tokenizer=TOK)
    with pytest.raises(TypeError, match="list of strings"):
        lsa_diversity({"a": "one caption"}, tokenizer=TOK)
    with pytest.raises(ValueError, match="no caption sets"):
        lsa_diversity({}, tokenizer=TOK)
    with pytest.raises(ValueError, match="unknown tokenizer"):
        lsa_diversity([["a", "b"]], tokenizer="nltk")
    with pytest.raises(ValueError, match="appears twice"):
        caption_sets([{"image_id": 1, "captions": ["a", "b"]},
                      {"image_id": 1, "captions": ["c", "d"]}], TOK)
    with pytest.raises(ValueError, match="'image_id' and 'captions'"):
        caption_sets([{"image_id": 1, "caption": "a"}], TOK)
    with pytest.raises(ValueError, match="order n"):
        mbleu([["a", "b"]], n=5, tokenizer=TOK)
    with pytest.raises(ValueError, match="at least 1"):
        cider_d_kernel(caption_sets([["a", "b"]], TOK), None, n=0)
    with pytest.raises(ValueError, match="only zero singular values"):
        diversity_from_singular_values(np.zeros((1, 2)), np.array([2]))


def test_signatures_name_the_settings(corpus_df):
    sets = [["a dog", "a cat"]]
    assert self_cider(sets, document_frequency=corpus_df, tokenizer=TOK).signature.startswith(
        f"self_cider|kernel:cider_d|n:4|sigma:6.0|df:{corpus_df.fingerprint}|sv:sqrt(svd)|")
    assert "|tok:split|" in lsa_diversity(sets, tokenizer=TOK).signature
    assert "orient:1-mbleu" in mbleu(sets, tokenizer=TOK).signature
    # the captions per set: m:2 here, a range where the sets differ
    assert "|m:2|" in distinct_n(sets, 1, tokenizer=TOK).signature
    assert "|m:2-3|" in mbleu([["a dog", "a cat"], ["a", "b", "c"]], tokenizer=TOK).signature


def test_given_document_frequencies_are_named_by_content():
    """Was: two tables of one name ("given") gave other Self-CIDEr and accuracy numbers under
    one signature; a given table now shows its content hash, as in CIDEr-D's signature."""
    from capkit.diversity import accuracy, human_accuracy
    refs = {"1": ["a dog runs", "a dog sits"], "2": ["a red ball", "the ball"],
            "3": ["a cat", "the cat sleeps"]}
    tables = [document_frequencies(dict(list(refs.items())[a:]), tokenizer=TOK) for a in (0, 1)]
    sets = {"1": ["a dog runs", "a dog"], "2": ["a ball", "the red ball"]}
    for fn in (lambda df: self_cider(sets, document_frequency=df, tokenizer=TOK),
               lambda df: accuracy(sets, refs, document_frequency=df, tokenizer=TOK),
               lambda df: human_accuracy(refs, document_frequency=df, tokenizer=TOK)):
        a, b = (fn(df) for df in tables)
        assert a.corpus != b.corpus and a.signature != b.signature
        assert f"|df:{tables[0].fingerprint}|" in a.signature and tables[0].name == "given"


def test_default_document_frequencies_are_the_karpathy_references(shared_data):
    from capkit.diversity import reference_document_frequencies
    df = reference_document_frequencies(TOK)
    assert df.n_documents == 5000 and df.name == "coco_karpathy_test"
    assert "df:coco_karpathy_test" in self_cider([["a dog", "a cat"]], tokenizer=TOK).signature


# --- properties ----------------------------------------------------------------------------
WORDS = ["a", "dog", "cat", "runs", "on", "grass", "the", "red", "ball"]
caption = st.lists(st.sampled_from(WORDS), min_size=0, max_size=6).map(" ".join)
caption_set = st.lists(caption, min_size=2, max_size=6).filter(lambda s: any(c for c in s))


@settings(max_examples=40, deadline=None)
@given(st.lists(caption_set, min_size=1, max_size=4), st.randoms(use_true_random=False))
def test_scores_lie_in_0_1_and_do_not_depend_on_the_other_sets(sets, rnd):
    df = document_frequencies([["a dog runs on the grass", "a red ball"], ["the cat"]],
                              tokenizer=TOK)
    # a set whose only words are in every document ("the") has an all-zero kernel: undefined
    assume(all(any(w not in ("", "the") for c in s for w in c.split()) for s in sets))
    together = [self_cider(sets, document_frequency=df, tokenizer=TOK).per_caption,
                lsa_diversity(sets, tokenizer=TOK).per_caption,
                mbleu(sets, tokenizer=TOK).per_caption]
    for values in together:
        assert np.all((values >= 0) & (values <= 1 + 1e-12))
    alone = self_cider([sets[0]], document_frequency=df, tokenizer=TOK).corpus
    assert together[0][0] == pytest.approx(alone, abs=1e-12)
    shuffled = list(sets[0])
    rnd.shuffle(shuffled)
    assert lsa_diversity([shuffled], tokenizer=TOK).corpus == \
        pytest.approx(together[1][0], abs=1e-9)
    assert mbleu([shuffled], tokenizer=TOK).corpus == pytest.approx(together[2][0], abs=1e-9)
