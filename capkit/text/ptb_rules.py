"""Lexer tables for :mod:`capkit.text`: the rules of Stanford CoreNLP 3.4.1's ``PTBLexer``.

``PTBLexer`` is a JFlex scanner: at each position every rule is tried, the LONGEST match wins
(a trailing context ``r1/r2`` counts towards the length, but only ``r1`` becomes the token) and
ties go to the rule listed first. The jar ships without its grammar, so the rules below were
rebuilt from neighbouring PTBLexer.flex versions (2012-2017), the 54 actions visible in the
jar's bytecode (``javap -c``), and then pinned down by differential testing against the jar
(tests/test_text.py). Defaults of 3.4.1, read from the bytecode: americanize and
escapeForwardSlashAsterisk are OFF; quotes become LaTeX quotes, brackets -LRB- etc.

Patterns use Python ``re`` syntax plus three JFlex conventions, kept for readability:

* ``{NAME}`` refers to a macro (expanded as a non-capturing group);
* ``[:letter:]``, ``[:digit:]`` (JFlex's Java-based classes, frozen below as the jar sees them)
  and ``[:wordextra:]``, ``[:misc:]`` (two long lists of the grammar) stand inside a class;
* the scanner is ``%caseless``: ASCII letters written OUTSIDE a character class match either
  case ("cannot" also matches "CANNOT"); letters inside ``[...]`` do not (``[A]rk`` needs the
  capital A).

Where Python's leftmost-alternative matching could stop short of JFlex's longest match, a
rule is given as a list of alternatives and the lexer takes the longest of them.
"""

from __future__ import annotations

import re

