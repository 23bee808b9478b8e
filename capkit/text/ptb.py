"""Caption tokenization identical to pycocoevalcap 1.2's ``PTBTokenizer``, in pure Python.

What the reference does
-----------------------
pycocoevalcap writes all captions to one file, one per line (replacing only ``"\\n"`` by a
space), and runs Stanford CoreNLP 3.4.1 (the jar it bundles)::

    java -cp stanford-corenlp-3.4.1.jar edu.stanford.nlp.process.PTBTokenizer -preserveLines -lowerCase

``PTBLexer``, a JFlex scanner, splits every line into Penn Treebank tokens; they are lower-cased
(``Locale.ENGLISH``) and printed space-separated, one output line per input line. pycocoevalcap
then drops the tokens ``'' ' `` ` -LRB- -RRB- -LCB- -RCB- . ? ! , : - -- ... ;`` and joins the
rest with single spaces. The filter compares AFTER lower-casing, so ``-lrb- -rrb- -lcb- -rcb-``
(and ``-lsb- -rsb-``) survive as words.

``ptb_tokenize`` reproduces this exactly: it was checked against the jar on all ~234,000
distinct captions of the kit's shared data (no difference) and on generated text.

Rules reproduced (3.4.1 defaults, see ``capkit.text.ptb_rules``)
-----------------------------------------------------------
Longest-match lexing: clitics (``do n't``, ``it 's``, ``they 're``); assimilations (``can not``,
``gon na``, ``wan na``, ``got ta``, ``lem me``, ``gim me``, ``'t is``, ``'t was``; not "dunno");
quotes in LaTeX form (`` and '', ` and ', then dropped by the filter); brackets (``-lrb- -rrb- -lsb-
-rsb- -lcb- -rcb-``, also inside smileys: ``:-rrb-``); dashes (en/em dash, ``&mdash;``, 3-4
hyphens -> ``--``; 5+ hyphens stay); ellipses (``...``, ``. . .``, U+2026, U+0085); currency
(``£`` -> ``#``, ``€`` -> ``$``, ``¢`` -> ``cents``); fractions (``½`` -> ``1/2``; ``5 1/2`` is ONE
token with a no-break space); phone numbers (``-lrb-555-rrb-\\u00a0123-4567``); URLs, e-mails,
hashtags, file names, SGML tags, ``c++``/``c#``; ``&amp;`` -> ``&``, ``&lt;`` -> ``<``;
abbreviations and acronyms keep their period (``mr.``, ``u.s.``, ``etc.``, ``fig.`` before a
number), a single letter before a sentence start loses it (``the letter a. A`` -> ``a``); numbers
with ``, . :``; hyphenated words; words with an inner ``. ! ?`` (``dog.cat``); untokenizable
characters (emoji and other non-BMP, ``₹``, controls) deleted. Not done by 3.4.1, whatever its
documentation says: americanizing (``colour`` stays) and escaping ``/`` and ``*``.

Deliberate difference: line breaks
----------------------------------
The lexer ends a line at ``\\n``, ``\\r``, ``\\r\\n``, VT, FF, U+2028 and U+2029 (U+0085 is an
ellipsis to it, not a break), and pycocoevalcap replaces only ``"\\n"``, so any of the others
inside a caption shifts every later caption in the reference. ``ptb_tokenize`` never shifts:
each of those characters counts as a space, and there is exactly one output per input.

Known differences on exotic input
---------------------------------
* Context: the jar lexes the whole file, so a caption's last token can depend on the next line
  (``... the letter S.`` + ``A dog`` gives ``s``, + ``a dog`` gives ``s.``; ``fig.`` + ``3 cats``
  keeps ``fig.``) and the LAST caption of a batch ends without a line break (``'90`` -> ``90``,
  ``:)`` -> ``-rrb-`` there). Here every caption is lexed on its own, followed by a line break
  and a line that starts nothing, as the test harness does.
* Lower-casing follows Java 17 (Unicode 13, incl. its word-based final sigma, emulated); a JVM
  with other Unicode tables may differ on rare letters. Letters and digits follow the jar's own
  (Unicode 6) tables. Lone surrogates, which cannot be written to the jar's UTF-8 input, are
  dropped.
"""

from __future__ import annotations

import functools
import itertools
import operator
import re
import unicodedata
from collections.abc import Sequence

from capkit.text import ptb_lexer
from capkit.text.ptb_fast import ends_plainly, fast_batch

