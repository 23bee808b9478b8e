"""Compute BERTScore's rescaling baseline for a model, on unrelated caption pairs.

    python -m data_scripts.bertscore_baseline [--model minilm] [--pool 3000] [--pairs 30000]
                                              [--seed 0] [--out FILE]

Zhang et al. (2020, section 4 "baseline rescaling") take b = the average P, R and F of BERTScore
over random pairs of unrelated sentences (1M Common Crawl pairs in bert_score), per layer, and
report (s - b) / (1 - b) so that an unrelated pair scores about 0. capkit's baseline is made of
captions, the text it scores:

* pool: ``--pool`` COCO Karpathy-test images drawn with ``--seed``, one reference each (the
  first), from ``capkit.data.load("coco_karpathy_test")``;
* pairs: ``--pairs`` random (candidate, reference) pairs from the pool with two different images;
* for every layer 0..L: mean P, R, F with idf off and one reference (``capkit.metrics.bertscore``);
* written as bert_score's baseline format, a CSV ``LAYER,P,R,F`` with one row per layer.

The default output is the file capkit ships, ``capkit/metrics/bertscore_baselines/<model>.csv``.
Runtime: about 2-4 minutes for MiniLM on a 2-core CPU with the defaults (the pool is encoded
once per layer). Rescaling is linear, so it never changes a correlation with humans.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

OUT_DIR = Path(__file__).resolve().parents[1] / "capkit" / "metrics" / "bertscore_baselines"


def caption_pairs(pool: int, pairs: int, seed: int) -> tuple[list[str], list[str]]:
    """``pairs`` (candidate, reference) captions of different COCO images."""
    from capkit.data import load
    refs = load("coco_karpathy_test").references
    rng = np.random.default_rng(seed)
    keys = sorted(refs, key=int)
    chosen = rng.choice(len(keys), size=min(pool, len(keys)), replace=False)
    captions = [refs[keys[i]][0] for i in chosen]
    a = rng.integers(0, len(captions), size=pairs)
    b = (a + rng.integers(1, len(captions), size=pairs)) % len(captions)   # never the same image
    return [captions[i] for i in a], [captions[j] for j in b]


def baseline_rows(model: str, cands: list[str], refs: list[str]) -> list[tuple[int, float, ...]]:
    from capkit.metrics.bertscore import bertscore
    from capkit.models.feature_cache import FeatureCache
    from capkit.models.presets import load_model
    enc = load_model(model, "text")
    rows = []
    for layer in range(enc.num_layers + 1):
        s = bertscore(cands, [[r] for r in refs], model=enc, layer=layer, idf=False,
                      cache=FeatureCache(), progress=True)
        rows.append((layer, s.parts["corpus_P"], s.parts["corpus_R"], s.parts["corpus_F"]))
        print(f"layer {layer}: P {rows[-1][1]:.4f} R {rows[-1][2]:.4f} F {rows[-1][3]:.4f}",
              file=sys.stderr)
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="minilm", help="text encoder preset, hub name or folder")
    p.add_argument("--pool", type=int, default=3000, help="captions (one per image) to pair")
    p.add_argument("--pairs", type=int, default=30000, help="random unrelated pairs")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=None, help="CSV to write (default: shipped file)")
    args = p.parse_args(argv)
    out = args.out or OUT_DIR / f"{Path(args.model).name}.csv"
    cands, refs = caption_pairs(args.pool, args.pairs, args.seed)
    rows = baseline_rows(args.model, cands, refs)
    out.parent.mkdir(parents=True, exist_ok=True)
    lines = ["LAYER,P,R,F"] + [f"{layer},{p:.8f},{r:.8f},{f:.8f}" for layer, p, r, f in rows]
    out.write_text("\n".join(lines) + "\n")
    print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
