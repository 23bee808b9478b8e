"""capkit.transforms: seeded, pure, and each keeps what it should (property tests)."""
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from capkit.transforms import (
    GAMMAS,
    TRANSFORMS,
    TransformContext,
    apply_transform,
    build_vocabulary,
    hard_negatives,
    keyword_dictionary,
    keyword_substitution,
    neighbour_order,
    random_captions,
    random_words,
    repeat_remove,
    segment_permutation,
    switch_synonyms,
    tfidf_vectors,
    word_permutation,
    words_to_change,
)

WORDS = ["a", "the", "dog", "cat", "man", "woman", "runs", "sits", "red", "big", "on", "in",
         "grass", "street", "bike", "ball", "plays", "two", "with", "park"]
TAGS = {"dog": "NN", "cat": "NN", "man": "NN", "woman": "NN", "grass": "NN", "street": "NN",
        "bike": "NN", "ball": "NN", "park": "NN", "runs": "VBZ", "sits": "VBZ", "plays": "VBZ",
        "red": "JJ", "big": "JJ"}
VOCAB = tuple(WORDS)
DICTIONARY = keyword_dictionary([WORDS], [[TAGS.get(w, "") for w in WORDS]], min_count=1)

captions_st = st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=14),
                       min_size=1, max_size=6).map(lambda cs: [" ".join(c) for c in cs])
gamma_st = st.sampled_from(GAMMAS)
positive_gamma_st = st.sampled_from(GAMMAS[1:])
seed_st = st.integers(0, 2**16)


def _tags(captions):
    return [[TAGS.get(w, "") for w in c.split()] for c in captions]


def _ks(captions, gamma, seed):
    return keyword_substitution(captions, gamma, dictionary=DICTIONARY, tags=_tags(captions),
                                seed=seed)


WORD_LEVEL = {
    "WP": lambda c, g, s: word_permutation(c, g, seed=s),
    "RW": lambda c, g, s: random_words(c, g, vocabulary=VOCAB, seed=s),
    "KS": _ks,
    "RR": lambda c, g, s: repeat_remove(c, g, seed=s),
    "SO": lambda c, g, s: segment_permutation(c, g, seed=s),
}


@pytest.fixture(scope="module")
def context():
    refs = {f"img{i}": [" ".join(np.random.default_rng(i).choice(WORDS, 6)) for _ in range(3)]
            for i in range(12)}
    return TransformContext.from_references(refs)


@settings(max_examples=60, deadline=None)
@given(captions_st, gamma_st, seed_st, st.sampled_from(sorted(WORD_LEVEL)))
def test_word_level_transforms_are_deterministic_and_identity_at_zero(captions, gamma, seed,
                                                                      code):
    fn = WORD_LEVEL[code]
    assert fn(captions, gamma, seed) == fn(list(captions), gamma, seed)
    assert fn(captions, 0.0, seed) == captions


@settings(max_examples=80, deadline=None)
@given(captions_st, positive_gamma_st, seed_st)
def test_wp_keeps_the_multiset_and_always_changes_when_it_can(captions, gamma, seed):
    for old, new in zip(captions, word_permutation(captions, gamma, seed=seed)):
        assert Counter(old.split()) == Counter(new.split())
        assert (new != old) == (len(set(old.split())) > 1)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(WORDS), min_size=2, max_size=14, unique=True), positive_gamma_st,
       seed_st)
def test_wp_moves_exactly_gamma_of_distinct_words(words, gamma, seed):
    new = word_permutation([" ".join(words)], gamma, seed=seed)[0].split()
    moved = sum(a != b for a, b in zip(words, new))
    assert moved == words_to_change(gamma, len(words), minimum=2)


@settings(max_examples=80, deadline=None)
@given(captions_st, positive_gamma_st, seed_st)
def test_rw_keeps_the_length_and_replaces_gamma_of_the_words(captions, gamma, seed):
    for old, new in zip(captions, random_words(captions, gamma, vocabulary=VOCAB, seed=seed)):
        o, n = old.split(), new.split()
        assert len(o) == len(n) and set(n) <= set(VOCAB)
        changed = sum(a != b for a, b in zip(o, n))
        assert changed == words_to_change(gamma, len(o), minimum=2)   # never the word itself


