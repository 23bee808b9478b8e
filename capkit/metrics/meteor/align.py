"""METEOR 1.5's aligner, one (hypothesis, reference) pair at a time, step for step as the jar.

``edu.cmu.meteor.aligner.Aligner`` in four stages:

1. Matchers add candidate matches to ``matches[j]`` (j: start in the reference, "line 2"),
   always in this order: exact, stem, synonym, paraphrase. Exact compares Java hash codes of
   the words; stem compares hash codes of Snowball stems of words whose hashes differ; synonym
   needs a shared WordNet synset (of the word or of its base form) and different hashes;
   paraphrase looks phrases of line 2 up in the table and finds their paraphrases in line 1,
   then the other way round. A pair can match in several modules (stem and synonym, say).
2. A match is *definite* when it is the only one starting at its position and no other match
   covers any of its words: those are fixed before the search.
3. Beam search (40 paths) left to right over line 2. At each position a path either takes an
   unused match starting there or skips the position. Paths are ranked by weighted matches
   (exact 1, others 0.5 a word, each addition truncated to an int as Java's ``int +=
   double`` does), then fewer chunks, then smaller "distance"; sorts are stable. The jar adds a
   match's distance to the *parent* path, not the new one; that is reproduced.
4. Matches are counted per module, content vs function words, and chunks are recounted.

``align_pair`` is the readable reference, used for lines over 62 words and for teaching
(``meteor.explain``); ``meteor.batch`` (matchers) and ``meteor.beam`` (search) compute the same
alignments for a whole corpus at once, as array code. Explained in
notebooks/01_classic_metrics.ipynb, section "METEOR".
"""
from __future__ import annotations

from dataclasses import dataclass, field

EXACT, STEM, SYNONYM, PARAPHRASE = 0, 1, 2, 3
MODULES = ("exact", "stem", "synonym", "paraphrase")
BEAM_SIZE = 40


@dataclass(frozen=True)
class Match:
    start: int          # first word in line 2 (the reference)
    length: int         # words in line 2
    match_start: int    # first word in line 1 (the hypothesis)
    match_length: int   # words in line 1
    module: int         # EXACT, STEM, SYNONYM or PARAPHRASE


@dataclass
class Path:
    """``PartialAlignment``: one hypothesis of the beam search."""
    chosen: tuple               # (Match, parent chosen) linked list of matches taken
    score: int = 0              # matches1 + matches2, each addition truncated to int
    chunks: int = 0
    idx: int = 0                # next line-2 position this path has not consumed
    last_end: int = -1          # end (exclusive) in line 1 of the last match, -1 after a gap
    distance: int = 0
    used1: int = 0              # bitmask of line-1 words in use
    used2: int = 0              # bitmask of line-2 words in use

    def copy(self) -> "Path":
        return Path(self.chosen, self.score, self.chunks, self.idx, self.last_end,
                    self.distance, self.used1, self.used2)


@dataclass
class Alignment:
    """What ``MeteorScorer`` reads off an alignment (word-level statistics)."""
    words1: list[str]
    words2: list[str]
    matches: list[Match]                    # the chosen alignment, by start in line 2
    function1: int                          # function words in line 1 / line 2
    function2: int
    content1: list[int] = field(default_factory=lambda: [0] * 4)  # matched words per module
    content2: list[int] = field(default_factory=lambda: [0] * 4)
    functional1: list[int] = field(default_factory=lambda: [0] * 4)
    functional2: list[int] = field(default_factory=lambda: [0] * 4)
    chunks: int = 0


def _span(start: int, length: int) -> int:
    return ((1 << length) - 1) << start


def _increment(m: Match) -> int:
    """What a match adds to ``matches1 + matches2`` in the jar's search (weights 1/.5/.5/.5)."""
    if m.module == EXACT:
        return m.match_length + m.length
    return m.match_length // 2 + m.length // 2


def find_matches(f1, f2, paraphrases, modules=MODULES) -> list[list[Match]]:
    """Every candidate match, ``matches[j]`` in the jar's order.

    ``f1``/``f2`` hold per-word features of line 1/2: ``.hash``, ``.stem``, ``.synsets`` and
    ``.phrase`` (see ``capkit.metrics.meteor``); ``paraphrases(src, dst)`` yields
    ``(src_start, src_len, dst_start, dst_len)`` for each paraphrase of a phrase of ``src``
    found in ``dst``, in the transducer's order.
    """
    n1, n2 = len(f1.hash), len(f2.hash)
    matches: list[list[Match]] = [[] for _ in range(n2)]
    if f1.hash == f2.hash:               # identical lines: exact matches only (jar's shortcut)
        modules = tuple(m for m in modules if m == "exact")
    for name in modules:
        module = MODULES.index(name)
        if module == PARAPHRASE:
            for j, l2, i, l1 in paraphrases(f2, f1):
                matches[j].append(Match(j, l2, i, l1, PARAPHRASE))
            for i, l1, j, l2 in paraphrases(f1, f2):
                matches[j].append(Match(j, l2, i, l1, PARAPHRASE))
            continue
        for j in range(n2):
            for i in range(n1):
                same = f1.hash[i] == f2.hash[j]
                if module == EXACT:
                    hit = same
                elif module == STEM:
                    hit = not same and f1.stem[i] == f2.stem[j]
                else:
                    hit = not same and not f1.synsets[i].isdisjoint(f2.synsets[j])
                if hit:
                    matches[j].append(Match(j, 1, i, 1, module))
    return matches


