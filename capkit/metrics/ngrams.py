"""Vectorised n-gram count tables, shared by BLEU, CIDEr-D and the diversity metrics.

pycocoevalcap builds one Python dict of n-gram tuples per sentence and loops over it. Here every
sentence of a call is encoded once into one integer array, each n-gram gets an integer id (an
(n-1)-gram id times the vocabulary size plus the last token id, re-numbered with ``np.unique``),
and a sentence's counts become rows of a sorted table ``(segment, gram, count)``. Matching,
clipping and document frequencies are then joins on sorted integer keys (``np.searchsorted``).
"""
from __future__ import annotations

import functools
import itertools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from capkit.text.flat_tokens import number_words


@dataclass(frozen=True)
class NgramTable:
    """Counts of the n-grams of one order: rows sorted by (gram, segment).

    That order makes every join key of the form ``gram * K + f(segment)`` sorted for free, as
    long as ``f`` is non-decreasing (a candidate's references are laid out after each other).
    """
    seg: np.ndarray     # (E,) segment (sentence) index
    gram: np.ndarray    # (E,) n-gram id, shared by all segments encoded together
    count: np.ndarray   # (E,) occurrences of the gram in the segment
    n_grams: int        # number of distinct gram ids of this order
    # The three arrays are int32 (int64 from 2**31 tokens on): half the memory, and on a
    # virtual machine the fresh memory a short process touches costs more than its arithmetic.
    # A product with them (a join key such as ``gram * K + ...``) is taken in int64.


@dataclass(frozen=True)
class NgramIndex:
    """All n-gram tables (orders 1..n) of one list of segments, plus what decodes them."""
    tables: list[NgramTable]      # tables[k - 1] holds the k-grams
    lengths: np.ndarray           # (S,) tokens per segment
    vocab: list[str]              # token id -> token
    tokens: np.ndarray            # (T,) token ids of the segments, concatenated
    gram_first: list[np.ndarray]  # gram_first[k - 1][g]: a position in tokens where k-gram g is

    @functools.cached_property
    def gram_tokens(self) -> list[np.ndarray]:
        """gram_tokens[k - 1][g] = (k,) token ids of k-gram g (made on first use: BLEU and
        CIDEr-D with corpus document frequencies never read them)."""
        return [self.tokens[first[:, None] + np.arange(k)]
                for k, first in enumerate(self.gram_first, start=1)]


@dataclass(frozen=True)
class Encoded:
    """Segments as one array of token ids."""
    tokens: np.ndarray            # (T,) int64 token ids, segments concatenated
    lengths: np.ndarray           # (S,) tokens per segment
    starts: np.ndarray            # (S,) offset of each segment in tokens
    vocab: list[str]              # token id -> token


def encode(segments: list[list[str]]) -> Encoded:
    flat = list(itertools.chain.from_iterable(segments))
    lengths = np.fromiter(map(len, segments), dtype=np.int64, count=len(segments))
    return encode_flat(flat, lengths)


