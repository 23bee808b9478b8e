"""Statistics of meta-evaluation: correlations, pairwise accuracy, bootstrap intervals over images.

Every statistic here exists in two forms:

* a plain function of the data (``kendall_tau(x, y, variant="c")``, ``pairwise_accuracy(...)``);
* a *row statistic* (``row_statistic("kendall_tau_c", metric, human)``): the same number for any
  multiset of rows, ``stat(rows)``, plus ``stat.weighted(w)`` for many row weightings at once. The
  bootstrap uses the weighted form when a statistic has one, so resampling 1,000 images 1,000 times
  costs array operations, not a Python loop, and gives exactly what the loop would.

The bootstrap resamples *groups* (images), never rows: the ratings of one image (Flickr8k-Expert's 3
experts, CF's several candidates) are not independent, and resampling rows would give intervals
that are too narrow.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from capkit.meta_eval.kendall import KendallTau, as_weight_columns, check_variant, dense_ranks

TIE_POLICIES = ("half", "random", "wrong")
# two scores are tied when |a - b| <= TIE_RTOL * max(|a|, |b|): scores equal in exact arithmetic
# can differ in their last bits (the order of a float sum, a batched product), and those bits
# must not decide a pair or a ranking
TIE_RTOL = 1e-9
ROW_STATISTICS = ("kendall_tau_b", "kendall_tau_c", "spearman", "pearson")
ALTERNATIVES = ("greater", "two-sided")
AVERAGES = ("categories", "pairs")
_CHUNK = 1_500_000      # bootstrap weight-matrix elements per chunk (rows x resamples), ~6 MB


def _as_pair(x, y) -> tuple[np.ndarray, np.ndarray]:
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if x.ndim != 1 or y.shape != x.shape:
        raise ValueError(f"x and y must be 1-d arrays of the same length; got shapes {x.shape} "
                         f"and {y.shape}")
    if len(x) < 2:
        raise ValueError(f"a correlation needs at least 2 rows; got {len(x)}")
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise ValueError("x or y contains NaN or infinity; drop or fix those rows first")
    return x, y


# ----------------------------------------------------------------------------- ties

def tied(a, b) -> np.ndarray:
    """Elementwise: are ``a`` and ``b`` equal up to ``TIE_RTOL``, relatively
    (``|a - b| <= 1e-9 * max(|a|, |b|)``)? The one tie rule wherever two scores are compared."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return np.abs(a - b) <= TIE_RTOL * np.maximum(np.abs(a), np.abs(b))


def tie_codes(values) -> np.ndarray:
    """0-based dense ranks of ``values`` in which values tied with their sorted neighbour (``tied``)
    share a rank, so that a ranking does not hang on last bits."""
    values = np.asarray(values, dtype=np.float64)
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    new = np.r_[True, ~tied(ordered[1:], ordered[:-1])] if len(values) else np.zeros(0, bool)
    codes = np.empty(len(values), np.int64)
    codes[order] = np.cumsum(new) - 1
    return codes


def _tie_sign(x: np.ndarray) -> np.ndarray:
    """sign(x[i] - x[j]) over the pairs i < j of axis 0, 0 where the two are ``tied``."""
    i, j = np.triu_indices(len(x), k=1)
    return np.where(tied(x[i], x[j]), 0.0, np.sign(x[i] - x[j]))


# ----------------------------------------------------------------------------- point statistics

def kendall_tau(x, y, *, variant: str) -> float:
    """Kendall's tau-b or tau-c (``variant`` is required: scipy's default is tau-b, the
    Flickr8k-Expert literature reports tau-c). Exact, equal to ``scipy.stats.kendalltau``."""
    check_variant(variant)
    return KendallTau(*_as_pair(x, y), variant)()


def pearson(x, y) -> float:
    """Pearson's r (NaN when either variable is constant)."""
    return _Pearson(*_as_pair(x, y))()


def spearman(x, y) -> float:
    """Spearman's rho: Pearson's r of the average ranks (as ``scipy.stats.spearmanr``)."""
    return _Spearman(*_as_pair(x, y))()


