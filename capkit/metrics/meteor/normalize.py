"""METEOR 1.5's ``-norm`` text normalisation for English, rule for rule.

A port of ``edu.cmu.meteor.util.Normalizer.normalizeLine(line, LANG_EN, keepPunctuation=true)``
(itself the Moses tokenizer plus quote/dash normalisation), followed by what ``MeteorScorer``
does next: lower-case, then split on the characters ``java.util.StringTokenizer`` splits on.
Java's regex classes are spelled out because Python's differ: ``\\s`` and ``\\p{Digit}`` are
ASCII-only in Java, Unicode-aware in Python.

Also here: ``java_hash``, Java's ``String.hashCode``, because METEOR compares words by it
(two different words with the same hash count as an exact match in the jar, and so here), and
``english_stemmer``, the Snowball stemmer the jar's stem module uses.

Explained in notebooks/01_classic_metrics.ipynb, section "METEOR".
"""
from __future__ import annotations

import re
import warnings

_ALPHA = "A-Za-z\u0160\u017d\u0161\u017e\u0178\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u017e" \
         "\u0400-\u04ff\u0500-\u0527\ua640-\ua66e\ua67e-\ua697\u1d00-\u1d7f"
_ALNUM = "0-9" + _ALPHA
_JAVA_SPACE = " \t\n\x0b\x0c\r"                   # java.util.regex \s
_TOKEN_DELIMS = " \t\n\r\x0c"                      # java.util.StringTokenizer's default

_SEP_OTHER = re.compile(f"([^{_ALNUM}{_JAVA_SPACE}.'`,\\-\u2018\u2019])")
_MULTI_DOT = re.compile(r"\.([.]+)")
_MULTI_DOT2 = re.compile(r"DOTMULTI\.([^.])")
_COMMA = (re.compile(r"([^0-9])[,]([^0-9])"), re.compile(r"([0-9])[,]([^0-9])"),
          re.compile(r"([^0-9])[,]([0-9])"))
_QUOTE = re.compile("([`\u2018\u2019])")
_QUOTE2 = re.compile("([\u201c\u201d]|'')")
_RM_DASH = re.compile(f"([{_ALNUM}.])[\\-]([{_ALNUM}])")
_CONT_EN = ((re.compile(f"([^{_ALPHA}])[']([^{_ALPHA}])"), r"\1 ' \2"),
            (re.compile(f"([^{_ALPHA}0-9])[']([{_ALPHA}])"), r"\1 ' \2"),
            (re.compile(f"([{_ALPHA}])[']([^{_ALPHA}])"), r"\1 ' \2"),
            (re.compile(f"([{_ALPHA}])[']([{_ALPHA}])"), r"\1 '\2"),
            (re.compile(r"([0-9])[']([s])"), r"\1 '\2"))
_NBP_ALPHA = re.compile(f"[{_ALPHA}]")
_WHITE = re.compile("[  \u2000-\u200a\u202f\u205f\u3000\u00a0]+")
_TOKEN = re.compile(f"[^{_TOKEN_DELIMS}]+")
_PLAIN = re.compile("[a-z0-9 ]*")       # text no rule of the normaliser touches

NBP_ANY, NBP_NUMERIC_ONLY = 1, 2   # Constants.NBP_ANY / NBP_NUM_ONLY


def parse_nonbreaking(lines: list[str]) -> dict[str, int]:
    """The lines of the jar's ``nonbreaking/english.prefixes`` -> {prefix: NBP_ANY or
    NBP_NUMERIC_ONLY}."""
    out = {}
    for line in lines:
        tok = line.split()
        if not tok or tok[0].startswith("#"):
            continue
        out[tok[0]] = NBP_NUMERIC_ONLY if len(tok) > 1 and tok[1] == "#NUMERIC_ONLY#" else NBP_ANY
    return out


def _java_trim(s: str) -> str:
    """``String.trim``: strip every char <= U+0020 at both ends."""
    start, end = 0, len(s)
    while start < end and s[start] <= " ":
        start += 1
    while end > start and s[end - 1] <= " ":
        end -= 1
    return s[start:end]


