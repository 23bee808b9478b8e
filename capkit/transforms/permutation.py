"""Word order transforms: WP (Cui et al. 2018, eq. 8) and SO, a segment-order permutation (the
"word order permutation" negative of UMIC, Lee et al. 2021, section 3.2, made gradual).

* ``word_permutation`` (WP): gamma * n of the caption's n words (at least 2) swap places along
  one random cycle, so every chosen word moves; the multiset of words is kept.
* ``segment_permutation`` (SO): the caption is cut at random gaps into k = gamma * n contiguous
  segments (at least 2) and the segments are put in a random different order. Local n-grams
  inside a segment survive, so small gamma is a clause swap ("on the beach a dog runs") and
  gamma = 1 is a full shuffle of the words, UMIC's negative. The multiset of words is kept.

Both return the caption unchanged only when no order differs: 1-word captions and captions
that repeat one word ("dog dog").

Explained in notebooks/04_robustness.ipynb, section 1, "Eight ways to break a caption".
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from capkit.transforms.strength import caption_rng, check_gamma, words_to_change
from capkit.transforms.words import caption_words

SALT_WP, SALT_SO = 1, 6


def _cycle(words: list[str], positions: np.ndarray) -> list[str]:
    out = list(words)
    for src, dst in zip(positions, np.roll(positions, 1)):
        out[dst] = words[src]
    return out


def permute_words(words: list[str], k: int, rng: np.random.Generator) -> list[str]:
    """k words of one caption moved along one random cycle (the result differs if it can)."""
    n = len(words)
    if k < 2 or len(set(words)) < 2:
        return list(words)
    order = rng.permutation(n)            # positions by rank: the same draws for every k
    chosen = order[:k].copy()
    if len({words[p] for p in chosen}) == 1:
        # all chosen words are equal, so the cycle would change nothing: swap in the first
        # further position holding a different word
        other = next(p for p in order[k:] if words[p] != words[chosen[0]])
        chosen[-1] = other
    return _cycle(words, chosen)


def word_permutation(captions: Sequence[str], gamma: float, *, seed: int = 0) -> list[str]:
    """WP: gamma * n words of every caption (at least 2) permuted; see the module docstring."""
    gamma = check_gamma(gamma)
    out = []
    for i, words in enumerate(caption_words(captions)):
        k = words_to_change(gamma, len(words), minimum=2)
        out.append(" ".join(permute_words(words, k, caption_rng(seed, SALT_WP, i))))
    return out


def permute_segments(words: list[str], k: int, rng: np.random.Generator) -> list[str]:
    """The words cut into k contiguous segments, put in a different order (if any differs)."""
    n = len(words)
    if k < 2 or len(set(words)) < 2:
        return list(words)
    gaps = np.sort(rng.permutation(np.arange(1, n))[:k - 1])      # cut points, nested in k
    segments = np.split(np.asarray(words, dtype=object), gaps)
    for attempt in range(12):
        perm = rng.permutation(k) if attempt < 8 else np.roll(np.arange(k), attempt - 7)
        out = [w for s in perm for w in segments[s]]
        if out != list(words):
            return out
    # repetitive captions ("a dog a dog") can look the same in every segment order
    return permute_words(words, k, rng)


def segment_permutation(captions: Sequence[str], gamma: float, *, seed: int = 0) -> list[str]:
    """SO: every caption cut into gamma * n segments (at least 2), reordered; see the docstring."""
    gamma = check_gamma(gamma)
    out = []
    for i, words in enumerate(caption_words(captions)):
        k = words_to_change(gamma, len(words), minimum=2)
        out.append(" ".join(permute_segments(words, k, caption_rng(seed, SALT_SO, i))))
    return out