# ---------------------------------------------------------------------------------------------
# Character tables. JFlex 1.4 evaluated [:letter:] / [:digit:] (Character.isLetter / isDigit)
# with the 2014 JDK, i.e. Unicode 6.x, on UTF-16 units (the BMP only). Python's str.isalpha()
# follows a newer Unicode, so the two sets were read back from the jar (by lexing every BMP
# character on its own and next to a letter / digit) and are frozen here as hex ranges.
# ---------------------------------------------------------------------------------------------
_JAVA_LETTER_RANGES = """
41-5a 61-7a aa b5 ba c0-d6 d8-f6 f8-2c1 2c6-2d1 2e0-2e4 2ec 2ee 370-374 376-377 37a-37d 386
388-38a 38c 38e-3a1 3a3-3f5 3f7-481 48a-527 531-556 559 561-587 5d0-5ea 5f0-5f2 620-64a 66e-66f
671-6d3 6d5 6e5-6e6 6ee-6ef 6fa-6fc 6ff 710 712-72f 74d-7a5 7b1 7ca-7ea 7f4-7f5 7fa 800-815 81a
824 828 840-858 8a0 8a2-8ac 904-939 93d 950 958-961 971-977 979-97f 985-98c 98f-990 993-9a8
9aa-9b0 9b2 9b6-9b9 9bd 9ce 9dc-9dd 9df-9e1 9f0-9f1 a05-a0a a0f-a10 a13-a28 a2a-a30 a32-a33
a35-a36 a38-a39 a59-a5c a5e a72-a74 a85-a8d a8f-a91 a93-aa8 aaa-ab0 ab2-ab3 ab5-ab9 abd ad0
ae0-ae1 b05-b0c b0f-b10 b13-b28 b2a-b30 b32-b33 b35-b39 b3d b5c-b5d b5f-b61 b71 b83 b85-b8a
b8e-b90 b92-b95 b99-b9a b9c b9e-b9f ba3-ba4 ba8-baa bae-bb9 bd0 c05-c0c c0e-c10 c12-c28 c2a-c33
c35-c39 c3d c58-c59 c60-c61 c85-c8c c8e-c90 c92-ca8 caa-cb3 cb5-cb9 cbd cde ce0-ce1 cf1-cf2
d05-d0c d0e-d10 d12-d3a d3d d4e d60-d61 d7a-d7f d85-d96 d9a-db1 db3-dbb dbd dc0-dc6 e01-e30
e32-e33 e40-e46 e81-e82 e84 e87-e88 e8a e8d e94-e97 e99-e9f ea1-ea3 ea5 ea7 eaa-eab ead-eb0
eb2-eb3 ebd ec0-ec4 ec6 edc-edf f00 f40-f47 f49-f6c f88-f8c 1000-102a 103f 1050-1055 105a-105d
1061 1065-1066 106e-1070 1075-1081 108e 10a0-10c5 10c7 10cd 10d0-10fa 10fc-1248 124a-124d
1250-1256 1258 125a-125d 1260-1288 128a-128d 1290-12b0 12b2-12b5 12b8-12be 12c0 12c2-12c5
12c8-12d6 12d8-1310 1312-1315 1318-135a 1380-138f 13a0-13f4 1401-166c 166f-167f 1681-169a
16a0-16ea 1700-170c 170e-1711 1720-1731 1740-1751 1760-176c 176e-1770 1780-17b3 17d7 17dc
1820-1877 1880-18a8 18aa 18b0-18f5 1900-191c 1950-196d 1970-1974 1980-19ab 19c1-19c7 1a00-1a16
1a20-1a54 1aa7 1b05-1b33 1b45-1b4b 1b83-1ba0 1bae-1baf 1bba-1be5 1c00-1c23 1c4d-1c4f 1c5a-1c7d
1ce9-1cec 1cee-1cf1 1cf5-1cf6 1d00-1dbf 1e00-1f15 1f18-1f1d 1f20-1f45 1f48-1f4d 1f50-1f57 1f59
1f5b 1f5d 1f5f-1f7d 1f80-1fb4 1fb6-1fbc 1fbe 1fc2-1fc4 1fc6-1fcc 1fd0-1fd3 1fd6-1fdb 1fe0-1fec
1ff2-1ff4 1ff6-1ffc 2071 207f 2090-209c 2102 2107 210a-2113 2115 2119-211d 2124 2126 2128
212a-212d 212f-2139 213c-213f 2145-2149 214e 2183-2184 2c00-2c2e 2c30-2c5e 2c60-2ce4 2ceb-2cee
2cf2-2cf3 2d00-2d25 2d27 2d2d 2d30-2d67 2d6f 2d80-2d96 2da0-2da6 2da8-2dae 2db0-2db6 2db8-2dbe
2dc0-2dc6 2dc8-2dce 2dd0-2dd6 2dd8-2dde 2e2f 3005-3006 3031-3035 303b-303c 3041-3096 309d-309f
30a1-30fa 30fc-30ff 3105-312d 3131-318e 31a0-31ba 31f0-31ff 3400-4db5 4e00-9fcc a000-a48c
a4d0-a4fd a500-a60c a610-a61f a62a-a62b a640-a66e a67f-a697 a6a0-a6e5 a717-a71f a722-a788
a78b-a78e a790-a793 a7a0-a7aa a7f8-a801 a803-a805 a807-a80a a80c-a822 a840-a873 a882-a8b3
a8f2-a8f7 a8fb a90a-a925 a930-a946 a960-a97c a984-a9b2 a9cf aa00-aa28 aa40-aa42 aa44-aa4b
aa60-aa76 aa7a aa80-aaaf aab1 aab5-aab6 aab9-aabd aac0 aac2 aadb-aadd aae0-aaea aaf2-aaf4
ab01-ab06 ab09-ab0e ab11-ab16 ab20-ab26 ab28-ab2e abc0-abe2 ac00-d7a3 d7b0-d7c6 d7cb-d7fb
f900-fa6d fa70-fad9 fb00-fb06 fb13-fb17 fb1d fb1f-fb28 fb2a-fb36 fb38-fb3c fb3e fb40-fb41
fb43-fb44 fb46-fbb1 fbd3-fd3d fd50-fd8f fd92-fdc7 fdf0-fdfb fe70-fe74 fe76-fefc ff21-ff3a
ff41-ff5a ff66-ffbe ffc2-ffc7 ffca-ffcf ffd2-ffd7 ffda-ffdc
"""
_JAVA_DIGIT_RANGES = """
30-39 660-669 6f0-6f9 7c0-7c9 966-96f 9e6-9ef a66-a6f ae6-aef b66-b6f be6-bef c66-c6f ce6-cef
d66-d6f e50-e59 ed0-ed9 f20-f29 1040-1049 1090-1099 17e0-17e9 1810-1819 1946-194f 19d0-19d9
1a80-1a89 1a90-1a99 1b50-1b59 1bb0-1bb9 1c40-1c49 1c50-1c59 a620-a629 a8d0-a8d9 a900-a909
a9d0-a9d9 aa50-aa59 abf0-abf9 ff10-ff19
"""