def _break_dots(words: list[str], nonbreaking: dict[str, int]) -> str:
    """Split a final '.' off each word unless the word is a known or likely abbreviation."""
    out = []
    for i, w in enumerate(words):
        nxt = words[i + 1] if i < len(words) - 1 else None
        if len(w) > 1 and w.endswith("."):
            pre = w[:-1]
            kind = nonbreaking.get(pre)
            if "." in pre and _NBP_ALPHA.search(pre):
                out.append(w.replace(".", ""))            # U.S. -> US
            elif kind == NBP_ANY or (nxt is not None and "a" <= nxt[:1] <= "z"):
                out.append(w)
            elif kind == NBP_NUMERIC_ONLY and nxt is not None and "0" <= nxt[:1] <= "9":
                out.append(w)
            else:
                out.append(pre + " .")
        else:
            out.append(w)
        out.append(" ")
    return "".join(out)


def normalize_line(line: str, nonbreaking: dict[str, int]) -> str:
    """``Normalizer.normalizeLine(line, LANG_EN, true)`` (case is left alone, as in Java)."""
    s = _SEP_OTHER.sub(r" \1 ", f" {line} ")
    s = _MULTI_DOT.sub(r" DOTMULTI\1", s)
    while "DOTMULTI." in s:
        s = _MULTI_DOT2.sub(r"DOTDOTMULTI \1", s)
        s = s.replace("DOTMULTI.", "DOTDOTMULTI")
    for pattern in _COMMA:
        s = pattern.sub(r"\1 , \2", s)
    s = _QUOTE.sub("'", s)
    s = _QUOTE2.sub(' " ', s)
    s = s.replace("\u2013", "-").replace("--", "-")
    s = _RM_DASH.sub(r"\1 \2", s)
    for pattern, repl in _CONT_EN:
        s = pattern.sub(repl, s)
    s = _break_dots(_TOKEN.findall(s), nonbreaking)
    while "DOTDOTMULTI" in s:
        s = s.replace("DOTDOTMULTI", "DOTMULTI.")
    s = s.replace("DOTMULTI", ".")
    return _java_trim(_WHITE.sub(" ", s))


def meteor_words(line: str, nonbreaking: dict[str, int], normalize: bool = True) -> list[str]:
    """Normalise (``-norm``), lower-case and split one segment as ``MeteorScorer`` does."""
    if normalize:
        if _PLAIN.fullmatch(line):               # most PTB-tokenised captions
            return line.split()
        line = normalize_line(line, nonbreaking)
    return _TOKEN.findall(line.lower())


def java_hash(word: str) -> int:
    """Java's ``String.hashCode`` (over UTF-16 code units, wrapped to a signed 32-bit int)."""
    h = 0
    if word.isascii():
        for c in word.encode("ascii"):
            h = (31 * h + c) & 0xFFFFFFFF
    else:
        data = word.encode("utf-16-le")
        for k in range(0, len(data), 2):
            h = (31 * h + data[k] + (data[k + 1] << 8)) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


# words the Snowball English stemmer of 2010 (in the jar) and of Snowball >= 3 stem differently
_STEM_PROBES = {"biologist": "biologist", "added": "ad", "evening": "even"}


def english_stemmer():
    """A Snowball English stemmer that agrees with the one inside meteor-1.5.jar."""
    try:
        import snowballstemmer
    except ImportError as err:
        raise ImportError("METEOR's stem module needs snowballstemmer: "
                          "pip install snowballstemmer==2.2.0") from err
    stemmer = snowballstemmer.stemmer("english")
    if any(stemmer.stemWord(w) != s for w, s in _STEM_PROBES.items()):
        warnings.warn("the installed snowballstemmer implements a newer Snowball English than "
                      "meteor-1.5.jar (e.g. 'biologist', 'added'); a few stem matches will differ "
                      "from the reference; pip install snowballstemmer==2.2.0 for parity",
                      stacklevel=2)
    return stemmer
