"""The lab of notebooks/11_lab_your_metric.ipynb: dev/test discipline, the benchmark on held-out
sets, and the report card a student hands in (a metric's contract: ``capkit.course.contract``).

==========================  ====================================================================
``split_images``            a seeded split of image keys into a dev part and a test part
``split_breaches``          what a split function gets wrong about splitting by image (11.2)
``dev_split``               that split of Flickr8k-CF's images: the images a student may tune on
``restrict``, ``subsample`` a benchmark's rows of some images / of a seeded number of its images
``lab_sets``                the dev sets (tune here) and the test sets (report once), each a
                            ``LabSet`` (protocol + data), with no dev image in any test set
``bench``                   ``capkit.meta_eval``'s protocols on those sets: values with 95%
                            intervals, and paired tests of the student's metrics against the
                            best baseline of each set and against named baselines
``frame``                   a ``bench`` result as a DataFrame (``comparison_frame``: its tests)
``report_card``             the submission (``capkit.course.report_card``, re-exported here)
==========================  ====================================================================

Test-set discipline (notebook 11, section 2): Flickr8k-Expert, Flickr8k-CF and the Flickr8k part
of Composite judge the same 1,000 Flickr8k test images, and 2,172 of Expert's 5,664 (image,
caption) pairs are also CF rows. A dev split of CF by image is therefore applied to every test
set: a test set keeps only rows whose image is not a dev image.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from capkit.scores import Scores

__all__ = [
    "DEV_SETS", "TEST_SETS", "DevSplit", "LabSet", "ReportCard", "bench", "best_baselines",
    "comparison_frame", "dev_split", "frame", "lab_sets", "report_card", "restrict",
    "split_breaches", "split_images", "subsample",
]

SALT_SUBSAMPLE = 1100                # seeds subsamples apart from the dev split's draw
# the sets a student may tune on, and the sets reported once (notebook 11, section 2)
DEV_SETS = ("flickr8k_cf@dev", "nebula")
TEST_SETS = ("flickr8k_expert", "flickr8k_cf@test", "composite", "pascal50s", "thumb",
             "capeval1k", "sugarcrepe_refs4", "world_expert", "world_foil", "world_systems")


# ----------------------------------------------------------------------------- dev / test

def split_images(images: Sequence[str], seed: int = 0,
                 fraction: float = 0.5) -> tuple[frozenset[str], frozenset[str]]:
    """(dev, test): the distinct images sorted, permuted by ``np.random.default_rng(seed)``; the
    first ``round(fraction * n)`` are dev, the rest test (notebook 11, Exercise 11.2)."""
    if not 0 < fraction < 1:
        raise ValueError(f"fraction is the dev share of the images, in (0, 1); got {fraction}")
    distinct = sorted(set(map(str, images)))
    if len(distinct) < 2:
        raise ValueError(f"a split needs at least 2 distinct images, got {len(distinct)}")
    order = np.random.default_rng(seed).permutation(len(distinct))
    k = round(fraction * len(distinct))
    return (frozenset(distinct[i] for i in order[:k]),
            frozenset(distinct[i] for i in order[k:]))


def split_breaches(split_fn, images: Sequence[str], *, seed: int = 0, fraction: float = 0.5,
                   n_seeds: int = 200) -> list[str]:
    """What ``split_fn(images, seed, fraction) -> (dev, test)`` gets wrong about a split by
    image, one sentence per broken property (an empty list: none); Exercise 11.2's check.

    The properties, not one way of drawing: dev and test are disjoint and hold every distinct
    image; dev holds ``round(fraction * n)`` of them (one more or less is accepted); the same
    seed gives the same split, whatever the order or the repetition of the rows; another seed
    gives another split; and the split is random: over ``n_seeds`` seeds each of 10 toy images
    is dev a ``fraction`` of the time, within 4.5 binomial standard errors. Errors raised by
    ``split_fn`` propagate (``NotImplementedError`` included: the check says "not done yet").
    """
    def run(rows, s, f=fraction):
        dev, test = split_fn(rows, s, f)
        return set(dev), set(test)

    rows = list(images)
    distinct = set(rows)
    n, k = len(distinct), round(fraction * len(distinct))
    dev, test = run(rows, seed)
    out = []
    if dev & test:
        out.append(f"{len(dev & test)} images are in both dev and test")
    if dev | test != distinct:
        missing, extra = len(distinct - dev - test), len((dev | test) - distinct)
        out.append(f"dev and test together are not the {n:,} distinct images ({missing} missing, "
                   f"{extra} that are not images of the input)")
    if abs(len(dev) - k) > 1:
        out.append(f"dev holds {len(dev):,} images, not round({fraction} * {n:,}) = {k:,}")
    if run(rows, seed) != (dev, test):
        out.append("the same seed gave another split on a second call")
    shuffled = [rows[i] for i in np.random.default_rng(seed + 1).permutation(len(rows))]
    if run(shuffled + rows[: len(rows) // 3], seed) != (dev, test):
        out.append("the split changes with the order or the repetition of the rows: draw from "
                   "the distinct images in a fixed (sorted) order")
    if run(rows, seed + 1)[0] == dev:
        out.append("another seed gave the same split: the seed must choose the split")
    toy = [f"toy{i:02d}.jpg" for i in range(10)]
    share = {t: 0 for t in toy}
    for s in range(n_seeds):
        for t in run(toy, s)[0] & set(toy):
            share[t] += 1
    band = 4.5 * math.sqrt(fraction * (1 - fraction) / n_seeds)
    far = {t: c / n_seeds for t, c in share.items() if abs(c / n_seeds - fraction) > band}
    if far:
        t, v = next(iter(far.items()))
        out.append(f"not a random split: over {n_seeds} seeds, {len(far)} of 10 toy images are "
                   f"dev far from {fraction} of the time ({t}: {v:.2f})")
    return out


@dataclass(frozen=True)
class DevSplit:
    """Which images a student may tune on (dev) and which are held out (test)."""
    source: str
    seed: int
    dev: frozenset[str]
    test: frozenset[str]

    def __repr__(self) -> str:
        return (f"DevSplit({self.source}, seed {self.seed}: {len(self.dev)} dev images, "
                f"{len(self.test)} test images)")


def dev_split(seed: int = 0, fraction: float = 0.5) -> DevSplit:
    """The lab's split: Flickr8k-CF's 1,000 images, a seeded ``fraction`` of them dev."""
    from capkit.data import load
    cf = load("flickr8k_cf", remove_judged_from_refs=True)
    dev, test = split_images(cf.images, seed, fraction)
    return DevSplit("flickr8k_cf", seed, dev, test)


def restrict(data, images):
    """The benchmark's rows whose image is in ``images`` (a new dataset of the same type)."""
    keep_images = set(map(str, images))
    keep = np.array([str(i) in keep_images for i in data.images], dtype=bool)
    if not keep.any():
        raise ValueError(f"{data.name}: none of its images is among the {len(keep_images)} "
                         "given; nothing would be left to benchmark")
    if hasattr(data, "label"):                                  # PairJudgments
        pick = np.flatnonzero(keep)
        return dataclasses.replace(
            data, caption_a=[data.caption_a[i] for i in pick],
            caption_b=[data.caption_b[i] for i in pick],
            references=[data.references[i] for i in pick],
            images=[data.images[i] for i in pick], label=data.label[pick],
            category=data.category[pick], ids=[data.ids[i] for i in pick] if data.ids else [])
    pick = np.flatnonzero(keep)
    new_index = np.full(len(keep), -1, np.int64)
    new_index[pick] = np.arange(len(pick))
    rows = keep[data.item_of_rating]
    return dataclasses.replace(
        data, candidates=[data.candidates[i] for i in pick],
        references=[data.references[i] for i in pick], images=[data.images[i] for i in pick],
        item_of_rating=new_index[data.item_of_rating[rows]], human=data.human[rows],
        item_extra={k: [v[i] for i in pick] for k, v in data.item_extra.items()})