@settings(max_examples=40, deadline=None)
@given(captions_st, seed_st)
def test_rw_changes_are_nested_as_gamma_grows(captions, seed):
    outs = [random_words(captions, g, vocabulary=VOCAB, seed=seed) for g in GAMMAS]
    for before, after in zip(outs, outs[1:]):
        for orig, b, a in zip(captions, before, after):
            changed = lambda c: {i for i, (x, y) in enumerate(zip(orig.split(), c.split()))
                                 if x != y}
            assert changed(b) <= changed(a)


@settings(max_examples=80, deadline=None)
@given(captions_st, positive_gamma_st, seed_st)
def test_ks_keeps_length_and_tags_and_changes_when_it_can(captions, gamma, seed):
    for old, new in zip(captions, _ks(captions, gamma, seed)):
        o, n = old.split(), new.split()
        assert len(o) == len(n)
        for a, b in zip(o, n):
            assert a == b or (TAGS.get(a) and TAGS.get(b) == TAGS[a])
        can_change = any(w in TAGS for w in o)
        assert (new != old) == can_change


@settings(max_examples=80, deadline=None)
@given(captions_st, positive_gamma_st, seed_st, st.sampled_from(["both", "repeat", "remove"]))
def test_rr_changes_never_empties_and_only_repeats_or_drops(captions, gamma, seed, mode):
    for old, new in zip(captions, repeat_remove(captions, gamma, mode=mode, seed=seed)):
        o, n = old.split(), new.split()
        assert n and Counter(n).keys() <= Counter(o).keys()
        assert new != old or (mode == "remove" and len(o) == 1)
        if mode == "repeat":
            assert len(n) > len(o)


@settings(max_examples=80, deadline=None)
@given(captions_st, positive_gamma_st, seed_st)
def test_so_keeps_the_multiset_and_changes_when_it_can(captions, gamma, seed):
    for old, new in zip(captions, segment_permutation(captions, gamma, seed=seed)):
        assert Counter(old.split()) == Counter(new.split())
        assert (new != old) == (len(set(old.split())) > 1)


@pytest.mark.parametrize("code", ["WP", "RW", "RR", "SO", "KS"])
def test_one_and_two_word_captions(code):
    fn = WORD_LEVEL[code]
    one, two = fn(["dog"], 0.5, 0)[0], fn(["dog runs"], 0.5, 0)[0]
    expected_one = {"WP": "dog", "SO": "dog", "RR": "dog dog"}        # no other order exists
    if code in expected_one:
        assert one == expected_one[code]
    else:
        assert one != "dog" and len(one.split()) == 1                  # the single word replaced
    if code in ("WP", "SO"):
        assert two == "runs dog"
    elif code == "RW":
        assert all(a != b for a, b in zip("dog runs".split(), two.split()))   # both replaced
    else:
        assert two != "dog runs"
    if code in ("WP", "SO"):
        assert fn(["dog dog"], 1.0, 0) == ["dog dog"]                  # every order is the same


def test_captions_are_compared_as_words():
    assert word_permutation(["A dog, running!"], 0.0) == ["a dog running"]


@settings(max_examples=30, deadline=None)
@given(positive_gamma_st, seed_st)
def test_rc_takes_a_different_caption_of_a_near_image(context, gamma, seed):
    images = list(context.images)
    captions = [cs[0] for cs in context.captions]
    out = random_captions(captions, images, gamma, context=context, seed=seed)
    assert out == random_captions(captions, images, gamma, context=context, seed=seed)
    k = max(1, int(np.floor(gamma * (len(images) - 1) + 0.5)))
    order = context.neighbours()
    for row, (old, new) in enumerate(zip(captions, out)):
        assert new != old
        near = {c for j in order[row, :k] for c in context.captions[j]}
        assert new in near or all(c == old for j in order[row, :k]
                                  for c in context.captions[j])
    assert random_captions(captions, images, 0.0, context=context) == captions


