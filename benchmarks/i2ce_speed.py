"""Speed of I2CE (shipped checkpoint) on Flickr8k-Expert: 5,664 candidates x 5 references.

    .venv/bin/python benchmarks/i2ce_speed.py [--model PATH] [--batch-size 256] [--threads N]

Times, from raw text, in one process: loading the checkpoint; then scoring every pair twice
(each distinct caption is PTB-tokenised and encoded once; the 28,320 candidate-reference cosines
are aggregated), the second run with warm caches of the tokenizer and allocator. It prints the
machine's load average, since on a shared 2-core machine the time moves with other work.
Target: under one minute for the whole set (acceptance criterion of the I2CE issue).
"""
from __future__ import annotations

import argparse
import os
import time


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=None, help="checkpoint (default: the shipped one)")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads while encoding (default 1, the metric's default)")
    args = parser.parse_args(argv)

    from capkit.data import load
    from capkit.metrics.i2ce import i2ce
    from capkit.models.i2ce import load_i2ce

    data = load("flickr8k_expert")
    cands, refs = data.candidates, data.references
    n_pairs = sum(len(r) for r in refs)
    n_texts = len(set(cands) | {r for rs in refs for r in rs})
    start = time.perf_counter()
    enc = load_i2ce(args.model)
    t_load = time.perf_counter() - start
    runs = []
    for label in ("first run", "second run"):
        start = time.perf_counter()
        s = i2ce(cands, refs, model=enc, batch_size=args.batch_size, threads=args.threads)
        runs.append((label, time.perf_counter() - start, s))
    print(f"I2CE {s.signature}")
    print(f"{len(cands):,} candidates, {n_pairs:,} pairs, {n_texts:,} distinct texts; "
          f"encoding threads {args.threads}, load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print(f"  checkpoint load   {t_load:7.2f} s")
    for label, seconds, scores in runs:
        print(f"  {label:16s}  {seconds:7.2f} s   ({n_texts / seconds:,.0f} texts/s, "
              f"corpus {scores.corpus:.4f})")
    total = t_load + runs[0][1]
    print(f"load + first run: {total:.1f} s ({'under' if total < 60 else 'OVER'} one minute)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
