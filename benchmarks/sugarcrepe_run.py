"""SugarCrepe's numbers in docs/benchmarks.md, with their record, from one run.

    .venv/bin/python benchmarks/sugarcrepe_run.py           # run; writes the record
    .venv/bin/python benchmarks/sugarcrepe_run.py --learned # + I2CE and the LEIC critics
    .venv/bin/python benchmarks/sugarcrepe_run.py --render  # the docs' tables from the record

The record is docs/measurements/sugarcrepe.json.

The run is the issue's acceptance command, as a user types it, timed as a whole process:

    capkit bench --benchmarks sugarcrepe --against cider_d --out DIR \
                 --metrics bleu_4,cider_d,meteor,rouge_l,spice_lite,bertscore

then BLEU-4 and CIDEr-D once more from pycocoevalcap 1.2's own per-caption scores (positives and
negatives as two systems keyed by pair id, PTB tokens from capkit's Java-free tokenizer), whose
accuracies and tie counts must equal capkit's. The JSON records the command, the machine (CPU
count, load average before and after), the versions and the date.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RECORD = REPO / "docs" / "measurements" / "sugarcrepe.json"
METRICS = "bleu_4,cider_d,meteor,rouge_l,spice_lite,bertscore"
LEARNED = "i2ce,leic,leic_mc,leic_no_da,leic_rc"


def _pycocoevalcap(references: str) -> dict:
    import numpy as np
    from pycocoevalcap.bleu.bleu import Bleu
    from pycocoevalcap.cider.cider import Cider

    from capkit.data import load
    from capkit.meta_eval import tied
    from capkit.text import ptb_tokenize
    data = load("sugarcrepe", references=references)
    flat = iter(ptb_tokenize([r for refs in data.references for r in refs]))
    gts = {k: [next(flat) for _ in refs] for k, refs in zip(data.ids, data.references)}
    per = {}
    for side, captions in (("a", data.caption_a), ("b", data.caption_b)):
        res = dict(zip(data.ids, ([c] for c in ptb_tokenize(captions))))
        per[("bleu_4", side)] = np.asarray(Bleu(4).compute_score(gts, res, verbose=0)[1][3])
        per[("cider_d", side)] = np.asarray(Cider().compute_score(gts, res)[1])
    out = {}
    for m in ("bleu_4", "cider_d"):
        a, b = per[(m, "a")], per[(m, "b")]
        even = tied(a, b)
        out[m] = {"accuracy": float(100 * np.where(even, 0.5, (a > b).astype(float)).mean()),
                  "n_ties": int(even.sum()), "n_exactly_equal": int((a == b).sum())}
    return out


def learned() -> dict:
    """The learned real-data metrics on both protocols, in one process: accuracy x 100 over all
    pairs, per type, and over the pairs whose image is not among their training corpus's images
    (``capkit.training.corpus``: COCO Karpathy-test captions)."""
    import numpy as np

    from capkit.data import load
    from capkit.meta_eval import benchmark, tied
    from capkit.training.corpus import training_corpus
    seen = {str(int(i)) for split in training_corpus().images["stage2"].values() for i in split}
    start = time.perf_counter()
    res = benchmark(LEARNED.split(","), "sugarcrepe", progress=False)
    wall = time.perf_counter() - start
    images = np.array([str(int(f.split(".")[0])) for f in load("sugarcrepe").images])
    unseen = ~np.isin(images, sorted(seen))
    out = {"command": f"benchmark({LEARNED.split(',')}, 'sugarcrepe')", "wall_seconds":
           round(wall, 1), "pairs_of_training_images": int((~unseen).sum()), "results": {}}
    for name, cells in res.results.items():
        for m, c in cells.items():
            pos, neg = c.scores.per_caption.reshape(2, -1)
            credit = np.where(tied(pos, neg), 0.5, (pos > neg).astype(float))
            out["results"].setdefault(name, {})[m] = {
                "value": c.value, "ci95": list(c.ci95), "categories": c.categories,
                "n_ties": c.n_ties, "value_unseen_images": float(100 * credit[unseen].mean())}
    return out


def run() -> dict:
    import capkit
    command = [sys.executable, "-m", "capkit", "bench", "--benchmarks", "sugarcrepe",
               "--metrics", METRICS, "--against", "cider_d"]
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        subprocess.run(command + ["--out", out], check=True, stdout=subprocess.DEVNULL,
                       env={**os.environ, "CAPKIT_PROGRESS": "0"})
        wall = time.perf_counter() - start
        results = json.loads((Path(out) / "results.json").read_text())
    load_after = os.getloadavg()
    reference = {refs: _pycocoevalcap(refs) for refs in ("refs4", "refs1")}
    for refs, by_metric in reference.items():
        for m, ref in by_metric.items():
            ours = results["results"][f"sugarcrepe_{refs}"][m]
            if abs(ours["value"] - ref["accuracy"]) > 1e-9 or ours["n_ties"] != ref["n_ties"]:
                raise SystemExit(f"{refs} {m}: capkit {ours['value']} ({ours['n_ties']} ties) "
                                 f"!= pycocoevalcap {ref['accuracy']} ({ref['n_ties']} ties)")
    import numpy
    import torch
    from importlib.metadata import version
    return {
        "command": "capkit bench --benchmarks sugarcrepe --metrics " + METRICS
                   + " --against cider_d --out DIR",
        "date": datetime.date.today().isoformat(),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                    "processor": platform.processor() or platform.machine(),
                    "load_average_before": [round(x, 2) for x in load_before],
                    "load_average_after": [round(x, 2) for x in load_after]},
        "versions": {"capkit": capkit.__version__, "python": platform.python_version(),
                     "numpy": numpy.__version__, "torch": torch.__version__,
                     "pycocoevalcap": version("pycocoevalcap")},
        "wall_seconds": round(wall, 1),
        "results": results,
        "pycocoevalcap": reference,
    }


def render(record: dict) -> str:
    """The markdown tables of docs/benchmarks.md: accuracy x 100 [95% CI] per type and overall."""
    lines = []
    for refs in ("refs4", "refs1"):
        cells = record["results"]["results"][f"sugarcrepe_{refs}"]
        types = list(next(iter(cells.values()))["categories"])
        lines += [f"`sugarcrepe_{refs}`:", "",
                  "| metric | all pairs | " + " | ".join(types) + " | ties |",
                  "|---|---|" + "---|" * len(types) + "---|"]
        for m, c in cells.items():
            row = [f"{c['value']:.1f} [{c['ci95'][0]:.1f}, {c['ci95'][1]:.1f}]"]
            row += [f"{c['categories'][t]:.1f} [{c['category_ci95'][t][0]:.1f}, "
                    f"{c['category_ci95'][t][1]:.1f}]" for t in types]
            lines.append(f"| {m} | " + " | ".join(row) + f" | {c['n_ties']} |")
        lines.append("")
    if "learned" in record:
        lines += ["Learned metrics (accuracy x 100 over all pairs [95% CI]; over the pairs whose "
                  "image is not among their training images):", "",
                  "| metric | refs4 | refs4, unseen images | refs1 | refs1, unseen images |",
                  "|---|---|---|---|---|"]
        cells = record["learned"]["results"]
        for m in cells["sugarcrepe_refs4"]:
            row = []
            for refs in ("sugarcrepe_refs4", "sugarcrepe_refs1"):
                c = cells[refs][m]
                row += [f"{c['value']:.1f} [{c['ci95'][0]:.1f}, {c['ci95'][1]:.1f}]",
                        f"{c['value_unseen_images']:.1f}"]
            lines.append(f"| {m} | " + " | ".join(row) + " |")
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--render", action="store_true",
                        help="print the tables from the stored record instead of running")
    parser.add_argument("--learned", action="store_true",
                        help="only (re)run the learned metrics and add them to the record")
    args = parser.parse_args(argv)
    if args.learned:
        record = json.loads(RECORD.read_text())
        record["learned"] = learned()
        RECORD.write_text(json.dumps(record, indent=1) + "\n")
    elif not args.render:
        record = run()
        RECORD.write_text(json.dumps(record, indent=1) + "\n")
        print(f"wrote {RECORD} ({record['wall_seconds']} s)")
    print(render(json.loads(RECORD.read_text())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