def _hex_ranges(spec: str) -> list[tuple[int, int]]:
    """'41-5a 61' -> [(0x41, 0x5a), (0x61, 0x61)]"""
    out = []
    for item in spec.split():
        lo, _, hi = item.partition("-")
        out.append((int(lo, 16), int(hi or lo, 16)))
    return out


# Extra "letters" of PTBLexer's WORD: soft hyphen and combining marks / modifiers of many scripts.
_LETTER_EXTRA = (
    r"\u00AD\u0237-\u024F\u02C2-\u02C5\u02D2-\u02DF\u02E5-\u02FF\u0300-\u036F\u0370-\u037D\u0384"
    r"\u0385\u03CF\u03F6\u03FC-\u03FF\u0483-\u0487\u04CF\u04F6-\u04FF\u0510-\u0525\u055A-\u055F"
    r"\u0591-\u05BD\u05BF\u05C1\u05C2\u05C4\u05C5\u05C7\u0615-\u061A\u063B-\u063F\u064B-\u065E"
    r"\u0670\u06D6-\u06EF\u06FA-\u06FF\u070F\u0711\u0730-\u074F\u0750-\u077F\u07A6-\u07B1"
    r"\u07CA-\u07F5\u07FA\u0900-\u0903\u093C\u093E-\u094E\u0951-\u0955\u0962-\u0963\u0981-\u0983"
    r"\u09BC-\u09C4\u09C7\u09C8\u09CB-\u09CD\u09D7\u09E2\u09E3\u0A01-\u0A03\u0A3C\u0A3E-\u0A4F"
    r"\u0A81-\u0A83\u0ABC-\u0ACF\u0B82\u0BBE-\u0BC2\u0BC6-\u0BC8\u0BCA-\u0BCD\u0C01-\u0C03"
    r"\u0C3E-\u0C56\u0D3E-\u0D44\u0D46-\u0D48\u0E30-\u0E3A\u0E47-\u0E4E\u0EB1-\u0EBC\u0EC8-\u0ECD"
)
_MISC_SYMBOL = (  # stand-alone symbols
    r"+%&~^|\\\u00A6\u00A7\u00A8\u00A9\u00AC\u00AE\u00AF\u00B0-\u00BA\u00D7\u00F7\u0387\u05BE"
    r"\u05C0\u05C3\u05C6\u05F3\u05F4\u0600-\u0603\u0606-\u060A\u060C\u0614\u061B\u061E\u066A"
    r"\u066D\u0703-\u070D\u07F6-\u07F8\u0964\u0965\u0E4F\u1FBD\u2016\u2017\u2020-\u2023"
    r"\u2030-\u2038\u203B\u203E-\u2042\u2044\u207A-\u207F\u208A-\u208E\u2100-\u214F\u2190-\u21FF"
    r"\u2200-\u2BFF\u3012\u30FB\uFF01-\uFF0F\uFF1A-\uFF20\uFF3B-\uFF40\uFF5B-\uFF65"
)
_ESCAPES = {"t": 9, "n": 10, "r": 13, "f": 12, "v": 11, "a": 7, "b": 8, "0": 0}


