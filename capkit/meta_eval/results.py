"""What ``meta_eval.benchmark`` returns: one ``BenchResult`` per (benchmark, metric) and the
``BenchResults`` that holds them with the paired comparisons, as a table or JSON."""
from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np

from capkit.meta_eval.protocols import Protocol
from capkit.meta_eval.stats import PairedComparison
from capkit.scores import Scores


@dataclass(frozen=True)
class BenchResult:
    """One metric on one benchmark."""
    benchmark: str
    metric: str
    statistic: str
    value: float                      # x 100
    n: int                            # rows (ratings, or pairs)
    ci95: tuple[float, float]         # x 100, percentile bootstrap over images
    categories: dict[str, float]      # x 100: per category / subset / system level
    published: float | None
    published_source: str | None
    signature: str                    # the metric's Scores.signature
    protocol: Protocol = field(repr=False)
    scores: Scores = field(repr=False)   # item scores (pairwise: caption_a then caption_b)
    n_ties: int = 0                   # pairwise benchmarks: pairs the metric scores equal
    # protocols averaged over pairs (SugarCrepe): each category's 95% interval, x 100
    category_ci95: dict[str, tuple[float, float]] = field(default_factory=dict)

    def to_dict(self) -> dict:
        out = {"value": _finite(self.value), "statistic": self.statistic, "n": int(self.n),
               "ci95": [_finite(self.ci95[0]), _finite(self.ci95[1])],
               "categories": {k: _finite(v) for k, v in self.categories.items()},
               "published": self.published, "published_source": self.published_source,
               "signature": self.signature}
        if self.category_ci95:
            out["category_ci95"] = {k: [_finite(lo), _finite(hi)]
                                    for k, (lo, hi) in self.category_ci95.items()}
            out["n_ties"] = int(self.n_ties)
        return out


def _finite(value: float) -> float | None:
    return None if value is None or not np.isfinite(value) else float(value)


@dataclass
class BenchResults:
    """``results[benchmark][metric] -> BenchResult``, plus the settings that made them: the
    bootstrap's ``n_boot`` and ``seed``, the ``tokenizer`` of the text metrics, and the
    ``protocols`` run (by name; a benchmark whose metrics were all skipped is there too)."""
    results: dict[str, dict[str, BenchResult]]
    n_boot: int
    seed: int
    skipped: list[tuple[str, str, str]] = field(default_factory=list)  # (benchmark, metric, why)
    # (benchmark, metric, against) -> paired bootstrap of metric - against (x 100), same resamples
    comparisons: dict[tuple[str, str, str], PairedComparison] = field(default_factory=dict)
    tokenizer: str = "ptb"
    protocols: dict[str, Protocol] = field(default_factory=dict)

    def __getitem__(self, benchmark: str) -> dict[str, BenchResult]:
        return self.results[benchmark]

    def cells(self) -> list[BenchResult]:
        return [cell for by_metric in self.results.values() for cell in by_metric.values()]

    def to_dict(self) -> dict:
        """The numbers with what is needed to reproduce and compare them: ``n_boot``, ``seed``,
        ``tokenizer``, every benchmark's protocol rules, then ``results`` (and ``skipped``,
        ``comparisons`` when there are any)."""
        protocols = {**{c.benchmark: c.protocol for c in self.cells()}, **self.protocols}
        out = {"n_boot": int(self.n_boot), "seed": int(self.seed), "tokenizer": self.tokenizer,
               "protocols": {name: p.to_dict() for name, p in protocols.items()},
               "results": {b: {m: cell.to_dict() for m, cell in by_metric.items()}
                           for b, by_metric in self.results.items()}}
        if self.skipped:
            out["skipped"] = [{"benchmark": b, "metric": m, "reason": why}
                              for b, m, why in self.skipped]
        if self.comparisons:
            out["comparisons"] = [{"benchmark": b, "metric": m, "against": a,
                                   "difference": _finite(c.difference),
                                   "ci95": [_finite(c.low), _finite(c.high)],
                                   "p_value": c.p_value, "alternative": c.alternative,
                                   "method": c.method, "n_boot": c.n_boot}
                                  for (b, m, a), c in self.comparisons.items()]
        return out

    def comparison_table(self, fmt: str = "table") -> str:
        """benchmark, metric, against, difference x 100, its CI, one-sided p (H1: metric > against)."""
        from capkit.report import format_table
        rows = [[b, m, a, c.difference, f"[{c.low:.1f}, {c.high:.1f}]", c.p_value]
                for (b, m, a), c in self.comparisons.items()]
        return format_table(["benchmark", "metric", "against", "difference", "CI", "p"], rows,
                            fmt, digits=3)

    def to_json(self, indent: int | None = 1) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def table(self, fmt: str = "table") -> str:
        """benchmark, metric, statistic, n, value, CI, published, diff (fmt: table|markdown|csv)."""
        from capkit.report import format_table
        rows = []
        for c in self.cells():
            diff = None if c.published is None else c.value - c.published
            rows.append([c.benchmark, c.metric, c.statistic, c.n, c.value,
                         f"[{c.ci95[0]:.1f}, {c.ci95[1]:.1f}]", c.published, diff])
        headers = ["benchmark", "metric", "statistic", "n", "value", "CI", "published", "diff"]
        table = format_table(headers, rows, fmt, digits=1)
        if self.skipped and fmt != "csv":
            table += "\n\nskipped:\n" + "\n".join(f"  {b} / {m}: {why}"
                                                 for b, m, why in self.skipped)
        return table


