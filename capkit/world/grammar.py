"""The world's closed grammar: one lexicon that both parses captions and realises logical forms.

Captions are read the capkit way (``capkit.text.ptb_tokenize``: lower case, PTB tokens,
punctuation dropped), so "A red circle." and "a red circle" are the same sentence. The grammar::

    sentence   := [prefix] body [suffix]
    body       := np                                   Exists
                | np ("," np)* "and" np                Conjunction (different objects)
                | count_np                             Count (exact)
                | np ["is"] relation np                Relation ("is" only without a prefix)
    np         := ("a" | "an") [size] [colour] noun    (an before a vowel: "an object")
    count_np   := ["exactly"] number [size] [colour] noun   (plural noun unless "one")
    relation   := "to the left of" | "left of" | "on the left of" | ... | "above" | "over"
                | "below" | "under" | "beneath"
    prefix     := "there is" | "there 's" (singular bodies) | "there are" (counts of 2-4)
                | "a picture of" | "a picture with" | "an image of" | "an image with"
    suffix     := "in the picture" | "in the image"    (not after a picture/image prefix)

Anything else is ungrammatical: ``parse`` returns None, never raises.
"""
from __future__ import annotations

import numpy as np

from capkit.text import ptb_tokenize
from capkit.world.forms import Conjunction, Count, Description, Exists, Form, Relation
from capkit.world.scene import COLORS, SHAPES

NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4}
NUMBER_WORDS = {v: k for k, v in NUMBERS.items()}
SIZE_WORDS = {"small": "small", "big": "big", "large": "big"}
PLURAL = {"circle": "circles", "square": "squares", "triangle": "triangles", "star": "stars",
          "cross": "crosses"}
GENERIC = ("shape", "object")                      # nouns that leave the shape unsaid
NOUN_SG = {**{s: s for s in SHAPES}, "shape": None, "object": None}
NOUN_PL = {**{PLURAL[s]: s for s in SHAPES}, "shapes": None, "objects": None}
RELATION_PHRASES = {
    "left": ("to the left of", "left of", "on the left of"),
    "right": ("to the right of", "right of", "on the right of"),
    "above": ("above", "over"),
    "below": ("below", "under", "beneath"),
}
THERE_IS = ("there is", "there 's")
THERE_ARE = ("there are",)
PICTURE = ("a picture of", "a picture with", "an image of", "an image with")
SUFFIXES = ("in the picture", "in the image")
# every phrase the grammar can say, in a fixed order (models' vocabularies are built from it)
PHRASES = (*COLORS, *SHAPES, *PLURAL.values(), *NUMBERS, *SIZE_WORDS, *GENERIC,
           *(g + "s" for g in GENERIC), *(p for ps in RELATION_PHRASES.values() for p in ps),
           *THERE_IS, *THERE_ARE, *PICTURE, *SUFFIXES, "a an and is exactly")


def tokens(caption: str) -> list[str]:
    """capkit's tokens of a caption (PTB, lower case, punctuation dropped)."""
    return ptb_tokenize([caption], context="isolated")[0].split()


# ----------------------------------------------------------------------------- parsing

def _np(t: list[str], i: int) -> tuple[Description, int] | None:
    """A singular noun phrase at ``t[i]``: (description, next index) or None."""
    if i >= len(t) or t[i] not in ("a", "an"):
        return None
    j, size, color = i + 1, None, None
    if j < len(t) and t[j] in SIZE_WORDS:
        size, j = SIZE_WORDS[t[j]], j + 1
    if j < len(t) and t[j] in COLORS:
        color, j = t[j], j + 1
    if j >= len(t) or t[j] not in NOUN_SG or (t[i] == "an") != (t[i + 1][0] in "aeiou"):
        return None
    return Description(NOUN_SG[t[j]], color, size), j + 1


def _count(t: list[str], i: int) -> tuple[Count, int] | None:
    if i < len(t) and t[i] == "exactly":
        i += 1
    if i >= len(t) or t[i] not in NUMBERS:
        return None
    n, j, size, color = NUMBERS[t[i]], i + 1, None, None
    if j < len(t) and t[j] in SIZE_WORDS:
        size, j = SIZE_WORDS[t[j]], j + 1
    if j < len(t) and t[j] in COLORS:
        color, j = t[j], j + 1
    nouns = NOUN_SG if n == 1 else NOUN_PL
    if j >= len(t) or t[j] not in nouns:
        return None
    return Count(n, Description(nouns[t[j]], color, size)), j + 1


def _relation(t: list[str], i: int) -> tuple[str, int] | None:
    for relation, phrases in RELATION_PHRASES.items():
        for phrase in phrases:
            words = phrase.split()
            if t[i:i + len(words)] == words:
                return relation, i + len(words)
    return None