def encode_flat(flat: list[str], lengths: np.ndarray) -> Encoded:
    """``encode`` of segments given as all their tokens in one list and each one's length."""
    words, ids = number_words(flat)                       # token id -> token, first appearance
    tokens = np.frombuffer(ids, dtype=np.intc).astype(np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    return Encoded(tokens, lengths, starts, words)


def build_index(segments: list[list[str]] | Encoded, n: int = 4) -> NgramIndex:
    """Count every 1..n-gram of every segment; gram ids are shared across all segments."""
    enc = segments if isinstance(segments, Encoded) else encode(segments)
    tokens, lengths = enc.tokens, enc.lengths
    # positions and segments as int32 and tokens left (capped at n) as int8: these arrays are
    # compressed and permuted at every order, and memory traffic is most of the time here
    small = np.int32 if len(tokens) < 2**31 else np.int64
    seg_of = np.repeat(np.arange(len(lengths), dtype=small), lengths)         # (T,)
    ends = np.cumsum(lengths)
    remaining = np.minimum(ends[seg_of] - np.arange(len(tokens)), n).astype(np.int8)
    n_vocab = max(len(enc.vocab), 1)

    tables, gram_first = [], []
    pos, seg, rem = np.arange(len(tokens), dtype=small), seg_of, remaining   # in sort order
    sgram = tokens
    for k in range(1, n + 1):
        if k == 1:
            key = tokens
        else:
            # positions in the previous order: the keys are then sorted by their leading
            # (k-1)-gram already, which the stable sort (timsort) exploits; the arrays travel in
            # that order (no gathers by position), which keeps memory access local
            keep = rem >= k
            pos, seg, rem = pos[keep], seg[keep], rem[keep]
            key = sgram[keep] * n_vocab + tokens[pos + (k - 1)]
        if k == 1 and n_vocab < 2**16:
            order = np.argsort(key.astype(np.uint16), kind="stable")   # radix sort
            skey = key[order]
        else:
            skey, order = stable_sort(key)                     # by gram, then by position
        pos, seg = pos[order], seg[order]
        rem = rem[order] if k < n else rem
        new_gram = np.ones(len(skey), dtype=bool)              # where a gram's rows begin
        np.not_equal(skey[1:], skey[:-1], out=new_gram[1:])
        sgram = np.cumsum(new_gram) - 1                        # gram id, in sorted order
        gram_first.append(pos[new_gram])                       # (G,)
        new_row = new_gram.copy()                              # ... and a (gram, segment)'s
        new_row[1:] |= seg[1:] != seg[:-1]
        starts = np.flatnonzero(new_row)
        counts = np.diff(np.r_[starts, len(skey)])
        tables.append(NgramTable(seg[starts], sgram[starts].astype(small),
                                 counts.astype(small), int(sgram[-1]) + 1 if len(sgram) else 0))
    return NgramIndex(tables, lengths, enc.vocab, tokens, gram_first)


def stable_sort(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sorted key, its stable argsort) of non-negative int64 keys.

    When ``key * len + index`` fits in int64, those numbers are unique, so sorting them with
    numpy's fastest (unstable) sort gives the stable order, about 3x faster than a stable argsort
    and its gather; otherwise a stable argsort."""
    size = len(key)
    if size and int(key.max()) < (2**63 - size) // size:
        packed = key * size + np.arange(size)
        packed.sort()
        return np.divmod(packed, size)
    order = np.argsort(key, kind="stable")
    return key[order], order


@dataclass(frozen=True)
class CandidateJoin:
    """One order's table split into candidate rows and reference rows, joined on (gram,
    candidate): what BLEU's clipping and CIDEr-D's tf-idf vectors need, made once for both.

    A run is a group of reference rows with equal (gram, owning candidate), in table order.
    """
    is_ref: np.ndarray        # (E,) which rows of the table are reference rows
    cand_seg: np.ndarray      # (C,) segment (= candidate) of each candidate row
    cand_count: np.ndarray    # (C,) count of the gram in the candidate
    cand_ref_max: np.ndarray  # (C,) most times one of the candidate's references has the gram
    ref_seg: np.ndarray       # (Q,) segment of each reference row
    ref_cand_row: np.ndarray  # (Q,) candidate row with the same (gram, candidate), -1: none
    run_gram: np.ndarray      # (U,) gram of each run: its count is the gram's document frequency


def candidate_join(table: NgramTable, n_candidates: int, ref_owner: np.ndarray) -> CandidateJoin:
    """``CandidateJoin`` of a table whose first ``n_candidates`` segments are the candidates
    and whose others are references, the r-th owned by candidate ``ref_owner[r]``."""
    N = n_candidates
    is_ref = table.seg >= N
    ref_seg, cand_seg = table.seg[is_ref], table.seg[~is_ref]
    ref_gram = table.gram[is_ref]
    # rows are in (gram, segment) order and owners do not decrease: both keys come sorted
    ref_key = ref_gram.astype(np.int64) * N + ref_owner[ref_seg - N]
    cand_key = table.gram[~is_ref].astype(np.int64) * N + cand_seg
    run_start = run_starts(ref_key)
    run_key = ref_key[run_start]
    del ref_key
    idx = np.searchsorted(run_key, cand_key)
    idx_clip = np.minimum(idx, max(len(run_key) - 1, 0))
    found = (idx < len(run_key)) & (run_key[idx_clip] == cand_key) if len(run_key) \
        else np.zeros(len(cand_key), dtype=bool)
    ref_count = table.count[is_ref]
    run_max = np.maximum.reduceat(ref_count, run_start) if len(run_start) \
        else np.zeros(0, dtype=ref_count.dtype)
    cand_ref_max = np.zeros(len(cand_key), dtype=ref_count.dtype)
    cand_ref_max[found] = run_max[idx_clip[found]]
    run_cand = np.full(len(run_key), -1, dtype=table.seg.dtype)     # (int32, as the table)
    run_cand[idx_clip[found]] = np.flatnonzero(found)
    ref_cand_row = np.repeat(run_cand, np.diff(np.append(run_start, len(ref_seg))))
    return CandidateJoin(is_ref, cand_seg, table.count[~is_ref], cand_ref_max, ref_seg,
                         ref_cand_row, ref_gram[run_start])


def run_starts(*keys: np.ndarray) -> np.ndarray:
    """Indices where a run of equal (key, ...) rows begins; keys sorted together; empty-safe."""
    if len(keys[0]) == 0:
        return np.zeros(0, dtype=np.int64)
    change = np.zeros(len(keys[0]), dtype=bool)
    change[0] = True
    for k in keys:
        change[1:] |= k[1:] != k[:-1]
    return np.flatnonzero(change)


def lookup(keys: np.ndarray, table_keys: np.ndarray, values: np.ndarray,
           default: float | int = 0) -> np.ndarray:
    """values[i] where table_keys[i] == keys, else default; table_keys sorted and unique."""
    idx = np.searchsorted(table_keys, keys)
    idx_clip = np.minimum(idx, max(len(table_keys) - 1, 0))
    found = (idx < len(table_keys)) & (table_keys[idx_clip] == keys) if len(table_keys) \
        else np.zeros(len(keys), dtype=bool)
    out = np.full(len(keys), default, dtype=values.dtype)   # uint64 masks stay uint64 when empty
    out[found] = values[idx_clip[found]]
    return out


def pack_grams(codes: np.ndarray, base: int) -> np.ndarray:
    """(G,) one exact, sortable key per row of ``codes`` (G, k), each code in [0, base).

    Keys sort in the lexicographic order of the rows. int64 (``sum c_i base^(k-i)``) when
    ``base**k`` fits in 63 bits, i.e. up to 55,108 words for 4-grams; beyond, complex128 pairs
    (first two codes, the rest), which numpy sorts and searches lexicographically and which stay
    exact while ``base**2 < 2**53``.
    """
    codes = np.asarray(codes, dtype=np.int64)
    k = codes.shape[1]
    if base ** k < 2**63:
        key = np.zeros(len(codes), dtype=np.int64)
        for j in range(k):
            key = key * base + codes[:, j]
        return key
    if base ** 2 >= 2**53:
        raise ValueError(f"a vocabulary of {base - 1:,} words is too large to key n-grams")
    return pack_grams(codes[:, :2], base).astype(np.float64) \
        + 1j * pack_grams(codes[:, 2:], base).astype(np.float64)


def unpack_grams(keys: np.ndarray, base: int, k: int) -> np.ndarray:
    """(G, k) codes of ``pack_grams`` keys: its inverse."""
    if keys.dtype.kind == "c":                       # only for k > 2 (see pack_grams)
        return np.hstack([unpack_grams(keys.real.astype(np.int64), base, 2),
                          unpack_grams(keys.imag.astype(np.int64), base, k - 2)])
    out = np.zeros((len(keys), k), dtype=np.int64)
    rest = keys.copy()
    for j in range(k - 1, -1, -1):
        rest, out[:, j] = np.divmod(rest, base)
    return out


def merge_counts(keys: list[np.ndarray], counts: list[np.ndarray]
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Sum the counts of equal keys over several (keys, counts) tables: (sorted keys, counts)."""
    uniq, inverse = np.unique(np.concatenate(keys), return_inverse=True)
    return uniq, np.bincount(inverse, weights=np.concatenate(counts), minlength=len(uniq))