# ----------------------------------------------------------------------------- metrics


def _statistic_name(statistic: str) -> str:
    if statistic.startswith("pairwise_accuracy"):
        return "accuracy %"
    return {"kendall_tau_c": "tau-c", "kendall_tau_b": "tau-b"}.get(statistic, statistic)


def record_tables(record: dict, parts: bool | tuple[str, ...] = True) -> str:
    """The Markdown tables of a ``capkit bench --record FILE`` record: every metric's value
    [95% CI] on every benchmark, the published figures beside capkit's, the paired tests of
    ``--against`` when the run made them, and the categories of every benchmark (``parts=True``),
    of the benchmarks named in ``parts``, or of none (``False``). docs/benchmarks.md and
    docs/learned_metrics.md show such tables; tests/test_docs_records.py checks that they do."""
    cells = record["results"]["results"]
    benchmarks = list(cells)
    metrics = list(dict.fromkeys(m for b in benchmarks for m in cells[b]))

    def statistic(b):
        return _statistic_name(next(iter(cells[b].values()))["statistic"])

    def value(c):
        if c["value"] is None:
            return "n/a"
        return f"{c['value']:.1f} [{c['ci95'][0]:.1f}, {c['ci95'][1]:.1f}]"

    lines = ["| metric | " + " | ".join(f"{b} ({statistic(b)})" for b in benchmarks) + " |",
             "|---|" + "---|" * len(benchmarks)]
    lines += [f"| {m} | " + " | ".join(value(cells[b][m]) if m in cells[b] else "-"
                                       for b in benchmarks) + " |" for m in metrics]
    published = [(b, m, c) for b in benchmarks for m, c in cells[b].items()
                 if c["published"] is not None and c["value"] is not None]
    if published:
        lines += ["", "| benchmark | metric | capkit | published | difference |",
                  "|---|---|---|---|---|"]
        lines += [f"| {b} | {m} | {c['value']:.1f} | {c['published']:.1f} | "
                  f"{round(c['value'] - c['published'], 1) + 0.0:+.1f} |"
                  for b, m, c in published]
    comparisons = record["results"].get("comparisons", [])
    if comparisons:
        tests = {(c["metric"], c["against"]): {} for c in comparisons}
        for c in comparisons:
            tests[c["metric"], c["against"]][c["benchmark"]] = (
                "n/a" if c["difference"] is None else
                f"{c['difference']:+.1f} [{c['ci95'][0]:+.1f}, {c['ci95'][1]:+.1f}], "
                f"p = {c['p_value']:.3f}")
        lines += ["", "| paired test | " + " | ".join(benchmarks) + " |",
                  "|---|" + "---|" * len(benchmarks)]
        lines += [f"| {m} - {a} | " + " | ".join(row.get(b, "-") for b in benchmarks) + " |"
                  for (m, a), row in tests.items()]
    for b in benchmarks:
        names = list(dict.fromkeys(k for c in cells[b].values() for k in c["categories"]))
        if not names or parts is False or (parts is not True and b not in parts):
            continue
        lines += ["", f"`{b}` by part (x 100):", "",
                  "| metric | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
        lines += [f"| {m} | " + " | ".join(
            "n/a" if c["categories"].get(k) is None else f"{c['categories'][k]:.1f}"
            for k in names) + " |" for m, c in cells[b].items()]
    return "\n".join(lines)
