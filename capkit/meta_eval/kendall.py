"""Exact Kendall tau-b / tau-c for integer row weights, many weightings at once.

A bootstrap resample of images is a vector of row multiplicities ``w`` (a row of an image drawn
twice counts twice). Kendall's tau of the expanded data needs only integer pair counts, and each of
them is a function of ``w`` over the *fixed* order of the original rows:

* ``tot  = N (N - 1) / 2`` with ``N = sum(w)``;
* ``xtie``, ``ytie``, ``ntie``: pairs tied in x, in y, in both = ``sum T (T - 1) / 2`` over the
  weighted sizes ``T`` of the tie classes (copies of one row are tied in both, as in the expanded
  data);
* ``dis``: discordant pairs, i.e. inversions of y once the rows are sorted by (x, y).

Two exact counters of ``dis``, both vectorised over the weightings; the sort orders and positions
do not depend on ``w`` and are computed once per (x, y):

* merge levels (any data): bottom-up as in merge sort, every right-half row meets the left half of
  its block, whose weights, sorted by y once, give the weighted count of larger y with one
  cumulative sum: ``O(n log n)`` per weighting.
* value levels (few distinct values, e.g. human scores 1-4): for each value ``a`` of the coarser
  variable, one cumulative sum over the other variable's order of the weight above ``a``:
  ``O(n L)``, faster when ``L`` is below ~2.5 log2(n).

The counts are exact integers combined with scipy's own formulas, so ``KendallTau(x, y, v)()``
equals ``scipy.stats.kendalltau(x, y, variant=v)`` to rounding and ``KendallTau(...)(rows)`` equals
it on ``x[rows], y[rows]`` (tests/test_meta_eval.py checks both counters).
"""
from __future__ import annotations

import numpy as np

VARIANTS = ("b", "c")


def check_variant(variant: object) -> str:
    if variant not in VARIANTS:
        raise ValueError(f"variant={variant!r}: give variant='b' (tau-b, ties corrected by the "
                         "untied pairs of each variable) or variant='c' (Stuart's tau-c, for "
                         "variables with unequal numbers of levels); there is no default on "
                         "purpose")
    return str(variant)


def dense_ranks(values: np.ndarray) -> tuple[np.ndarray, int]:
    """0-based dense ranks of ``values`` and the number of distinct values."""
    uniq, inverse = np.unique(values, return_inverse=True)
    return inverse.astype(np.int64).reshape(-1), len(uniq)


def as_weight_columns(weights: np.ndarray, n: int) -> np.ndarray:
    """Check a (n, B) weight matrix (one column per weighting) and return it as integers."""
    w = np.asarray(weights)
    if w.ndim != 2 or w.shape[0] != n:
        raise ValueError(f"weights must have shape ({n}, B), one column per weighting; "
                         f"got {w.shape}")
    if w.dtype.kind not in "iub" or (w.size and w.min() < 0):
        raise ValueError("weights must be non-negative integers (row multiplicities)")
    # int32 is exact while every product w * (sum of weights) stays below 2**31
    small = w.size == 0 or int(w.max()) * int(w.sum(axis=0).max()) < 2 ** 31
    return np.ascontiguousarray(w, dtype=np.int32 if small else np.int64)


