"""METEOR's matchers for a whole corpus at once, as array code.

The same candidate matches as ``meteor.align.find_matches``, in the same order, for every
(caption, reference) pair of a corpus in one go:

* exact / stem / synonym: every word pair (j over the reference, i over the caption) of every
  alignment is laid out flat (j-major, as the jar's loops), and compared by Java hash code,
  stem hash code, or shared synset (type pairs sharing a synset are precomputed);
* paraphrase: every n-gram (n <= 7) of every segment is hashed and looked up once in the
  table; phrases of the reference are expanded to their paraphrases and joined with the
  n-grams of the caption (the jar's first loop), and phrases of the caption the other way
  (its second loop).

Alignments whose lines are longer than 62 words are left to the reference path
(``meteor.align``), because the search keeps word sets as 64-bit masks.
Explained in notebooks/01_classic_metrics.ipynb, section "METEOR".
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from capkit.metrics.meteor.align import EXACT, PARAPHRASE, STEM, SYNONYM
from capkit.metrics.meteor.lexicon import Lexicon, phrase_occurrences, phrases_in_table

MAX_WORDS = 62          # longest line the array search handles (bit masks in uint64)
SLOT = 64               # positions per alignment in flat (alignment, position) arrays
_FILTER_MIX = np.uint64(0x9E3779B97F4A7C15)


@dataclass
class Tokens:
    """Concatenated segments and per-token features."""
    off: np.ndarray         # (S+1,) token offsets of the segments
    kind: np.ndarray        # (W,) word-type id of each token
    hash: np.ndarray        # (W,) Java hash code
    stem: np.ndarray        # (W,) Java hash code of the Snowball stem
    func: np.ndarray        # (W,) is a function word
    synsets: list           # per word type: frozenset of synset ids
    ref_occ: tuple          # (segment, start, length, table row) of phrases with paraphrases
    par_occ: tuple          # (segment, start, length, paraphrase id) of known paraphrases


def tokens(lex: Lexicon, segments: list[list[str]]) -> Tokens:
    """Features of every token of every (normalised, split) segment."""
    lengths = np.fromiter((len(s) for s in segments), dtype=np.int64, count=len(segments))
    off = np.concatenate([[0], np.cumsum(lengths)])
    flat = [w for s in segments for w in s]
    types = list(dict.fromkeys(flat))
    index = dict(zip(types, range(len(types))))
    kind = np.fromiter(map(index.__getitem__, flat), dtype=np.int64, count=len(flat))
    t_hash, t_stem, t_func, t_para, t_syn = lex.features(types)
    seg = np.repeat(np.arange(len(segments)), lengths)
    para = t_para[kind]
    pos, length, h = phrase_occurrences(para, off[1:][seg] if len(seg) else seg)
    table = lex.res.paraphrase
    rows, pars = phrases_in_table(table, h)
    seg_of, start = seg[pos], pos - off[seg[pos]] if len(pos) else pos
    r, p = rows >= 0, pars >= 0
    return Tokens(off, kind, t_hash[kind], t_stem[kind], t_func[kind], t_syn,
                  (seg_of[r], start[r], length[r], rows[r]),
                  (seg_of[p], start[p], length[p], pars[p]))


def _synonym_pairs(synsets: list) -> np.ndarray:
    """Sorted codes ``t1 * T + t2`` of word-type pairs that share a synset."""
    n = len(synsets)
    t = np.fromiter((k for k, s in enumerate(synsets) for _ in s), dtype=np.int64)
    s = np.fromiter((x for syn in synsets for x in syn), dtype=np.int64, count=len(t))
    order = np.argsort(s, kind="stable")
    t, s = t[order], s[order]
    starts = np.flatnonzero(np.r_[True, s[1:] != s[:-1]]) if len(s) else np.zeros(0, np.int64)
    size = np.diff(np.r_[starts, len(s)])
    group = np.repeat(np.arange(len(starts)), size)
    reps = size[group]
    left = np.repeat(t, reps)
    right = t[np.repeat(starts[group], reps) + (np.arange(reps.sum()) -
                                               np.repeat(np.cumsum(reps) - reps, reps))]
    return np.unique(left * n + right)


@dataclass
class Candidates:
    """All candidate matches of all alignments, sorted as the jar lists them."""
    a: np.ndarray           # (M,) alignment
    j: np.ndarray           # start in line 2 (reference)
    l2: np.ndarray
    i: np.ndarray           # start in line 1 (caption)
    l1: np.ndarray
    module: np.ndarray


def _expand(starts: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row index and ``starts[row] + k`` for k < counts[row], all rows concatenated."""
    row = np.repeat(np.arange(len(counts)), counts)
    within = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
    return row, starts[row] + within