__all__ = ["ptb_tokenize", "PUNCTUATIONS"]


# pycocoevalcap/tokenizer/ptbtokenizer.py, verbatim (upper-case entries never match the
# lower-cased tokens; kept so the filter is exactly the reference's).
PUNCTUATIONS = frozenset(
    ["''", "'", "``", "`", "-LRB-", "-RRB-", "-LCB-", "-RCB-", ".", "?", "!", ",", ":", "-", "--", "...", ";"]
)

# Characters the 3.4.1 lexer treats as end of line (NEWLINE macro, minus U+0085, see above).
_LINE_BREAKS = re.compile("[\n\r\x0b\x0c\u2028\u2029]")

# ---- full lexer ----------------------------------------------------------------------------
_LEXER = None  # (character map, pattern, itemgetter of every alternative's total span, slots)


def _lexer():
    global _LEXER
    if _LEXER is None:
        charmap, pattern, slots = ptb_lexer.build_lexer()
        _LEXER = charmap, pattern, operator.itemgetter(*[outer for outer, _inner, _action in slots]), slots
    return _LEXER


_AMP = re.compile("&amp;", re.IGNORECASE)
_QUOTE_MAPS = (  # LaTeX quotes: (probably-left apostrophe/double, right ones), then fixed ones
    [(re.compile("&apos;|'"), "`"), (re.compile('"|&quot;'), "``")],
    [(re.compile("&apos;|'"), "'"), (re.compile('"|&quot;'), "''")],
    [(re.compile("[\x91\u2018\u201b\u2039]"), "`"), (re.compile("[\x92\u2019\u203a]"), "'"),
     (re.compile("[\x93\u201c\xab]"), "``"), (re.compile("[\x94\u201d\xbb]"), "''")],
)
_TRANSLATE = {
    "frac": str.maketrans({"\xbc": "1/4", "\xbd": "1/2", "\xbe": "3/4", "\u2153": "1/3", "\u2154": "2/3"}),
    "currency": str.maketrans({"\xa2": "cents", "\xa3": "#", "\x80": "$", "\xa4": "$", "\u20a0": "$", "\u20ac": "$"}),
    "parens": str.maketrans({"(": "-LRB-", ")": "-RRB-"}),
    "phone": str.maketrans({"(": "-LRB-", ")": "-RRB-", " ": "\xa0"}),
    "nbsp": str.maketrans({" ": "\xa0"}),
}


def _apply(action: str, tok: str) -> tuple[str | None, int]:
    """Token text for a rule's action, and how many characters it consumes (JFlex yypushback)."""
    n = len(tok)
    if action == "keep":
        return tok, n
    if action == "soft":  # removeSoftHyphens
        return tok.replace("\xad", "") or "-", n
    if action == "skip":
        return None, n
    if action[0] == "=":
        return action[1:], n
    if action in ("left", "right"):
        for pat, rep in _QUOTE_MAPS[0 if action == "left" else 1] + _QUOTE_MAPS[2]:
            tok = pat.sub(rep, tok)
        return tok, n
    if action == "amp":
        return _AMP.sub("&", tok), n
    if action in _TRANSLATE:
        return tok.translate(_TRANSLATE[action]), n
    if action == "hyphens":
        return ("--" if 3 <= n <= 4 else tok), n
    if action == "dupdot":  # "etc." then the period again as its own token
        return tok, n - 1
    if action == "acronym":  # "U.S." + "." before a sentence start; "I." -> "I" + "."
        return (tok[:-1], 1) if n == 2 else (tok, n - 1)
    if action in ("push2", "push3"):  # gonna -> gon + na, cannot -> can + not
        k = n - int(action[-1])
        return tok[:k], k
    raise AssertionError(action)


# Positions where the longest match is known without trying every rule: a blank run that starts
# with a space or tab (skipped; other blanks on their own may start a URL token!), an ASCII
# letter run or an alphanumeric run followed by a space but not by " <digit>" (a phone number or
# "5 1/2" could continue), and "," or "." before a space (unless ". ." follows).
_SHORTCUT = re.compile(r"[ \t][ \t\u00A0\u2000-\u200A\u3000]*|((?:[A-Za-z]+|[A-Za-z0-9]+(?! [0-9])|,|\.(?! \.))(?= ))")
_ASSIMILATED = frozenset(["cannot", "gonna", "gotta", "wanna", "lemme", "gimme"])