def pair_credit(score_a, score_b, label, *, ties: str = "half", seed: int | None = None):
    """Per pair: 1 when the metric prefers the caption people preferred, 0 when not, and for a
    metric tie (``tied``: equal up to 1e-9, relatively) 0.5 (``"half"``), a seeded coin flip
    (``"random"``) or 0 (``"wrong"``)."""
    a, b = np.asarray(score_a, dtype=np.float64), np.asarray(score_b, dtype=np.float64)
    label = np.asarray(label)
    if a.ndim != 1 or a.shape != b.shape or label.shape != a.shape:
        raise ValueError(f"score_a, score_b and label must be 1-d and aligned; got shapes "
                         f"{a.shape}, {b.shape}, {label.shape}")
    if not set(np.unique(label).tolist()) <= {0, 1}:
        raise ValueError("label must hold 0 (people prefer a) or 1 (people prefer b)")
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError("scores contain NaN or infinity; fix the metric or drop those pairs")
    if ties not in TIE_POLICIES:
        raise ValueError(f"ties={ties!r}: choose one of {TIE_POLICIES}")
    if ties == "random" and seed is None:
        raise ValueError("ties='random' needs a seed (e.g. seed=0) so that the accuracy can be "
                         "reproduced; or use ties='half', its expected value")
    credit = ((b > a) == (label == 1)).astype(np.float64)
    even = tied(a, b)
    if ties == "half":
        credit[even] = 0.5
    elif ties == "wrong":
        credit[even] = 0.0
    else:
        coin = np.random.default_rng(seed).integers(0, 2, size=len(a))
        credit[even] = (coin[even] == label[even]).astype(np.float64)
    return credit


def pairwise_accuracy(score_a, score_b, label, *, ties: str = "half",
                      seed: int | None = None) -> float:
    """Share of pairs where the metric prefers the caption people preferred (label 0 = a).

    ``ties``: ``"half"`` (default) counts a metric tie as 0.5, the expected value of a random
    tie-break; ``"random"`` breaks ties with ``numpy.random.default_rng(seed)``; ``"wrong"``
    counts them as errors.
    """
    credit = pair_credit(score_a, score_b, label, ties=ties, seed=seed)
    if len(credit) == 0:
        raise ValueError("no pairs to score")
    return float(credit.mean())


def system_level(metric, human, systems, *, statistic: str = "pearson") -> tuple[float, dict]:
    """Correlation over systems of the per-system mean metric score and mean human score.

    Returns the correlation and ``{system: (mean metric, mean human)}`` (THumB's system level).
    A rank statistic ranks means that are ``tied`` (equal up to 1e-9, relatively) as equal.
    """
    metric, human = _as_pair(metric, human)
    systems = np.asarray(systems)
    if systems.shape != metric.shape:
        raise ValueError("systems must give one system name per row")
    names = sorted(set(systems.tolist()))
    means = {s: (float(metric[systems == s].mean()), float(human[systems == s].mean()))
             for s in names}
    m, h = np.array([v[0] for v in means.values()]), np.array([v[1] for v in means.values()])
    if statistic in ("kendall_tau_b", "kendall_tau_c", "spearman"):
        m, h = tie_codes(m), tie_codes(h)
    return row_statistic(statistic, m, h)(), means


# ----------------------------------------------------------------------------- row statistics

class _Pearson:
    def __init__(self, x: np.ndarray, y: np.ndarray):
        self.x, self.y, self.n = x, y, len(x)

    def __call__(self, rows=None) -> float:
        w = np.ones(self.n, np.int64) if rows is None else np.bincount(rows, minlength=self.n)
        return float(self.weighted(w[:, None])[0])

    def weighted(self, weights: np.ndarray) -> np.ndarray:
        w = as_weight_columns(weights, self.n).astype(np.float64)
        return _weighted_pearson(self.x[:, None], self.y[:, None], w)


