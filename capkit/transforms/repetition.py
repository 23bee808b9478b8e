"""RR, repetition and removal of words (UMIC, Lee et al. 2021, section 3.2): "we randomly repeat
or remove some words in the reference captions with a probability of 30% ... we choose to repeat
or remove with a probability of 50% for the sampled word".

Here gamma is that sampling probability (UMIC: 0.3). Each word is sampled with probability
gamma and then repeated ("dog" -> "dog dog") or removed, with probability 1/2 each
(``mode="both"``), or always repeated / always removed (``mode="repeat"`` / ``"remove"``).
For gamma > 0 at least one word is sampled, so the caption always changes, and at least one
word always remains: a removal that would empty the caption becomes a repetition (with
``mode="remove"`` the last word is kept instead, so a 1-word caption is returned unchanged), and
so does a removal that would exactly cancel the repetition of an equal word ("a a" -> "a a").

Explained in notebooks/04_robustness.ipynb, section 1, "Eight ways to break a caption".
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from capkit.transforms.strength import caption_rng, check_gamma
from capkit.transforms.words import caption_words

SALT_RR = 3
MODES = ("both", "repeat", "remove")


def repeat_or_remove(words: list[str], gamma: float, mode: str,
                     rng: np.random.Generator) -> list[str]:
    """One caption's words with each sampled word repeated or removed (see the docstring)."""
    n = len(words)
    draw, coin = rng.random(n), rng.random(n)          # the same draws for every gamma
    if gamma <= 0.0:
        return list(words)
    sampled = draw < gamma
    sampled[np.argmin(draw)] = True                    # at least one word
    repeat = sampled & {"both": coin < 0.5, "repeat": True, "remove": False}[mode]
    remove = sampled & ~repeat
    if remove.all():                                   # never remove every word
        last = np.argmax(np.where(remove, draw, -1.0))
        remove[last] = False
        repeat[last] = mode != "remove"
    out = _apply(words, repeat, remove)
    if out == list(words) and remove.any() and mode != "remove":
        # a repetition and a removal of equal words cancelled out ("a a" -> "a a"):
        # repeat the first removed word instead
        first = np.argmin(np.where(remove, draw, np.inf))
        remove[first], repeat[first] = False, True
        out = _apply(words, repeat, remove)
    return out


def _apply(words: list[str], repeat: np.ndarray, remove: np.ndarray) -> list[str]:
    out = []
    for w, rep, rem in zip(words, repeat, remove):
        if not rem:
            out.extend([w, w] if rep else [w])
    return out


def repeat_remove(captions: Sequence[str], gamma: float, *, mode: str = "both",
                  seed: int = 0) -> list[str]:
    """RR: each word sampled with probability gamma, then repeated or removed."""
    gamma = check_gamma(gamma)
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    return [" ".join(repeat_or_remove(words, gamma, mode, caption_rng(seed, SALT_RR, i)))
            for i, words in enumerate(caption_words(captions))]
