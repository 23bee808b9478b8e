"""METEOR's beam search for many alignments at once, in lock step, as array code.

Every alignment walks its reference left to right; at step ``cur`` all alignments advance
together. Paths live in flat arrays (one row per path, grouped by alignment); each step
re-sorts them stably by (alignment, -score, chunks, distance) exactly as ``Collections.sort``
does per alignment in the jar, keeps 40 per alignment, and expands each kept path into its
children (one per unused match starting at ``cur``) followed by the path itself (skipping
``cur``), in the jar's order, so ties keep resolving the same way. Word sets are uint64 bit
masks. The taken matches are kept as a tree of (parent, match) nodes and read back once at
the end. ``meteor.align.resolve`` is the one-pair version of the same search.

Explained in notebooks/01_classic_metrics.ipynb, section "METEOR".
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from capkit.metrics.meteor.align import BEAM_SIZE, EXACT
from capkit.metrics.meteor.batch import SLOT, Candidates, _expand

@dataclass
class SearchSpace:
    """Candidates with what the search needs: bit masks, score increments, definite flags."""
    c: Candidates
    ptr: np.ndarray         # (A*SLOT+1,) matches starting at (a, j): ptr[a*SLOT+j]:ptr[...+1]
    mask1: np.ndarray       # (M,) uint64 words of line 1 the match uses
    mask2: np.ndarray
    inc_key: np.ndarray     # (M,) what the match adds to matches1 + matches2, as a key offset
    dist: np.ndarray        # (M,) |j - i|
    after: np.ndarray       # (M,) path cursor after taking the match
    definite: np.ndarray    # (M,) bool


def _spans(start, length):
    """Flat positions start..start+length-1 of each span, and the span each belongs to."""
    row, pos = _expand(start, length)
    return row, pos


def search_space(c: Candidates, n_align: int) -> SearchSpace:
    key = c.a * SLOT + c.j
    ptr = np.searchsorted(key, np.arange(n_align * SLOT + 1))
    one = np.uint64(1)
    mask1 = ((one << c.l1.astype(np.uint64)) - one) << c.i.astype(np.uint64)
    mask2 = ((one << c.l2.astype(np.uint64)) - one) << c.j.astype(np.uint64)
    inc = np.where(c.module == EXACT, c.l1 + c.l2, c.l1 // 2 + c.l2 // 2)
    covered = []
    for start, length in ((c.a * SLOT + c.i, c.l1), (c.a * SLOT + c.j, c.l2)):
        row, pos = _spans(start, length)
        cover = np.bincount(pos, minlength=n_align * SLOT)
        covered.append(np.bincount(row, weights=cover[pos], minlength=len(c.a)) == length)
    definite = (np.diff(ptr)[key] == 1) & covered[0] & covered[1]
    after = (c.j + c.l2) | ((c.i + c.l1 + 1) << 8)
    return SearchSpace(c, ptr, mask1, mask2, inc << 33, np.abs(c.j - c.i), after, definite)


# A path's sort key packs the jar's comparator into one int64, so a stable sort of the keys
# is ``Collections.sort`` within every alignment at once:
#   alignment (22 bits) | 255 - score (8) | chunks (8) | distance (25)
# and its cursor packs ``idx`` (8 bits) and ``lastMatchEnd + 1`` (8 bits).
_PA, _SCORE, _CHUNK = 41, 33, 25
_ONE_CHUNK = np.int64(1 << _CHUNK)


def _group_starts(pa):
    """(first row of each group flag, index of each row's group start) for sorted ``pa``."""
    first = np.ones(len(pa), dtype=bool)
    first[1:] = pa[1:] != pa[:-1]
    return first, np.maximum.accumulate(np.where(first, np.arange(len(pa)), 0))


class _Beam:
    """Flat path arrays (rows grouped by alignment) and the node tree of taken matches."""
    FIELDS = ("key", "cursor", "u1", "u2", "node")

    def __init__(self, n_align, u1, u2):
        self.key = np.arange(n_align, dtype=np.int64) << _PA | np.int64(255 << _SCORE)
        self.cursor = np.zeros(n_align, dtype=np.int64)        # idx 0, lastMatchEnd -1
        self.u1, self.u2 = u1.copy(), u2.copy()
        self.node = np.full(n_align, -1, dtype=np.int64)
        self.parents, self.taken, self.n_nodes = [], [], 0

    @property
    def pa(self):
        return self.key >> _PA

    def take(self, rows):
        for f in self.FIELDS:
            setattr(self, f, getattr(self, f)[rows])

    def prune(self, beam):
        """Stable sort by the jar's comparator within each alignment, keep ``beam`` each."""
        self.take(np.argsort(self.key, kind="stable"))
        _, start = _group_starts(self.pa)
        rank = np.arange(len(start)) - start
        if rank.max(initial=0) >= beam:
            self.take(rank < beam)


def _step(b: _Beam, s: SearchSpace, fixed_at, cur):
    """Advance every path past reference position ``cur`` (``Aligner.resolve`` loop body)."""
    n, pa = len(b.key), b.pa
    idx, last = b.cursor & 255, (b.cursor >> 8) - 1
    used = ((b.u2 >> np.uint64(cur)) & np.uint64(1)).astype(bool)
    inside = used & (cur < idx)
    fx = np.where(used & ~inside, fixed_at[pa * SLOT + np.minimum(idx, SLOT - 1)], -1)
    fixed, free = fx >= 0, ~used
    dropped = used & ~inside & ~fixed
    if fixed.any():
        m, lf = fx[fixed], last[fixed]
        b.key[fixed] += ((lf != -1) & (s.c.i[m] != lf)) * _ONE_CHUNK - s.inc_key[m] + s.dist[m]
        b.cursor[fixed] = s.after[m]
    rows = np.flatnonzero(free)
    lo = s.ptr[pa[rows] * SLOT + cur]
    k, mid = _expand(lo, s.ptr[pa[rows] * SLOT + cur + 1] - lo)
    rep = rows[k]
    ok = ((b.u1[rep] & s.mask1[mid]) == 0) & ((b.u2[rep] & s.mask2[mid]) == 0)
    rep, mid = rep[ok], mid[ok]
    d = s.dist[mid]
    _, start = _group_starts(rep)
    before = np.cumsum(d) - d
    lr = last[rep]
    child = {"key": b.key[rep] - s.inc_key[mid] + ((lr != -1) & (s.c.i[mid] != lr)) * _ONE_CHUNK
             + (before - before[start]),              # + distance of the earlier siblings
             "cursor": s.after[mid], "u1": b.u1[rep] | s.mask1[mid],
             "u2": b.u2[rep] | s.mask2[mid], "node": b.n_nodes + np.arange(len(rep))}
    b.parents.append(b.node[rep])
    b.taken.append(mid)
    b.n_nodes += len(rep)
    # the parent skips ``cur``; it also carries its children's distances (the jar's slip)
    n_child = np.bincount(rep, minlength=n)
    b.key[free] += np.bincount(rep, weights=d, minlength=n).astype(np.int64)[free] + \
        (last[free] != -1) * _ONE_CHUNK
    b.cursor[free] = idx[free] + 1                     # lastMatchEnd = -1
    emit = np.where(free, n_child + 1, np.where(dropped, 0, 1))
    first, _ = _group_starts(pa)
    empty = np.bincount(pa, weights=emit, minlength=int(pa.max(initial=-1)) + 1)[pa] == 0
    emit[empty & first] = 1                            # nothing left: keep the best path as is
    base = np.cumsum(emit) - emit
    alive = emit > 0
    self_pos = (base + np.where(free, n_child, 0))[alive]
    child_pos = base[rep] + np.arange(len(rep)) - start
    total = int(emit.sum())
    for f in _Beam.FIELDS:
        old = getattr(b, f)
        new = np.empty(total, dtype=old.dtype)
        new[self_pos] = old[alive]
        new[child_pos] = child[f]
        setattr(b, f, new)


def beam_search(s: SearchSpace, n2: np.ndarray, beam: int = BEAM_SIZE) -> np.ndarray:
    """Ids of the matches of every alignment's best path (definite matches included)."""
    c, n_align = s.c, len(n2)
    fixed_at = np.full(n_align * SLOT, -1, dtype=np.int64)
    fixed_at[(c.a * SLOT + c.j)[s.definite]] = np.flatnonzero(s.definite)
    u1 = np.zeros(n_align, dtype=np.uint64)
    u2 = np.zeros(n_align, dtype=np.uint64)
    np.bitwise_or.at(u1, c.a[s.definite], s.mask1[s.definite])
    np.bitwise_or.at(u2, c.a[s.definite], s.mask2[s.definite])
    # after its last position with a choice, a lone path cannot change any more: retire it
    last_choice = np.full(n_align, -1, dtype=np.int64)
    np.maximum.at(last_choice, c.a[~s.definite], c.j[~s.definite])
    best = np.full(n_align, -1, dtype=np.int64)
    b = _Beam(n_align, u1, u2)
    done = []
    for cur in range(int(n2.max(initial=0)) + 1):
        if not len(b.key):
            break
        b.prune(beam)
        pa = b.pa
        first, _ = _group_starts(pa)
        alone = first & np.r_[first[1:], True]
        end = (n2[pa] == cur) | (alone & (cur > last_choice[pa]))
        if end.any():
            closed = b.key[end] + ((b.cursor[end] >> 8) != 0) * _ONE_CHUNK   # close last chunk
            done.append((closed, b.node[end]))
            b.take(~end)
        if len(b.key):
            _step(b, s, fixed_at, cur)
    if done:
        key, node = (np.concatenate(x) for x in zip(*done))
        order = np.argsort(key, kind="stable")
        key, node = key[order], node[order]
        first, _ = _group_starts(key >> _PA)
        best[key[first] >> _PA] = node[first]
    parents = np.concatenate(b.parents) if b.parents else np.zeros(0, dtype=np.int64)
    taken = np.concatenate(b.taken) if b.taken else np.zeros(0, dtype=np.int64)
    chosen, cursor = [np.flatnonzero(s.definite)], best
    while (cursor >= 0).any():
        live = cursor >= 0
        chosen.append(taken[cursor[live]])
        cursor = np.where(live, parents[np.maximum(cursor, 0)], -1)
    return np.concatenate(chosen)


def alignment_stats(s: SearchSpace, chosen: np.ndarray, fn1, fn2, n1, n2,
                    func1_at, func2_at) -> np.ndarray:
    """(A, 21) METEOR statistics (``meteor.STATS`` order) of the chosen matches.

    ``func1_at(a, pos)`` / ``func2_at(a, pos)`` say whether word ``pos`` of line 1 / 2 of
    alignment ``a`` is a function word.
    """
    c, n_align = s.c, len(n1)
    stats = np.zeros((n_align, 21), dtype=np.float64)
    stats[:, 0], stats[:, 1], stats[:, 2], stats[:, 3] = n1, n2, fn1, fn2
    a, mod = c.a[chosen], c.module[chosen]
    for side, (start, length, func_at) in enumerate(((c.i, c.l1, func1_at),
                                                     (c.j, c.l2, func2_at))):
        row, pos = _expand(start[chosen], length[chosen])
        is_fn = func_at(a[row], pos)
        col = 4 + 4 * side + 8 * is_fn + mod[row]
        np.add.at(stats, (a[row], col), 1)
    order = np.lexsort((c.j[chosen], a))
    m = chosen[order]
    a = c.a[m]
    new, _ = _group_starts(a)
    new[1:] |= (c.j[m][1:] != (c.j + c.l2)[m][:-1]) | (c.i[m][1:] != (c.i + c.l1)[m][:-1])
    stats[:, 20] = np.bincount(a[new], minlength=n_align)
    return stats
