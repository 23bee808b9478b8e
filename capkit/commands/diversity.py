"""`capkit diversity`: Self-CIDEr, LSA and mBLEU diversity of caption sets (Wang & Chan 2019)."""
from __future__ import annotations

import argparse
import json

from capkit.report import format_table


def register(sub) -> None:
    p = sub.add_parser("diversity", help="diversity (Self-CIDEr, LSA, mBLEU) of caption sets")
    p.add_argument("--captions", required=True,
                   help='[{"image_id": ..., "captions": [...]}] JSON (the paper\'s format) '
                        "or {id: [captions]}")
    p.add_argument("--references",
                   help="{id: [captions]} JSON or a COCO annotations file: adds accuracy "
                        "(mean CIDEr-D) and the F-score")
    p.add_argument("--df-references",
                   help="reference corpus for Self-CIDEr's document frequencies, e.g. COCO "
                        "train annotations (default: COCO Karpathy-test references)")
    p.add_argument("--num", type=int, default=None,
                   help="use the first NUM captions of every image (default: all)")
    p.add_argument("--beta2", type=float, default=5.0, help="F-score beta^2 (paper: 5)")
    p.add_argument("--format", choices=["json", "csv", "table", "markdown"], default="table")
    p.add_argument("--tokenizer", choices=["ptb", "split"], default="ptb")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from capkit.caption_files import read_references
    from capkit.diversity import caption_sets, diversity_summary, read_caption_sets
    from capkit.metrics import document_frequencies

    if not 0 <= args.beta2 < float("inf"):
        raise ValueError(f"--beta2 must be a number >= 0 (the paper uses 5), got {args.beta2}")
    if args.num is not None and args.num < 2:
        raise ValueError(f"--num must be at least 2 (diversity compares captions of one image), "
                         f"got {args.num}")
    sets = caption_sets(read_caption_sets(args.captions), args.tokenizer)
    if args.num is not None:
        sets = sets.first(args.num)
    refs = read_references(args.references) if args.references else None
    df = None
    if args.df_references:
        df = document_frequencies(read_references(args.df_references),
                                  tokenizer=args.tokenizer, name=args.df_references)
    summary = diversity_summary(sets, refs, document_frequency=df, beta=args.beta2 ** 0.5,
                                tokenizer=args.tokenizer)
    if args.format == "json":
        print(json.dumps({"per_image": summary.per_image, "average": summary.average,
                          "signature": summary.signature}, indent=1))
        return 0
    columns = [c for c in summary.columns if c != "vocabulary_size"]
    rows = [[i, *(row[c] for c in columns)] for i, row in summary.per_image.items()]
    rows.append(["<average>", *(summary.average[c] for c in columns)])
    if args.format == "csv":        # the settings travel with the numbers
        rows.append(["<signature>", *(summary.column_signature(c) for c in columns)])
    print(format_table(["image_id", *columns], rows, args.format, digits=4))
    if args.format != "csv":
        print(f"\n{len(sets)} images, {int(sets.sizes.sum())} captions, vocabulary "
              f"{int(summary.average['vocabulary_size'])} words")
        print("signatures:\n" + "\n".join(f"  {k}: {v}" for k, v in summary.signature.items()))
    return 0