def _conjunction(t: list[str], first: Description, j: int) -> Form | None:
    parts = [first]
    while j < len(t):
        if t[j] == "and":
            last = _np(t, j + 1)
            return Conjunction(tuple(parts + [last[0]])) if last and last[1] == len(t) else None
        nxt = _np(t, j)
        if nxt is None:
            return None
        parts.append(nxt[0])
        j = nxt[1]
    return None


def _body(t: list[str], allow_is: bool) -> Form | None:
    """The form of exactly the tokens ``t``, or None."""
    first = _np(t, 0)
    if first is None:
        found = _count(t, 0)
        return found[0] if found and found[1] == len(t) else None
    d1, j = first
    if j == len(t):
        return Exists(d1)
    k = j + 1 if allow_is and t[j] == "is" else j
    rel = _relation(t, k)
    if rel is not None:
        second = _np(t, rel[1])
        return Relation(d1, rel[0], second[0]) if second and second[1] == len(t) else None
    return _conjunction(t, d1, j)


def _agrees(prefix: str, form: Form) -> bool:
    if prefix in THERE_IS:
        return not isinstance(form, Count) or form.n == 1
    if prefix in THERE_ARE:
        return isinstance(form, Count) and form.n > 1
    return True


def parse_tokens(t: list[str]) -> Form | None:
    """The logical form of a tokenised caption, or None when the grammar does not cover it."""
    for prefix in ("",) + THERE_IS + THERE_ARE + PICTURE:
        head = prefix.split()
        if t[:len(head)] != head:
            continue
        rest = t[len(head):]
        endings = [[]] + ([] if prefix in PICTURE else [s.split() for s in SUFFIXES])
        for tail in endings:
            if tail and rest[-len(tail):] != tail:
                continue
            body = rest[:len(rest) - len(tail)]
            form = _body(body, allow_is=not prefix) if body else None
            if form is not None and _agrees(prefix, form):
                return form
    return None


def parse(caption: str) -> Form | None:
    """The logical form of ``caption``, or None when it is not a sentence of the grammar."""
    if not isinstance(caption, str):
        raise ValueError(f"a caption is a string, not {type(caption).__name__}")
    return parse_tokens(tokens(caption))


# ----------------------------------------------------------------------------- realising

def _pick(rng: np.random.Generator, options):
    return options[int(rng.integers(len(options)))]


def noun_phrase(d: Description, rng: np.random.Generator, *, n: int | None = None) -> str:
    """Words for ``d``: singular with an article, or with a number word when ``n`` is given."""
    words = []
    if d.size is not None:
        words.append(_pick(rng, ("big", "large")) if d.size == "big" else "small")
    if d.color is not None:
        words.append(d.color)
    if n is None or n == 1:
        words.append(d.shape or _pick(rng, GENERIC))
    else:
        words.append(PLURAL[d.shape] if d.shape else _pick(rng, ("shapes", "objects")))
    if n is not None:
        return " ".join(([] if rng.random() < 0.8 else ["exactly"]) + [NUMBER_WORDS[n]] + words)
    return ("an " if words[0][0] in "aeiou" else "a ") + " ".join(words)


def realise(form: Form, rng: np.random.Generator) -> str:
    """One sentence of the grammar that means ``form``, surface choices drawn with ``rng``."""
    if isinstance(form, Exists):
        body, prefixes = noun_phrase(form.what, rng), ("",) + THERE_IS + PICTURE
    elif isinstance(form, Conjunction):
        nps = [noun_phrase(d, rng) for d in form.parts]
        body = ", ".join(nps[:-1]) + " and " + nps[-1]
        prefixes = ("",) + THERE_IS + PICTURE
    elif isinstance(form, Count):
        body = noun_phrase(form.what, rng, n=form.n)
        prefixes = ("",) + (THERE_IS if form.n == 1 else THERE_ARE) + PICTURE
    elif isinstance(form, Relation):
        prefixes = ("",) + THERE_IS + PICTURE
        prefix = _pick(rng, prefixes)
        verb = "is " if not prefix and rng.random() < 0.5 else ""
        body = (f"{noun_phrase(form.subject, rng)} {verb}"
                f"{_pick(rng, RELATION_PHRASES[form.relation])} {noun_phrase(form.object, rng)}")
        return _finish(prefix, body, rng)
    else:
        raise ValueError(f"not a logical form: {form!r}; use Exists, Conjunction, Count or "
                         "Relation")
    return _finish(_pick(rng, prefixes), body, rng)


def _finish(prefix: str, body: str, rng: np.random.Generator) -> str:
    text = f"{prefix} {body}".strip().replace(" 's", "'s")
    if prefix not in PICTURE and rng.random() < 0.15:
        text += " " + _pick(rng, SUFFIXES)
    if rng.random() < 0.5:                      # references come both ways, as in COCO
        text = text[0].upper() + text[1:] + "."
    return text
