"""`capkit systems`: corpus scores of every system of a dataset, ranked."""
from __future__ import annotations

import argparse
import sys

from capkit.commands.args import metric_list
from capkit.report import format_table


def register(sub) -> None:
    from capkit.metrics import suite
    p = sub.add_parser("systems", help="corpus scores of every system of a dataset")
    p.add_argument("--dataset", default="coco_karpathy_test",
                   choices=["coco_karpathy_test", "flickr30k_test"])
    p.add_argument("--metrics", type=metric_list, default=list(suite("systems")))
    p.add_argument("--format", choices=["table", "markdown", "csv"], default="table")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from capkit.data import load
    from capkit.systems import score_systems

    from capkit.metrics import resolve
    from capkit.metrics.registry import seen_data_note
    specs = resolve(args.metrics)
    image_metrics = [name for name, spec in specs.items() if spec.images or spec.scenes]
    if image_metrics:
        raise ValueError(f"{', '.join(image_metrics)} score captions against images, which "
                         f"{args.dataset} does not ship: score one system's captions with "
                         "`capkit score --images DIR` instead")
    note = seen_data_note(specs, args.dataset)
    if note:
        print(f"capkit systems: note: {note}", file=sys.stderr)
    results = score_systems(load(args.dataset), args.metrics)
    rank_by = "cider_d" if "cider_d" in args.metrics else args.metrics[-1]
    order = sorted(results, key=lambda s: -results[s][rank_by].corpus)
    rows = [[s, len(results[s][rank_by]), *(results[s][m].corpus for m in args.metrics)]
            for s in order]
    title = f"{args.dataset}: corpus scores of {len(results)} systems, ranked by {rank_by}"
    sigs = {m: results[order[0]][m].signature for m in args.metrics}
    if args.format == "csv":        # stdout is the CSV alone; the settings are its last row
        print(title, file=sys.stderr)
        rows.append(["<signature>", "", *sigs.values()])
        print(format_table(["system", "n", *args.metrics], rows, "csv"))
        return 0
    print(title)
    print(format_table(["system", "n", *args.metrics], rows, args.format))
    print("\nsignatures:\n" + "\n".join(f"  {m}: {s}" for m, s in sigs.items()))
    return 0
