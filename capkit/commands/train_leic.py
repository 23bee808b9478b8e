"""`capkit train leic`: train a LEIC critic (Cui et al. 2018) and write its checkpoint.

    capkit train leic --variant leic --out capkit/models/weights/leic_small.safetensors
    capkit train leic --variant leic_no_da --out capkit/models/weights/leic_small_no_da.safetensors

are the commands that made the shipped checkpoints (one CPU thread, seed 0, fold 0; the same
command gives the same file, byte for byte, on the same machine). Registered by
``capkit.commands.train``.
"""
from __future__ import annotations

import argparse
import json
import time

from capkit.commands.args import integer, training_bars, training_options


def _fold(text: str):
    if text == "both":
        return None
    if text in ("0", "1"):
        return int(text)
    raise argparse.ArgumentTypeError(f"--fold is 0, 1 or both, got {text!r}")


def add_parser(models) -> None:
    q = models.add_parser("leic", help="the LEIC critic of Cui et al. 2018 (caption context; "
                          "benchmark images held out)")
    q.add_argument("--variant", choices=["leic", "leic_mc", "leic_no_da", "leic_rc"],
                   default="leic",
                   help="leic: machine + RC/WP/RW negatives; leic_mc: also Monte Carlo samples "
                   "of a caption language model (the paper's full set); leic_no_da: machine "
                   "captions only; leic_rc: RC only (the paper's Flickr8k critic)")
    q.add_argument("--preset", choices=["tiny", "small", "paper"], default="small",
                   help="sizes and schedule: tiny seconds, small a few minutes (shipped), paper "
                   "the code's sizes and 30 epochs (hours)")
    q.add_argument("--combine", choices=["concat", "cbp", "mlp"], default=None,
                   help="combination head (default: the preset's, mlp)")
    q.add_argument("--context", choices=["caption", "image", "both"], default=None,
                   help="what the critic reads beside the candidate: a reference caption, the "
                   "image, or both (default: caption; with --world, both); image needs --world")
    q.add_argument("--fold", type=_fold, default=0,
                   help="half of the COCO images to train on: 0, 1 or both (default 0)")
    q.add_argument("--world", action="store_true",
                   help="train in capkit's world: image (world-CLIP) + caption context, world "
                   "systems as machine captions, train-split scenes")
    q.add_argument("--epochs", type=integer(1), default=None, help="default: the preset's")
    q.add_argument("--out", default=None,
                   help="checkpoint to write (default <variant>_<preset>.safetensors)")
    training_options(q, run, workdir=True, glove=True)


def run(args: argparse.Namespace) -> int:
    import dataclasses

    from capkit.commands.args import output_file, workdir
    from capkit.training.leic import checkpoint_name
    name = checkpoint_name(args.variant, args.world, args.context)
    out = output_file(args.out or f"{name}_{args.preset}.safetensors")
    workdir(args)
    if args.context not in (None, "caption") and not args.world:
        raise ValueError(f"--context {args.context} reads the image, which real-data critics do "
                         "not have offline; add --world, or use --context caption")
    model_config = {k: v for k, v in (("combine", args.combine), ("context", args.context))
                    if v is not None}

    from capkit.report import format_table
    from capkit.training.leic import default_schedule, train_leic
    schedule = default_schedule(args.variant, args.preset, args.world)
    if args.epochs is not None:
        schedule = dataclasses.replace(schedule, epochs=args.epochs)
    start = time.perf_counter()
    result = train_leic(args.variant, args.preset, out=out, workdir=args.workdir,
                        seed=args.seed, fold=args.fold, threads=args.threads,
                        schedule=schedule, glove=args.glove, resume=args.resume,
                        world=args.world,
                        model_config=model_config or None,
                        progress=training_bars(args))
    seconds = time.perf_counter() - start
    if args.format == "json":
        print(json.dumps({"checkpoint": str(result.path), "sha256": result.sha256,
                          "seconds": seconds, "history": result.history}, indent=1))
        return 0
    keys = [k for k in ("epoch", "train_loss", "val_loss", "val_accuracy", "p_human_human",
                        "p_human_system", "p_human_MC", "p_human_RC", "p_human_WP", "p_human_RW")
            if k in result.final]
    print(format_table(keys, [[h.get(k) for k in keys] for h in result.history], args.format,
                       digits=4))
    if args.format != "csv":
        print(f"\ncheckpoint: {result.path} (sha256 {result.sha256}), {seconds:.0f} s")
    return 0
