"""Published meta-evaluation numbers (``published.json``; each entry names the paper or README it comes from)."""
from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from importlib import resources


@dataclass(frozen=True)
class Published:
    benchmark: str
    metric: str
    value: float | None              # x 100; the longer number of the source when it gives one
    source: str                      # where the number comes from (paper, table, or capkit's notes)
    label: str                       # the metric as the published table names it
    categories: dict[str, float] = field(default_factory=dict)   # PASCAL-50S per category
    note: str = ""                   # what is known about a gap between it and capkit's number


@functools.lru_cache(maxsize=1)
def load_published() -> dict:
    """The whole ``published.json``: benchmarks, other protocols, COCO corpus scores."""
    text = resources.files("capkit.meta_eval").joinpath("published.json").read_text("utf-8")
    return json.loads(text)


def published(benchmark: str, metric: str) -> Published | None:
    """The published number for ``metric`` on ``benchmark`` under capkit's protocol, or None."""
    entry = load_published()["benchmarks"].get(benchmark, {}).get(metric)
    if entry is None:
        return None
    value = entry.get("precise", entry["value"])
    return Published(benchmark, metric, value, entry["source"], entry["label"],
                     dict(entry.get("categories", {})), entry.get("note", ""))
