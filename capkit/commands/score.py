"""`capkit score`: score a candidates file against a references file."""
from __future__ import annotations

import argparse
import inspect
import sys

from capkit.commands.args import metric_list
from capkit.report import format_table, write_scores_csv, write_scores_json


def register(sub) -> None:
    from capkit.metrics import suite
    p = sub.add_parser("score", help="score a candidates file against a references file")
    p.add_argument("--candidates", required=True,
                   help="{id: caption} JSON or a COCO results list ('-': standard input)")
    p.add_argument("--references", required=True,
                   help="{id: [captions]} JSON or a COCO annotations file; references of ids "
                        "with no candidate are left out, as COCOEvalCap does ('-': standard "
                        "input)")
    p.add_argument("--metrics", type=metric_list, default=list(suite("classic")),
                   help="comma-separated names, or module:function for your own metric")
    p.add_argument("--format", choices=["json", "csv", "table", "markdown"], default="table")
    p.add_argument("--tokenizer", choices=["ptb", "split"], default="ptb")
    p.add_argument("--images", default=None, metavar="DIR",
                   help="folder of the candidates' images (<id>.jpg, or COCO_val2014_<12 digits>"
                        ".jpg for COCO ids), needed by image metrics such as clipscore")
    p.add_argument("--chunk-size", type=_chunk_size, default="auto", metavar="N",
                   help="score BLEU, ROUGE-L and CIDEr-D N candidates at a time (same scores, "
                        "memory bounded by N); default: auto (chunks of 50,000 when "
                        "there are more candidates); 0: never")
    p.add_argument("--strict", action="store_true",
                   help="an empty candidate or reference is an error (default: scored as "
                        "pycocoevalcap scores it, with a warning)")
    p.set_defaults(func=run)


def _chunk_size(text: str) -> int | str | None:
    if text == "auto":
        return "auto"
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"give a number of candidates or 'auto', got {text!r}")
    if n < 0:
        raise argparse.ArgumentTypeError(f"the chunk size cannot be negative, got {n}")
    return n or None


def run(args: argparse.Namespace) -> int:
    from capkit.caption_files import read_candidates, read_references
    from capkit.metrics import Scorer, resolve

    specs = resolve(args.metrics)
    image_metrics = [name for name, spec in specs.items() if spec.images]
    if image_metrics and args.images is None:
        raise ValueError(f"{', '.join(image_metrics)} score captions against images: add "
                         "--images DIR (a folder of <id>.jpg files)")
    if args.candidates == args.references == "-":
        raise ValueError("--candidates and --references cannot both be '-' (standard input); "
                         "give one of them as a file")
    cands, refs = read_candidates(args.candidates), read_references(args.references)
    if args.format == "csv" and {"<corpus>", "<signature>"} & cands.keys():
        raise ValueError("an id is named <corpus> or <signature>, the names of the CSV's summary "
                         "rows; rename it, or use --format json")
    refs = _references_of(cands, refs)
    options = {name: {"progress": "auto"} for name, spec in specs.items()
               if "progress" in inspect.signature(spec.function).parameters}
    scorer = Scorer(specs, tokenizer=args.tokenizer, options=options, strict=args.strict,
                    chunk_size=args.chunk_size)
    results = scorer.score(cands, refs, images=args.images)
    del cands, refs
    if args.format == "json":       # written a block of captions at a time (a million rows)
        write_scores_json(results, sys.stdout)
    elif args.format == "csv":
        write_scores_csv(results, sys.stdout)
    else:
        rows = [[name, s.corpus, s.signature] for name, s in results.items()]
        print(format_table(["metric", "corpus", "signature"], rows, args.format))
    return 0


def _references_of(cands: dict, refs: dict) -> dict:
    """The references of the candidates' ids. A references file often covers more images than
    one results file (COCO's captions_val2014.json against a Karpathy-test system): like
    pycocoevalcap's COCOEvalCap, only the candidates' images are scored (and give CIDEr-D its
    document frequencies), and a note says how many were left out. A candidate with no
    references stays an error (``align`` lists them)."""
    if len(refs) <= len(cands) or not cands.keys() <= refs.keys():
        return refs
    print(f"capkit score: note: {len(refs) - len(cands):,} of the {len(refs):,} reference ids "
          f"have no candidate; scoring the {len(cands):,} candidates against their own "
          "references, as COCOEvalCap does", file=sys.stderr)
    return {i: refs[i] for i in cands}
