"""Self-critical CIDEr-D rewards (Rennie et al. 2017): capkit's CiderD against pycocoevalcap's.

    .venv/bin/python benchmarks/scst_reward.py [--batches 100] [--images 50] [--samples 5]
        [--repeat 3] [--seed 0]

A training step scores ``--samples`` sampled captions for each of ``--images`` images against
those images' references, with document frequencies of the *training* references fixed for the
whole run. Here the stand-in training corpus is the 5,000 COCO Karpathy-test images' 25,010
references (the only COCO references the kit ships; real training uses the train split's
113k images): their df is built once, then ``--batches`` batches are drawn (seeded): each
sample is one of the 9 systems' captions of the same image or, one time in five, a reference of
another image (a bad sample). Everything is tokenised beforehand (capkit's PTB tokenizer,
lower-cased) and passed as space-joined strings, as self-critical passes its decoded samples:
tokenisation is excluded on both sides, neither side starts Java.

Timed (median of ``--repeat`` passes over all batches, the two sides alternating), each side called the way self-critical
calls its CiderD, ``compute_score(gts, res)`` with ``res = [{"image_id", "caption": [text]}]``:

* pycocoevalcap 1.2's ``CiderScorer``, one per batch, given the training df (one
  ``defaultdict(float)`` shared by all batches) and ``ref_len`` = log(D) pinned: self-critical's
  CiderD scorer is this code plus those two settings;
* ``capkit.compat.pycocoevalcap.CiderD(df=...)``, created once.

Both must give the same reward for every sample (within 1e-9). Speed is measured here, not in
the unit tests.
"""
from __future__ import annotations

import argparse
import collections
import statistics

import numpy as np

from capkit.speed import median_time


def training_corpus():
    """Karpathy-test references (PTB-tokenised), their df, and each system's captions."""
    from capkit.data import load
    from capkit.metrics import document_frequencies
    from capkit.text import ptb_tokenize
    corpus = load("coco_karpathy_test")
    keys = list(corpus.references)
    flat = iter(ptb_tokenize([r for k in keys for r in corpus.references[k]]))
    refs = {k: [next(flat) for _ in corpus.references[k]] for k in keys}
    df = document_frequencies(list(refs.values()), tokenizer="split", name="karpathy-test-refs")
    systems = [dict(zip(s, ptb_tokenize(list(s.values())))) for s in corpus.systems.values()]
    return refs, df, systems


def draw_batches(refs: dict, systems: list[dict], n_batches: int, images: int, samples: int,
                 seed: int) -> list[tuple[dict, list[dict]]]:
    """self-critical's inputs per batch: gts {sample id: refs}, res [{image_id, caption}]."""
    rng = np.random.default_rng(seed)
    keys = list(refs)
    batches = []
    for _ in range(n_batches):
        gts, res = {}, []
        for img in (keys[i] for i in rng.choice(len(keys), images, replace=False)):
            pool = [s[img] for s in systems if img in s]
            for _ in range(samples):
                if rng.random() < 0.2:                      # a bad sample: another image's ref
                    other = refs[keys[rng.integers(len(keys))]]
                    text = other[rng.integers(len(other))]
                else:
                    text = pool[rng.integers(len(pool))]
                gts[len(res)] = refs[img]
                res.append({"image_id": len(res), "caption": [text]})
        batches.append((gts, res))
    return batches


def pycocoevalcap_rewards(batches, df) -> list[np.ndarray]:
    from pycocoevalcap.cider.cider_scorer import CiderScorer

    class PinnedCiderScorer(CiderScorer):
        # compute_cider() overwrites ref_len with log(#scored); self-critical's copy does not
        ref_len = property(lambda self: self._pinned, lambda self, value: None)

    frequencies = collections.defaultdict(float, df.counts)    # one dict for the whole run
    log_d = np.log(float(df.n_documents))
    out = []
    for gts, res in batches:
        scorer = PinnedCiderScorer(n=4, sigma=6.0)
        scorer._pinned = log_d
        for item in res:
            scorer += (item["caption"][0], gts[item["image_id"]])
        scorer.document_frequency = frequencies
        out.append(np.array(scorer.compute_cider()))
    return out


def capkit_rewards(batches, scorer) -> list[np.ndarray]:
    return [scorer.compute_score(gts, res)[1] for gts, res in batches]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batches", type=int, default=100)
    parser.add_argument("--images", type=int, default=50)
    parser.add_argument("--samples", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    from capkit.compat.pycocoevalcap import CiderD
    t_df, (refs, df, systems) = median_time(training_corpus, 1)
    batches = draw_batches(refs, systems, args.batches, args.images, args.samples, args.seed)
    scorer = CiderD(df=df)
    times_ref, times_cap = [], []
    for _ in range(args.repeat):        # alternate the sides, so load on a shared machine
        t, ref = median_time(lambda: pycocoevalcap_rewards(batches, df), 1)   # hits both
        times_ref.append(t)
        t, cap = median_time(lambda: capkit_rewards(batches, scorer), 1)
        times_cap.append(t)
    t_ref, t_cap = statistics.median(times_ref), statistics.median(times_cap)
    diff = max(float(np.abs(a - b).max()) for a, b in zip(ref, cap))
    if diff > 1e-9:
        raise SystemExit(f"rewards differ by {diff:.3g}: the two sides disagree")

    per_batch = args.images * args.samples
    print(f"self-critical rewards: {args.batches} batches x {args.images} images x "
          f"{args.samples} samples = {per_batch} captions per batch, median of {args.repeat}")
    print(f"training df: {df.n_documents:,} documents, {len(df.counts):,} n-grams "
          f"(built once in {t_df:.1f} s, tokenisation included)")
    print(f"  pycocoevalcap CiderScorer (df pinned)  {1e3 * t_ref / args.batches:8.2f} ms/batch")
    print(f"  capkit.compat CiderD(df=...)           {1e3 * t_cap / args.batches:8.2f} ms/batch")
    print(f"  speed-up {t_ref / t_cap:.1f}x; mean reward {np.mean(np.concatenate(cap)):.4f}; "
          f"largest reward difference {diff:.1e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