def _lex(text: str, stop: int | None = None) -> list[str]:
    """Raw PTBLexer tokens of ``text`` that start before ``stop`` (the rest is only lookahead)."""
    charmap, pattern, spans_of, slots = _lexer()
    match, shortcut = pattern.match, _SHORTCUT.match
    mapped = text if text.isascii() else text.translate(charmap)
    pos, end, out = 0, len(text) if stop is None else stop, []
    while pos < end:
        m = shortcut(text, pos)  # (on the original text: the character map renames the blanks)
        if m is not None:
            tok = m.group(1)
            if tok is None:
                pos = m.end()
                continue
            if tok.lower() not in _ASSIMILATED:
                out.append(tok)
                pos = m.end()
                continue
        regs = match(mapped, pos).regs
        # Longest total match (r1 + trailing context), the first rule on ties: every matched
        # span starts at pos and unmatched ones are (-1, -1), so max() and index() do it in C.
        spans = spans_of(regs)
        _outer, inner, action = slots[spans.index(max(spans))]
        tok, used = _apply(action, text[pos:regs[inner][1]])
        if tok is not None:
            out.append(tok)
        pos += used
    return out


def _to_utf16_units(s: str) -> str:
    """Non-BMP characters as surrogate pairs: JFlex 1.4 scans UTF-16 units."""
    return "".join(c if ord(c) < 0x10000 else chr(0xD7C0 + (ord(c) >> 10)) + chr(0xDC00 + (ord(c) & 0x3FF)) for c in s)


def _from_utf16_units(tok: str) -> str:
    tok = tok.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    return _LONE_SURROGATE.sub("?", tok)  # Java's UTF-8 encoder writes an unpaired one as "?"


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
# Upper-case letters new in Unicode 14, which Java 17 (Unicode 13) leaves unchanged.
_JAVA_CASELESS = re.compile("[\u2c2f\ua7c0\ua7d0\ua7d6\ua7d8\U00010570-\U00010595]")


def _char_kind(c: str) -> str:
    """Character kind in Java's legacy word-break rules: L(etter), D(igit), M(id: may join two
    letters or two digits), I(gnored: goes with the previous character), X (breaks)."""
    if "\u3005" <= c <= "\u30fe" or "\u4e00" <= c <= "\u9fa5" or "\uf900" <= c <= "\ufa2d":
        return "X"  # kanji and kana are words of their own
    cat = unicodedata.category(c)
    if c in "\u00ad\u2027\"'.,\u066b" or cat in ("Pd", "Pc"):
        return "M"
    if cat[0] == "L" or cat == "Mc":
        return "L"
    if cat[0] == "N":
        return "D"
    return "I" if cat in ("Mn", "Me", "Cf") else "X"


def _java_lower(tok: str) -> str:
    """``tok.toLowerCase(Locale.ENGLISH)``: as str.lower() except for the context-dependent
    capital sigma, whose final form Java decides within a legacy BreakIterator "word" (letters
    and digits, joined by single ' . " - _ soft hyphen), not by Unicode's Final_Sigma rule."""
    if "\u03a3" not in tok:
        return tok.lower() if not _JAVA_CASELESS.search(tok) else "".join(
            c if _JAVA_CASELESS.match(c) else c.lower() for c in tok)
    kinds = [_char_kind(c) for c in tok]
    solid = [i for i, k in enumerate(kinds) if k != "I"]  # ignorables go with the previous char
    joins = set()
    for a, i, b in zip(solid, solid[1:], solid[2:]):
        left, mid, right = kinds[a], tok[i], kinds[b]
        if kinds[i] == "M" and kinds[i + 1] != "I" and (left == right == "L" and mid not in ",\u066b"
                                                  or left == right == "D" and mid in ",\u066b\"'."):
            joins.add(i)
    word, n, prev = [0] * len(tok), 0, None
    for i, kind in enumerate(kinds):
        if kind != "I":
            if prev is None or not (i in joins or prev in joins or kind in "LD" and kinds[prev] in "LD"):
                n += 1
            # (Java's legacy iterator ends a word after a non-BMP letter, except at the start)
            prev = None if i and tok[i] > "\uffff" else i
        word[i] = n
    cased = [c.islower() or c.isupper() or unicodedata.category(c) == "Lt" for c in tok]
    out = []
    for i, c in enumerate(tok):
        if c != "\u03a3":
            out.append(c if _JAVA_CASELESS.match(c) else c.lower())
            continue
        before = any(cased[j] for j in range(i) if word[j] == word[i])
        after = any(cased[j] for j in range(i + 1, len(tok)) if word[j] == word[i])
        out.append("\u03c2" if before and not after else "\u03c3")
    return "".join(out)


