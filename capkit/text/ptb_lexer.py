"""The lexer of :mod:`capkit.text`, compiled from the rules of :mod:`capkit.text.ptb_rules`.

JFlex-style patterns (``{MACRO}`` references, ``[:letter:]``-style big sets, ``%caseless``) are
expanded into Python ``re`` syntax, and the alphabet is shrunk to JFlex's character classes
(``CharMap``): the rules are rewritten over one representative per class, so the single pattern
``build_lexer`` returns compiles and matches fast, and tokens are cut from the original text at
the same offsets.
"""

from __future__ import annotations

import bisect
import functools
import re

from capkit.text.ptb_rules import BIG_SETS, MACROS, RULES, atom_ranges

# A character class, or one escape: the atoms that CharMap sorts characters by.
_ATOM = re.compile(r"\[\^?\]?(?:\\.|[^\]\\])*\]|\\u[0-9A-Fa-f]{4}|\\U[0-9A-Fa-f]{8}|\\x[0-9A-Fa-f]{2}|\\.", re.S)


def _caseless(p: str) -> str:
    """JFlex %caseless: ASCII letters outside [...] classes, escapes and {MACRO} references match
    either case; runs of them are wrapped in (?ai:...) (a = ASCII-only case folding)."""
    out, i, n = [], 0, len(p)
    while i < n:
        c = p[i]
        if c == "\\":
            k = {"u": 6, "U": 10, "x": 4}.get(p[i + 1], 2)
            out.append(p[i:i + k])
            i += k
        elif c == "[":
            j = _ATOM.match(p, i).end()
            out.append(p[i:j])
            i = j
        elif c == "{" and i + 1 < n and p[i + 1].isupper():
            j = p.index("}", i)
            out.append(p[i:j + 1])
            i = j + 1
        elif c == "(" and p.startswith("(?", i):  # group flags like (?s: or (?: stay as written
            j = p.index(":", i)
            out.append(p[i:j + 1])
            i = j + 1
        elif c.isascii() and c.isalpha():
            j = i
            while j < n and p[j].isascii() and p[j].isalpha():
                j += 1
            if j < n and (p[j] in "?*+" or p[j] == "{" and p[j + 1].isdigit()):
                j -= 1  # a quantifier binds the last letter only
            if j - i > 1:
                out.append("(?ai:" + p[i:j] + ")")
            else:
                out.append("[" + c.lower() + c.upper() + "]")
                j = i + 1
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


_MACRO_REF = re.compile(r"\{([A-Z][A-Z0-9_]*)\}")
_ESCAPED_CHAR = re.compile(r"\\u([0-9A-Fa-f]{4})(?:-\\u([0-9A-Fa-f]{4}))?")


def _all_patterns() -> list[str]:
    return list(MACROS.values()) + [p for _n, alts, trail, _a in RULES for p in alts + [trail or ""]]


def _runs(ranges: list[tuple[int, int]]) -> list[list[int]]:
    """Sorted, merged [lo, hi] runs of code point ranges."""
    merged: list[list[int]] = []
    for lo, hi in sorted(ranges):
        if merged and lo <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], hi)
        else:
            merged.append([lo, hi])
    return merged


_BOUNDS = {name: tuple(zip(*_runs(ranges))) for name, ranges in BIG_SETS.items()}


def _member(name: str, code: int) -> bool:
    los, his = _BOUNDS[name]
    i = bisect.bisect_right(los, code) - 1
    return i >= 0 and code <= his[i]


def _named_characters() -> frozenset[int]:
    """Non-ASCII characters some rule names (as \\uXXXX, alone or in a range)."""
    named = set()
    for m in _ESCAPED_CHAR.finditer("".join(_all_patterns())):
        lo = int(m.group(1), 16)
        named.update(range(lo, int(m.group(2) or m.group(1), 16) + 1))
    return frozenset(c for c in named if c >= 0x80)


_NAMED = _named_characters()
_STAND_IN = 0xE000  # + signature: bit k set for membership in the k-th big set
_STAND_INS = range(_STAND_IN, _STAND_IN + (1 << len(BIG_SETS)))  # (private use: no rule names them)
# The wide alphabet: ASCII, the named characters and one stand-in per big-set signature.
_WIDE = sorted(set(range(0x80)) | _NAMED | set(_STAND_INS))


@functools.lru_cache(maxsize=None)
def _class_items(name: str) -> str:
    """Body of a character class for big set ``name`` over the wide alphabet."""
    k = list(BIG_SETS).index(name)
    codes = [c for c in _WIDE if ((c - _STAND_IN) >> k & 1 if c in _STAND_INS else _member(name, c))]
    return "".join("\\U%08x" % c for c in codes)