def _word_matches(tok: Tokens, hs, rs, ident):
    """Exact, stem and synonym matches as (a, j, i, module) rows (any order).

    Joins, not all word pairs: caption tokens are keyed by (segment, feature) and every
    reference token looks its feature up among the tokens of its alignment's caption.
    """
    hyp_seg = np.unique(hs)
    h_row, h_pos = _expand(tok.off[hyp_seg], np.diff(tok.off)[hyp_seg])
    h_seg = hyp_seg[h_row]
    r_a, r_pos = _expand(tok.off[rs], np.diff(tok.off)[rs])
    r_seg = hs[r_a]
    low = np.int64(0xFFFFFFFF)
    out = []
    for module, feat in ((EXACT, tok.hash), (STEM, tok.stem)):
        key = (h_seg << 32) | (feat[h_pos] & low)
        order = np.argsort(key, kind="stable")
        q, row = _join(key[order], (r_seg << 32) | (feat[r_pos] & low))
        hp, rp = h_pos[order][row], r_pos[q]
        keep = slice(None) if module == EXACT else \
            ~ident[r_a[q]] & (tok.hash[hp] != tok.hash[rp])
        out.append((r_a[q][keep], rp[keep], hp[keep], module))
    # synonyms: word types sharing a synset (caption type t1, reference type t2, t1 != t2)
    n_types = len(tok.synsets)
    pairs = _synonym_pairs(tok.synsets)
    t1, t2 = pairs // max(n_types, 1), pairs % max(n_types, 1)
    in_hyp = np.zeros(n_types, dtype=bool)
    in_hyp[tok.kind[h_pos]] = True
    keep = (t1 != t2) & in_hyp[t1]
    t1, t2 = t1[keep], t2[keep]                      # sorted by t1; re-sort by t2
    order = np.argsort(t2, kind="stable")
    t1, t2 = t1[order], t2[order]
    lo = np.searchsorted(t2, tok.kind[r_pos], side="left")
    hi = np.searchsorted(t2, tok.kind[r_pos], side="right")
    q, nb = _expand(lo, hi - lo)                     # (reference token, neighbour type)
    key = (h_seg << 32) | tok.kind[h_pos]
    order = np.argsort(key, kind="stable")
    qq, row = _join(key[order], (r_seg[q] << 32) | t1[nb])
    hp, rp, a = h_pos[order][row], r_pos[q][qq], r_a[q][qq]
    keep = ~ident[a] & (tok.hash[hp] != tok.hash[rp])
    out.append((a[keep], rp[keep], hp[keep], SYNONYM))
    rows = []
    for a, rp, hp, module in out:
        rows.append((a, rp - tok.off[rs[a]], hp - tok.off[hs[a]], np.full(len(a), module)))
    return [np.concatenate(x) for x in zip(*rows)]


def _join(table_key, query_key):
    """For each query, the rows of ``table_key`` (sorted) with the same key: (query, row).

    When queries far outnumber the table, a one-bit-per-slot filter of the table's keys (a
    Bloom filter with one hash, ~1.5% false positives) first drops most of the misses.
    """
    cand = None
    if len(query_key) > max(100_000, 8 * len(table_key)):
        bits = max(16, int(np.ceil(np.log2(64 * max(len(table_key), 1)))))
        shift = np.uint64(64 - bits)
        with np.errstate(over="ignore"):
            present = np.zeros(1 << bits, dtype=bool)
            present[(table_key.astype(np.uint64) * _FILTER_MIX) >> shift] = True
            cand = np.flatnonzero(present[(query_key.astype(np.uint64) * _FILTER_MIX) >> shift])
        query_key = query_key[cand]
    lo = np.searchsorted(table_key, query_key, side="left")
    hi = np.searchsorted(table_key, query_key, side="right")
    q, row = _expand(lo, hi - lo)
    return (q, row) if cand is None else (cand[q], row)


