"""Benchmark caption metrics against human judgments, as the literature does, with intervals.

>>> from capkit.meta_eval import benchmark
>>> res = benchmark(["bleu_4", "cider_d"], ["flickr8k_expert"])      # doctest: +SKIP
>>> print(res.table())                                               # doctest: +SKIP

For each benchmark (``protocols.py``) the unique items are scored once per metric (built-in text
metrics share one tokenisation), item scores are expanded to the rated rows (``item_of_rating``),
and the protocol's statistic is computed with a 95% percentile bootstrap interval that resamples
images. Correlations and accuracies are reported x 100, as the literature prints them.
"""
from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence

import numpy as np

from capkit.meta_eval.protocols import ALL, Protocol, expand, get_protocol
from capkit.meta_eval.published import published
from capkit.meta_eval.results import BenchResult, BenchResults
from capkit.meta_eval.stats import (
    CategoryAccuracy, PairedComparison, SystemStatistic, bootstrap_ci, bootstrap_samples,
    pair_credit, paired_bootstrap, row_statistic, system_level, tied,
)
from capkit.scores import Scores

# 1,000 resamples: the usual floor for 2.5/97.5 percentiles; all 6 classic metrics x 7 benchmarks
# then take ~40 s on 2 cores, ~26 s of it bootstrap (the weighted Kendall in kendall.py)
DEFAULT_N_BOOT = 1000
SYSTEM_STATISTICS = ("pearson", "kendall_tau_b")


def score_items(specs, candidates: list[str], references: list[list[str]], benchmark: str,
                tokenizer: str = "ptb", image_paths: list[str] | None = None,
                scenes: list | None = None) -> dict[str, Scores]:
    """Every metric on the same items through the one scorer (``capkit.metrics.Scorer``); image
    metrics receive ``images=image_paths`` (one path per candidate), scene metrics (spec
    ``scenes=True``) ``scenes=scenes`` (one world scene per candidate)."""
    from capkit.metrics import Scorer
    try:
        return Scorer(specs, tokenizer=tokenizer).score(candidates, references,
                                                        images=image_paths, scenes=scenes)
    except ValueError as err:
        # the benchmark's name in the message; the original (a user's metric's own traceback)
        # chained, and its notes ("(raised by the metric ...)") kept
        named = ValueError(f"benchmark {benchmark!r}: {err}")
        for note in getattr(err, "__notes__", ()):
            named.add_note(note)
        raise named from err


# ----------------------------------------------------------------------------- benchmarks

def load_benchmark(protocol: Protocol):
    """The protocol's data, loaded with its options; warns when the row count differs."""
    from capkit.data import load
    data = load(protocol.loader, **protocol.options)
    n = len(data)
    if protocol.n_rows and n != protocol.n_rows:
        warnings.warn(f"{protocol.name}: loaded {n:,} rows but the protocol expects "
                      f"{protocol.n_rows:,}; the numbers are not comparable with the published "
                      "ones (refetch the data, or check the loader options)", stacklevel=3)
    return data


def _per_system(spec) -> bool:
    """Must a protocol's a and b captions be scored as two systems (``pair_scoring="systems"``)
    for this metric? Yes when it may take corpus statistics from the call: CIDEr-D's document
    frequencies, BERTScore with idf, any user's metric. A built-in metric whose score of a
    caption depends only on that caption and its references gets the same numbers from one call
    over both (up to last bits, which the tie rule absorbs) and reads each reference once."""
    return not spec.builtin or spec.document_frequency or bool(spec.options.get("idf"))


def _halves(parts: list[Scores]) -> Scores:
    """One record of the a captions' scores then the b captions' (pairwise item order)."""
    first = parts[0]
    return Scores(first.metric, np.concatenate([p.per_caption for p in parts]), first.corpus,
                  first.signature, parts={f"corpus_{k}": p.corpus for k, p in zip("ab", parts)})