def _weighted_pearson(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Pearson's r of x, y (n, 1) or (n, B) under weights (n, B)."""
    total = w.sum(axis=0)
    xc = x - (w * x).sum(axis=0) / total
    yc = y - (w * y).sum(axis=0) / total
    with np.errstate(divide="ignore", invalid="ignore"):
        spread = (w * xc * xc).sum(axis=0) * (w * yc * yc).sum(axis=0)
        r = (w * xc * yc).sum(axis=0) / np.sqrt(spread)
    return np.clip(r, -1.0, 1.0)


class _Spearman(_Pearson):
    def __init__(self, x: np.ndarray, y: np.ndarray):
        super().__init__(x, y)
        self.ranks = [_AverageRanks(x), _AverageRanks(y)]

    def weighted(self, weights: np.ndarray) -> np.ndarray:
        w = as_weight_columns(weights, self.n).astype(np.float64)
        return _weighted_pearson(self.ranks[0](w), self.ranks[1](w), w)


class _AverageRanks:
    """(n, B) 1-based average rank of each row's value among the weighted rows (ties averaged)."""

    def __init__(self, values: np.ndarray):
        self.codes = dense_ranks(values)[0]
        self.order = np.argsort(self.codes, kind="stable")
        sorted_codes = self.codes[self.order]
        self.starts = np.flatnonzero(np.r_[True, sorted_codes[1:] != sorted_codes[:-1]])

    def __call__(self, w: np.ndarray) -> np.ndarray:
        size = np.add.reduceat(w[self.order], self.starts, axis=0)     # (K, B) weight per value
        rank = np.cumsum(size, axis=0) - size + (size + 1) / 2
        return rank[self.codes]


def row_statistic(name: str, metric, human):
    """A correlation of ``metric`` and ``human`` usable on any multiset of rows (see module doc)."""
    x, y = _as_pair(metric, human)
    if name == "kendall_tau_b":
        return KendallTau(x, y, "b")
    if name == "kendall_tau_c":
        return KendallTau(x, y, "c")
    if name == "pearson":
        return _Pearson(x, y)
    if name == "spearman":
        return _Spearman(x, y)
    raise ValueError(f"unknown statistic {name!r}; choose one of {ROW_STATISTICS}")


class CategoryAccuracy:
    """Mean over categories of the per-category mean credit (PASCAL-50S: HC, HI, HM, MM), or with
    ``average="pairs"`` the mean credit over all pairs (SugarCrepe); ``category(k)`` is the
    accuracy of category ``k`` alone, bootstrap-ready too."""

    def __init__(self, credit: np.ndarray, category: np.ndarray, average: str = "categories"):
        if average not in AVERAGES:
            raise ValueError(f"average={average!r}: choose one of {AVERAGES}")
        self.average = average
        self._last: tuple | None = None     # (weights, their per-category accuracies)
        self.credit = np.asarray(credit, dtype=np.float64)
        self.names, self.codes = np.unique(np.asarray(category), return_inverse=True)
        self.codes = self.codes.reshape(-1)
        self.n = len(self.credit)
        self.onehot = (self.codes[None, :] == np.arange(len(self.names))[:, None]).astype(float)

    def by_category(self) -> dict[str, float]:
        return {str(c): float(self.credit[self.codes == k].mean())
                for k, c in enumerate(self.names)}

    def __call__(self, rows=None) -> float:
        w = np.ones(self.n, np.int64) if rows is None else np.bincount(rows, minlength=self.n)
        return float(self.weighted(w[:, None])[0])

    def weighted(self, weights: np.ndarray) -> np.ndarray:
        w = as_weight_columns(weights, self.n).astype(np.float64)
        if self.average == "pairs":
            return (w * self.credit[:, None]).sum(axis=0) / w.sum(axis=0)
        return self.per_category(w).mean(axis=0)     # NaN when a category drew no pair

    def per_category(self, w: np.ndarray) -> np.ndarray:
        """(K, B) accuracy of each category under each column of the weights (n, B)."""
        hits = self.onehot @ (w * self.credit[:, None])           # (K, B)
        seen = self.onehot @ w
        with np.errstate(divide="ignore", invalid="ignore"):
            return hits / seen

    def category(self, k: int) -> "_OneCategory":
        return _OneCategory(self, k)

    def _per_category_of(self, weights: np.ndarray) -> np.ndarray:
        """``per_category`` of ``weights``, computed once for the categories that ask in turn
        about the same weights (``bootstrap_samples`` hands each statistic the same chunk)."""
        if self._last is None or self._last[0] is not weights:
            w = as_weight_columns(weights, self.n).astype(np.float64)
            self._last = (weights, self.per_category(w))
        return self._last[1]


class _OneCategory:
    """The accuracy of one category of a ``CategoryAccuracy``, as a row statistic."""

    def __init__(self, parent: CategoryAccuracy, k: int):
        self.parent, self.k, self.n = parent, k, parent.n

    def __call__(self, rows=None) -> float:
        w = np.ones(self.n, np.int64) if rows is None else np.bincount(rows, minlength=self.n)
        return float(self.weighted(w[:, None])[0])

    def weighted(self, weights: np.ndarray) -> np.ndarray:
        return self.parent._per_category_of(weights)[self.k]


class SystemStatistic:
    """``system_level`` on any weighting of the rows: correlation over systems of the per-system
    mean metric and mean human score (world_systems' statistic), bootstrap-ready; Kendall's
    tau-b counts two ``tied`` means as a tie."""

    def __init__(self, name: str, metric, human, systems):
        if name not in ("pearson", "kendall_tau_b"):
            raise ValueError(f"system-level statistic {name!r}: choose pearson or kendall_tau_b")
        self.name = name
        self.x, self.y = _as_pair(metric, human)
        self.names, codes = np.unique(np.asarray(systems), return_inverse=True)
        self.onehot = (codes.reshape(-1)[None, :] == np.arange(len(self.names))[:, None]) \
            .astype(np.float64)                                            # (S, n)
        self.n = len(self.x)

    def __call__(self, rows=None) -> float:
        w = np.ones(self.n, np.int64) if rows is None else np.bincount(rows, minlength=self.n)
        return float(self.weighted(w[:, None])[0])

    def weighted(self, weights: np.ndarray) -> np.ndarray:
        w = as_weight_columns(weights, self.n).astype(np.float64)          # (n, B)
        seen = self.onehot @ w
        with np.errstate(divide="ignore", invalid="ignore"):
            mx = (self.onehot @ (w * self.x[:, None])) / seen               # (S, B)
            my = (self.onehot @ (w * self.y[:, None])) / seen
            if self.name == "pearson":
                dx, dy = mx - mx.mean(axis=0), my - my.mean(axis=0)
                return (dx * dy).sum(0) / np.sqrt((dx * dx).sum(0) * (dy * dy).sum(0))
            sx, sy = _tie_sign(mx), _tie_sign(my)                          # (pairs, B)
            return (sx * sy).sum(0) / np.sqrt((sx * sx).sum(0) * (sy * sy).sum(0))


# ----------------------------------------------------------------------------- bootstrap

@dataclass(frozen=True)
class Interval:
    """A percentile bootstrap interval over groups."""
    estimate: float                 # the statistic on all rows
    low: float
    high: float
    alpha: float
    n_boot: int
    n_groups: int
    n_undefined: int = 0            # resamples where the statistic was NaN (left out)
    samples: np.ndarray = field(default=None, repr=False)   # (n_boot,) resampled statistics


@dataclass(frozen=True)
class PairedComparison:
    """Is statistic A larger than statistic B on the same rows? (paired bootstrap over groups)"""
    difference: float               # A - B on all rows
    low: float                      # percentile interval of the difference
    high: float
    p_value: float
    alternative: str
    method: str
    n_boot: int


def _check_bootstrap(groups, n_rows: int | None, n_boot: int, alpha: float):
    groups = np.asarray(groups)
    if groups.ndim != 1 or (n_rows is not None and len(groups) != n_rows):
        raise ValueError(f"groups must give one group (image) per row: {n_rows} rows, got "
                         f"shape {groups.shape}")
    if not isinstance(n_boot, (int, np.integer)) or n_boot < 1:
        raise ValueError(f"n_boot must be a positive integer; got {n_boot!r}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), e.g. 0.05 for a 95% interval; got {alpha}")
    _, codes = np.unique(groups, return_inverse=True)
    return codes.reshape(-1)


def bootstrap_samples(statistics, groups, n_boot: int, seed: int | None) -> np.ndarray:
    """(k, n_boot) values of k statistics on the same ``n_boot`` resamples of the groups.

    Resample b draws as many groups as there are, with replacement, and takes every row of each
    drawn group as often as the group was drawn. ``seed`` fixes the draws.
    """
    codes = _check_bootstrap(groups, None, n_boot, 0.05)
    n_groups = codes.max() + 1
    draws = np.random.default_rng(seed).integers(0, n_groups, size=(n_boot, n_groups))
    offsets = np.arange(n_boot)[:, None] * n_groups
    counts = np.bincount((draws + offsets).ravel(), minlength=n_boot * n_groups)
    counts = counts.reshape(n_boot, n_groups).T.astype(np.int32)     # (G, n_boot)
    out = np.empty((len(statistics), n_boot))
    chunk = max(1, min(256, _CHUNK // max(len(codes), 1)))
    for start in range(0, n_boot, chunk):
        w = counts[codes, start:start + chunk]                        # (n, b) row weights
        for k, stat in enumerate(statistics):
            if hasattr(stat, "weighted"):
                out[k, start:start + chunk] = stat.weighted(w)
            else:
                rows = np.arange(len(codes))
                out[k, start:start + chunk] = [stat(np.repeat(rows, col)) for col in w.T]
    return out


def _percentiles(samples: np.ndarray, alpha: float) -> tuple[float, float]:
    ok = samples[~np.isnan(samples)]
    if len(ok) == 0:
        return float("nan"), float("nan")
    low, high = np.percentile(ok, [100 * alpha / 2, 100 * (1 - alpha / 2)])
    return float(low), float(high)


def bootstrap_ci(statistic_fn, groups, n_boot: int, seed: int | None,
                 alpha: float = 0.05) -> Interval:
    """Percentile bootstrap interval of ``statistic_fn`` resampling groups (images), not rows.

    ``statistic_fn(rows)`` returns the statistic on the rows ``rows`` (an index array that may
    repeat rows); a ``row_statistic`` or ``CategoryAccuracy`` also has a fast ``weighted`` form.
    ``groups`` gives the group (image key) of each row.
    """
    codes = _check_bootstrap(groups, getattr(statistic_fn, "n", None), n_boot, alpha)
    estimate = float(statistic_fn(np.arange(len(codes))))
    samples = bootstrap_samples([statistic_fn], groups, n_boot, seed)[0]
    low, high = _percentiles(samples, alpha)
    return Interval(estimate, low, high, alpha, int(n_boot), int(codes.max() + 1),
                    int(np.isnan(samples).sum()), samples)


def paired_bootstrap(stat_a, stat_b, groups, n_boot: int, seed: int | None,
                     alpha: float = 0.05, alternative: str = "greater") -> PairedComparison:
    """Does A correlate better than B? Paired bootstrap over groups (images).

    Both statistics are computed on the same resamples. The interval is the percentile interval of
    the resampled differences; the p-value uses the shift method (Berg-Kirkpatrick et al. 2012):
    under H0 the differences are centred on 0, so ``p = (1 + #{d* - d >= d}) / (1 + n_boot)``
    for ``alternative="greater"`` (H1: A > B), ``|d* - d| >= |d|`` for ``"two-sided"``.
    """
    if alternative not in ALTERNATIVES:
        raise ValueError(f"alternative={alternative!r}: choose one of {ALTERNATIVES}")
    codes = _check_bootstrap(groups, getattr(stat_a, "n", None), n_boot, alpha)
    rows = np.arange(len(codes))
    diff = float(stat_a(rows) - stat_b(rows))
    samples = bootstrap_samples([stat_a, stat_b], groups, n_boot, seed)
    d = samples[0] - samples[1]
    d = d[~np.isnan(d)]
    low, high = _percentiles(d, alpha)
    extreme = (d - diff >= diff) if alternative == "greater" else (np.abs(d - diff) >= abs(diff))
    p = (1 + int(extreme.sum())) / (1 + len(d))
    return PairedComparison(diff, low, high, float(p), alternative,
                            "paired bootstrap over groups (percentile interval, shift p-value)",
                            int(n_boot))