def test_hn_draws_from_the_three_nearest_images(context):
    images = list(context.images)
    captions = [cs[0] for cs in context.captions]
    out = hard_negatives(captions, images, 0.4, context=context, seed=1)
    assert out == hard_negatives(captions, images, 1.0, context=context, seed=1)   # a step
    order = context.neighbours()
    for row, new in enumerate(out):
        assert new in {c for j in order[row, :3] for c in context.captions[j]}


def test_neighbours_rank_identical_reference_sets_first():
    order = neighbour_order(tfidf_vectors([[["dog", "grass"]], [["cat", "sofa"]],
                                           [["dog", "grass"]], [["dog", "park"]]]))
    assert order.shape == (4, 3)
    assert list(order[0]) == [2, 3, 1] and list(order[2]) == [0, 3, 1]


def test_rc_and_hn_need_the_dataset(context):
    with pytest.raises(ValueError, match="TransformContext.from_references"):
        apply_transform("RC", ["a dog"], 0.5)
    with pytest.raises(ValueError, match="one image id per caption"):
        random_captions(["a dog"], None, 0.5, context=context)
    with pytest.raises(ValueError, match="not in the transform context"):
        random_captions(["a dog"], ["nope"], 0.5, context=context)
    with pytest.raises(ValueError, match="pass context"):
        hard_negatives(["a dog"], ["img0"], 0.5, context=None)


@pytest.mark.parametrize("gamma,match", [(30, "not a percentage"), (-0.1, r"\[0, 1\]"),
                                         ("x", "strength")])
def test_gamma_errors(gamma, match):
    with pytest.raises(ValueError, match=match):
        word_permutation(["a dog"], gamma)


def test_input_errors():
    with pytest.raises(TypeError, match="wrap a single caption"):
        word_permutation("a dog runs", 0.5)
    with pytest.raises(ValueError, match="no words after tokenisation"):
        word_permutation(["a dog", " ... "], 0.5)
    with pytest.raises(ValueError, match="unknown transform"):
        apply_transform("XX", ["a dog"], 0.5)
    with pytest.raises(ValueError, match="at least 2 distinct words"):
        random_words(["a dog"], 0.5, vocabulary=["dog"])
    with pytest.raises(ValueError, match="lower min_count"):
        build_vocabulary(["a dog"], min_count=5)
    with pytest.raises(ValueError, match="mode must be"):
        repeat_remove(["a dog"], 0.5, mode="twice")
    with pytest.raises(ValueError, match="one entry per word"):
        keyword_substitution(["a dog"], 0.5, tags=[["NN"]], dictionary=DICTIONARY)
    with pytest.raises(ValueError, match="seed must be"):
        word_permutation(["a dog"], 0.5, seed=-1)
    with pytest.raises(ValueError, match="at least 2"):
        TransformContext.from_references({"a": ["a dog"]})


def _skewed_references(n_images=60):
    """{image: 3 captions}: a few common words in every caption, one rarer word per image, so a
    subset of a few images sees the rare words fewer than 5 times and the whole set does not."""
    rare = [w for w in WORDS if w not in ("a", "dog", "on", "the")]
    return {f"img{i}": [f"a dog on the {rare[i % len(rare)]}"] * 3 for i in range(n_images)}