def atom_ranges(atom: str) -> tuple[bool, list[tuple[int, int]]]:
    """(negated?, code point ranges) of a class ``[...]`` or a single escape."""
    negate, body = False, atom
    if atom.startswith("["):
        negate, body = atom[1] == "^", atom[2 if atom[1] == "^" else 1:-1]
    codes = []
    for m in re.finditer(r"\\[uU]([0-9A-Fa-f]+)|\\x([0-9A-Fa-f]{2})|\\(.)|(.)", body, re.S):
        if m.group(1) or m.group(2):
            codes.append(int(m.group(1) or m.group(2), 16))
        elif m.group(3):
            codes.append(_ESCAPES.get(m.group(3), ord(m.group(3))))
        else:
            codes.append(-1 if m.group(4) == "-" else ord(m.group(4)))  # -1: a possible range dash
    ranges, i = [], 0
    while i < len(codes):
        if i + 2 < len(codes) and codes[i + 1] == -1 and codes[i] >= 0 and codes[i + 2] >= 0:
            ranges.append((codes[i], codes[i + 2]))
            i += 3
        else:
            c = ord("-") if codes[i] == -1 else codes[i]
            ranges.append((c, c))
            i += 1
    return negate, ranges


# The four big sets are written [:name:] inside classes; see ptb_lexer.CharMap for how they are compiled.
BIG_SETS = {
    "letter": _hex_ranges(_JAVA_LETTER_RANGES),  # JFlex [:letter:]
    "digit": _hex_ranges(_JAVA_DIGIT_RANGES),  # JFlex [:digit:] (with the NKo digits U+07C0-07C9)
    "wordextra": atom_ranges("[" + _LETTER_EXTRA + "]")[1],
    "misc": atom_ranges("[" + _MISC_SYMBOL + "]")[1],
}

# Abbreviation lists. ABBREV1 words usually precede lower-case words (before a capital or at the
# end of text the period is also returned separately); ABBREV2/4 words precede names.
_ABBREV1_WORDS = (
    "Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec|Mon|Tue|Tues|Wed|Thu|Thurs|Fri"
    "|Ala|Ariz|[A]z|[A]rk|Calif|Colo|Conn|Ct|Dak|[D]el|Fla|Ga|[I]ll|Ind|Kans?|Ky|[L]a|[M]ass|Md"
    "|Mich|Minn|[M]iss|Mo|Mont|Neb|Nev|Okla|[O]re|[P]a|Penn|Tenn|[T]ex|Va|Vt|[W]ash|Wisc?|Wyo"
    "|Inc|Cos?|Corp|Pp?t[ye]s?|Ltd|Plc|Rt|Bancorp|Bhd|Assn|Univ|Intl|Sys"
    "|tel|est|ext|sq|Jr|Sr|Bros|(?:Ed|Ph)\\.D|Blvd|Rd|Esq|etc|al|seq|Bldg"
)
_ABBREV4_WORDS = (
    "Mr|Mrs|Ms|[M]iss|Drs?|Profs?|Sens?|Reps?|Attys?|Lt|Col|Gen|Messrs|Govs?|Adm|Rev|Maj|Sgt|Cpl"
    "|Pvt|Capt|Ste?|Ave|Pres|Lieut|Hon|Brig|Co?mdr|Pfc|Spc|Supts?|Det|Mt|Ft|Adj|Adv|Asst|Assoc"
    "|Ens|Insp|Mlle|Mme|Msgr|Sfc|vs|Alex|Wm|Jos|Cie|a\\.k\\.a|cf|TREAS|Ph|Invt|Elec|Natl|M[ft]g|Dept"
)
_ABBREV3_WORDS = "ca|figs?|prop|nos?|art|bldg|pp|op"  # only before a number ("fig. 3")
_ACRONYM_NEXT = (  # capitalised words after which "U.S." etc. is taken to end a sentence
    "[A]bout|[A]ccording|[A]dditionally|[A]fter|[A]n|[A]|[A]s|[A]t|[B]ut|[E]arlier|[H]e|[H]er"
    "|[H]ere|[H]owever|[I]f|[I]n|[I]t|[L]ast|[M]any|[M]ore|[M]r\\.|[M]s\\.|[N]ow|[O]nce|[O]ne"
    "|[O]ther|[O]ur|[S]he|[S]ince|[S]o|[S]ome|[S]uch|[T]hat|[T]he|[T]heir|[T]hen|[T]here|[T]hese"
    "|[T]hey|[T]his|[W]e|[W]hen|[W]hile|[W]hat|[Y]et|[Y]ou|{SGML}"
)

