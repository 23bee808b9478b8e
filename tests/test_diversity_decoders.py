"""capkit.diversity.decoders: caption sets sampled from the world captioner (notebook 09, §6)."""
from collections import Counter

import numpy as np
import pytest

from capkit.diversity import first_word_probabilities, sample_sets
from capkit.models.world_captioner import load_world_captioner
from capkit.world.splits import split_scenes


@pytest.fixture(scope="module")
def captioner():
    return load_world_captioner(2400)


@pytest.fixture(scope="module")
def renders():
    return np.stack([np.asarray(s.render(64)) for s in split_scenes("val", 6, seed=0)])


def test_temperature_zero_is_the_captioners_greedy_caption(captioner, renders):
    sets = sample_sets(captioner, renders, 3, 0.0, seed=5)
    assert [s[0] for s in sets] == captioner.caption(renders)
    assert all(len(s) == 3 and len(set(s)) == 1 for s in sets)


def test_a_seed_gives_the_same_sets_and_another_seed_others(captioner, renders):
    a = sample_sets(captioner, renders, 4, 1.0, seed=0)
    assert a == sample_sets(captioner, renders, 4, 1.0, seed=0)
    assert a != sample_sets(captioner, renders, 4, 1.0, seed=1)
    assert [len(s) for s in a] == [4] * len(renders)
    assert all("<eos>" not in c and "<pad>" not in c for s in a for c in s)


def test_first_words_follow_the_softmax_at_each_temperature(captioner, renders):
    """2,000 draws per image: every first word's frequency within 4.5 binomial standard errors of
    its probability, at a sharp and a flat temperature (dividing by T, not multiplying)."""
    n = 2000
    for temperature in (0.5, 2.0):
        probs = first_word_probabilities(captioner, renders[:2], temperature)
        assert all(abs(sum(p.values()) - 1) < 1e-9 for p in probs)
        for p, drawn in zip(probs, sample_sets(captioner, renders[:2], n, temperature, seed=3)):
            seen = Counter((c.split() or [""])[0] for c in drawn)
            for word in set(p) | set(seen):
                q = p.get(word, 0.0)
                assert abs(seen[word] / n - q) <= 4.5 * np.sqrt(q * (1 - q) / n) + 2 / n, \
                    (temperature, word, seen[word] / n, q)
    sharp, flat = (first_word_probabilities(captioner, renders[:1], t)[0] for t in (0.5, 2.0))
    assert max(sharp.values()) > max(flat.values())


def test_bad_arguments_are_refused(captioner, renders):
    with pytest.raises(ValueError, match="temperature"):
        sample_sets(captioner, renders, 2, -1.0)
    with pytest.raises(ValueError, match="m is the number"):
        sample_sets(captioner, renders, 0, 1.0)
    with pytest.raises(ValueError, match="temperature"):
        first_word_probabilities(captioner, renders, 0.0)


def test_paired_difference_and_run_agreement():
    from capkit.course.compare import mean_shifts, paired_difference, run_agreement
    rng = np.random.default_rng(0)
    a = rng.normal(0.5, 0.1, 200)
    same = paired_difference(a, a + rng.normal(0, 0.01, 200), n_boot=200, seed=0)
    assert same.low <= 0 <= same.high
    shifted = paired_difference(a + 0.1, a, n_boot=200, seed=0)
    assert shifted.difference == pytest.approx(0.1) and shifted.low > 0
    with pytest.raises(ValueError, match="same images"):
        paired_difference(a, a[:10])
    twin = {"x": a + rng.normal(0, 0.05, 200)}
    assert mean_shifts(twin, {"x": a + rng.normal(0, 0.05, 200)}) == {}
    assert set(mean_shifts({"x": a + 0.1}, {"x": a})) == {"x"}
    ok, why = run_agreement({0.5: twin}, {0.5: {"x": a}})
    assert ok and "within 4 standard errors" in why
    ok, why = run_agreement({0.5: {"x": a + 0.1}}, {0.5: {"x": a}})
    assert not ok and "x at 0.5" in why
    assert not run_agreement({1.0: twin}, {0.5: twin})[0]
