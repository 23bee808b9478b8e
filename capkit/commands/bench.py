"""`capkit bench`: every (metric, benchmark) pair with its exact protocol, a table and figures."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from capkit.commands.args import metric_list, output_dir, resamples, seed_option


def _benchmark_list(text: str) -> list[str]:
    from capkit.meta_eval import ALL, expand
    names = list(ALL) if text == "all" else [b.strip() for b in text.split(",") if b.strip()]
    names = expand(names)
    if not names:
        raise argparse.ArgumentTypeError("give at least one benchmark name, or 'all'")
    return names


def register(sub) -> None:
    from capkit.metrics import suite
    default = suite("bench")
    p = sub.add_parser("bench", help="correlation of metrics with human judgments, with CIs")
    p.add_argument("--metrics", type=metric_list, default=list(default),
                   help="comma-separated names or module:function (default: "
                        + ",".join(default) + "; `capkit metrics` lists them all)")
    p.add_argument("--benchmarks", type=_benchmark_list, default="all",
                   help="comma-separated, or 'all': flickr8k_expert, flickr8k_cf, composite, "
                        "pascal50s, thumb, nebula, capeval1k; generated from capkit.world (not in "
                        "'all'): world_expert, world_foil, world_systems; validation, for choices "
                        "only (not in 'all'): world_foil_val; hard negatives (not in 'all'): "
                        "sugarcrepe (= sugarcrepe_refs4,sugarcrepe_refs1)")
    p.add_argument("--format", choices=["table", "markdown", "csv", "json"], default="table")
    p.add_argument("--out", type=Path, help="folder for results.json and the figures")
    p.add_argument("--n-boot", type=resamples, default=None,
                   help="bootstrap resamples, at least 2 (default 1000)")
    seed_option(p)
    p.add_argument("--against", metavar="METRIC", default=None,
                   help="paired bootstrap test of every other metric against this one (e.g. "
                        "cider_d), on the same resamples; added to --metrics if missing")
    p.add_argument("--images", action="append", default=[], metavar="BENCHMARK=DIR",
                   help="folder of a benchmark's images, for image metrics such as clipscore "
                        "(repeatable; sugarcrepe=DIR: COCO val2017's images); without it their "
                        "rows are skipped and listed")
    p.add_argument("--record", default=None, metavar="FILE",
                   help="also write the results as a JSON record (the command, machine, "
                        "versions, date, wall time and every value), e.g. "
                        "docs/measurements/bench.json")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import time

    from capkit.meta_eval import DEFAULT_N_BOOT, benchmark

    start = time.perf_counter()
    out = None if args.out is None else output_dir(args.out)      # before minutes of work
    if args.record:
        from capkit.commands.args import output_file
        output_file(args.record, "--record")       # checked before the minutes of scoring
    benchmarks = args.benchmarks if isinstance(args.benchmarks, list) \
        else _benchmark_list(args.benchmarks)
    n_boot = DEFAULT_N_BOOT if args.n_boot is None else args.n_boot
    images = {}
    for item in args.images:
        name, sep, folder = item.partition("=")
        if not sep or not folder:
            raise ValueError(f"--images takes BENCHMARK=DIR, e.g. thumb=~/coco/val2014; got {item!r}")
        images[name] = folder                      # (~ is expanded by the harness)
    metrics = list(args.metrics)
    if args.against is not None and args.against not in metrics:
        metrics.append(args.against)
    if metrics == [args.against]:
        raise ValueError(f"--against {args.against} is the only metric: there is nothing to "
                         "compare it with; add others to --metrics")
    results = benchmark(metrics, benchmarks, n_boot=n_boot, seed=args.seed, progress="auto",
                        images=images, against=args.against)
    for b, m, why in results.skipped:
        print(f"skipped {m} on {b}: {why}", file=sys.stderr)
    if args.format == "json":
        print(results.to_json())
    else:
        print(results.table(args.format))
        print(f"\nvalues x 100; CI = 95% percentile bootstrap over images ({results.n_boot} "
              f"resamples, seed {results.seed}); published = the literature's number where one "
              "exists")
        print("protocols:")
        for b, p in results.protocols.items():
            print(f"  {b}: {p.statistic}; rows: {p.rows}; references: {p.references}")
        parts = [c for c in results.cells() if c.categories]
        if parts:
            print("categories (x 100):")
            for c in parts:
                ci = {k: f" [{lo:.1f}, {hi:.1f}]" for k, (lo, hi) in c.category_ci95.items()}
                print(f"  {c.benchmark} / {c.metric}: " + ", ".join(
                    f"{k} {v:.1f}{ci.get(k, '')}" for k, v in c.categories.items())
                    + (f"; {c.n_ties} ties" if c.category_ci95 else ""))
        if results.comparisons:
            print(f"paired tests against {args.against} (difference x 100, 95% CI, one-sided p "
                  f"for H1: the metric agrees better; paired bootstrap over images):")
            print(results.comparison_table(args.format))
        sigs = {cell.metric: cell.signature for cell in results.cells()}
        print("signatures:\n" + "\n".join(f"  {m}: {s}" for m, s in sigs.items()))
    if out is not None:
        from capkit.cache_files import write_output
        from capkit.plots.bench import save_figures
        # results.json says the run is complete, so it goes last: first the old one goes (a
        # failure below must not leave it beside new figures), then every figure, each atomic.
        # An earlier run's bars of benchmarks this run does not have go too: they would sit
        # beside these results as if they were theirs.
        earlier = (out / "results.json").exists()
        (out / "results.json").unlink(missing_ok=True)
        paths = save_figures(results, out)
        if earlier:
            ours = {Path(p).name for p in paths}
            for stale in out.glob("bars_*.png"):
                if stale.name not in ours:
                    stale.unlink()
        write_output(out / "results.json", results.to_json())
        print(f"wrote {out / 'results.json'} and {len(paths)} figures to {out}", file=sys.stderr)
    if args.record:
        import json

        from capkit.cache_files import write_output
        from capkit.speed import measurement_record
        record = measurement_record(args, results.to_dict(), packages=("scipy", "torch"))
        record["wall_seconds"] = round(time.perf_counter() - start, 1)
        write_output(args.record, json.dumps(record, indent=1) + "\n")
        print(f"wrote the record {args.record}", file=sys.stderr)
    return 0