class TieClasses:
    """Pairs tied within classes of equal codes, and the classes present, for (n, B) weights.

    Rows alone in their class (most metric scores) need no gather: their pairs are the per-row
    ``w (w - 1) / 2`` that every class structure shares.
    """

    def __init__(self, codes: np.ndarray):
        order = np.argsort(codes, kind="stable")
        sorted_codes = codes[order]
        starts = np.flatnonzero(np.r_[True, sorted_codes[1:] != sorted_codes[:-1]])
        sizes = np.diff(np.r_[starts, len(codes)])
        multi = sizes > 1
        self.rows = order[np.repeat(multi, sizes)]          # rows of classes of 2+, by class
        self.starts = np.r_[0, np.cumsum(sizes[multi])[:-1]].astype(np.int64)

    def count(self, w: np.ndarray, row_pairs: np.ndarray, row_present: np.ndarray):
        """(B,) tied pairs and (B,) classes with positive weight."""
        if len(self.rows) == 0:
            return row_pairs, row_present
        wm = w[self.rows].astype(np.int64)
        size = np.add.reduceat(wm, self.starts, axis=0)     # (K, B) weighted class sizes
        pairs = row_pairs - (wm * (wm - 1) // 2).sum(axis=0) + (size * (size - 1) // 2).sum(axis=0)
        present = row_present - (wm > 0).sum(axis=0) + (size > 0).sum(axis=0)
        return pairs, present


class KendallTau:
    """Kendall's tau of a fixed pair (x, y) under any integer row weights.

    ``KendallTau(x, y, "c")(rows)`` is tau-c of ``x[rows], y[rows]`` (rows may repeat; all rows
    when omitted); ``.weighted(w)`` gives it for every column of a (n, B) weight matrix at once.
    """

    def __init__(self, x: np.ndarray, y: np.ndarray, variant: str):
        self.variant = check_variant(variant)
        x = np.asarray(x, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        self.n = len(x)
        xr, n_x = dense_ranks(x)
        yr, n_y = dense_ranks(y)
        self._x_classes, self._y_classes = TieClasses(xr), TieClasses(yr)
        self._joint_classes = TieClasses(xr * n_y + yr)
        if n_x < n_y:                        # the counters want the coarser variable second
            xr, yr, n_x, n_y = yr, xr, n_y, n_x
        if n_y - 1 <= 2.5 * np.log2(max(self.n, 2)):
            self._counter = _ValueLevels(xr, yr, n_y)
        else:
            self._counter = _MergeLevels(xr, yr, n_y)

    def __call__(self, rows: np.ndarray | None = None) -> float:
        weights = np.ones(self.n, dtype=np.int64) if rows is None else \
            np.bincount(np.asarray(rows, dtype=np.int64), minlength=self.n)
        return float(self.weighted(weights[:, None])[0])

    def weighted(self, weights: np.ndarray) -> np.ndarray:
        """(B,) tau for each column of ``weights`` (n, B) of non-negative integers."""
        w = as_weight_columns(weights, self.n)
        total = w.sum(axis=0, dtype=np.int64)
        tot = total * (total - 1) // 2
        w64 = w.astype(np.int64)
        row_pairs, row_present = (w64 * (w64 - 1) // 2).sum(axis=0), (w > 0).sum(axis=0)
        xtie, x_present = self._x_classes.count(w, row_pairs, row_present)
        ytie, y_present = self._y_classes.count(w, row_pairs, row_present)
        ntie, _ = self._joint_classes.count(w, row_pairs, row_present)
        dis = self._counter.discordant(w)
        cmd = tot - xtie - ytie + ntie - 2 * dis        # concordant minus discordant pairs
        with np.errstate(divide="ignore", invalid="ignore"):
            if self.variant == "b":
                tau = cmd / np.sqrt(tot - xtie) / np.sqrt(tot - ytie)
            else:
                m = np.minimum(x_present, y_present)
                tau = 2 * cmd / (total ** 2 * (m - 1) / m)
        tau = np.clip(tau, -1.0, 1.0)
        tau[(xtie == tot) | (ytie == tot)] = np.nan      # a constant variable: undefined (scipy)
        return tau


class _MergeLevels:
    """Weighted inversions of y in (x, y) order, merge-sort style: O(n log n) per weighting."""

    def __init__(self, xr: np.ndarray, yr: np.ndarray, n_y: int):
        order = np.lexsort((yr, xr))
        ry, n = yr[order], len(order)
        pos = np.arange(n, dtype=np.int64)
        self.levels = []
        size = 1
        while size < n:
            block = pos // (2 * size)
            right = (pos // size) % 2 == 1
            left_key = block[~right] * n_y + ry[~right]
            sort = np.argsort(left_key, kind="stable")
            left_key = left_key[sort]
            right_key = block[right] * n_y + ry[right]
            # the left rows of a right row's block with larger y: left_rows[lo:hi]
            lo = np.searchsorted(left_key, right_key, side="right")
            hi = np.searchsorted(left_key, (block[right] + 1) * n_y, side="left")
            self.levels.append((order[pos[~right][sort]], order[pos[right]], lo, hi))
            size *= 2

    def discordant(self, w: np.ndarray) -> np.ndarray:
        dis = np.zeros(w.shape[1], dtype=np.int64)
        for left_rows, right_rows, lo, hi in self.levels:
            cum = np.zeros((len(left_rows) + 1, w.shape[1]), dtype=w.dtype)
            np.cumsum(w[left_rows], axis=0, out=cum[1:])
            larger = cum[hi] - cum[lo]                          # (r, B)
            dis += (w[right_rows] * larger).sum(axis=0, dtype=np.int64)
        return dis


class _ValueLevels:
    """Weighted discordant pairs when y has few values: one cumulative sum per value of y."""

    def __init__(self, xr: np.ndarray, yr: np.ndarray, n_y: int):
        self.order = np.lexsort((yr, xr))
        rx, ry = xr[self.order], yr[self.order]
        # position (in x order) where each row's block of equal x starts: earlier rows have lower x
        starts = np.r_[True, rx[1:] != rx[:-1]]
        block_start = np.maximum.accumulate(np.where(starts, np.arange(len(rx)), 0))
        self.values = []
        for a in range(n_y - 1):
            above = np.flatnonzero(ry > a)               # rows with larger y, in x order
            rows = np.flatnonzero(ry == a)
            # how many of them come before the block of each row with y == a
            self.values.append((above, rows, np.searchsorted(above, block_start[rows])))

    def discordant(self, w: np.ndarray) -> np.ndarray:
        ws = w[self.order]                                      # (n, B) in x order
        dis = np.zeros(w.shape[1], dtype=np.int64)
        for above, rows, before in self.values:
            cum = np.zeros((len(above) + 1, w.shape[1]), dtype=w.dtype)
            np.cumsum(ws[above], axis=0, out=cum[1:])
            dis += (ws[rows] * cum[before]).sum(axis=0, dtype=np.int64)
        return dis
