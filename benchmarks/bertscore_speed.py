"""Speed of BERTScore (MiniLM bundle) on Flickr8k-Expert: 5,664 candidates x 5 references.

    .venv/bin/python benchmarks/bertscore_speed.py [--batch-size 64] [--idf] [--cache-dir DIR]

Times, from raw text, in one process: loading the model; a cold run (every distinct caption
encoded; the 28,320 candidate-reference pairs matched greedily); and a warm run that reads the
token states back from the on-disk feature cache (a fresh temporary cache unless --cache-dir is
given, so the cold run is really cold). It also prints the machine's load average, since the
encoder is compute-bound: on a shared 2-core machine the cold time moves with other work.

Speed is measured here, not in the unit tests (see README "Speed").
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--idf", action="store_true", help="idf weights from the references")
    parser.add_argument("--cache-dir", default=None, help="feature cache folder (default: temp)")
    args = parser.parse_args(argv)

    import torch

    from capkit.data import load
    from capkit.metrics.bertscore import bertscore
    from capkit.models.feature_cache import FeatureCache
    from capkit.models.presets import load_model

    data = load("flickr8k_expert")
    cands, refs = data.candidates, data.references
    n_pairs = sum(len(r) for r in refs)
    n_texts = len(set(cands) | {r for rs in refs for r in rs})
    start = time.perf_counter()
    enc = load_model("minilm")
    t_load = time.perf_counter() - start
    with tempfile.TemporaryDirectory() as tmp:
        cache = FeatureCache(args.cache_dir or tmp)
        runs = []
        for label in ("cold (encode + match)", "warm (from the cache)"):
            start = time.perf_counter()
            s = bertscore(cands, refs, model=enc, idf=args.idf, batch_size=args.batch_size,
                          cache=cache)
            runs.append((label, time.perf_counter() - start, s))
    print(f"BERTScore {s.signature}")
    print(f"{len(cands):,} candidates, {n_pairs:,} pairs, {n_texts:,} distinct texts; "
          f"torch threads {torch.get_num_threads()}, load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print(f"  model load               {t_load:7.1f} s")
    for label, seconds, scores in runs:
        print(f"  {label:24s} {seconds:7.1f} s   ({n_texts / seconds:,.0f} texts/s, "
              f"corpus F {scores.corpus:.4f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
