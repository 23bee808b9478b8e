"""The learned metrics on a GPU: scores equal to the CPU's, and the training speed-up.

    python benchmarks/gpu_check.py --out gpu_check.json                 # needs CUDA
    python benchmarks/gpu_check.py --out gpu_check.json --train small   # + the shipped recipes

1. **Parity**: each shipped model metric that needs nothing from the network (world-ViLT's
   UMIC / UMIC-C / ViLBERTScore with and without the image, world-CLIP's CLIPScore, the world
   LEIC critics, I2CE) scores World-FOIL's captions of ``--scenes`` scenes on the CPU and on
   ``--device``; the largest absolute difference is reported (float32 kernels differ in their
   last bits, so it is ~1e-6, not 0). The runs in docs/measurements/ used the script of commit
   62168f5, whose candidates were one true caption and one foil of 200 validation scenes.
2. **torchmetrics adapter**: ``CaptionMetric`` for CIDEr-D, BLEU-4 and I2CE moved to
   ``--device`` (as Lightning moves a metric), fed ``--captions`` COCO Karpathy-test captions in
   batches of 64 with tensor ids on the device: where its records and value live, and the
   largest difference from the functional call on the CPU (needs ``coco_karpathy_test`` fetched,
   or ``CAPKIT_DATA_DIR`` pointing at a copy). One process: a NCCL gather needs two GPUs.
3. **Training**: ``capkit train world-vilt`` and ``capkit train umic`` run on ``--device``
   (``--train tiny``: the seconds-long presets, a check that every tensor is on the device,
   each run twice so that the checkpoints' bytes are compared; ``--train small``: the shipped
   recipes, timed, to set against their one-CPU-thread times in docs/learned_metrics.md).
   Each is a subprocess, as a user runs it; its JSON output (history, seconds, checkpoint
   digest) is kept.

Each step catches its own error, so one failure does not hide the others; the JSON file says
which failed and how. Nothing here downloads anything.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

WORLD_METRICS = ["umic_world", "umic_c_world", "vilbertscore_world",
                 "vilbertscore_world_noimage", "clipscore_world",
                 "leic_world", "leic_world_no_da", "leic_world_caption", "i2ce"]


def environment(device: str) -> dict:
    import torch
    import transformers
    out = {"python": platform.python_version(), "torch": torch.__version__,
           "transformers": transformers.__version__, "cuda": torch.version.cuda,
           "device": device}
    if device.startswith("cuda"):
        out["gpu"] = torch.cuda.get_device_name(torch.device(device))
        out["tf32_defaults"] = {"cudnn": torch.backends.cudnn.allow_tf32,
                                "matmul": torch.backends.cuda.matmul.allow_tf32}
    return out


def world_inputs(n: int, seed: int = 0):
    """World-FOIL's first ``n`` scenes (``capkit.data.world.load_world_foil``): both captions
    of every (true, foil) pair as candidates, with the pair's references and its image."""
    from capkit.data.world import load_world_foil
    pairs = load_world_foil(n, seed)
    images = [pairs.image_loader(k) for k in pairs.images]
    return (list(pairs.caption_a) + list(pairs.caption_b), list(pairs.references) * 2,
            images * 2)


def parity(device: str, n: int) -> dict:
    import numpy as np

    from capkit.metrics import score
    cands, refs, images = world_inputs(n)
    out = {"n_candidates": len(cands)}
    for name in WORLD_METRICS:
        try:
            runs = {}
            for dev in ("cpu", device):
                start = time.perf_counter()
                res = score(cands, refs, [name], images=images,
                            options={name: {"device": dev}})[name]
                runs[dev] = (np.asarray(res.per_caption, dtype=float),
                             time.perf_counter() - start)
            (a, ta), (b, tb) = runs["cpu"], runs[device]
            out[name] = {"max_abs_diff": float(np.max(np.abs(a - b))),
                         "mean_cpu": float(a.mean()), f"mean_{device}": float(b.mean()),
                         "seconds_cpu": round(ta, 3), f"seconds_{device}": round(tb, 3)}
        except Exception:                     # noqa: BLE001  (reported, the others go on)
            out[name] = {"error": traceback.format_exc(limit=6)}
        print(name, out[name], flush=True)
    return out