def _score_systems(jobs: dict, tokenizer: str) -> dict[str, dict[str, Scores]]:
    """Item scores (a then b) of pairwise protocols scored as two systems, every metric of every
    job at once: ``jobs[name] = (data, usable specs, images or None, scenes or None)``, the
    images and scenes one per item. The metrics that need two systems (``_per_system``) get two
    calls per protocol, the others one call over every protocol's a and b captions."""
    out: dict[str, dict[str, Scores]] = {name: {} for name in jobs}
    cut = lambda x, lo, hi: None if x is None else x[lo:hi]          # noqa: E731
    joint: dict[tuple[str, ...], dict] = {}
    for name, (data, usable, paths, scenes) in jobs.items():
        two = {m: f for m, f in usable.items() if _per_system(f)}
        half = len(data)
        if two:
            a, b = [score_items(two, captions, data.references, name, tokenizer,
                                cut(paths, lo, lo + half), cut(scenes, lo, lo + half))
                    for captions, lo in ((data.caption_a, 0), (data.caption_b, half))]
            out[name].update({m: _halves([a[m], b[m]]) for m in two})
        for m, f in usable.items():
            if m not in two:
                key = tuple(n for n, job in jobs.items() if m in job[1])
                joint.setdefault(key, {})[m] = f
    for names, specs in joint.items():
        cands, refs, paths, scenes, spans = [], [], [], [], []
        for name in names:
            data, _, p, sc = jobs[name]
            spans.append((name, len(cands), len(data)))
            cands += list(data.caption_a) + list(data.caption_b)
            refs += list(data.references) * 2
            paths += p or []
            scenes += sc or []
        scored = score_items(specs, cands, refs, "+".join(names), tokenizer, paths or None,
                             scenes or None)
        for name, lo, half in spans:
            for m, sc in scored.items():
                halves = [sc.per_caption[lo + k * half:lo + (k + 1) * half] for k in (0, 1)]
                out[name][m] = _halves([Scores(m, h, float("nan"), sc.signature) for h in halves])
    return {name: {m: out[name][m] for m in jobs[name][1]} for name in jobs}   # metrics' order


def _items(protocol: Protocol, data) -> tuple[list[str], list[list[str]]]:
    if protocol.statistic == "pairwise_accuracy":
        return list(data.caption_a) + list(data.caption_b), list(data.references) * 2
    return data.candidates, data.references


def _row_stat(protocol: Protocol, data, scores: Scores, seed: int):
    """(statistic on rows, row groups, rows' metric values or pair credit)."""
    values = np.asarray(scores.per_caption, dtype=np.float64)
    if protocol.statistic == "pairwise_accuracy":
        half = len(data)
        credit = pair_credit(values[:half], values[half:], data.label, ties=protocol.ties,
                             seed=seed)
        return (CategoryAccuracy(credit, data.category, protocol.average),
                np.asarray(data.images), credit)
    rows = values[data.item_of_rating]
    groups = np.asarray(data.images)[data.item_of_rating]
    if protocol.statistic.startswith("system_"):
        systems = np.asarray(data.item_extra["system"])[data.item_of_rating]
        stat = SystemStatistic(protocol.statistic.removeprefix("system_"), rows, data.human,
                               systems)
        return stat, groups, rows
    return row_statistic(protocol.statistic, rows, data.human), groups, rows


def _categories(protocol: Protocol, data, stat, rows: np.ndarray) -> dict[str, float]:
    if protocol.statistic == "pairwise_accuracy":
        return {k: 100 * v for k, v in stat.by_category().items()}
    out = {}
    if protocol.by:
        part = np.asarray(data.item_extra[protocol.by])[data.item_of_rating]
        for key in dict.fromkeys(part.tolist()):
            mask = part == key
            out[str(key)] = 100 * row_statistic(protocol.statistic, rows[mask], data.human[mask])()
    if protocol.system_level:
        systems = np.asarray(data.item_extra["system"])[data.item_of_rating]
        keep = systems != protocol.human_system
        for name in SYSTEM_STATISTICS:
            out[f"system_{name}"] = 100 * system_level(rows, data.human, systems,
                                                       statistic=name)[0]
            if protocol.human_system and not keep.all():
                out[f"system_{name}_without_{protocol.human_system.lower()}"] = 100 * system_level(
                    rows[keep], data.human[keep], systems[keep], statistic=name)[0]
    return out


def _evaluate(protocol: Protocol, data, name: str, scores: Scores, n_boot: int,
              seed: int) -> BenchResult:
    stat, groups, rows = _row_stat(protocol, data, scores, seed)
    interval = bootstrap_ci(stat, groups, n_boot, seed)
    statistic, n_ties, category_ci95 = protocol.statistic, 0, {}
    if statistic == "pairwise_accuracy":
        statistic = f"pairwise_accuracy(ties={protocol.ties})"
        if protocol.average == "pairs":
            statistic += ", over all pairs"
            category_ci95 = _category_intervals(stat, groups, n_boot, seed)
        half = len(data)
        n_ties = int(tied(scores.per_caption[:half], scores.per_caption[half:]).sum())
    pub = published(protocol.name, name)
    return BenchResult(
        benchmark=protocol.name, metric=name, statistic=statistic, value=100 * interval.estimate,
        n=len(rows), ci95=(100 * interval.low, 100 * interval.high),
        categories=_categories(protocol, data, stat, rows),
        published=None if pub is None else pub.value,
        published_source=None if pub is None else pub.source, signature=scores.signature,
        protocol=protocol, scores=scores, n_ties=n_ties, category_ci95=category_ci95)