MACROS = {
    "SGML": r"<(?:[!?][A-Za-z\-][^>\r\n]*|[A-Za-z][A-Za-z0-9_:.\-]*(?:[ ]+(?:[A-Za-z][A-Za-z0-9_:.\-]*"
    r"[ ]*=[ ]*(?:'[^'\r\n]*'|\"[^\"\r\n]*\")|[A-Za-z][A-Za-z0-9_:.\-]*))*[ ]*/?"
    r"|/[A-Za-z][A-Za-z0-9_:.\-]*)[ ]*>",
    "SPLET": r"&[aeiouAEIOU](?:acute|grave|uml);",
    "SPAMP": r"&amp;",
    "SPACE": r"[ \t\u00A0\u2000-\u200A\u3000]",
    "NEWLINE": r"\r\n|[\r\n\u2028\u2029\u000B\u000C\u0085]",
    "SPACENL": r"{SPACE}|{NEWLINE}",
    "SENTEND": r"(?:{SPACENL})(?:{SPACENL}|[A-Z]|{SGML})",
    "DIGIT": "[[:digit:]]",
    "ALNUM": "[[:letter:][:digit:]]",
    "LETTER": "[[:letter:][:wordextra:]]|{SPLET}",
    "WORD": r"(?:{LETTER})(?:{LETTER}|{DIGIT})*(?:[.!?](?:{LETTER})(?:{LETTER}|{DIGIT})*)*",
    "NUM": r"{DIGIT}*(?:[.:,\u00AD\u066B\u066C]{DIGIT}+)+|{DIGIT}+",
    "APOS": r"['\u0092\u2019]|&apos;",
    "APOSETC": r"{APOS}|[`\u0091\u2018\u201B]",
    "HYPHEN": r"[\-_\u058A\u2010\u2011]",
    "REDAUX": r"{APOS}(?:[msdMSD]|re|ve|ll)",
    "SREDAUX": r"n{APOSETC}t",
    "INSENTP": r"[,;:\u3001]",
    "ACRO": r"U\.S\.-(?:U\.K|U\.S\.S\.R)|(?:Canada|Sino|Korean|EU|Japan|non)-U\.S|[A-Za-z](?:\.[A-Za-z])*",
    "ACRO2": r"U\.S\.-(?:U\.K|U\.S\.S\.R)|(?:Canada|Sino|Korean|EU|Japan|non)-U\.S|[A-Za-z](?:\.[A-Za-z])+",
    "ABBREV1": "(?:" + _ABBREV1_WORDS + r")\.",
    "ABBREV4": "{ACRO}|" + _ABBREV4_WORDS,
    "THING": r"(?:[dDoOlL]{APOSETC}{ALNUM})?{ALNUM}+(?:{HYPHEN}(?:[dDoOlL]{APOSETC}{ALNUM})?{ALNUM}+)*",
    "HTHING": r"[A-Za-z0-9][A-Za-z0-9.,\u00AD]*(?:-(?:(?:{ACRO2})\.|[A-Za-z0-9\u00AD]+))+",
    "THINGA": r"[A-Z]+(?:(?:{SPAMP}|[+&])[A-Z]+)+",  # (&amp; first: "Z&AMP;Y" is one token)
}