def subsample(data, n_images: int | None, seed: int = 0):
    """The rows of a seeded random ``n_images`` of the benchmark's images (all if None)."""
    distinct = sorted(set(map(str, data.images)))
    if n_images is None or n_images >= len(distinct):
        return data
    if n_images < 2:
        raise ValueError(f"n_images must be at least 2, got {n_images}")
    pick = np.random.default_rng([int(seed), SALT_SUBSAMPLE]).choice(len(distinct), n_images,
                                                                      replace=False)
    return restrict(data, [distinct[i] for i in pick])


@dataclass(frozen=True)
class LabSet:
    """One set of the lab: a benchmark protocol and the rows it is computed on."""
    name: str                        # e.g. "flickr8k_cf@dev", "flickr8k_expert"
    protocol: object                 # capkit.meta_eval.Protocol (renamed: no published value)
    data: object
    role: str                        # "dev" or "test"
    rows: str                        # which rows, in words

    def __repr__(self) -> str:
        return f"LabSet({self.name}, {self.role}: {self.rows})"


def _n_images(data) -> int:
    return len(set(map(str, data.images)))


def lab_sets(split: DevSplit, *, n_images: Mapping[str, int | None] | None = None,
             seed: int = 0, names: Sequence[str] = DEV_SETS + TEST_SETS,
             progress: bool | str = "auto") -> dict[str, LabSet]:
    """The dev and test sets of the lab: ``{name: LabSet}``, in the order of ``names``.

    ``flickr8k_cf@dev`` / ``@test`` are CF's rows of the dev / test images; every other set keeps
    only rows whose image is not a dev image; ``n_images`` (per set name) keeps a seeded subset
    of a set's images (small mode), recorded in ``LabSet.rows``. The world sets are generated
    (scenes rendered, the trained world captioner run): about 15 s of the load.
    """
    import capkit.meta_eval.harness as harness
    from capkit.meta_eval.protocols import get_protocol
    from capkit.progress import bar
    n_images = dict(n_images or {})
    unknown = set(n_images) - set(names)
    if unknown:
        raise ValueError(f"n_images names sets that are not among {list(names)}: {sorted(unknown)}")
    out = {}
    for name in bar(names, desc="loading sets", progress=progress, leave=True):
        base, _, part = name.partition("@")
        protocol = get_protocol(base)
        data = harness.load_benchmark(protocol)
        total = _n_images(data)
        if part == "dev":
            data, role = restrict(data, split.dev), "dev"
        elif part not in ("", "test"):
            raise ValueError(f"unknown part {part!r} of {name!r}: use @dev or @test")
        elif name in DEV_SETS:
            role = "dev"
        else:                                    # a test set: no row of a dev image
            role = "test"
            if set(map(str, data.images)) & split.dev:
                data = restrict(data, set(map(str, data.images)) - split.dev)
        held = _n_images(data)
        data = subsample(data, n_images.get(name), seed)
        rows = (f"{_n_images(data)} of {held} images" if _n_images(data) < held else
                f"all {held} images") + (f" ({total - held} dev images dropped)"
                                         if held < total and part != "dev" else "")
        renamed = dataclasses.replace(protocol, name=name, n_rows=0)
        out[name] = LabSet(name, renamed, data, role, rows)
    return out


