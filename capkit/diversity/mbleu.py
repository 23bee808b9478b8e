"""mBLEU (Shetty et al. 2017; Wang & Chan 2019, appendix A.1): each caption against the rest.

    mBLEU_n = 1/m sum_i BLEU_n(c_i, C \\ c_i),    mBLEU_mix = 1/4 sum_n mBLEU_n

with BLEU as pycocoevalcap computes it for one caption (clipped counts against the most
frequent occurrence in any single other caption, "closest" brevity penalty, 1e-15 / 1e-9
smoothing), as the authors' code does. capkit reports diversity, higher = more diverse, so
``mbleu_n = 1 - mBLEU_n`` and ``mbleu_mix = 1 - mBLEU_mix`` (the paper's 1 - mBLEU).

The leave-one-out statistics come from the within-set pairs of the n-gram tables (one pass over
all sets); the BLEU formula itself is ``capkit.metrics.bleu.bleu_from_stats``.

Explained in notebooks/09_diversity.ipynb, section "Three diversity scores".
"""
from __future__ import annotations

import numpy as np

from capkit.diversity.caption_sets import CaptionSets, caption_sets
from capkit.diversity.kernels import within_set_pairs
from capkit.metrics.bleu import bleu_from_stats
from capkit.metrics.ngrams import run_starts
from capkit.scores import Scores, make_signature


def leave_one_out_stats(sets: CaptionSets, n: int = 4) -> dict[str, np.ndarray]:
    """BLEU statistics of every caption against the other captions of its set.

    correct (S, n), guess (S, n), testlen (S,), reflen (S,): the arguments of bleu_from_stats.
    """
    S, owner = len(sets.tokens), sets.owner
    index = sets.ngrams(n)
    correct = np.zeros((S, n))
    for k, table in enumerate(index.tables[:n]):
        a, b = within_set_pairs(table, owner)
        other = a != b
        a, b = a[other], b[other]
        best = np.zeros(len(table.count), dtype=np.int64)   # most occurrences in one other caption
        if len(a):
            starts = run_starts(a)
            best[a[starts]] = np.maximum.reduceat(table.count[b], starts)
        clipped = np.minimum(table.count, best)
        correct[:, k] = np.bincount(table.seg, clipped, minlength=S)
    testlen = index.lengths
    guess = np.maximum(0, testlen[:, None] - np.arange(n)[None, :])
    return {"correct": correct, "guess": guess, "testlen": testlen,
            "reflen": _closest_other_length(sets)}


def _closest_other_length(sets: CaptionSets) -> np.ndarray:
    """(S,) length of the other caption of the set closest in length (ties -> shorter)."""
    lengths = sets.lengths()                                              # (N, M)
    M = sets.max_size
    big = int(lengths.max()) + 1
    key = np.abs(lengths[:, None, :] - lengths[:, :, None]) * big + lengths[:, None, :]
    valid = (np.arange(M)[None, :] < sets.sizes[:, None])[:, None, :] & ~np.eye(M, dtype=bool)
    key = np.where(valid, key, np.iinfo(np.int64).max)
    return (key.min(axis=2) % big)[sets.owner, sets.position]


def mbleu(sets, *, n: int = 4, tokenizer: str = "ptb") -> Scores:
    """mBLEU diversity (1 - mBLEU) of each caption set.

    Returns ``Scores`` whose per-set value is ``mbleu_mix`` = 1 - mean_k mBLEU_k (k = 1..n);
    ``parts["mbleu_k"]`` = 1 - mBLEU_k per set, ``parts["mean_bleu_k"]`` = mBLEU_k itself, and
    ``parts["bleu_per_caption"]`` (S, n) the BLEU of each caption against the rest.
    """
    if n not in (1, 2, 3, 4):
        raise ValueError(f"BLEU order n must be 1, 2, 3 or 4, got {n!r}")
    sets = caption_sets(sets, tokenizer)
    s = leave_one_out_stats(sets, n)
    per = bleu_from_stats(s["correct"], s["guess"], s["testlen"], s["reflen"])      # (S, n)
    mean = np.stack([np.bincount(sets.owner, per[:, k], minlength=len(sets))
                     for k in range(n)], axis=1) / sets.sizes[:, None]            # (N, n)
    mix = 1.0 - mean.mean(axis=1)
    parts: dict[str, object] = {"mbleu_mix": mix, "bleu_per_caption": per}
    for k in range(n):
        parts[f"mbleu_{k + 1}"] = 1.0 - mean[:, k]
        parts[f"mean_bleu_{k + 1}"] = mean[:, k]
    sig = make_signature("mbleu", n=n, weights="uniform", bp="closest", smooth="1e-15/1e-9",
                         orient="1-mbleu", m=sets.size_label, tok=sets.tokenizer)
    return Scores("mbleu", mix, float(mix.mean()), sig, sets.ids, parts)