def _category_intervals(stat: CategoryAccuracy, groups, n_boot: int,
                        seed: int) -> dict[str, tuple[float, float]]:
    """Each category's 95% percentile interval (x 100), on the resamples of the overall one."""
    samples = bootstrap_samples([stat.category(k) for k in range(len(stat.names))], groups,
                                n_boot, seed)
    out = {}
    for name, row in zip(stat.names, samples):
        ok = row[~np.isnan(row)]
        low, high = np.percentile(ok, [2.5, 97.5]) if len(ok) else (np.nan, np.nan)
        out[str(name)] = (100 * float(low), 100 * float(high))
    return out


def benchmark(metrics, benchmarks: str | Protocol | Sequence[str | Protocol] = ALL, *,
              n_boot: int = DEFAULT_N_BOOT, seed: int = 0, progress: bool | str = "auto",
              tokenizer: str = "ptb", images: Mapping[str, str] | None = None,
              against: str | None = None) -> BenchResults:
    """Correlate ``metrics`` with human judgments on ``benchmarks`` (names or Protocols).

    ``metrics``: a name (``"cider_d"``, ``"my.module:fn"``), a callable
    ``fn(candidates, references) -> Scores | 1-d array``, a list of them, or ``{name: callable}``.
    ``n_boot`` resamples of the images give the 95% interval; ``seed`` fixes them (and
    PASCAL-50S's tie-breaks when a protocol uses ``ties="random"``); every metric sees the same
    resamples. ``tokenizer`` is passed to the built-in text metrics (``"ptb"`` or ``"split"``).
    Image metrics (spec ``images=True``) run on a benchmark only when ``images`` maps
    it to a folder holding every one of its images; otherwise the row is skipped and
    ``BenchResults.skipped`` says why (none of the judgment sets ships its images). A folder
    that does not exist, or one given for a benchmark not run, is an error; so is a run in
    which every metric is skipped on every benchmark (the error gives the reasons).
    ``against`` (a metric name among ``metrics``) adds a paired bootstrap of every other metric
    against it on each benchmark (``BenchResults.comparisons``; H1: the metric agrees better),
    on the same scores and resamples as the intervals, as ``compare`` does for one pair.
    The world benchmarks draw their own images and hand metrics of scenes (spec
    ``scenes=True``) the scene of every item; on other benchmarks those metrics are skipped.
    A group name runs each of its protocols (``"sugarcrepe"``: ``sugarcrepe_refs4`` and
    ``sugarcrepe_refs1``, whose positives and negatives are scored as two systems, as
    pycocoevalcap would; an ``images`` folder given for the group serves each of them).
    """
    from capkit.metrics import resolve
    from capkit.progress import bar as progress_bar
    fns = resolve(metrics)
    if against is not None and against not in fns:
        raise ValueError(f"against={against!r} is not among the metrics benchmarked "
                         f"({', '.join(fns)}); add it to the metrics")
    if isinstance(benchmarks, (str, Protocol)):
        benchmarks = [benchmarks]
    protocols = [get_protocol(b) for b in expand(benchmarks)]
    images = _check_image_folders(images or {}, protocols)
    results: dict[str, dict[str, BenchResult]] = {}
    comparisons: dict[tuple[str, str, str], PairedComparison] = {}
    skipped: list[tuple[str, str, str]] = []
    with progress_bar(total=len(protocols) * len(fns), desc="benchmark", progress=progress,
                      leave=True) as bar:
        # pairs scored as two systems: every such protocol of the run at once (their references
        # are read once)
        ready = {p.name: _prepare(p, fns, images) for p in protocols
                 if p.statistic == "pairwise_accuracy" and p.pair_scoring == "systems"}
        if ready:
            bar.set_postfix_str(f"{', '.join(ready)}: scoring")
        prescored = _score_systems({n: (r[0], r[3], r[1], r[2]) for n, r in ready.items()},
                                   tokenizer) if ready else {}
        for protocol in protocols:
            data, paths, scenes, usable, skips = ready.get(protocol.name) or \
                _prepare(protocol, fns, images)
            skipped += skips
            bar.update(len(fns) - len(usable))
            if not usable:
                continue
            scored = prescored.get(protocol.name) or score_items(
                usable, *_items(protocol, data), protocol.name, tokenizer, paths, scenes)
            results[protocol.name] = {}
            for name, scores in scored.items():
                bar.set_postfix_str(f"{protocol.name} / {name}")
                results[protocol.name][name] = _evaluate(protocol, data, name, scores, n_boot,
                                                         seed)
                bar.update()
            if against in scored:
                comparisons.update(_paired(protocol, data, scored, against, n_boot, seed))
    if not results:
        raise ValueError("no metric could run on these benchmarks: " + "; ".join(
            f"{m} on {b}: {why}" for b, m, why in skipped))
    return BenchResults(results, n_boot, seed, skipped, comparisons, tokenizer,
                        {p.name: p for p in protocols})