def _paraphrase_matches(tok: Tokens, lex: Lexicon, hs, ident, ref_alignment, caption_seg):
    """Both loops of ``ParaphraseMatcher``: rows (a, j, l2, i, l1, order-in-group, loop).

    ``ref_alignment[s]``: the alignment of reference segment s (-1: not a reference here);
    ``caption_seg[s]``: s is the caption of some alignment here.
    """
    table = lex.res.paraphrase
    n_par = np.int64(len(table.par_hash))
    r_seg, r_start, r_len, r_row = tok.ref_occ
    p_seg, p_start, p_len, p_id = tok.par_occ
    out = []
    # loop 1: phrases of the reference (line 2), paraphrases found in the caption (line 1)
    a_of = ref_alignment[r_seg]
    keep = a_of >= 0
    keep[keep] = ~ident[a_of[keep]]
    occ, e = _expand(table.ref_ptr[r_row[keep]], np.diff(table.ref_ptr)[r_row[keep]])
    a = a_of[keep][occ]
    rank = e - table.ref_ptr[r_row[keep]][occ]
    is_hyp = caption_seg[p_seg]
    h_key = p_seg[is_hyp] * n_par + p_id[is_hyp]
    order = np.argsort(h_key, kind="stable")
    q, row = _join(h_key[order], hs[a] * n_par + table.entry_par[e])
    row = np.flatnonzero(is_hyp)[order][row]
    j, l2 = r_start[keep][occ][q], r_len[keep][occ][q]
    out.append((a[q], j, l2, p_start[row], p_len[row],
                (l2 * (1 << 22) + rank[q]) * SLOT + p_start[row], 3))
    # loop 2: phrases of the caption (line 1), paraphrases found in the reference (line 2)
    is_hyp = caption_seg[r_seg]
    occ, e = _expand(table.ref_ptr[r_row[is_hyp]], np.diff(table.ref_ptr)[r_row[is_hyp]])
    seg, start, length = r_seg[is_hyp][occ], r_start[is_hyp][occ], r_len[is_hyp][occ]
    rank = e - table.ref_ptr[r_row[is_hyp]][occ]
    key = seg * n_par + table.entry_par[e]
    order = np.argsort(key, kind="stable")
    a_of = ref_alignment[p_seg]
    keep = a_of >= 0
    keep[keep] = ~ident[a_of[keep]]
    q, row = _join(key[order], hs[a_of[keep]] * n_par + p_id[keep])
    row = order[row]
    a = a_of[keep][q]
    i, l1 = start[row], length[row]
    out.append((a, p_start[keep][q], p_len[keep][q], i, l1,
                (i * 8 + l1) * (1 << 22) + rank[row], 4))
    return out


def candidate_matches(tok: Tokens, lex: Lexicon, hs: np.ndarray, rs: np.ndarray) -> Candidates:
    """Candidate matches of alignments (caption segment ``hs[a]``, reference ``rs[a]``).

    Each reference segment must belong to exactly one alignment, and no segment may be both
    a caption and a reference.
    """
    n1, n2 = np.diff(tok.off)[hs], np.diff(tok.off)[rs]
    same = np.zeros(len(hs), dtype=bool)
    eq = n1 == n2
    if eq.any():
        k, q = _expand(np.zeros(int(eq.sum()), dtype=np.int64), n1[eq])
        diff = tok.hash[tok.off[hs[eq]][k] + q] != tok.hash[tok.off[rs[eq]][k] + q]
        same[eq] = np.bincount(k, weights=diff, minlength=int(eq.sum())) == 0
    ref_alignment = np.full(len(tok.off) - 1, -1, dtype=np.int64)
    ref_alignment[rs] = np.arange(len(rs))
    caption_seg = np.zeros(len(tok.off) - 1, dtype=bool)
    caption_seg[hs] = True
    a, j, i, module = _word_matches(tok, hs, rs, same)
    ones = np.ones(len(a), dtype=np.int64)
    parts = [(a, j, ones, i, ones, i, module)]
    for pa, pj, pl2, pi, pl1, order, loop in _paraphrase_matches(tok, lex, hs, same,
                                                                  ref_alignment, caption_seg):
        parts.append((pa, pj, pl2, pi, pl1, order, np.full(len(pa), loop)))
    a, j, l2, i, l1, order, group = (np.concatenate(x).astype(np.int64) for x in zip(*parts))
    sort = np.lexsort((order, group, j, a))
    module = np.minimum(group, PARAPHRASE)
    return Candidates(a[sort], j[sort], l2[sort], i[sort], l1[sort], module[sort])