# ----------------------------------------------------------------------------- the benchmark

def bench(metrics, sets: Mapping[str, LabSet], *, n_boot: int = 200, seed: int = 0,
          compare: Sequence[str] = (), baselines: Sequence[str] = (),
          against: Sequence[str] = (), progress: bool | str = "auto"):
    """Every metric on every set, with the benchmark's protocol: a ``BenchResults``.

    ``metrics`` as ``capkit.meta_eval.benchmark`` takes them (names, ``module:function``,
    callables, ``{name: metric}``); they read text and references (the human-judgment sets ship
    no images; for image metrics on the world sets, use ``capkit.meta_eval.benchmark``).

    ``compare``: the student's metrics (names among ``metrics``); each is tested (paired
    bootstrap over images, H1: it agrees better) against the best of ``baselines`` on each set
    and against each metric of ``against``, on the same resamples as the intervals
    (``BenchResults.comparisons[(set, metric, baseline)]``).
    """
    import capkit.meta_eval.harness as harness
    from capkit.metrics import resolve
    from capkit.progress import bar as progress_bar
    fns = resolve(metrics)
    missing = (set(compare) | set(baselines) | set(against)) - set(fns)
    if missing:
        raise ValueError(f"{sorted(missing)} are compared but not among the metrics benchmarked "
                         f"({', '.join(fns)}); add them to the metrics")
    results, comparisons = {}, {}
    with progress_bar(total=len(sets) * len(fns), desc="lab benchmark", progress=progress,
                      leave=True) as pbar:
        for name, s in sets.items():
            if s.protocol.statistic == "pairwise_accuracy" and s.protocol.pair_scoring == "systems":
                scored = harness._score_systems({name: (s.data, fns, None, None)}, "ptb")[name]
            else:
                candidates, references = harness._items(s.protocol, s.data)
                scored = harness.score_items(fns, candidates, references, name)
            results[name] = {}
            for metric, scores in scored.items():
                pbar.set_postfix_str(f"{name} / {metric}")
                results[name][metric] = harness._evaluate(s.protocol, s.data, metric, scores,
                                                          n_boot, seed)
                pbar.update()
            for student in compare:
                rivals = [b for b in baselines if b != student]
                best = max(rivals, key=lambda b: results[name][b].value) if rivals else None
                for rival in [r for r in dict.fromkeys([*([best] if best else []), *against])
                              if r != student]:
                    comparisons[(name, student, rival)] = _paired(s, scored, student, rival,
                                                                 n_boot, seed)
    return harness.BenchResults(results, n_boot, seed, [], comparisons)


