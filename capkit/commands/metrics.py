"""`capkit metrics`: the registry as a table (name, needs, offline or not, range, suites, paper)."""
from __future__ import annotations

import argparse

from capkit.report import format_table


def register(sub) -> None:
    p = sub.add_parser("metrics", help="list every registered metric and what it needs")
    p.add_argument("--suite", default=None, help="only one suite: classic, systems or bench")
    p.add_argument("--format", choices=["table", "markdown", "csv"], default="table")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from capkit.metrics import registered
    rows = []
    for spec in registered(args.suite):
        offline = "yes" if spec.offline else f"no: {spec.downloads}"
        low, high = spec.score_range
        rows.append([spec.name, spec.needs, offline, f"[{low:g}, {high:g}]",
                     ",".join(sorted(spec.suites)) or "-", spec.paper])
    print(format_table(["metric", "needs", "offline", "range", "suites", "paper"], rows,
                       args.format, left=6))
    if args.format == "table":
        print("\nyour own metric: capkit.metrics.register(fn, name=...) in Python, or "
              "--metrics package.module:function on the command line")
    return 0
