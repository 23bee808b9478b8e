"""The PTB tokenizer's fast path: captions whose tokens are known without running the lexer.

Part of ``capkit.text.ptb`` (whose docstring says what is reproduced and how it was checked):
``fast_batch`` tokenises the plain captions of a batch at once and marks the others for the
full lexer; ``ends_plainly`` says whether a plain caption's tokens also hold at the end of the
input (the last caption of a stream).
"""
from __future__ import annotations

import bisect
import functools
import itertools
import re
from collections.abc import Iterator

from capkit.text import ptb_rules

# Most captions use only ASCII letters, digits, spaces and , . - ' ". For those the lexer's output
# is known without running it: an alphanumeric run with inner hyphens is one token (THING),
# "X's", "X're", "X'll" ... split as X + 's, "Xn't" as X + n't, "cannot" / "gonna" ... as can not /
# gon na, and the , . " tokens are all dropped by the filter. A caption goes to the full lexer
# instead if it has a construct where the lexer does more: digits on both sides of a space
# (phone numbers, "5 1/2"), a number with "," or "." ("3,000", ".5"), "," and "." inside a run or
# before a hyphen/apostrophe ("dog.cat" is ONE token, "a,.b-c" too), a period followed by a comma
# ("dog.," keeps its period), a hyphen not between two alphanumerics ("pro-", "-5", "--"), any
# other apostrophe use (quotes, "o'clock", "'90s", "rock'n'roll"), or an abbreviation candidate
# before a period ("mr.", "etc.", "no. 5", single letters: "u." or "i." may keep the period).
_PLAIN_ASCII = b"\n \"',-.0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_ODD = re.compile("[^\n \"',\\-.0-9A-Za-z]").search  # a character no plain caption has
# A construct that sends a caption to the full lexer (apostrophes are checked separately). It
# starts at a digit, a hyphen, or a "." or "," followed by a character other than a space, a line
# break or '"': fast_batch tries it only there (found by literal searches).
_CONSTRUCT = re.compile(
    r"[0-9.,-](?:(?<=[0-9]) [0-9]|(?<=-)(?:(?<![A-Za-z0-9]-)|(?![A-Za-z0-9]))"
    r"|(?<=[.,])(?:[0-9]|(?<=[A-Za-z0-9][.,])[.,]*[A-Za-z'-]|(?<=[A-Za-z0-9]\.),))"
).match
# Two patterns, not one "[.,]...": a pattern that starts with a literal is searched at memchr
# speed, one that starts with a class is tested character by character.
_JOINED_DOT_OR_COMMA = [re.compile(p + "(?=[^ \n\"])").finditer for p in (r"\.", ",")]
_FAST_CLITICS = re.compile(  # the apostrophes the fast path knows: X's X'S X're X'll ... Xn't
    r"(?<![A-Za-z0-9'-])[A-Za-z]+(?:'(?:[sSmMdD]|[rR][eE]|[vV][eE]|[lL][lL])|(?<=[A-MO-Za-mo-z])[nN]'[tT])"
    r"(?![A-Za-z0-9'-])"
).findall
_SPLIT_CLITIC = re.compile(r"n't(?<=[a-z]n't)|'(?<=[a-z]')[a-z]+")  # "don't" -> "do n't"
# Words right before a period, read in the reversed text (a period is rare, letters are not).
_WORDS_BEFORE_DOT_REVERSED = re.compile(r"\.([A-Za-z]+)(?![A-Za-z0-9'])").findall
_ABBREVIATION = re.compile(  # superset of the lexer's abbreviation words (case ignored)
    "|".join([ptb_rules._ABBREV1_WORDS, ptb_rules._ABBREV4_WORDS, ptb_rules._ABBREV3_WORDS, "pt[ey]|co"]),
    re.IGNORECASE,
).fullmatch
_ABBREVIATION_CACHE: dict[str, bool] = {}  # keyed by the reversed word
_SPACE_RUN = re.compile("  +").sub
# Assimilations are split only when they are a whole alphanumeric run (the lookbehinds come
# after the literal so that the regex engine can search for the literal).
_ASSIMILATIONS = [
    (word, re.compile(word + r"(?<![a-z0-9'-]" + word + r")(?![a-z0-9'-])"), split)
    for word, split in [("cannot", "can not"), ("gonna", "gon na"), ("wanna", "wan na"), ("gotta", "got ta"),
                        ("lemme", "lem me"), ("gimme", "gim me")]
]


def _abbreviation_candidate(reversed_word: str) -> bool:
    hit = _ABBREVIATION_CACHE.get(reversed_word)
    if hit is None:
        hit = len(reversed_word) == 1 or _ABBREVIATION(reversed_word[::-1]) is not None
        if len(_ABBREVIATION_CACHE) < 100_000:
            _ABBREVIATION_CACHE[reversed_word] = hit
    return hit