def _paired(s: LabSet, scored: Mapping[str, Scores], metric: str, rival: str, n_boot: int,
            seed: int):
    from capkit.meta_eval.harness import _row_stat
    from capkit.meta_eval.stats import PairedComparison, paired_bootstrap
    stat_a, groups, _ = _row_stat(s.protocol, s.data, scored[metric], seed)
    stat_b, _, _ = _row_stat(s.protocol, s.data, scored[rival], seed)
    res = paired_bootstrap(stat_a, stat_b, groups, n_boot, seed)
    return PairedComparison(100 * res.difference, 100 * res.low, 100 * res.high, res.p_value,
                            res.alternative, res.method, res.n_boot)


def frame(results, *, ci: bool = True):
    """A pandas DataFrame of a ``BenchResults``: one row per metric, one column per set; cells
    "value [low, high]" (x 100, 95% interval) or, with ``ci=False``, the values."""
    import pandas as pd
    return pd.DataFrame({b: {m: f"{c.value:.1f} [{c.ci95[0]:.1f}, {c.ci95[1]:.1f}]" if ci
                             else c.value for m, c in by_metric.items()}
                         for b, by_metric in results.results.items()})


def comparison_frame(results):
    """The paired tests of a ``BenchResults`` as a DataFrame: one row per (set, metric,
    baseline); difference x 100, its 95% interval, the one-sided p-value (H1: metric better)."""
    import pandas as pd
    rows = [{"set": b, "metric": m, "against": a, "difference": round(c.difference, 1),
             "95% CI": f"[{c.low:+.1f}, {c.high:+.1f}]", "p": round(c.p_value, 3)}
            for (b, m, a), c in results.comparisons.items()]
    return pd.DataFrame(rows).set_index(["set", "metric", "against"])


def best_baselines(results, baselines: Sequence[str]) -> dict[str, str]:
    """{set: the baseline with the highest value on it}."""
    return {b: max(baselines, key=lambda m: by_metric[m].value)
            for b, by_metric in results.results.items()}


from capkit.course.report_card import ReportCard, report_card  # noqa: E402  (the submission)
