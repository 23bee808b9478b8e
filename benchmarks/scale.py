"""`capkit score` at scale: 100k, 400k and 1M candidates x 5 references, against pycocoevalcap.

    .venv/bin/python benchmarks/scale.py [--sizes 100000,400000,1000000] [--coco 100000]
        [--perturb 0.2] [--seed 0] [--format json] [--keep DIR]

Inputs, built from the COCO Karpathy test set (5,000 images, 5 references each, 9 systems'
captions): candidate i is the caption of (system, image) pair i mod 44,964 (the 9 systems'
captions in order), under the distinct id str(i), with that image's references. So that the run
is not all duplicates, a fraction --perturb of the candidates and, independently, of the
references get one word appended, drawn (seeded) from the vocabulary of the references' words;
every other caption repeats one of the ~45k candidates / ~25k references.

Measured on the shared 2-core machine, fresh process each: 2026-12-06 (load ~1, int32 n-gram
tables) 100k 9.2 s / 0.70 GiB, 400k 31.3 s / 1.22 GiB, 1M 84.6 s / 2.28 GiB; earlier (load
3-4) 100k 13.6 s / 0.82 GiB (in memory 14.8 s / 1.49 GiB; pycocoevalcap 117 s / 2.64 GiB),
400k 50.0 s / 1.28 GiB, 1M 112.8 s (84 s CPU) / 2.41 GiB.

Each size is written as two JSON files ({id: caption}, {id: [refs]}) into a temporary folder and
scored by ``python -m capkit score --metrics bleu_4,rouge_l,cider_d --format json > /dev/null``
in a fresh process (in chunks of 50,000 candidates by default); at the --coco size the
in-memory path (``--chunk-size 0``) and pycocoevalcap 1.2 (its Java PTBTokenizer, Bleu(4), Rouge,
Cider) run too, each in a fresh process. Per process: wall time, CPU time (user + system: on a
shared machine, wall time also counts waiting for a core) and peak memory, the ru_maxrss of
``os.wait4`` (the largest resident set of the process or of a child it waited for: for
pycocoevalcap the tokenizer's JVM). The load average is printed beside each run. Speed is
measured here, not in the unit tests.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

METRICS = "bleu_4,rouge_l,cider_d"
REPO = Path(__file__).resolve().parents[1]      # `python -m capkit` runs this checkout

COCO_SCRIPT = """
import json, sys
from pycocoevalcap.bleu.bleu import Bleu
from pycocoevalcap.cider.cider import Cider
from pycocoevalcap.rouge.rouge import Rouge
from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer
cands = json.load(open(sys.argv[1]))
refs = json.load(open(sys.argv[2]))
tok = PTBTokenizer()
gts = tok.tokenize({k: [{"caption": c} for c in v] for k, v in refs.items()})
res = tok.tokenize({k: [{"caption": c}] for k, c in cands.items()})
b = Bleu(4).compute_score(gts, res, verbose=0)[0][3]
r = Rouge().compute_score(gts, res)[0]
c = Cider().compute_score(gts, res)[0]
print(json.dumps({"bleu_4": b, "rouge_l": r, "cider_d": c}))
"""


def build_inputs(n: int, folder: Path, *, perturb: float = 0.2, seed: int = 0
                 ) -> tuple[Path, Path]:
    """Write n candidates ({str(i): caption}) and their references as JSON; return the paths."""
    from capkit.data import load

    data = load("coco_karpathy_test")
    pairs = [(image, caption) for system in data.systems.values()
             for image, caption in system.items()]
    vocab = sorted({w for refs in data.references.values() for r in refs for w in r.split()})
    rng = random.Random(seed)
    cands, refs = {}, {}
    for i in range(n):
        image, caption = pairs[i % len(pairs)]
        if rng.random() < perturb:
            caption = f"{caption} {rng.choice(vocab)}"
        cands[str(i)] = caption
        refs[str(i)] = [f"{r} {rng.choice(vocab)}" if rng.random() < perturb else r
                        for r in data.references[image]]
    folder.mkdir(parents=True, exist_ok=True)
    c_path, r_path = folder / f"cands_{n}.json", folder / f"refs_{n}.json"
    c_path.write_text(json.dumps(cands), encoding="utf-8")
    r_path.write_text(json.dumps(refs), encoding="utf-8")
    return c_path, r_path


def run_measured(cmd: list[str]) -> tuple[float, float, float, int]:
    """Wall seconds, CPU seconds, peak resident memory (GiB) and exit status of one process."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, cwd=REPO)
    _pid, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    cpu = usage.ru_utime + usage.ru_stime
    return wall, cpu, usage.ru_maxrss / 2**20, proc.returncode   # ru_maxrss: KiB on Linux


def _load() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="100000,400000,1000000")
    parser.add_argument("--coco", type=int, default=100000, help="pycocoevalcap size (0: skip)")
    parser.add_argument("--perturb", type=float, default=0.2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--format", choices=["json", "csv", "table"], default="json")
    parser.add_argument("--keep", default=None, metavar="DIR", help="write the inputs here")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s]

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(args.keep or tmp)
        print(f"machine: {os.cpu_count()} cores; load average (1, 5, 15 min) before: {_load()}")
        print(f"{'run':<34} {'cands MB':>8} {'refs MB':>8} {'wall s':>7} {'CPU s':>7} "
              f"{'peak GiB':>8}  load after")
        for n in sorted(set(sizes) | ({args.coco} - {0})):
            c_path, r_path = build_inputs(n, folder, perturb=args.perturb, seed=args.seed)
            mb = (c_path.stat().st_size / 1e6, r_path.stat().st_size / 1e6)
            score = [sys.executable, "-m", "capkit", "score", "--candidates", str(c_path),
                     "--references", str(r_path), "--metrics", METRICS, "--format", args.format]
            runs = []
            if n in sizes:
                runs.append((f"capkit score {n:,}", score))
            if n == args.coco:
                runs.append((f"capkit score {n:,} --chunk-size 0", score + ["--chunk-size", "0"]))
                runs.append((f"pycocoevalcap {n:,}",
                             [sys.executable, "-c", COCO_SCRIPT, str(c_path), str(r_path)]))
            for name, cmd in runs:
                wall, cpu, peak, rc = run_measured(cmd)
                status = "" if rc == 0 else f"  (exit status {rc})"
                print(f"{name:<34} {mb[0]:8.1f} {mb[1]:8.1f} {wall:7.1f} {cpu:7.1f} "
                      f"{peak:8.2f}  {_load()}{status}", flush=True)
            if not args.keep:
                c_path.unlink()
                r_path.unlink()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
