"""The lab's report card (notebooks/11_lab_your_metric.ipynb): the submission, one Markdown and
one JSON file, every number with the signature of the settings that made it, built from
``capkit.course.lab.bench`` results and a metric's contract (``capkit.course.contract``)."""
from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from capkit.cache_files import write_output
from capkit.course.contract import ContractRecord
from capkit.scores import make_signature

if TYPE_CHECKING:
    from capkit.course.lab import LabSet

__all__ = ["ReportCard", "report_card"]


@dataclass(frozen=True)
class ReportCard:
    """The submission: ``markdown`` (shown in the notebook) and ``data`` (the JSON, from which
    the Markdown is written, so the two cannot disagree), saved to ``paths``."""
    markdown: str
    data: dict
    paths: tuple[Path, ...] = ()

    def _repr_markdown_(self) -> str:
        return self.markdown

    def __str__(self) -> str:
        return self.markdown

    def __repr__(self) -> str:
        where = f", written to {', '.join(map(str, self.paths))}" if self.paths else ""
        return f"ReportCard({self.data['metric']}: {len(self.data['test_sets'])} test sets{where})"


def report_card(metric: str, results, *, baselines: Sequence[str], contract: ContractRecord,
                sets: Mapping[str, LabSet], robustness=None, settings: Mapping | None = None,
                author: str = "", out: str | Path | None = None) -> ReportCard:
    """The report card of ``metric`` (notebook 11, section 7): on every test set of ``sets`` in
    ``results`` (a ``bench`` result), its value and 95% interval beside the best of
    ``baselines`` and its paired tests; the World-FOIL and SugarCrepe accuracies per error
    type; the robustness AUCs (a ``RobustnessResult``); the contract record; the ``settings`` (mode, subsets, what
    was tuned on dev, the hypothesis); every metric's signature. Written to ``out/<metric>.md``
    and ``out/<metric>.json`` when ``out`` is given.
    """
    test = [n for n, s in sets.items() if s.role == "test" and n in results.results]
    if not test:
        raise ValueError("no test set among the results: benchmark the test sets of lab_sets "
                         "before writing the report card")
    if metric not in results.results[test[0]]:
        raise ValueError(f"{metric!r} was not benchmarked; metrics: "
                         f"{', '.join(results.results[test[0]])}")
    first = results.results[test[0]]
    foil = results.results.get("world_foil", {}).get(metric)
    hard = results.results.get("sugarcrepe_refs4", {}).get(metric)
    data = _finite({
        "metric": metric, "author": author, "signature": first[metric].signature,
        "card": make_signature("lab_report_card", n_boot=results.n_boot, seed=results.seed),
        "test_sets": {n: _card_entry(results, n, metric, baselines, sets[n].rows) for n in test},
        "world_foil_by_type": None if foil is None else foil.categories,
        "sugarcrepe_by_type": None if hard is None else hard.categories,
        "robustness_auc": robustness.auc().get(metric) if robustness is not None else None,
        "contract": contract.to_dict(),
        "settings": {str(k): v if isinstance(v, (int, float, str)) else str(v)
                     for k, v in (settings or {}).items()},
        "baseline_signatures": {b: first[b].signature for b in baselines}})
    text = _card_markdown(data)
    paths: tuple[Path, ...] = ()
    if out is not None:
        folder = Path(out)
        folder.mkdir(parents=True, exist_ok=True)
        paths = (folder / f"{metric}.md", folder / f"{metric}.json")
        write_output(paths[0], text + "\n")              # each whole or not at all
        write_output(paths[1], json.dumps(data, indent=1, allow_nan=False) + "\n")
    return ReportCard(text, data, paths)


def _card_entry(results, name: str, metric: str, baselines: Sequence[str], rows: str) -> dict:
    cells = results.results[name]
    best = max(baselines, key=lambda m: cells[m].value)
    return {"rows": rows, "statistic": cells[metric].statistic, "value": cells[metric].value,
            "ci95": list(cells[metric].ci95), "best_baseline": best,
            "baselines": {b: {"value": cells[b].value, "ci95": list(cells[b].ci95)}
                          for b in baselines},
            "paired": {a: {"difference": c.difference, "ci95": [c.low, c.high],
                           "p_value": c.p_value, "n_boot": c.n_boot}
                       for (b, m, a), c in results.comparisons.items()
                       if b == name and m == metric}}


