"""`capkit train world-vilt` and `capkit train umic`: the single-stream image-text models.

    capkit train world-vilt --preset small --out capkit/models/weights/world_vilt
    capkit train umic --backbone world-vilt --out capkit/models/weights/umic_world

are the commands that made the shipped checkpoints (one CPU thread, seed 0; the same command
gives the same files, byte for byte, on the same machine). On a real backbone::

    capkit train umic --backbone dandelin/vilt-b32-finetuned-coco \\
        --references coco_train_refs.json --images train2014/ --out umic_vilt_coco

with ``coco_train_refs.json`` = {image_id: [its five captions]} (the Karpathy train split) and
``train2014/<image_id>.jpg`` (or ``COCO_train2014_<12 digits>.jpg``); use a GPU (``--device``).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import time

from capkit.commands.args import training_bars, training_options


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value < 1:                               # (NaN fails this too)
        raise argparse.ArgumentTypeError(f"must be a number between 0 and 1 (exclusive), got "
                                         f"{text}")
    return value


def register_vilt(models) -> None:
    v = models.add_parser("world-vilt", help="world-ViLT: a small single-stream image-text "
                          "transformer pre-trained (ITM + MLM + replaced-word detection) on world "
                          "training scenes")
    v.add_argument("--preset", choices=["tiny", "small"], default="small",
                   help="sizes and schedule: tiny seconds (tests); small (shipped) 12-20 min on "
                   "one thread, starting from the shipped world-CLIP's vision tower")
    v.add_argument("--out", default=None, help="folder to write (default world_vilt_<preset>)")
    v.add_argument("--replace-pool", default=None, choices=["same-tag", "same-tag+relation", "any"],
                   help="where replaced-word detection draws a keyword's replacement (default: "
                        "the preset's); same-tag+relation also swaps relation words for ones "
                        "that make the relation false")
    v.add_argument("--device", default=None, help="cpu (default), cuda, ...; the same batches "
                   "on any device, weights equal to the CPU run's up to float32 rounding")
    training_options(v, run_world_vilt)
    u = models.add_parser(
        "umic", help="UMIC: contrastive fine-tuning of a matching head "
        "(world data, or --references / --images)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="COCO on a real backbone (a GPU helps):\n"
               "  1. references: JSON {image_id: [captions]}, e.g. from captions_train2014.json\n"
               "     (group its 'annotations' by image_id; ids as strings);\n"
               "  2. images: the train2014 folder as unpacked (COCO_train2014_<12 digits>.jpg,\n"
               "     or COCO 2017's <12 digits>.jpg, or <image_id>.jpg);\n"
               "  3. capkit train umic --backbone dandelin/vilt-b32-finetuned-coco \\\n"
               "       --references refs.json --images train2014/ --device cuda --out umic_coco\n"
               "     (10% of the images are held out for validation; or --val-references)\n"
               "The negatives (random, hard, keyword, shuffle/drop, repeat/remove) are drawn from\n"
               "the given references; hard negatives: captions of the 3 images whose references are\n"
               "closest in tf-idf (capkit.transforms.neighbours).")
    u.add_argument("--backbone", default="world-vilt",
                   help="world-vilt (shipped), a folder, or a ViLT hub name such as "
                   "dandelin/vilt-b32-finetuned-coco")
    u.add_argument("--preset", choices=["tiny", "small"], default="small")
    u.add_argument("--out", default=None, help="folder to write (default umic_<preset>)")
    u.add_argument("--references", default=None,
                   help="JSON {image_id: [captions]} to train on instead of the world")
    u.add_argument("--images", default=None, help="folder of <image_id>.jpg (with --references)")
    u.add_argument("--val-references", default=None, metavar="JSON",
                   help="validation captions {image_id: [captions]} (images in --images); the "
                   "kept epoch has the lowest loss there. Default: --val-fraction of the images "
                   "of --references, held out from training")
    u.add_argument("--val-fraction", type=_fraction, default=0.1,
                   help="share of --references' images held out for validation when no "
                   "--val-references is given (seeded by --seed; default 0.1)")
    u.add_argument("--margin", type=_fraction, default=None,
                   help="the hinge loss's margin M in max(0, M + s_neg - s_pos) (default 0.2, "
                   "UMIC's)")
    u.add_argument("--device", default=None, help="cpu (default), cuda, ...")
    training_options(u, run_umic)


def _print(result, seconds: float, keys: list[str], fmt: str, summary: str) -> None:
    from capkit.report import format_table
    if fmt == "json":
        print(json.dumps({"checkpoint": str(result.path), "sha256": result.sha256,
                          "seconds": seconds, "history": result.history}, indent=1))
        return
    print(format_table(keys, [[h[k] for k in keys] for h in result.history], fmt, digits=4))
    if fmt != "csv":
        print(f"\n{summary}\ncheckpoint: {result.path} (sha256 {result.sha256}), {seconds:.0f} s")


def run_world_vilt(args: argparse.Namespace) -> int:
    from capkit.commands.args import checkpoint_dir, device
    from capkit.models.world_vilt import FILES
    out = checkpoint_dir(args.out or f"world_vilt_{args.preset}", FILES)   # before any training
    on = device(args.device)

    import dataclasses

    from capkit.training.world_vilt import SCHEDULES, train_world_vilt
    schedule = SCHEDULES[args.preset]
    if args.replace_pool is not None:
        schedule = dataclasses.replace(schedule, replace_pool=args.replace_pool)
    start = time.perf_counter()
    result = train_world_vilt(args.preset, out=out, seed=args.seed, threads=args.threads,
                              device=on, schedule=schedule, progress=training_bars(args))
    seconds = time.perf_counter() - start
    final = result.final
    _print(result, seconds, ["epoch", "itm_loss", "mlm_loss", "foil_all"], args.format,
           f"held-out (val) foil accuracy of the matching head: {final['foil_all']:.3f}")
    return 0


def _user_data(args) -> tuple[dict | None, dict | None, dict | None]:
    if args.references is None and args.images is None:
        if args.val_references is not None:
            raise ValueError("--val-references needs --references and --images")
        return None, None, None
    if args.references is None or args.images is None:
        raise ValueError("give both --references (JSON {image_id: [captions]}) and --images "
                         "(a folder of <image_id>.jpg), or neither to train on the world")
    from capkit.models.images import find_image_files

    def read(path: str) -> dict:
        with open(path, encoding="utf-8") as f:
            return {str(k): v for k, v in json.load(f).items()}
    refs = read(args.references)
    val = None if args.val_references is None else read(args.val_references)
    ids = list(refs) + ([] if val is None else list(val))
    return refs, dict(zip(ids, find_image_files(ids, args.images))), val


def run_umic(args: argparse.Namespace) -> int:
    from capkit.commands.args import checkpoint_dir, device
    from capkit.models.world_vilt import FILES
    out = checkpoint_dir(args.out or f"umic_{args.preset}", FILES)        # before any training
    on = device(args.device)
    references, images, val_references = _user_data(args)

    from capkit.training.umic import NEGATIVE_TYPES, SCHEDULES, train_umic
    schedule = None
    if args.margin is not None:     # (a difference of two sigmoid scores: in (0, 1), as parsed)
        schedule = dataclasses.replace(SCHEDULES[args.preset], margin=args.margin)
    start = time.perf_counter()
    result = train_umic(args.backbone, out=out, preset=args.preset, seed=args.seed,
                        schedule=schedule,
                        threads=args.threads, references=references, images=images,
                        val_references=val_references, val_fraction=args.val_fraction,
                        device=on, progress=training_bars(args))
    seconds = time.perf_counter() - start
    keys = ["epoch", "train_loss", "val_loss", *(f"acc_{t}" for t in NEGATIVE_TYPES)]
    _print(result, seconds, keys, args.format,
           f"kept epoch {result.best_epoch} (lowest validation loss; epoch 0 = UMIC-C)")
    return 0
