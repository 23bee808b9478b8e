"""The transforms by code, behind one call: ``apply_transform(code, captions, gamma, ...)``.

Each entry says what the transform keeps, so tests and the notebook can check it. RC and HN
need a ``TransformContext`` and the image of every caption; RW and KS use the context's
vocabulary / keyword dictionary when one is given, else the captions' own.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from capkit.transforms.context import TransformContext
from capkit.transforms.keywords import keyword_substitution
from capkit.transforms.other_captions import hard_negatives, random_captions
from capkit.transforms.permutation import segment_permutation, word_permutation
from capkit.transforms.random_words import build_vocabulary, random_words
from capkit.transforms.repetition import repeat_remove
from capkit.transforms.synonyms import switch_synonyms
from capkit.transforms.words import caption_words


@dataclass(frozen=True)
class Transform:
    code: str                     # "WP"
    name: str                     # "word permutation"
    source: str                   # where it is defined
    keeps: str                    # what it preserves ("multiset", "length" or "")
    needs_context: bool           # needs a TransformContext and the captions' images
    apply: Callable[..., list[str]]   # (captions, images, gamma, context, seed) -> captions


def _rw(captions, images, gamma, context, seed):
    vocabulary = (context.vocabulary() if context is not None else
                  build_vocabulary(captions, min_count=1))
    return random_words(captions, gamma, vocabulary=vocabulary, seed=seed)


def _ks(captions, images, gamma, context, seed):
    if context is None:
        return keyword_substitution(captions, gamma, seed=seed)
    return keyword_substitution(captions, gamma, dictionary=context.keyword_dictionary(),
                                tags=context.tags(caption_words(captions)), seed=seed)


TRANSFORMS: dict[str, Transform] = {t.code: t for t in [
    Transform("RC", "human captions of other images", "Cui et al. 2018, eq. 7", "", True,
              lambda c, i, g, ctx, s: random_captions(c, i, g, context=ctx, seed=s)),
    Transform("WP", "word permutation", "Cui et al. 2018, eq. 8", "multiset", False,
              lambda c, i, g, ctx, s: word_permutation(c, g, seed=s)),
    Transform("RW", "random words", "Cui et al. 2018, eq. 9", "length", False, _rw),
    Transform("KS", "keyword substitution", "Lee et al. 2021 (UMIC), sec. 3.2", "length",
              False, _ks),
    Transform("RR", "repetition and removal", "Lee et al. 2021 (UMIC), sec. 3.2", "", False,
              lambda c, i, g, ctx, s: repeat_remove(c, g, seed=s)),
    Transform("SO", "segment-order permutation", "Lee et al. 2021 (UMIC), sec. 3.2",
              "multiset", False, lambda c, i, g, ctx, s: segment_permutation(c, g, seed=s)),
    Transform("HN", "hard random captions", "Lee et al. 2021 (UMIC), sec. 3.2", "", True,
              lambda c, i, g, ctx, s: hard_negatives(c, i, g, context=ctx, seed=s)),
    Transform("SS", "synonym switch", "Wang & Chan 2019, sec. 4.1", "length", False,
              lambda c, i, g, ctx, s: switch_synonyms(c, g, seed=s)),
]}
PAPER_TRANSFORMS = ("RC", "WP", "RW")            # Cui et al.'s Fig. 6


def get_transform(code: str) -> Transform:
    if code not in TRANSFORMS:
        raise ValueError(f"unknown transform {code!r}; choose from {', '.join(TRANSFORMS)}")
    return TRANSFORMS[code]


def apply_transform(code: str, captions: Sequence[str], gamma: float, *,
                    images: Sequence[str] | None = None,
                    context: TransformContext | None = None, seed: int = 0) -> list[str]:
    """Transform ``code`` at strength gamma; the result is in the normal form (words.py)."""
    transform = get_transform(code)
    if transform.needs_context and context is None:
        raise ValueError(f"{code} ({transform.name}) draws captions of other images: pass "
                         "context=TransformContext.from_references({image: [captions]}) and "
                         "images=[the image of each caption]")
    return transform.apply(captions, images, gamma, context, seed)
