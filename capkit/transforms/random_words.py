"""RW, random words (Cui et al. 2018, eq. 9): "we replace from 2 to all words of the reference
caption with random words from the vocabulary".

gamma * n of the caption's n words (at least 2, at most n) are each replaced by a word drawn
uniformly from ``vocabulary``, never by the word itself, so the caption keeps its length and
always changes (a 1-word caption has its word replaced). The paper's vocabulary is the 10,000
most frequent words seen at least 5 times in the training captions (its appendix A.2);
``build_vocabulary`` applies that rule to any caption corpus. ``TransformContext.vocabulary``
applies it to the context's vocabulary corpus: the captions given as ``vocabulary_captions``
(``capkit robustness`` and the notebooks give every reference of the dataset's split, so the
pool does not depend on which subset is scored), else the context's own references, which on a
small subset leave only the commonest words and make RW weaker.

Explained in notebooks/04_robustness.ipynb, section 1, "Eight ways to break a caption".
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

from capkit.transforms.strength import caption_rng, check_gamma, words_to_change
from capkit.transforms.words import caption_words

SALT_RW = 2
PAPER_MIN_COUNT, PAPER_MAX_SIZE = 5, 10_000


def build_vocabulary(captions: Sequence[str], *, min_count: int = PAPER_MIN_COUNT,
                     max_size: int = PAPER_MAX_SIZE) -> tuple[str, ...]:
    """The ``max_size`` most frequent words seen at least ``min_count`` times (ties: a-z)."""
    counts = Counter(w for ws in caption_words(captions) for w in ws)
    ranked = sorted((w for w, c in counts.items() if c >= min_count), key=lambda w: (-counts[w], w))
    vocabulary = tuple(ranked[:max_size])
    if len(vocabulary) < 2:
        raise ValueError(f"only {len(vocabulary)} word(s) occur at least {min_count} times; give "
                         "more captions or a lower min_count to build a vocabulary")
    return vocabulary


def replace_words(words: list[str], k: int, vocabulary: Sequence[str], index: dict[str, int],
                  rng: np.random.Generator) -> list[str]:
    """k words of one caption replaced by other vocabulary words (same draws for every k)."""
    n, size = len(words), len(vocabulary)
    order = rng.permutation(n)
    draws = rng.integers(0, size - 1, size=n)          # one replacement per rank
    out = list(words)
    for rank, pos in enumerate(order[:k]):
        d = int(draws[rank])
        own = index.get(words[pos], -1)
        if 0 <= own <= d:
            d += 1                                      # uniform over the vocabulary minus itself
        out[pos] = vocabulary[d]
    return out


def random_words(captions: Sequence[str], gamma: float, *, vocabulary: Sequence[str],
                 seed: int = 0) -> list[str]:
    """RW: gamma * n words of every caption (at least 2) replaced by random vocabulary words."""
    gamma = check_gamma(gamma)
    vocabulary = list(dict.fromkeys(vocabulary))
    if len(vocabulary) < 2:
        raise ValueError("random_words needs a vocabulary of at least 2 distinct words; build "
                         "one with build_vocabulary(captions)")
    index = {w: i for i, w in enumerate(vocabulary)}
    out = []
    for i, words in enumerate(caption_words(captions)):
        k = words_to_change(gamma, len(words), minimum=2)
        out.append(" ".join(replace_words(words, k, vocabulary, index,
                                          caption_rng(seed, SALT_RW, i))))
    return out
