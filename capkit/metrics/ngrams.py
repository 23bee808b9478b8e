"""Vectorised n-gram count tables, shared by BLEU, CIDEr-D and the diversity metrics.

pycocoevalcap builds one Python dict of n-gram tuples per sentence and loops over it. Here every
sentence of a call is encoded once into one integer array, each n-gram gets an integer id (an
(n-1)-gram id times the vocabulary size plus the last token id, re-numbered with ``np.unique``),
and a sentence's counts become rows of a sorted table ``(segment, gram, count)``. Matching,
clipping and document frequencies are then joins on sorted integer keys (``np.searchsorted``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class NgramTable:
    """Counts of the n-grams of one order: rows sorted by (gram, segment).

    That order makes every join key of the form ``gram * K + f(segment)`` sorted for free, as
    long as ``f`` is non-decreasing (a candidate's references are laid out after each other).
    """
    seg: np.ndarray     # (E,) int64 segment (sentence) index
    gram: np.ndarray    # (E,) int64 n-gram id, shared by all segments encoded together
    count: np.ndarray   # (E,) int64 occurrences of the gram in the segment
    n_grams: int        # number of distinct gram ids of this order


@dataclass(frozen=True)
class NgramIndex:
    """All n-gram tables (orders 1..n) of one list of segments, plus what decodes them."""
    tables: list[NgramTable]      # tables[k - 1] holds the k-grams
    lengths: np.ndarray           # (S,) tokens per segment
    vocab: list[str]              # token id -> token
    gram_tokens: list[np.ndarray] # gram_tokens[k - 1][g] = (k,) token ids of k-gram g


@dataclass(frozen=True)
class Encoded:
    """Segments as one array of token ids."""
    tokens: np.ndarray            # (T,) int64 token ids, segments concatenated
    lengths: np.ndarray           # (S,) tokens per segment
    starts: np.ndarray            # (S,) offset of each segment in tokens
    vocab: list[str]              # token id -> token


def encode(segments: list[list[str]]) -> Encoded:
    flat = [t for seg in segments for t in seg]
    vocab = {t: i for i, t in enumerate(dict.fromkeys(flat))}
    tokens = np.fromiter(map(vocab.__getitem__, flat), dtype=np.int64, count=len(flat))
    lengths = np.fromiter((len(s) for s in segments), dtype=np.int64, count=len(segments))
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    inv_vocab = [""] * len(vocab)
    for t, i in vocab.items():
        inv_vocab[i] = t
    return Encoded(tokens, lengths, starts, inv_vocab)


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

    tables, gram_tokens = [], []
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
        else:
            order = np.argsort(key, kind="stable")             # by gram, then by position
        skey, pos, seg = key[order], pos[order], seg[order]
        rem = rem[order] if k < n else rem
        new_gram = np.ones(len(skey), dtype=bool)              # where a gram's rows begin
        np.not_equal(skey[1:], skey[:-1], out=new_gram[1:])
        sgram = np.cumsum(new_gram) - 1                        # gram id, in sorted order
        gram_tokens.append(tokens[pos[new_gram][:, None] + np.arange(k)])      # (G, k)
        new_row = new_gram.copy()                              # ... and a (gram, segment)'s
        new_row[1:] |= seg[1:] != seg[:-1]
        starts = np.flatnonzero(new_row)
        counts = np.diff(np.r_[starts, len(skey)])
        tables.append(NgramTable(seg[starts].astype(np.int64), sgram[starts], counts,
                                 int(sgram[-1]) + 1 if len(sgram) else 0))
    return NgramIndex(tables, lengths, enc.vocab, gram_tokens)


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
