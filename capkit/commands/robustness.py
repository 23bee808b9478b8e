"""`capkit robustness`: how metrics react to pathological captions (Cui et al. 2018, Fig. 6).

Writes files only where asked: ``--out DIR`` gets ``robustness.json`` and the curves figure
``robustness.png``; ``--figure PATH`` names the figure alone. Without them it only prints.

``--images N`` scores a seeded subset, but RW's vocabulary always comes from every reference of
the dataset's split (COCO Karpathy test: 25,010 captions; Flickr8k test: 5,000; world: its 500
robustness scenes), so an AUC does not depend on N through RW's pool; RC's and HN's neighbours
stay within the scored images. The signature names the dataset and the pool.
"""
from __future__ import annotations

import argparse
import json
import sys

from capkit.cache_files import write_output
from capkit.commands.args import (figure_file, integer, metric_list, output_dir, resamples,
                                  seed_option)
from capkit.report import format_table


def transform_list(text: str) -> list[str]:
    """'RC, WP,RW' -> ['RC', 'WP', 'RW'] (checked against capkit.transforms)."""
    from capkit.transforms import TRANSFORMS
    codes = [t.strip().upper() for t in text.split(",") if t.strip()]
    unknown = [t for t in codes if t not in TRANSFORMS]
    if not codes or unknown:
        raise argparse.ArgumentTypeError(f"unknown transform(s) {unknown or text!r}; choose "
                                         f"from {', '.join(TRANSFORMS)}")
    return codes


def register(sub) -> None:
    from capkit.metrics import suite
    from capkit.robustness import ROBUSTNESS_DATASETS
    p = sub.add_parser("robustness", help="robustness of metrics to pathological captions "
                       "(AUC of the normalised score over the transformation strength)")
    p.add_argument("--metrics", type=metric_list, default=list(suite("classic")),
                   help="comma-separated names, or module:function for your own metric")
    p.add_argument("--transforms", type=transform_list, default=["RC", "WP", "RW"],
                   help="comma-separated codes: RC,WP,RW (Cui et al.), KS,RR,SO,HN (UMIC), SS")
    p.add_argument("--dataset", choices=ROBUSTNESS_DATASETS, default="coco_karpathy_test")
    p.add_argument("--images", type=integer(2), default=None,
                   help="score a seeded random subset of this many images (default: all)")
    p.add_argument("--images-dir", default=None,
                   help="folder with every image of the dataset: RC/HN neighbours from "
                        "EfficientNet-Lite0 features (default: tf-idf of the references), and "
                        "the images image metrics score against (--dataset world renders its "
                        "own)")
    p.add_argument("--bootstrap", type=resamples, default=1000,
                   help="image resamples for the bands, at least 2 (default 1000)")
    seed_option(p)
    p.add_argument("--out", default=None, metavar="DIR",
                   help="folder for robustness.json and the curves figure robustness.png "
                        "(default: print only, write nothing)")
    p.add_argument("--figure", default=None, metavar="PATH",
                   help="where to write the curves figure (default: DIR/robustness.png with "
                        "--out, else none)")
    p.add_argument("--format", choices=["json", "csv", "table", "markdown"], default="table")
    p.set_defaults(func=run)


def _figure(result, path) -> None:
    from matplotlib.figure import Figure

    from capkit.plots import save_figure
    from capkit.plots.robustness import robustness_figure
    n = len(result.transforms)
    cols = min(n, 4)
    rows = -(-n // cols)
    fig = Figure(figsize=(4.2 * cols, 3.8 * rows))
    axes = fig.subplots(rows, cols, sharey=True, squeeze=False).ravel()
    robustness_figure(result, axes[:n])
    for ax in axes[n:]:
        ax.set_visible(False)
    fig.tight_layout()
    save_figure(fig, path, dpi=120)


def run(args: argparse.Namespace) -> int:
    from capkit.metrics import resolve
    from capkit.metrics.registry import seen_data_note
    from capkit.robustness import dataset_pictures, dataset_references, robustness, subset

    out = None if args.out is None else output_dir(args.out)       # checked before any work
    figure = figure_file(args.figure, "--figure") if args.figure else \
        (None if out is None else out / "robustness.png")
    note = seen_data_note(resolve(args.metrics), args.dataset)
    if note:
        print(f"capkit robustness: note: {note}", file=sys.stderr)
    whole = dataset_references(args.dataset, seed=args.seed)      # RW's vocabulary corpus
    refs = subset(whole, args.images, seed=args.seed)
    images, scenes = dataset_pictures(args.dataset, refs, args.images_dir, seed=args.seed)
    try:
        features = None
        if args.images_dir:
            from capkit.transforms import image_features
            features = image_features(list(refs), args.images_dir, progress="auto")
        result = robustness(refs, args.metrics, args.transforms, seed=args.seed,
                            n_boot=args.bootstrap, features=features, images=images,
                            scenes=scenes, dataset=args.dataset, vocabulary_captions=whole,
                            vocabulary_source=args.dataset,
                            progress="auto" if args.format != "json" else False)
    except ImportError as err:      # KS needs spaCy, SS the GloVe bundle: say what to install
        raise RuntimeError(str(err)) from err
    # robustness.json says the run is complete, so it goes last (the old one first goes, so
    # that a failed figure never sits beside it); each file is written atomically.
    if out is not None:
        (out / "robustness.json").unlink(missing_ok=True)
    if figure is not None:
        _figure(result, figure)
    if out is not None:
        write_output(out / "robustness.json", json.dumps(result.to_dict(), indent=1))
    if args.format == "json":
        print(json.dumps(result.to_dict(), indent=1))
        return 0
    codes = result.transforms
    rows = [[m, *(result.curves[m][t].auc for t in codes)] for m in result.metrics]
    if args.format == "csv":        # the settings travel with the numbers
        rows.append(["<signature>", result.signature, *[""] * (len(codes) - 1)])
    print(format_table(["metric", *codes], rows, args.format, digits=3))
    if args.format != "csv":
        print(f"\nAUC of the normalised score over gamma in [0, 1] (lower = more robust); "
              f"{len(result.images):,} images of {args.dataset}")
        print(f"signature: {result.signature}")
        if out is not None:
            print(f"results: {out / 'robustness.json'}")
        print(f"curves: {figure}" if figure is not None else
              "curves: not drawn; add --out DIR or --figure PATH")
    return 0