def _prepare(protocol: Protocol, fns, images: Mapping[str, str]):
    """(data, images per item, scenes per item, the usable metrics, the skipped ones and why)."""
    data = load_benchmark(protocol)
    paths, why = _image_paths(protocol, data, images.get(protocol.name)) \
        if any(f.images for f in fns.values()) else (None, "")
    scenes, why_scenes = _scenes(protocol, data) \
        if any(f.scenes for f in fns.values()) else (None, "")
    usable = {n: f for n, f in fns.items() if (paths is not None or not f.images)
              and (scenes is not None or not f.scenes)}
    skips = [(protocol.name, n, why if f.images and paths is None else why_scenes)
             for n, f in fns.items() if n not in usable]
    return data, paths, scenes, usable, skips


def _paired(protocol: Protocol, data, scored: Mapping[str, Scores], against: str, n_boot: int,
            seed: int) -> dict[tuple[str, str, str], PairedComparison]:
    base, groups, _ = _row_stat(protocol, data, scored[against], seed)
    out = {}
    for name, scores in scored.items():
        if name != against:
            stat, _, _ = _row_stat(protocol, data, scores, seed)
            res = paired_bootstrap(stat, base, groups, n_boot, seed)
            out[(protocol.name, name, against)] = PairedComparison(
                100 * res.difference, 100 * res.low, 100 * res.high, res.p_value,
                res.alternative, res.method, res.n_boot)
    return out


def _check_image_folders(images: Mapping[str, str], protocols: list) -> dict[str, str]:
    """The folders of ``images``, ~ expanded, once every benchmark given images is run and its
    folder exists (a typo is an error here, not a row skipped after the data are loaded, nor a
    folder silently unused). A group's folder (``"sugarcrepe"``) serves each of its protocols."""
    from pathlib import Path
    images = {name: str(Path(folder).expanduser()) for name, folder in images.items()}
    protocols = [get_protocol(p) for p in protocols]
    run = [p.name for p in protocols] + [p.group for p in protocols if p.group]
    for name, folder in images.items():
        if name not in run:
            raise ValueError(f"images are given for {name}, which is not among the benchmarks "
                             f"run ({', '.join(run)}); add it to the benchmarks (capkit bench "
                             "--benchmarks), or leave out its images")
        if not Path(folder).is_dir():
            what = "is a file" if Path(folder).exists() else "does not exist"
            raise FileNotFoundError(f"the images folder of {name}, {folder}, {what}; give the "
                                    f"folder that holds its images (capkit bench --images "
                                    f"{name}=DIR)")
    for p in protocols:
        if p.group in images and p.name not in images:
            images[p.name] = images[p.group]
    return images


def _image_paths(protocol: Protocol, data, folder) -> tuple[list[str] | None, str]:
    """One image (a path, or a PIL image the data render themselves) per scored item, or None and
    the reason the image metrics are skipped."""
    from pathlib import Path
    names = list(data.images) * (2 if protocol.statistic == "pairwise_accuracy" else 1)
    loader = getattr(data, "image_loader", None)
    if folder is None and loader is not None:        # the world benchmarks draw their own images
        return [loader(n) for n in names], ""
    if folder is None:
        name = protocol.group or protocol.name
        which = f" ({protocol.images_hint})" if protocol.images_hint else ""
        return None, (f"needs the images of {name}{which}, which are not shipped; pass "
                      f"images={{'{name}': DIR}} (capkit bench --images {name}=DIR)")
    missing = sorted({n for n in set(names) if not (Path(folder) / n).is_file()})
    if missing:
        return None, (f"{len(missing)} of {len(set(names))} images of {protocol.name} are "
                      f"missing in {folder} (first: {missing[0]}); the protocol needs all")
    return [str(Path(folder) / n) for n in names], ""


