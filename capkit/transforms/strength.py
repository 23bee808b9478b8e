"""The strength gamma of a transformation, and the random streams that make transforms seeded.

Cui et al. (2018, section 3.3) define every transformation with a strength gamma in [0, 1]
("gamma% = 0 denotes the original caption ... gamma% = 1 the strongest possible
transformation"). Word-level transforms turn gamma into a number of words with
``words_to_change``.

Randomness: caption number ``index`` of a call draws from its own generator
``numpy.random.default_rng([seed, salt, index])``. A caption's result therefore depends only on
(seed, its position, the transform), never on the other captions, and the same seed at a larger
gamma re-uses the same draws, so the changed positions are nested as gamma grows (the curves
of ``capkit.robustness`` move smoothly instead of re-drawing everything at every gamma).
"""
from __future__ import annotations

import numpy as np

GAMMAS = tuple(round(0.1 * i, 1) for i in range(11))   # 0, 0.1, ..., 1: the robustness grid


def check_gamma(gamma: float) -> float:
    """gamma as a float in [0, 1], or a ValueError that says so."""
    try:
        value = float(gamma)
    except (TypeError, ValueError):
        raise ValueError(f"gamma is a strength in [0, 1] (a fraction, not a percentage); "
                         f"got {gamma!r}") from None
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"gamma is a strength in [0, 1] (a fraction, not a percentage: write "
                         f"0.3 for 30%); got {gamma!r}")
    return value


def words_to_change(gamma: float, n_words: int, minimum: int = 2) -> int:
    """How many of ``n_words`` a transform of strength gamma changes.

    0 at gamma = 0; otherwise gamma * n rounded half up, at least ``minimum`` (Cui et al.:
    "at least 2 words", "from 2 to all words") and at most n.
    """
    if gamma <= 0.0 or n_words == 0:
        return 0
    k = int(np.floor(gamma * n_words + 0.5))
    return int(min(n_words, max(minimum, k)))


def caption_rng(seed: int, salt: int, index: int) -> np.random.Generator:
    """The generator of caption ``index`` for transform ``salt`` (see the module docstring)."""
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    return np.random.default_rng([int(seed), salt, index])
