"""Human captions of other images: RC (Cui et al. 2018, eq. 7) and HN (UMIC's hard negatives).

* ``random_captions`` (RC): each caption is replaced by a human caption of an image drawn
  uniformly from the top gamma * (N - 1) nearest neighbours of its own image (at least 1), so
  gamma = 1 is a caption of any other image. Neighbours: ``TransformContext.neighbours()``.
* ``hard_negatives`` (HN): UMIC (Lee et al. 2021, section 3.2) samples "the reference captions of
  the Top-3 similar image sets": each caption is replaced by a caption of one of its image's
  ``top`` most similar images. HN has no strength of its own: every gamma > 0 gives the same
  captions (its robustness curve is a step; its AUC is about the normalised score of hard
  negatives).

Both draw the caption of the chosen image uniformly (caption i uses row i of one seeded stream, so
its draws do not depend on the captions after it); if that text equals the original caption
(duplicate captions exist), the next caption of the image is taken, then the next neighbour.

Explained in notebooks/04_robustness.ipynb, section 1, "Eight ways to break a caption".
"""
from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from capkit.transforms.context import TransformContext
from capkit.transforms.strength import caption_rng, check_gamma
from capkit.transforms.words import caption_words

SALT_RC, SALT_HN = 7, 8


def _pick(original: str, row: int, k: int, u: float, v: float,
          context: TransformContext) -> str:
    """A caption of a neighbour ranked < k that differs from ``original`` (if any does)."""
    order = context.neighbours()[row]
    start = int(u * k)
    for rank in itertools.chain(range(start, k), range(start), range(k, len(order))):
        pool = context.captions[int(order[rank])]
        first = int(v * len(pool))
        for j in range(len(pool)):
            text = pool[(first + j) % len(pool)]
            if text != original:
                return text
    return original


def _replace(captions, images, k: int, context: TransformContext, seed: int,
             salt: int) -> list[str]:
    texts = [" ".join(w) for w in caption_words(captions)]
    if images is None or isinstance(images, str) or len(images) != len(texts):
        raise ValueError("give images: one image id per caption (the image each caption "
                         "describes), so that captions of *other* images can be drawn")
    rows = context.rows(images)
    if k == 0:
        return texts
    draws = caption_rng(seed, salt, 0).random((len(texts), 2))   # row i: caption i's draws
    return [_pick(text, int(row), k, u, v, context)
            for text, row, (u, v) in zip(texts, rows, draws)]


def _check_context(context) -> TransformContext:
    if not isinstance(context, TransformContext):
        raise ValueError("RC and HN need the whole dataset: pass context="
                         "TransformContext.from_references({image: [captions]})")
    return context


def random_captions(captions: Sequence[str], images: Sequence[str], gamma: float, *,
                    context: TransformContext, seed: int = 0) -> list[str]:
    """RC: each caption replaced by a caption of one of the top gamma nearest images."""
    gamma, context = check_gamma(gamma), _check_context(context)
    n_others = len(context.images) - 1
    k = 0 if gamma == 0.0 else max(1, int(np.floor(gamma * n_others + 0.5)))
    return _replace(captions, images, k, context, seed, SALT_RC)


def hard_negatives(captions: Sequence[str], images: Sequence[str], gamma: float, *,
                   context: TransformContext, top: int = 3, seed: int = 0) -> list[str]:
    """HN: for gamma > 0, each caption replaced by a caption of one of the ``top`` most
    similar images (UMIC: 3)."""
    gamma, context = check_gamma(gamma), _check_context(context)
    if not isinstance(top, (int, np.integer)) or top < 1:
        raise ValueError(f"top must be a positive number of neighbours, got {top!r}")
    k = 0 if gamma == 0.0 else min(int(top), len(context.images) - 1)
    return _replace(captions, images, k, context, seed, SALT_HN)