class CharMap(dict):
    """``str.translate`` table playing the part of JFlex's character map: every character is
    replaced by the representative of its class, characters being in one class when no rule
    can tell them apart. ASCII stays itself; the few dozen non-ASCII classes get the codes
    U+0080 upwards. The rules are rewritten over this small alphabet (see ``build_lexer``), so
    they compile and match fast, and tokens are cut from the original text at the same offsets.

    The classes are found in two steps: a non-ASCII character that no rule names is first
    replaced by the stand-in of its signature (membership in letter, digit, wordextra, misc);
    then stand-ins and named characters are grouped by their membership in every character
    class (and escape) of the expanded rules, ``atoms``."""

    def __init__(self, atoms: list[str]) -> None:
        super().__init__()
        self.atoms = {a: self.members(a) for a in atoms}
        signatures: dict[tuple[bool, ...], int] = {}
        self.code = {}
        for c in _WIDE[0x80:]:
            sig = tuple(c in m for m in self.atoms.values())
            self.code[c] = 0x80 + signatures.setdefault(sig, len(signatures))

    @staticmethod
    def members(atom: str) -> frozenset[int]:
        """The characters of the wide alphabet that ``atom`` matches."""
        negate, ranges = atom_ranges(atom)
        hit = set()
        for lo, hi in ranges:
            hit.update(_WIDE[bisect.bisect_left(_WIDE, lo):bisect.bisect_right(_WIDE, hi)])
        return frozenset(c for c in _WIDE if c not in hit) if negate else frozenset(hit)

    def __missing__(self, code: int) -> int:
        if code < 0x80:
            out = code
        elif code in _NAMED:
            out = self.code[code]
        else:
            out = self.code[_STAND_IN + sum(_member(name, code) << k for k, name in enumerate(BIG_SETS))]
        self[code] = out
        return out

    def rewrite(self, atom: str) -> str:
        """``atom`` (a class or an escape) over the mapped alphabet."""
        codes = {c if c < 0x80 else self.code[c] for c in self.atoms[atom]}
        if len(codes) <= 1:
            return re.escape(chr(codes.pop())) if codes else "(?!)"
        runs = _runs([(c, c) for c in codes])
        return "[" + "".join(_class_char(a) + ("-" + _class_char(b) if b > a else "") for a, b in runs) + "]"


def _class_char(code: int) -> str:
    """A character inside a class, escaped only where it could mean something there: letters,
    digits and the mapped codes stand as themselves (the regex parser reads them fastest)."""
    c = chr(code)
    return c if c.isalnum() and c.isascii() or code >= 0x80 else "\\x%02x" % code


def _expand(p: str, done: dict[str, str]) -> str:
    for name in BIG_SETS:
        if "[:%s:]" % name in p:
            p = p.replace("[:%s:]" % name, _class_items(name))
    p = _caseless(p)

    def sub(m: re.Match) -> str:
        name = m.group(1)
        if name not in done:
            done[name] = _expand(MACROS[name], done)
        return "(?:" + done[name] + ")"

    return _MACRO_REF.sub(sub, p)


def build_lexer() -> tuple[CharMap, re.Pattern, list[tuple[int, int, str]]]:
    """The character map, and one pattern that evaluates every rule at a position, each inside
    its own optional lookahead (so a single ``match`` call reports all of them), plus for every
    alternative (group spanning r1 and r2, group of r1, action), in rule order."""
    done: dict[str, str] = {}
    parts, slots, group = [], [], 0
    for _name, alts, trail, action in RULES:
        tail = "" if trail is None else "(?:" + _expand(trail, done) + ")"
        for alt in alts:
            body = "(" + _expand(alt, done) + ")"
            if tail:  # outer group = r1 + r2 (the length JFlex compares), inner = r1 (the token)
                parts.append("(?:(?=(" + body + tail + ")))?")
                slots.append((group + 1, group + 2, action))
                group += 2
            else:
                parts.append("(?:(?=" + body + "))?")
                slots.append((group + 1, group + 1, action))
                group += 1
    wide = "".join(parts)
    atoms = [a for a in set(_ATOM.findall(wide)) if a.startswith("[") or a[1] in "uUx"]
    charmap = CharMap(atoms)
    rewritten = {atom: charmap.rewrite(atom) for atom in atoms}
    pattern = _ATOM.sub(lambda m: rewritten.get(m.group(), m.group()), wide)
    return charmap, re.compile(pattern), slots
