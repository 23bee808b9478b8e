"""`capkit train world-backbone`: the world vision backbone (convolutional stem, pre-trained on
the scenes' object annotations, then CLIP's contrastive loss with one-word foils).

    capkit train world-backbone --preset small --out world_backbone_small

(one CPU thread, seed 0; the same command gives the same files, byte for byte, on the same
machine). Not yet shipped: docs/learned_metrics.md, "A world backbone that keeps shapes:
measured on validation", says what it reaches and how long it takes.
"""
from __future__ import annotations

import argparse
import json
import time

from capkit.commands.args import training_bars, training_options


def register_backbone(models) -> None:
    b = models.add_parser("world-backbone", help="the world vision backbone: a CLIPModel with a "
                          "convolutional stem, pre-trained on object annotations, then "
                          "contrastive with foils (train split; val for the numbers)")
    b.add_argument("--preset", choices=["tiny", "small"], default="small",
                   help="sizes and schedule: tiny seconds (tests), small about 20 min on one "
                   "thread")
    b.add_argument("--out", default=None, help="folder to write (default "
                   "world_backbone_<preset>)")
    training_options(b, run_world_backbone)


def run_world_backbone(args: argparse.Namespace) -> int:
    from capkit.commands.args import checkpoint_dir
    from capkit.models.world_backbone import FILES
    out = checkpoint_dir(args.out or f"world_backbone_{args.preset}", FILES)  # before training

    from capkit.report import format_table
    from capkit.training.world_backbone import train_world_backbone
    start = time.perf_counter()
    result = train_world_backbone(args.preset, out=out, seed=args.seed, threads=args.threads,
                                  progress=training_bars(args))
    seconds = time.perf_counter() - start
    if args.format == "json":
        print(json.dumps({"checkpoint": str(result.path), "sha256": result.sha256,
                          "seconds": seconds, "history": result.history}, indent=1))
        return 0
    keys = ["stage", "epoch", "train_loss", "probe_shape", "probe_colour", "probe_size",
            "foil_all"]
    print(format_table(keys, [[h.get(k, float("nan")) for k in keys] for h in result.history],
                       args.format, digits=4))
    if args.format != "csv":
        final = result.final
        print(f"\nheld-out (val): shape read at each object's patch {final['probe_shape']:.3f}; "
              f"foil accuracy {final.get('foil_all', float('nan')):.3f}")
        print(f"checkpoint: {result.path} (sha256 {result.sha256}), {seconds:.0f} s")
    return 0