def definite_path(matches: list[list[Match]], n1: int) -> Path:
    """The starting path: every match that nothing else competes with is fixed."""
    cover1, cover2 = [0] * n1, [0] * len(matches)
    for ms in matches:
        for m in ms:
            for k in range(m.match_length):
                cover1[m.match_start + k] += 1
            for k in range(m.length):
                cover2[m.start + k] += 1
    path = Path(chosen=())
    fixed = {}
    for j, ms in enumerate(matches):
        if len(ms) != 1:
            continue
        m = ms[0]
        if all(cover2[j + k] == 1 for k in range(m.length)) and \
                all(cover1[m.match_start + k] == 1 for k in range(m.match_length)):
            fixed[j] = m
            path.used1 |= _span(m.match_start, m.match_length)
            path.used2 |= _span(j, m.length)
    path.chosen = fixed          # a dict marks "fixed matches"; resolve() turns it into links
    return path


def _take(path: Path, m: Match) -> None:
    path.score += _increment(m)
    if path.last_end != -1 and m.match_start != path.last_end:
        path.chunks += 1
    path.idx = m.start + m.length
    path.last_end = m.match_start + m.match_length


def _step(path: Path, current: int, options: list[Match], fixed: dict, out: list) -> None:
    """Advance one path past line-2 position ``current`` (``Aligner.resolve``'s loop body)."""
    if path.used2 >> current & 1:
        if current < path.idx:
            out.append(path)
        elif path.idx in fixed:
            m = fixed[path.idx]
            _take(path, m)
            path.distance += abs(m.start - m.match_start)
            out.append(path)
        return                   # else: the jar drops the path
    for m in options:
        if path.used2 & _span(m.start, m.length) or path.used1 & _span(m.match_start,
                                                                       m.match_length):
            continue
        child = path.copy()
        child.used1 |= _span(m.match_start, m.match_length)
        child.used2 |= _span(m.start, m.length)
        child.chosen = (m, path.chosen)
        _take(child, m)
        path.distance += abs(m.start - m.match_start)    # sic: the parent's distance
        out.append(child)
    if path.last_end != -1:
        path.chunks += 1
        path.last_end = -1
    path.idx += 1
    out.append(path)


def _rank(path: Path) -> tuple[int, int, int]:
    return -path.score, path.chunks, path.distance


def resolve(matches: list[list[Match]], n1: int, beam: int = BEAM_SIZE) -> list[Match]:
    """Beam search for the best alignment; returns its matches ordered by line-2 start."""
    start = definite_path(matches, n1)
    fixed: dict = start.chosen
    start.chosen = ()
    paths = [start]
    for current in range(len(matches) + 1):
        paths.sort(key=_rank)
        nxt: list[Path] = []
        for path in paths[:beam]:
            if current == len(matches):
                if path.last_end != -1:
                    path.chunks += 1
                nxt.append(path)
            else:
                _step(path, current, matches[current], fixed, nxt)
        paths = nxt if nxt else paths[:1]
    paths.sort(key=_rank)
    chosen, link = list(fixed.values()), paths[0].chosen
    while link:
        chosen.append(link[0])
        link = link[1]
    return sorted(chosen, key=lambda m: m.start)


def count_chunks(matches: list[Match], n2: int) -> int:
    """``Aligner.getCountAndChunks``: chunks of contiguous, in-order matches."""
    by_start = {m.start: m for m in matches}
    chunks, idx, last_end = 0, 0, -1
    while idx < n2:
        m = by_start.get(idx)
        if m is None:
            if last_end != -1:
                chunks, last_end = chunks + 1, -1
            idx += 1
            continue
        if last_end != -1 and m.match_start != last_end:
            chunks += 1
        idx, last_end = m.start + m.length, m.match_start + m.match_length
    return chunks + (last_end != -1)


def summarize(words1, words2, chosen: list[Match], function_words) -> Alignment:
    """Count matched words per module and word class, as ``Aligner.align`` does at the end."""
    is_fn1 = [w in function_words for w in words1]
    is_fn2 = [w in function_words for w in words2]
    a = Alignment(words1, words2, chosen, sum(is_fn1), sum(is_fn2))
    for m in chosen:
        for k in range(m.match_length):
            (a.functional1 if is_fn1[m.match_start + k] else a.content1)[m.module] += 1
        for k in range(m.length):
            (a.functional2 if is_fn2[m.start + k] else a.content2)[m.module] += 1
    a.chunks = count_chunks(chosen, len(words2))
    return a


def align_pair(f1, f2, paraphrases, function_words, modules=MODULES,
               beam: int = BEAM_SIZE) -> Alignment:
    """Align line 1 (hypothesis) to line 2 (reference) exactly as the jar does."""
    matches = find_matches(f1, f2, paraphrases, modules)
    chosen = resolve(matches, len(f1.hash), beam)
    return summarize(f1.words, f2.words, chosen, function_words)
