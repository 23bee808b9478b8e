"""Tokenised captions as one flat list of tokens: the checks and the one word numbering that
``metrics.inputs``, ``metrics.ngrams`` and ``metrics.compact`` share (no numpy here)."""
from __future__ import annotations

import collections
import itertools
import re
from array import array

_APART = re.compile(r"[^\S ]").search       # whitespace other than the plain space
_ASCII_SPACES_BUT_SPACE = "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f"   # the rest of str.isspace in ASCII


def splits_apart(texts: list[str]) -> bool:
    """Whether any text holds whitespace other than the plain space (one pass over them all):
    the PTB tokenizer keeps a no-break space inside "5 1/2" and phone numbers."""
    joined = "".join(texts)
    if joined.isascii():
        return any(c in joined for c in _ASCII_SPACES_BUT_SPACE)
    return _APART(joined) is not None


def tokens_of(texts: list[str]) -> tuple[list[str], array] | None:
    """All tokens of ``texts`` in one list and the number of each text's tokens (int32), when
    every text is its tokens joined by single spaces (as tokenisers return them); else None.

    One ``str.split`` of the joined texts makes each token string once, where splitting every
    text on its own, then flattening the lists, makes a list per text and walks every token
    twice. Assumes no whitespace but the space within a text (``splits_apart`` is False).
    A text has at most its spaces + 1 tokens, exactly as many when no space leads, trails or
    follows another: so the totals agree only if every text is single-spaced."""
    lengths = array("i", [t.count(" ") + 1 if t else 0 for t in texts])
    flat = "\n".join(texts).split()
    return (flat, lengths) if len(flat) == sum(lengths) else None


def number_words(flat: list[str]) -> tuple[list[str], array]:
    """The distinct words of ``flat`` in order of first appearance, and each token's index
    among them (int32): capkit's one numbering of tokens (``ngrams.encode_flat`` uses it). One
    pass: the dictionary gives a new word the next number as it first meets it."""
    ids_of = collections.defaultdict(itertools.count().__next__)
    ids = array("i", map(ids_of.__getitem__, flat))
    return list(ids_of), ids