_URL_END = r"[^ \t\n\f\r\"<>|.!?(){},\-]"
# Actions (see capkit.text.ptb._apply): keep, soft (remove soft hyphens), amp (&amp; -> &), left /
# right (LaTeX quotes), nbsp (spaces -> U+00A0), parens (( ) -> -LRB- -RRB-), phone (both),
# hyphens, dupdot (token keeps its period, which is lexed again), acronym, push2 / push3
# (split assimilations), skip (whitespace), delete (untokenizable), or a literal replacement
# given as "=TEXT".
RULES: list[tuple[str, list[str], str | None, str]] = [
    # (name, alternatives for r1, trailing context r2 or None, action)
    ("PROG_LANGS", [r"c\+\+|[cCfF]#"], None, "keep"),
    ("ASSIM3", [r"cannot|'twas"], None, "push3"),  # can|not, 't|was
    ("ASSIM2", [r"'tis|gonna|gotta|lemme|gimme|wanna"], None, "push2"),  # gon|na ...
    ("SGML", [r"{SGML}"], None, "nbsp"),
    ("SPMDASH", [r"&(?:MD|mdash|ndash);|[\u0096\u0097\u2013\u2014\u2015]"], None, "=--"),
    ("SPAMP", [r"{SPAMP}"], None, "amp"),
    ("SPPUNC", [r"&(?:HT|TL|UR|LR|QC|QL|QR|odq|cdq|#[0-9]+);"], None, "keep"),
    ("WORD_REDAUX", [r"{WORD}"], r"{REDAUX}", "soft"),
    ("SWORD_SREDAUX", [r"[A-Za-z\u00AD]*[A-MO-Za-mo-z]\u00AD*"], r"{SREDAUX}", "soft"),
    ("WORD", [r"{WORD}"], None, "soft"),
    ("APOWORD", [r"{APOS}n{APOS}?", r"[lLdDjJ]{APOS}", r"Dunkin{APOS}|somethin{APOS}|ol{APOS}",
                 r"{APOS}em", r"[A-HJ-XZn]{APOSETC}[[:letter:]]{2,}",
                 r"{APOS}[2-9]0s", r"{APOS}till?", r"{APOS}cause",
                 r"[[:letter:]]+[aeiouyAEIOUY]{APOSETC}[aeiouA-Z][[:letter:]]*",
                 r"cont'd\.?|nor'easter|c'mon|e'er|s'mores|ev'ry|li'l|nat'l|O{APOSETC}o"], None, "keep"),
    ("APOWORD2", [r"y{APOS}"], "[[:letter:]]", "keep"),
    ("FULLURL", [r"https?://[^ \t\n\f\r\"<>|(){}]+" + _URL_END], None, "keep"),
    ("LIKELYURL", [r"www\.(?:[^ \t\n\f\r\"<>|.!?(){},]+\.)+[a-zA-Z]{2,4}(?:/[^ \t\n\f\r\"<>|()]+" + _URL_END + ")?",
                   r"(?:[^ \t\n\f\r\"`'<>|.!?(){},-_$]+\.)+(?:com|net|org|edu)(?:/[^ \t\n\f\r\"<>|()]+"
                   + _URL_END + ")?"], None, "keep"),
    ("EMAIL", [r"(?:&lt;|<)?[a-zA-Z0-9][^ \t\n\f\r\"<>|(){}\u00A0]*@(?:[^ \t\n\f\r\"<>|(){}.\u00A0]+\.)*"
               r"[^ \t\n\f\r\"<>|(){}.\u00A0]+(?:&gt;|>)?"], None, "keep"),
    ("TWITTER", [r"@[a-zA-Z_][a-zA-Z_0-9]*|#(?:{LETTER})+"], None, "keep"),
    ("REDAUX_NL", [r"{REDAUX}"], r"[^A-Za-z]", "right"),
    ("SREDAUX", [r"{SREDAUX}"], None, "right"),
    ("DATE", [r"{DIGIT}{1,2}[\-/]{DIGIT}{1,2}[\-/]{DIGIT}{2,4}"], None, "keep"),
    ("NUMBER", [r"[\-+]?(?:{NUM})"], None, "soft"),
    ("SUBSUPNUM", [r"[\u207A\u207B\u208A\u208B]?(?:[\u2070\u00B9\u00B2\u00B3\u2074-\u2079]+|[\u2080-\u2089]+)"],
     None, "keep"),
    ("FRAC", [r"(?:{DIGIT}{1,4}[\- \u00A0])?{DIGIT}{1,4}(?:\\?/|\u2044){DIGIT}{1,4}"], None, "nbsp"),
    ("FRAC2", [r"[\u00BC\u00BD\u00BE\u2153-\u215E]"], None, "frac"),
    ("TBSPEC", [r"-(?:RRB|LRB|RCB|LCB|RSB|LSB)-|C\.D\.s|pro-|anti-|S(?:&|&amp;)P-500|S(?:&|&amp;)Ls"
                r"|Cap{APOS}n|c{APOS}est"], None, "amp"),
    ("THING3", [r"[A-Za-z0-9]+(?:-[A-Za-z]+){0,2}(?:\\?/[A-Za-z0-9]+(?:-[A-Za-z]+){0,2}){1,2}"], None, "keep"),
    ("DOLSIGN", [r"[A-Z]*\$|#"], None, "keep"),
    ("DOLSIGN2", [r"[\u00A2\u00A3\u00A4\u00A5\u0080\u20A0\u20AC\u060B\u0E3F\u20A4\uFFE0\uFFE1\uFFE5\uFFE6]"],
     None, "currency"),
    ("ACRONYM_END", [r"(?:{ACRO})\."], r"(?:{SPACENL})+(?:" + _ACRONYM_NEXT + r")(?:{SPACENL})", "acronym"),
    ("ABBREV3", ["(?:" + _ABBREV3_WORDS + r")\."], r"(?:{SPACENL})?{DIGIT}", "keep"),
    ("PTY", [r"(?:pt[eyEY]|co)\."], r"{SPACE}(?:ltd|lim)", "keep"),
    ("ABBREV1_END", [r"{ABBREV1}"], r"{SENTEND}", "dupdot"),
    ("ABBREV1_MID", [r"{ABBREV1}"], r"(?s:..)", "keep"),
    ("ABBREV1_EOF", [r"{ABBREV1}"], None, "dupdot"),
    ("ABBREV2", [r"(?:{ABBREV4})\."], None, "keep"),
    ("ABBREV4", [r"{ABBREV4}"], r"{SPACE}", "keep"),
    ("ACRO", [r"{ACRO}"], r"{SPACENL}", "keep"),
    ("TBSPEC2", [r"{APOS}[0-9][0-9]"], r"{SPACENL}", "keep"),
    ("FILENAME", [r"(?:{LETTER}|{DIGIT})+(?:\.(?:{LETTER}|{DIGIT})+)*\.(?:bat|bmp|c|class|cgi|cpp|dll|docx?|exe"
                  r"|gif|gz|h|html?|jar|java|jpe?g|mov|mp3|pdf|php|pl|png|ppt|ps|py|sql|tar|txt|wav|x|xml|zip)"],
     r"{SPACENL}|[.?!,]", "keep"),
    ("WORD_DOT", [r"{WORD}\."], r"{INSENTP}", "soft"),
    ("PHONE", [r"(?:\([0-9]{2,3}\)[ \u00A0]?|(?:\+\+?)?(?:[0-9]{2,4}[\- \u00A0])?[0-9]{2,4}[\- \u00A0])"
               r"[0-9]{3,4}[\- \u00A0]?[0-9]{3,5}",
               r"(?:(?:\+\+?)?[0-9]{2,4}\.)?[0-9]{2,4}\.[0-9]{3,4}\.[0-9]{3,5}"], None, "phone"),
    ("DBLQUOT_L", [r"\"|&quot;"], r"[A-Za-z0-9$]", "left"),
    ("DBLQUOT", [r"\"|&quot;"], None, "right"),
    ("DEL", [r"\x7f"], None, "skip"),
    ("LESSTHAN", [r"<|&lt;"], None, "=<"),
    ("GREATERTHAN", [r">|&gt;"], None, "=>"),
    ("SMILEY", [r"[<>]?[:;=][\-o*']?[()DPdpO\\{@|\[\]]"], r"[^A-Za-z0-9]", "parens"),
    ("ASIANSMILEY", [r"[\^x=~<>]\.\[\^x=~<>\]|[\-\^x=~<>']_[\-\^x=~<>']|\([\-\^x=~<>'][_.]?[\-\^x=~<>']\)"],
     None, "parens"),
    ("LCB", [r"\{"], None, "=-LCB-"),
    ("RCB", [r"\}"], None, "=-RCB-"),
    ("LSB", [r"\["], None, "=-LSB-"),
    ("RSB", [r"\]"], None, "=-RSB-"),
    ("LRB", [r"\("], None, "=-LRB-"),
    ("RRB", [r"\)"], None, "=-RRB-"),
    ("HYPHENS", [r"-+"], None, "hyphens"),
    ("LDOTS", [r"\.{3,5}", r"(?:\.[ \u00A0]){2,4}\.", r"[\u0085\u2026]"], None, "=..."),
    ("FNMARKS", [r"@+|#+|_+"], None, "keep"),
    ("ASTS", [r"\*+|(?:\\\*){1,3}"], None, "keep"),
    ("INSENTP", [r"{INSENTP}"], None, "keep"),
    ("QMARKS", [r"[?!]+"], None, "keep"),
    ("PERIOD", [r"[.\u00A1\u00BF\u037E\u0589\u061F\u06D4\u0700-\u0702\u07FA\u3002]"], None, "keep"),
    ("EQUALS", [r"="], None, "keep"),
    ("SLASH", [r"/"], None, "keep"),
    ("HTHING_DOT", [r"{HTHING}\."], r"{INSENTP}", "soft"),
    ("HTHING", [r"{HTHING}"], None, "soft"),
    ("THING_DOT", [r"{THING}\."], r"{INSENTP}", "keep"),
    ("THING", [r"{THING}"], None, "keep"),
    ("THINGA_DOT", [r"{THINGA}\."], r"{INSENTP}", "amp"),
    ("THINGA", [r"{THINGA}"], None, "amp"),
    ("QUOTE_L", [r"'"], r"[A-Za-z][^ \t\n\r\u00A0]", "left"),
    ("REDAUX", [r"{REDAUX}"], None, "right"),
    ("QUOTES", [r"''|[`\u2018\u2019\u201A\u201B\u201C\u201D\u0091-\u0094\u201E\u201F\u2039\u203A\u00AB\u00BB]{1,2}"
                r"|{APOS}"], None, "right"),
    ("FAKEDUCKFEET", [r"<<|>>"], None, "keep"),
    ("MISCSYMBOL", ["[[:misc:]]"], None, "keep"),
    ("SPACES", [r"\x00|{SPACE}+|[\u200B\u200E\u200F\uFEFF]"], None, "skip"),
    ("NEWLINE", [r"{NEWLINE}"], None, "skip"),
    ("NBSP", [r"&nbsp;"], None, "skip"),
    ("UNTOKENIZABLE", [r"[^\n]"], None, "skip"),
]