def _utf16(caption: str) -> str:
    if not caption.isascii():
        caption = "".join(c for c in caption if not 0xD800 <= ord(c) < 0xE000)  # lone surrogates
        if any(ord(c) > 0xFFFF for c in caption):
            caption = _to_utf16_units(caption)
    return caption


_ISOLATED = "\x01"  # a next line that starts nothing: no lookahead rule accepts it


def _slow(caption: str, following: str | None = _ISOLATED) -> str:
    """Full lexer on one caption; ``following`` is the next line of the stream (None: end of input)."""
    caption = _utf16(caption)
    text = caption if following is None else caption + "\n" + _utf16(following)
    tokens = _lex(text, stop=len(caption))  # tokens never cross a line; the rest is lookahead
    line = " ".join(t.lower() if t.isascii() else _java_lower(_from_utf16_units(t)) for t in tokens)
    return " ".join(w for w in line.rstrip().split(" ") if w not in PUNCTUATIONS)


CONTEXTS = ("stream", "isolated")


MEMO_LIMIT = 1_000_000  # captions a ``memo`` holds before it starts afresh


def ptb_tokenize(captions: Sequence[str], *, context: str = "stream",
                 memo: dict[str, str] | None = None) -> list[str]:
    """Tokenize captions exactly like pycocoevalcap's ``PTBTokenizer`` (one output per input).

    Every caption is lexed by the rules of Stanford PTBTokenizer 3.4.1 (``-lowerCase``), and
    pycocoevalcap's punctuation tokens are removed; tokens are joined by single spaces. Line
    breaks inside a caption act as spaces (see the module docstring). Empty strings give "".

    ``context="stream"`` (default) lexes the captions as pycocoevalcap does: as the lines of one
    file, in the order given, so a caption's last token may depend on the first characters of the
    next caption (``"with a t."`` + ``"A man..."`` gives ``t``, + ``"a man..."`` gives ``t.``) and
    the last caption is followed by the end of the input. ``context="isolated"`` lexes each
    caption on its own (followed by a line that starts nothing): results do not depend on order.
    The two differ on a handful of captions in 100,000.

    ``memo``: a dict kept across calls that tokenise one long stream block by block (each block
    with the next caption appended as lookahead); it holds the captions whose tokens cannot
    depend on their neighbours, so a caption repeated in many blocks is lexed once.

    Raises TypeError if ``captions`` is a string or an item is not a ``str``.
    """
    if isinstance(captions, (str, bytes)):
        raise TypeError("ptb_tokenize expects a sequence of captions, not a single string; wrap it in a list")
    if context not in CONTEXTS:
        raise ValueError(f"context must be one of {CONTEXTS}, got {context!r}")
    captions = list(captions)
    if not set(map(type, captions)) <= {str}:
        for i, caption in enumerate(captions):
            if not isinstance(caption, str):
                raise TypeError(f"caption at index {i} is {type(caption).__name__}, not str: {caption!r:.80}")
    line = lambda j: _LINE_BREAKS.sub(" ", captions[j])  # noqa: E731 (only for the few slow ones)
    fast = {} if memo is None else memo                 # caption -> tokens (None: not plain)
    if len(fast) > MEMO_LIMIT:
        fast.clear()
    distinct = list(dict.fromkeys(captions))           # benchmarks repeat a lot
    if fast:
        distinct = [c for c in distinct if c not in fast]
    fast.update(zip(distinct, fast_batch(distinct)))
    out = list(map(fast.__getitem__, captions))        # plain captions have no context effects
    n = len(out)
    slow = list(itertools.compress(range(n), map(operator.is_, out, itertools.repeat(None))))
    if context == "isolated":
        for i in slow:
            out[i] = _slow_cached(line(i), _ISOLATED)
        return out
    if n and (not slow or slow[-1] != n - 1) and not ends_plainly(captions[-1]):
        slow.append(n - 1)                              # the last one ends the input
    for i in slow:
        out[i] = _slow_cached(line(i), None if i == n - 1 else line(i + 1))
    return out


@functools.lru_cache(maxsize=65536)
def _slow_cached(line: str, following: str | None) -> str:
    return _slow(line, following)
