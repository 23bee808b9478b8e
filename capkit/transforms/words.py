"""Captions as the words transforms move, replace and count.

A transform works on a caption's *words*: its PTB tokens, lower-cased and without punctuation
(``capkit.text.ptb_tokenize``, the tokenisation every built-in metric uses). Every transform
returns captions in that normal form (words joined by single spaces), including at gamma = 0,
so a transformed caption and the untransformed one it is compared with differ only by the
transformation, and the metrics' own tokenisation leaves them unchanged.
"""
from __future__ import annotations

from collections.abc import Sequence


def check_captions(captions: Sequence[str], what: str = "captions") -> list[str]:
    if isinstance(captions, str) or not isinstance(captions, Sequence):
        raise TypeError(f"{what} must be a list of strings; wrap a single caption in a list")
    for i, c in enumerate(captions):
        if not isinstance(c, str):
            raise TypeError(f"{what}[{i}] must be a string, got {type(c).__name__}: {c!r}")
    return list(captions)


def caption_words(captions: Sequence[str], what: str = "captions") -> list[list[str]]:
    """Each caption as its list of words (PTB tokens, lower case, punctuation dropped)."""
    from capkit.text import ptb_tokenize
    captions = check_captions(captions, what)
    words = [t.split() for t in ptb_tokenize(captions)]
    empty = [i for i, w in enumerate(words) if not w]
    if empty:
        raise ValueError(f"{len(empty)} of the {what} have no words after tokenisation (empty or "
                         f"punctuation only; first at positions {empty[:5]}); remove them")
    return words


def normalise(captions: Sequence[str]) -> list[str]:
    """Captions in the transforms' normal form: their words joined by single spaces."""
    return [" ".join(w) for w in caption_words(captions)]