def _scenes(protocol: Protocol, data) -> tuple[list | None, str]:
    """One world scene per scored item (the world benchmarks carry them), or None and why the
    scene metrics are skipped."""
    loader = getattr(data, "scene_loader", None)
    if loader is None:
        return None, (f"reads capkit.world scenes, and {protocol.name} is not a world benchmark "
                      "(run it on world_expert, world_foil or world_systems)")
    names = list(data.images) * (2 if protocol.statistic == "pairwise_accuracy" else 1)
    return [loader(n) for n in names], ""



def pascal50s_draws(metrics, n_draws: int = 5, *, n_boot: int = DEFAULT_N_BOOT, seed: int = 0,
                    tokenizer: str = "ptb") -> dict[str, dict]:
    """PASCAL-50S accuracy (x 100) over draws 0 .. n_draws - 1 of 5 of each image's 50
    references, the literature's other setting beside the fixed ``refs5`` of the protocol
    (``load_pascal50s(references="draw", draw_seed=k)``). ``{metric: {"draws": [value per
    draw], "mean": their mean, "categories": {category: mean over the draws}}}``; each draw is
    a ``variant`` of the protocol, scored as ``benchmark`` scores it (``n_boot``, ``seed``)."""
    from capkit.meta_eval.protocols import variant
    if not (isinstance(n_draws, int) and not isinstance(n_draws, bool) and n_draws >= 1):
        raise ValueError(f"n_draws must be a positive number of draws, got {n_draws!r}")
    draws = [variant("pascal50s", references="draw", draw_seed=k) for k in range(n_draws)]
    results = benchmark(metrics, draws, n_boot=n_boot, seed=seed, progress=False,
                        tokenizer=tokenizer)
    out = {}
    for name in results[draws[0].name]:
        cells = [results[d.name][name] for d in draws]
        out[name] = {"draws": [c.value for c in cells],
                     "mean": float(np.mean([c.value for c in cells])),
                     "categories": {k: float(np.mean([c.categories[k] for c in cells]))
                                    for k in cells[0].categories}}
    return out

def compare(metric_a, metric_b, benchmark_name: str | Protocol, *, n_boot: int = DEFAULT_N_BOOT,
            seed: int = 0, alternative: str = "greater",
            tokenizer: str = "ptb", progress: bool | str = "auto") -> PairedComparison:
    """Does ``metric_a`` agree with people better than ``metric_b`` on one benchmark?

    Paired bootstrap over images (see ``stats.paired_bootstrap``); the difference and its interval
    are x 100 like the benchmark values. ``progress``: a bar over scoring each metric and the
    bootstrap (``capkit.progress``).
    """
    from capkit.metrics import resolve
    from capkit.progress import bar as progress_bar
    protocol = get_protocol(benchmark_name)
    fns = resolve([metric_a, metric_b])
    data = load_benchmark(protocol)
    candidates, references = _items(protocol, data)
    paths = None
    if any(f.images for f in fns.values()):          # the world benchmarks draw their own images
        paths, why = _image_paths(protocol, data, None)
        if paths is None:
            raise ValueError(f"{metric_a} / {metric_b} on {protocol.name}: {why}")
    scenes = _scenes(protocol, data)[0] if any(f.scenes for f in fns.values()) else None
    systems = protocol.statistic == "pairwise_accuracy" and protocol.pair_scoring == "systems"
    scored = {}
    with progress_bar(total=len(fns) + 1, desc="compare", progress=progress) as bar:
        for name, spec in fns.items():          # one metric at a time, so the bar moves
            bar.set_postfix_str(name)
            scored.update(_score_systems({protocol.name: (data, {name: spec}, paths, scenes)},
                                         tokenizer)[protocol.name] if systems else
                          score_items({name: spec}, candidates, references, protocol.name,
                                      tokenizer, paths, scenes))
            bar.update()
        (stat_a, groups, _), (stat_b, _, _) = [_row_stat(protocol, data, s, seed)
                                               for s in scored.values()]
        bar.set_postfix_str("paired bootstrap")
        res = paired_bootstrap(stat_a, stat_b, groups, n_boot, seed, alternative=alternative)
        bar.update()
    return PairedComparison(100 * res.difference, 100 * res.low, 100 * res.high, res.p_value,
                            res.alternative, res.method, res.n_boot)