def test_rw_pool_comes_from_the_vocabulary_corpus_whatever_subset_is_transformed():
    full = _skewed_references()
    whole = build_vocabulary([c for cs in full.values() for c in cs])
    assert len(whole) == len(WORDS)                 # every word seen >= 5 times in the whole set
    pools = set()
    for keep in (list(full)[:4], list(full)[30:36], list(full)):
        part = {k: full[k] for k in keep}
        own = TransformContext.from_references(part)
        given = TransformContext.from_references(part, vocabulary_captions=full,
                                                 vocabulary_source="skewed")
        pools.add(given.vocabulary())
        assert given.vocabulary() == whole
        assert given.vocabulary_provenance() == {"rw_vocab": "skewed", "rw_vocab_captions": 180,
                                                 "rw_vocab_words": len(whole)}
        assert own.vocabulary_provenance() == {"rw_vocab": "evaluated",
                                               "rw_vocab_captions": 3 * len(part),
                                               "rw_vocab_words": len(own.vocabulary())}
        out = apply_transform("RW", ["a dog on the grass"] * 20, 1.0, context=given)
        assert {w for c in out for w in c.split()} <= set(whole)
        # RC's neighbours stay within the evaluated images
        assert given.neighbours().shape == (len(part), len(part) - 1)
    assert len(pools) == 1
    small = TransformContext.from_references({k: full[k] for k in list(full)[:4]})
    assert len(small.vocabulary()) == 4              # the bias: only "a dog on the" survive
    # a flat list of captions is the same corpus; it is named "given" when no name is said
    flat = TransformContext.from_references(full, vocabulary_captions=[c for cs in full.values()
                                                                      for c in cs])
    assert flat.vocabulary() == whole and flat.vocabulary_provenance()["rw_vocab"] == "given"
    assert TransformContext.from_references(full, vocabulary_captions=full,
                                            vocabulary_source="a|b:c").vocabulary_source == "a/b_c"
    for bad in ("a dog", [], {"x": "a dog"}, [1, 2]):
        with pytest.raises(ValueError, match="vocabulary_captions"):
            TransformContext.from_references(full, vocabulary_captions=bad)


def test_registry_lists_what_each_transform_keeps():
    assert list(TRANSFORMS)[:3] == ["RC", "WP", "RW"]
    assert {c for c, t in TRANSFORMS.items() if t.keeps == "multiset"} == {"WP", "SO"}
    assert {c for c, t in TRANSFORMS.items() if t.needs_context} == {"RC", "HN"}


def test_keyword_substitution_with_spacy_replaces_only_keywords():
    caps = ["a brown dog is running on the green grass", "two small cats are sleeping on a sofa",
            "a man is riding a red bike", "the dogs are playing with a ball"]
    out = keyword_substitution(caps, 1.0, seed=0)
    assert out == keyword_substitution(caps, 1.0, seed=0)
    for old, new in zip(caps, out):
        o, n = old.split(), new.split()
        assert len(o) == len(n) and new != old
        for a, b in zip(o, n):
            if a in ("a", "is", "are", "on", "the", "with", "two"):
                assert a == b                       # determiners, auxiliaries, prepositions stay


def test_synonym_switch_changes_every_caption_and_keeps_the_length():
    caps = ["a dog runs on the grass", "two cats sleep on a sofa", "bike"]
    out = switch_synonyms(caps, 0.1, seed=0)
    assert out == switch_synonyms(caps, 0.1, seed=0)
    assert switch_synonyms(caps, 0.0) == caps
    for old, new in zip(caps, out):
        assert new != old and len(new.split()) == len(old.split())


def test_image_neighbours_from_features_of_the_real_images(shared_data):
    from capkit.data import load
    from capkit.transforms import image_features
    data = load("coco_karpathy_test")
    ids = sorted(p.name.split("_")[-1].split(".")[0].lstrip("0") for p in
                 data.images_dir.glob("COCO_val2014_*.jpg"))
    feats = image_features(ids, data.images_dir)
    assert feats.shape == (12, 1280) and np.isfinite(feats).all()
    refs = {i: data.references[i] for i in ids}
    ctx = TransformContext.from_references(refs, features=feats)
    assert ctx.neighbour_source == "features" and ctx.neighbours().shape == (12, 11)
    out = random_captions([refs[i][0] for i in ids], ids, 0.1, context=ctx)
    nearest = ctx.neighbours()[:, 0]
    assert all(o in ctx.captions[j] for o, j in zip(out, nearest))   # top 10% of 11 = 1 image
    with pytest.raises(FileNotFoundError, match="have no image"):
        image_features(["1", "2"], data.images_dir)