def fast_batch(captions: list[str]) -> list[str | None]:
    """Tokenizations of the plain captions (None for the others), computed on all captions at
    once: the checks and rewrites run over one joined text, so the per-caption cost is small."""
    if not captions:
        return []
    text = "\n".join(captions)
    if text.count("\n") != len(captions) - 1:  # a caption with a line break: not a plain one
        captions = [c if "\n" not in c else "\r" for c in captions]
        text = "\n".join(captions)
    starts = list(itertools.accumulate(map((1).__add__, map(len, captions)), initial=0))
    line_of = functools.partial(bisect.bisect_right, starts)  # offset -> line number + 1
    bad = _odd_lines(text, starts, line_of) | _construct_lines(text, line_of)
    reversed_text = text[::-1]
    suspects = [w for w in set(_WORDS_BEFORE_DOT_REVERSED(reversed_text)) if _abbreviation_candidate(w)]
    if suspects:
        words = "|".join(sorted(suspects, key=len, reverse=True))
        for m in re.finditer(r"\.(?:" + words + r")(?![A-Za-z0-9'])", reversed_text):
            bad.add(line_of(len(text) - 1 - m.start()) - 1)
    low = text.lower()
    for word, pattern, split in _ASSIMILATIONS:
        if word in low:
            low = pattern.sub(split, low)
    # The filter drops the , . " tokens. In a plain caption a "," or "." is never between two
    # characters of one token (those captions are not plain), so it is deleted; a '"' may be, so
    # it becomes a space. A plain line then holds no whitespace but spaces, so re-spacing it
    # (" ".join(line.split())) is collapsing its runs of spaces and trimming its ends: done on
    # the whole text at once (the other lines are not plain, and are dropped below).
    low = low.replace(",", "").replace(".", "").replace('"', " ")
    if "  " in low:
        low = _SPACE_RUN(" ", low)
    lines = low.replace(" \n", "\n").replace("\n ", "\n").split("\n")
    for line in (0, len(lines) - 1):
        lines[line] = lines[line].strip(" ")
    if "'" in text:
        for line in {line_of(m.start()) - 1 for m in re.finditer("'", text)} - bad:
            cap = captions[line]
            if len(_FAST_CLITICS(cap)) != cap.count("'") or "cont'd" in cap.lower():
                bad.add(line)  # (APOWORD keeps "cont'd." whole)
            else:
                lines[line] = _SPLIT_CLITIC.sub(r" \g<0>", lines[line])
    for line in bad:
        lines[line] = None
    return lines


def _find_all(text: str, chars) -> Iterator[int]:
    """Every position of each of ``chars`` in ``text`` (one ``str.find`` scan per character)."""
    for c in chars:
        pos = text.find(c)
        while pos >= 0:
            yield pos
            pos = text.find(c, pos + 1)


def _construct_lines(text: str, line_of) -> set[int]:
    """The lines of ``text`` where ``_CONSTRUCT`` matches: it is tried only where it can start."""
    tries = itertools.chain(_find_all(text, "0123456789-"),
                            *[(m.start() for m in joined(text)) for joined in _JOINED_DOT_OR_COMMA])
    return {line_of(pos) - 1 for pos in tries if _CONSTRUCT(text, pos)}


def _odd_lines(text: str, starts: list[int], line_of) -> set[int]:
    """The lines of ``text`` that hold a character no plain caption has."""
    if text.isascii():  # which odd characters occur at all (bytes.translate, in C), then where
        odd = set(text.encode().translate(None, _PLAIN_ASCII).decode())
        return {line_of(pos) - 1 for pos in _find_all(text, odd)}
    bad, pos = set(), 0
    while (m := _ODD(text, pos)) is not None:
        line = line_of(m.start()) - 1
        bad.add(line)
        pos = starts[line + 1]
    return bad


# The end of a plain caption whose tokens are the same at the end of the input as before another
# line: an alphanumeric run with inner hyphens, then only spaces and , . " (checked against the
# jar; a final clitic is not: "they're" ends the input as "they re").
_PLAIN_END = re.compile(r'(?:^| )[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*[ ,."]*\Z').search


def ends_plainly(caption: str) -> bool:
    """Whether the fast path's tokens of ``caption`` (a plain caption: it was not sent to the
    full lexer) hold at the end of the input, so that the last caption of a stream needs no
    lexer (building it takes ~0.015 s with its compiled pattern in the cache, ~0.045 s
    without): its last word is a ``_PLAIN_END``."""
    return _PLAIN_END(caption) is not None
