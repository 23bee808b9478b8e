"""`capkit train`: train a learned metric's model (`capkit train i2ce`, `capkit train world-clip`).

    capkit train i2ce --preset small --out capkit/models/weights/i2ce_small.safetensors
    capkit train world-clip --preset small --out capkit/models/weights/world_clip
    capkit train world-captioner --preset small --out capkit/models/weights

are the commands that made the checkpoints shipped with capkit (one CPU thread, seed 0; the same
command gives the same files, byte for byte, on the same machine). ``--workdir`` keeps the
per-epoch training state; ``--resume`` continues an interrupted run from it.
"""
from __future__ import annotations

import argparse
import json
import time

from capkit.commands.args import training_bars, training_options


def _epochs(text: str) -> tuple[int, int]:
    try:
        first, second = (int(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"give the epochs of the two stages as 'N,M' (e.g. "
                                         f"4,3), got {text!r}") from None
    if first < 0 or second < 0 or first + second == 0:
        raise argparse.ArgumentTypeError(f"epochs must be >= 0 and not both 0, got {text!r}")
    return first, second


def register(sub) -> None:
    p = sub.add_parser("train", help="train a learned metric's model and write its checkpoint")
    models = p.add_subparsers(dest="model", required=True)
    q = models.add_parser("i2ce", help="the I2CE sentence auto-encoder (two stages, "
                          "benchmark images held out)")
    q.add_argument("--preset", choices=["tiny", "small", "paper"], default="small",
                   help="sizes and schedule: tiny ~1 min, small ~15 min (shipped), paper hours")
    q.add_argument("--out", default=None,
                   help="checkpoint to write (.safetensors; default i2ce_<preset>.safetensors)")
    q.add_argument("--epochs", type=_epochs, default=None,
                   help="epochs of stage 1 and stage 2, e.g. 4,3 (default: the preset's)")
    training_options(q, run, workdir=True, glove=True)
    w = models.add_parser("world-clip", help="world-CLIP: a small CLIP with a convolutional stem, "
                          "pre-trained on the scenes' object annotations, then CLIP's loss with "
                          "foils (train split; benchmark scenes never seen)")
    w.add_argument("--preset", choices=["tiny", "small"], default="small",
                   help="sizes and schedule: tiny seconds (tests), small ~13 min on one "
                        "thread (shipped)")
    w.add_argument("--out", default=None,
                   help="folder to write (default world_clip_<preset>)")
    training_options(w, run_world_clip)
    c = models.add_parser("world-captioner", help="the world captioner (CNN + GRU), saved at "
                          "several steps: world systems from weak to good (train split only)")
    c.add_argument("--preset", choices=["tiny", "small"], default="small",
                   help="sizes and schedule: tiny seconds (tests), small a few minutes (shipped)")
    c.add_argument("--out", default=None, help="folder that receives one checkpoint per saved "
                   "step (default world_captioner_<preset>; capkit/models/weights ships them)")
    training_options(c, run_world_captioner)
    from capkit.commands.train_leic import add_parser as add_leic
    add_leic(models)
    from capkit.commands.train_vilt import register_vilt
    register_vilt(models)


def run(args: argparse.Namespace) -> int:
    import dataclasses

    from capkit.commands.args import output_file, workdir
    out = output_file(args.out or f"i2ce_{args.preset}.safetensors")   # before any training
    workdir(args)

    from capkit.report import format_table
    from capkit.training.i2ce import SCHEDULES, train_i2ce
    schedule = SCHEDULES[args.preset]
    if args.epochs is not None:
        schedule = dataclasses.replace(schedule, epochs=args.epochs)
    start = time.perf_counter()
    result = train_i2ce(args.preset, out=out, workdir=args.workdir, seed=args.seed,
                        threads=args.threads, schedule=schedule, glove=args.glove,
                        resume=args.resume, progress=training_bars(args))
    seconds = time.perf_counter() - start
    if args.format == "json":
        print(json.dumps({"checkpoint": str(result.path), "sha256": result.sha256,
                          "seconds": seconds, "history": result.history}, indent=1))
        return 0
    keys = ["stage", "epoch", "train_loss", "val_loss", "token_accuracy", "exact_match"]
    rows = [[h[k] for k in keys] for h in result.history]
    print(format_table(keys, rows, args.format, digits=4))
    if args.format != "csv":
        final = result.final
        print(f"\nheld-out reconstruction ({final['stage']}): token accuracy "
              f"{final['token_accuracy']:.3f}, exact match {final['exact_match']:.3f}")
        print(f"checkpoint: {result.path} (sha256 {result.sha256}), {seconds:.0f} s")
    return 0


def run_world_clip(args: argparse.Namespace) -> int:
    from capkit.commands.args import checkpoint_dir
    from capkit.models.world_clip import FILES
    out = checkpoint_dir(args.out or f"world_clip_{args.preset}", FILES)   # before any training

    from capkit.report import format_table
    from capkit.training.world_clip import train_world_clip
    start = time.perf_counter()
    result = train_world_clip(args.preset, out=out, seed=args.seed, threads=args.threads,
                              progress=training_bars(args))
    seconds = time.perf_counter() - start
    if args.format == "json":
        print(json.dumps({"checkpoint": str(result.path), "sha256": result.sha256,
                          "seconds": seconds, "history": result.history}, indent=1))
        return 0
    keys = ["stage", "epoch", "train_loss", "probe_shape", "probe_colour", "i2t_r1", "t2i_r1",
            "foil_all"]
    print(format_table(keys, [[h.get(k, float("nan")) for k in keys] for h in result.history],
                       args.format, digits=4))
    if args.format != "csv":
        final = result.final
        print(f"\nheld-out (val): shape read at each object's patch {final['probe_shape']:.3f}; "
              f"recall@1 image->text {final['i2t_r1']:.3f}, text->image {final['t2i_r1']:.3f}; "
              f"foil accuracy {final['foil_all']:.3f}")
        print(f"checkpoint: {result.path} (sha256 {result.sha256}), {seconds:.0f} s")
    return 0


def run_world_captioner(args: argparse.Namespace) -> int:
    from capkit.commands.args import output_dir
    out = output_dir(args.out or f"world_captioner_{args.preset}", "--out")   # before training

    from capkit.report import format_table
    from capkit.training.world_captioner import train_world_captioner
    start = time.perf_counter()
    result = train_world_captioner(args.preset, out=out, seed=args.seed, threads=args.threads,
                                   progress=training_bars(args))
    seconds = time.perf_counter() - start
    files = {step: {"checkpoint": str(path), "sha256": result.captioners[step].meta["sha256"]}
             for step, path in result.paths.items()}
    if args.format == "json":
        print(json.dumps({"checkpoints": files, "seconds": seconds, "history": result.history},
                         indent=1))
        return 0
    keys = ["step", "train_loss", "grammatical", "true", "coverage", "rating"]
    print(format_table(keys, [[h[k] for k in keys] for h in result.history], args.format,
                      digits=3))
    if args.format != "csv":
        print("\nheld-out (val) greedy captions, checked: rates of grammatical and true captions, "
              "mean coverage and rubric rating (WORLD numbers)")
        for step, f in files.items():
            print(f"step {step}: {f['checkpoint']} (sha256 {f['sha256']})")
        print(f"{seconds:.0f} s")
    return 0