def _row(values: Mapping[str, float], digits: int) -> list[str]:
    return ["| " + " | ".join(values) + " |", "|" + "---|" * len(values),
            "| " + " | ".join(_num(v, f".{digits}f") for v in values.values()) + " |", ""]


def _card_markdown(data: dict) -> str:
    lines = [f"# Report card: {data['metric']}", ""]
    lines += [f"author: {data['author']}", ""] if data["author"] else []
    lines += [f"signature: `{data['signature']}`", "", "## Test sets (reported once)", "",
              "| set | rows | value [95% CI] | best baseline | paired tests (x 100, one-sided) |",
              "|---|---|---|---|---|"]
    for name, e in data["test_sets"].items():
        tests = "; ".join(f"vs {a}: {_num(t['difference'], '+.1f')}, p = "
                          f"{_num(t['p_value'], '.3f')}" for a, t in e["paired"].items())
        lines.append(f"| {name} | {e['rows']} | {_num(e['value'])} [{_num(e['ci95'][0])}, "
                     f"{_num(e['ci95'][1])}] | {e['best_baseline']} "
                     f"{_num(e['baselines'][e['best_baseline']]['value'])} | {tests or '-'} |")
    numbers = [[e["value"], e["ci95"], e["baselines"][e["best_baseline"]]["value"],
                [[t["difference"], t["p_value"]] for t in e["paired"].values()]]
               for e in data["test_sets"].values()]          # the numbers the card shows
    numbers += [data[k] for k in ("world_foil_by_type", "sugarcrepe_by_type", "robustness_auc")
                if data.get(k)]
    lines += ["", "-: undefined (e.g. Kendall's tau of a metric that scores every row the same)",
              ""] if _has_none(numbers) else [""]
    if data["world_foil_by_type"]:
        lines += ["## World-FOIL accuracy by error type (x 100)", "",
                  *_row(data["world_foil_by_type"], 1)]
    if data.get("sugarcrepe_by_type"):
        lines += ["## SugarCrepe accuracy by error type (x 100, 4 references)", "",
                  *_row(data["sugarcrepe_by_type"], 1)]
    if data["robustness_auc"]:
        lines += ["## Robustness (AUC, lower = more robust)", "", *_row(data["robustness_auc"], 3)]
    record = data["contract"]
    lines += ["## Contract", "", f"{'keeps' if record['passed'] else 'BREAKS'} the contract on "
              f"{record['n']} candidates: " + "; ".join(
                  f"{'✓' if c['passed'] else '✗'} {c['name']}" for c in record["checks"]), ""]
    # another metric's record: the signatures name different metrics (their settings may differ
    # with the data, e.g. bertscore's idf:refs(<n>), so only the metric's name is compared)
    if record["signature"] is not None and \
            record["signature"].split("|")[0] != data["signature"].split("|")[0]:
        lines += [f"NOT the benchmarked metric: the contract was checked on "
                  f"`{record['signature']}`; run contract.check_contract on the metric you "
                  "benchmarked and write the card again", ""]
    lines += ["## Settings", "", *[f"- {k}: {v}" for k, v in data["settings"].items()],
              f"- card: `{data['card']}`", "", "## Baseline signatures", "",
              *[f"- {b}: `{s}`" for b, s in data["baseline_signatures"].items()]]
    return "\n".join(lines)


def _has_none(value) -> bool:
    """Whether any number of the card's results is undefined (None, written '-')."""
    if isinstance(value, Mapping):
        return any(_has_none(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_has_none(v) for v in value)
    return value is None


def _num(x, spec: str = ".1f") -> str:
    """A number of the card, or '-' where it is undefined (None: NaN in the results, e.g. the
    tau of a metric that gives every row the same score)."""
    return "-" if x is None else f"{x:{spec}}"


def _finite(value):
    """JSON-ready: numpy numbers to Python ones, NaN and infinities to None."""
    if isinstance(value, Mapping):
        return {str(k): _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    if isinstance(value, (float, np.floating)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, np.integer):
        return int(value)
    return value