def adapter(device: str, n: int) -> dict:
    """``capkit.torchmetrics.CaptionMetric`` moved to ``device`` (as Lightning moves it), fed
    COCO Karpathy-test captions in batches with tensor ids on the device: where its records
    live, and whether ``compute()`` equals the functional call on the CPU (bit for bit for
    the text metrics; I2CE given ``device=`` within float32 rounding)."""
    import torch

    from capkit.data import load
    from capkit.metrics import score
    from capkit.torchmetrics import CaptionMetric
    coco = load("coco_karpathy_test")
    system = coco.systems[sorted(coco.systems)[0]]
    ids = sorted(system, key=int)[:n]
    cands = {i: system[i] for i in ids}
    refs = {i: coco.references[i] for i in ids}
    out = {"n_captions": len(ids)}
    for name, options in [("cider_d", {}), ("bleu_4", {}), ("i2ce", {"device": device})]:
        try:
            metric = CaptionMetric(name, **options).to(device)
            for a in range(0, len(ids), 64):
                batch = ids[a:a + 64]
                metric.update([cands[i] for i in batch], [refs[i] for i in batch],
                              ids=torch.tensor([int(i) for i in batch], device=device))
            value = metric.compute()
            expected = score(cands, refs, [name])[name]          # on the CPU
            got = metric.scores.by_id()
            out[name] = {"records_device": str(metric.records[0].device),
                         "value_device": str(value.device),
                         "corpus_diff": abs(float(value.cpu()) - expected.corpus),
                         "max_per_caption_diff": max(abs(got[i] - v)
                                                     for i, v in expected.by_id().items())}
        except Exception:                     # noqa: BLE001  (reported, the others go on)
            out[name] = {"error": traceback.format_exc(limit=6)}
        print("adapter", name, out[name], flush=True)
    return out


def train(device: str, preset: str, workdir: Path, threads: int, runs: int = 1) -> dict:
    """Each recipe ``runs`` times (2: are the checkpoints the same bytes on this device?)."""
    out = {}
    commands = {
        "world-vilt": ["world-vilt", "--preset", preset],
        "umic": ["umic", "--backbone", "world-vilt", "--preset", preset],
    }
    for name, args in commands.items():
        digests = []
        for run in range(runs):
            cmd = [sys.executable, "-m", "capkit", "train", *args, "--seed", "0",
                   "--threads", str(threads), "--device", device, "--format", "json",
                   "--out", str(workdir / f"{name}_{preset}_{run}")]
            start = time.perf_counter()
            proc = subprocess.run(cmd, capture_output=True, text=True)
            row = {"command": " ".join(cmd[1:]), "returncode": proc.returncode,
                   "wall_seconds": round(time.perf_counter() - start, 1)}
            if proc.returncode != 0:
                row["stderr"] = proc.stderr[-4000:]
                break
            result = json.loads(proc.stdout)
            digests.append(result["sha256"])
            row.update(seconds=round(result["seconds"], 1), sha256=result["sha256"],
                       final=result["history"][-1])
        if runs > 1 and row["returncode"] == 0:
            row["same_bytes_every_run"] = len(set(digests)) == 1
        out[name] = row
        print(name, row, flush=True)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cuda")
    p.add_argument("--out", required=True, help="JSON file to write")
    p.add_argument("--scenes", type=int, default=100, help="World-FOIL scenes for the parity")
    p.add_argument("--captions", type=int, default=1000,
                   help="COCO captions for the torchmetrics adapter check")
    p.add_argument("--train", choices=["none", "tiny", "small"], default="tiny")
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args(argv)
    out_path = Path(args.out)
    if not out_path.parent.is_dir():
        p.error(f"--out: folder {out_path.parent} does not exist")
    report = {"complete": False, "environment": environment(args.device)}
    print(report["environment"], flush=True)

    def save() -> None:                 # after each step: a run cut short keeps what it did
        out_path.write_text(json.dumps(report, indent=1))

    def failures() -> list[str]:
        bad = [f"{step}/{k}" for step in ("parity", "adapter")
               for k, v in report.get(step, {}).items() if isinstance(v, dict) and "error" in v]
        return bad + [f"train {preset}/{k}" for preset, rows in report.get("train", {}).items()
                      for k, v in rows.items() if v["returncode"] != 0]

    report["parity"] = parity(args.device, args.scenes)
    save()
    report["adapter"] = adapter(args.device, args.captions)
    save()
    if args.train != "none":
        with tempfile.TemporaryDirectory() as tmp:
            report["train"] = {"tiny": train(args.device, "tiny", Path(tmp), args.threads,
                                             runs=2)}
            save()
            if args.train == "small" and not failures():
                report["train"]["small"] = train(args.device, "small", Path(tmp), args.threads)
    report["complete"] = True
    save()
    print("failed:", failures() or "none")
    return 1 if failures() else 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    raise SystemExit(main())
