"""The LEIC critics' heads and fake sets compared (real data): docs/learned_metrics.md's two
tables "Heads and fake sets compared" and "What the critics learned", with their record.

    .venv/bin/python benchmarks/leic_heads.py --rc-both PATH   # run; writes the record
    .venv/bin/python benchmarks/leic_heads.py --render         # the docs' tables from the record

The run scores every shipped real-data critic (`leic`, its CBP and concatenation heads,
`leic_mc`, `leic_rc`) and CIDEr-D on the seven human-judgment benchmarks with 200 resamples
(seed 0), plus the RC critic trained on both COCO folds, which does not ship: make it first with

    capkit train leic --variant leic_rc --preset small --seed 0 --fold both --threads 1 --out PATH

It also reads, from every shipped critic's checkpoint, its training command and the held-out
mean P(human) of each kind of caption at its last epoch (the paper's Fig. 5). The record is
docs/measurements/leic_heads.json: the command, machine, versions, date, wall time and results.
"""
from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import platform
import sys
import time
from functools import partial
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RECORD = REPO / "docs" / "measurements" / "leic_heads.json"
N_BOOT = 200
# (row label, checkpoint, what the recipe is): the benchmark table's rows, in order
CRITICS = [
    ("`leic`", "leic", "machine + RC/WP/RW fakes, MLP head"),
    ("CBP head", "leic_cbp", "Count Sketch, the paper's Fig. 2"),
    ("concatenation head", "leic_concat", ""),
    ("`leic_mc`", "leic_mc", "+ Monte Carlo fakes"),
    ("`leic_rc`", "leic_rc", "RC fakes only, the paper's Flickr8k recipe"),
    ("RC only, more data", "rc_both", "both COCO folds"),
]
# the learned-fakes table: (critic, head) per shipped checkpoint
LEARNED = [("leic", "leic"), ("leic_cbp", "leic"), ("leic_concat", "leic"),
           ("leic_mc", "leic_mc"), ("leic_no_da", "leic_no_da"), ("leic_rc", "leic_rc")]
KINDS = [("human", "human"), ("machine", "system"), ("MC", "MC"), ("RC", "RC"), ("WP", "WP"),
         ("RW", "RW")]
HEADS = {"mlp": "MLP", "cbp": "CBP", "concat": "concatenation"}
# options every critic was trained with (said once, above the table), and where it was written
SHARED_OPTIONS = ("--preset", "--seed", "--threads", "--out")


def _training(path: Path) -> dict:
    """A checkpoint's training command, head and last epoch, from its metadata."""
    from safetensors import safe_open
    with safe_open(str(path), "pt") as f:
        meta = json.loads(f.metadata()["leic"])
    last = meta["history"][-1]
    return {"command": meta["command"], "combine": meta["config"]["combine"],
            "epoch": last["epoch"],
            "p_human": {k.removeprefix("p_human_"): v for k, v in last.items()
                        if k.startswith("p_human_")},
            "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}


def run(rc_both: Path) -> dict:
    from capkit import __version__
    from capkit.meta_eval import ALL, benchmark
    from capkit.metrics.leic import leic
    from capkit.models.leic_critic import shipped_path
    start = time.perf_counter()
    paths = {name: shipped_path(name) for _, name, _ in CRITICS if name != "rc_both"}
    paths["rc_both"] = rc_both
    paths["leic_no_da"] = shipped_path("leic_no_da")
    metrics = {name: partial(leic, model=str(paths[name])) for _, name, _ in CRITICS}
    metrics["cider_d"] = "cider_d"
    results = benchmark(metrics, ALL, n_boot=N_BOOT, seed=0, progress=False)
    cells = {b: {m: {"value": c.value, "ci95": list(c.ci95), "statistic": c.statistic}
                 for m, c in by.items()} for b, by in results.results.items()}
    training = {name: _training(paths[name]) for name in dict.fromkeys(
        [n for _, n, _ in CRITICS] + [n for n, _ in LEARNED])}
    import numpy
    import torch
    return {"command": "python benchmarks/leic_heads.py --rc-both PATH",
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "machine": {"platform": platform.platform(), "processor": platform.machine(),
                        "cpus": os.cpu_count(), "load_average": list(os.getloadavg())},
            "versions": {"python": platform.python_version(), "capkit": __version__,
                         "numpy": numpy.__version__, "torch": torch.__version__},
            "wall_seconds": round(time.perf_counter() - start, 1),
            "n_boot": N_BOOT, "seed": 0, "results": cells, "training": training}


def render(record: dict) -> str:
    """The two Markdown tables of docs/learned_metrics.md."""
    cells, training = record["results"], record["training"]
    names = {"flickr8k_expert": "Expert tau-c", "flickr8k_cf": "CF tau-b",
             "composite": "Composite", "pascal50s": "PASCAL-50S", "thumb": "THumB",
             "nebula": "Nebula", "capeval1k": "CapEval1k"}
    lines = ["| critic | `capkit train leic ...` | " + " | ".join(names[b] for b in cells) + " |",
             "|---|---|" + "---|" * len(cells)]
    rows = [(label, name, what) for label, name, what in CRITICS] + [("CIDEr-D", "cider_d", "")]
    for label, name, what in rows:
        if name == "cider_d":
            how = "(no training)"
        else:
            words = training[name]["command"].removeprefix("capkit train leic ").split()
            pairs = zip(words[::2], words[1::2])     # every option takes one value
            options = " ".join(f"{k} {v}" for k, v in pairs if k not in SHARED_OPTIONS
                               and (k, v) != ("--fold", "0"))
            how = f"`{options}`" + (f": {what}" if what else "")
        lines.append(f"| {label} | {how} | " + " | ".join(
            f"{cells[b][name]['value']:.1f}" for b in cells) + " |")
    lines += ["", "| critic | head | " + " | ".join(k for k, _ in KINDS) + " |",
              "|---|---|" + "---|" * len(KINDS)]
    for name, critic in LEARNED:
        t = training[name]
        lines.append(f"| `{critic}` | {HEADS[t['combine']]} | " + " | ".join(
            f"{t['p_human'][key]:.3f}" if key in t["p_human"] else "-" for _, key in KINDS)
            + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--render", action="store_true",
                        help="print the tables from the stored record instead of running")
    parser.add_argument("--rc-both", type=Path,
                        help="the RC critic trained on both COCO folds (see above)")
    args = parser.parse_args(argv)
    if not args.render:
        if args.rc_both is None or not args.rc_both.is_file():
            parser.error("--rc-both PATH: the checkpoint of `capkit train leic --variant "
                         "leic_rc --fold both` (see --help)")
        record = run(args.rc_both)
        RECORD.write_text(json.dumps(record, indent=1) + "\n")
        print(f"wrote {RECORD} ({record['wall_seconds']} s)", file=sys.stderr)
    print(render(json.loads(RECORD.read_text())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