@dataclass(frozen=True, eq=False)
class GramCounts:
    """A table {n-gram: count} as arrays: words coded 1..V, per order sorted ``pack_grams`` keys.

    Looking up the n-grams of an ``NgramIndex`` is then two array lookups (its vocabulary to
    codes, its grams' keys to counts) instead of a dictionary lookup per n-gram.
    """
    words: list[str]                    # code - 1 -> word
    keys: tuple[np.ndarray, ...]        # keys[k - 1]: sorted unique keys of the k-grams
    counts: tuple[np.ndarray, ...]      # counts[k - 1]: float64 count of each key

    @property
    def base(self) -> int:
        return len(self.words) + 1

    @classmethod
    def from_mapping(cls, counts: Mapping[tuple[str, ...], float]) -> GramCounts:
        words = list(dict.fromkeys(w for gram in counts for w in gram))
        code = {w: i + 1 for i, w in enumerate(words)}
        n = max(map(len, counts), default=0)
        rows: list[list] = [[] for _ in range(n)]
        values: list[list] = [[] for _ in range(n)]
        for gram, count in counts.items():
            if not gram:                                   # no n-gram is ever looked up as ()
                continue
            rows[len(gram) - 1].append([code[w] for w in gram])
            values[len(gram) - 1].append(count)
        keys, out = [], []
        for k in range(n):
            key = pack_grams(np.array(rows[k], dtype=np.int64).reshape(-1, k + 1), len(words) + 1)
            order = np.argsort(key, kind="stable")
            keys.append(key[order])
            out.append(np.asarray(values[k], dtype=np.float64)[order])
        return cls(words, tuple(keys), tuple(out))

    @functools.cached_property
    def code(self) -> dict[str, int]:
        """word -> code"""
        return {w: i + 1 for i, w in enumerate(self.words)}

    def codes(self, vocab: Sequence[str]) -> np.ndarray:
        """(V,) the code of each word of ``vocab`` (0: not in the table)."""
        get = self.code.get
        return np.fromiter((get(w, 0) for w in vocab), dtype=np.int64, count=len(vocab))

    def lookup(self, codes: np.ndarray) -> np.ndarray:
        """(G,) count of each k-gram given as codes (G, k); 0 where absent."""
        k = codes.shape[1]
        if k > len(self.keys) or len(codes) == 0:
            return np.zeros(len(codes), dtype=np.float64)
        return lookup(pack_grams(codes, self.base), self.keys[k - 1], self.counts[k - 1], 0.0)


class GramCountsView(Mapping):
    """``GramCounts`` read as the mapping {n-gram tuple: count} (nothing is copied)."""

    def __init__(self, table: GramCounts):
        self.table = table

    def __getitem__(self, gram: tuple[str, ...]) -> float:
        code = self.table.code
        if not gram or any(w not in code for w in gram):
            raise KeyError(gram)
        count = self.table.lookup(np.array([[code[w] for w in gram]]))[0]
        if count == 0:
            raise KeyError(gram)
        return float(count)

    def __iter__(self) -> Iterator[tuple[str, ...]]:
        words = np.array([""] + list(self.table.words), dtype=object)
        for k, keys in enumerate(self.table.keys, start=1):
            yield from map(tuple, words[unpack_grams(keys, self.table.base, k)].tolist())

    def __len__(self) -> int:
        return sum(len(k) for k in self.table.keys)
