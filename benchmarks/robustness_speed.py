"""Speed of the robustness study (Cui et al. 2018, Fig. 6) on the 5,000 COCO Karpathy-test images.

    .venv/bin/python benchmarks/robustness_speed.py [--images 5000] [--metrics a,b]
        [--transforms RC,WP,RW] [--bootstrap 1000]

Times, from raw references: the whole study (leave-one-out, RC/WP/RW at gamma = 0.1 ... 1,
every metric on the 31 candidate sets, 1,000 bootstrap resamples) as one call of
``capkit.robustness.robustness`` (the acceptance target: under 3 minutes on 2 CPU cores), then
a breakdown: the neighbour ranking, each transform's 10 strengths, and each metric's 31 scorings.
Default metrics: every registered metric of ``capkit.metrics`` except those that need images,
the official SPICE (Java + Stanford CoreNLP 3.6.0) and SPICE-lite (spaCy parses every caption:
about 4 minutes per 500 images for RC/WP/RW; add it with --metrics to measure it).
Prints the AUC table it measured.

Speed is measured here, not in the unit tests.
"""
from __future__ import annotations

import argparse
import time

IMAGE_METRICS = ("clip", "pac", "polos", "blip")   # name fragments of metrics that need images
NOT_BY_DEFAULT = ("spice", "spice_lite")             # external tools / minutes per 500 images


def _timed(fn):
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, default=5000)
    parser.add_argument("--metrics", default=None, help="comma-separated (default: all text)")
    parser.add_argument("--transforms", default="RC,WP,RW")
    parser.add_argument("--bootstrap", type=int, default=1000)
    args = parser.parse_args(argv)

    from capkit.metrics import METRICS
    from capkit.robustness import dataset_references, fix_references, leave_one_out, robustness
    from capkit.robustness.scoring import score_against
    from capkit.transforms import GAMMAS, TransformContext, apply_transform, normalise

    metrics = (args.metrics.split(",") if args.metrics else
               [m for m in METRICS if m not in NOT_BY_DEFAULT
                and not any(f in m for f in IMAGE_METRICS)])
    codes = args.transforms.split(",")
    refs = dataset_references("coco_karpathy_test", n_images=args.images)
    total, result = _timed(lambda: robustness(refs, metrics, codes, n_boot=args.bootstrap))
    print(f"whole study: {len(refs):,} images, {len(metrics)} metrics x {codes}: {total:.1f} s")

    loo = leave_one_out(refs)
    held = normalise(loo.held_out)
    ctx = TransformContext.from_references(refs)
    t_nb, _ = _timed(ctx.neighbours)
    print(f"  neighbour ranking (tf-idf of references): {t_nb:.1f} s")
    sets = [held]
    for code in codes:
        t, outs = _timed(lambda: [apply_transform(code, held, g, images=loo.images, context=ctx)
                                  for g in GAMMAS[1:]])
        sets.extend(outs)
        print(f"  transform {code} at 10 strengths: {t:.1f} s")
    t_fix, _ = _timed(lambda: fix_references(metrics, loo.references))
    print(f"  tokenising the {sum(map(len, loo.references)):,} references once: {t_fix:.1f} s")
    for m in metrics:
        fixed = fix_references([m], loo.references)
        t, _ = _timed(lambda: [score_against(fixed, s) for s in sets])
        print(f"  {m:12s} {len(sets)} scorings of {len(held):,} captions: {t:.1f} s")

    print("\nAUC (lower = more robust)")
    print(f"{'metric':12s}" + "".join(f"{c:>8s}" for c in codes))
    for m, row in result.auc().items():
        print(f"{m:12s}" + "".join(f"{row[c]:8.3f}" for c in codes))
    print(f"\n{result.signature}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
