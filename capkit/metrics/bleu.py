"""BLEU-1..4 exactly as pycocoevalcap 1.2 computes it (Papineni et al. 2002, COCO flavour).

* Clipped matches: a candidate n-gram counts at most as often as it appears in the single
  reference where it is most frequent.
* Brevity penalty: "closest" reference length (ties go to the shorter reference).
* Corpus BLEU pools matches, guesses and lengths over all captions, then applies the formula once:
  it is not the mean of the per-caption scores.
* Per-caption BLEU adds 1e-15 to matches and 1e-9 to guesses, so a caption with no 4-gram match
  scores about 1e-5 rather than 0 (pycocoevalcap's smoothing; reproduced, not endorsed).

Explained in notebooks/01_classic_metrics.ipynb, section "BLEU".
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from capkit.metrics.inputs import CaptionBatch, prepare
from capkit.scores import Scores, make_signature

TINY, SMALL = 1e-15, 1e-9   # pycocoevalcap's smoothing constants


def bleu_stats(batch: CaptionBatch, n: int = 4) -> dict[str, np.ndarray]:
    """Sufficient statistics per caption: correct (N, n), guess (N, n), testlen (N,), reflen (N,).

    Statistics of several batches (chunks of one input) concatenate: ``bleu_scores`` pools them.
    """
    N, owner = len(batch), batch.ref_owner
    index = batch.ngrams(n)
    testlen = index.lengths[:N]
    correct = np.zeros((N, n), dtype=np.int64)
    for k in range(n):
        # the most times each (gram, candidate) occurs in any single reference of the candidate
        join = batch.candidate_join(index, k)
        clipped = np.minimum(join.cand_count, join.cand_ref_max)
        correct[:, k] = np.bincount(join.cand_seg, weights=clipped, minlength=N).astype(np.int64)
    guess = np.maximum(0, testlen[:, None] - np.arange(n)[None, :])            # (N, n)
    return {"correct": correct, "guess": guess, "testlen": testlen,
            "reflen": _closest_ref_length(index.lengths[N:], owner, testlen, batch.n_refs)}


def _closest_ref_length(ref_len, owner, testlen, n_refs) -> np.ndarray:
    """Per candidate, the reference length closest to its length; ties -> shorter."""
    big = int(ref_len.max(initial=0)) + 1
    key = np.abs(ref_len - testlen[owner]) * big + ref_len
    starts = np.concatenate([[0], np.cumsum(n_refs)[:-1]])
    return np.minimum.reduceat(key, starts) % big


def bleu_from_stats(correct, guess, testlen, reflen) -> np.ndarray:
    """BLEU-1..n for arrays of statistics (..., n): per caption or pooled."""
    n = correct.shape[-1]
    precision = (correct + TINY) / (guess + SMALL)
    scores = np.cumprod(precision, axis=-1) ** (1.0 / np.arange(1, n + 1))
    ratio = (testlen + TINY) / (reflen + SMALL)
    with np.errstate(divide="ignore", over="ignore"):
        penalty = np.where(ratio < 1, np.exp(1 - 1 / ratio), 1.0)
    return scores * np.asarray(penalty)[..., None]


def pooled_stats(stats: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The statistics corpus BLEU pools: sums over captions (of one batch or of all chunks)."""
    return {key: stats[key].sum(0) for key in ("correct", "guess", "testlen", "reflen")}


def bleu(candidates, references=None, images=None, *, n: int = 4,
         tokenizer: str = "ptb") -> Scores:
    """BLEU-n per caption and corpus BLEU-n (pooled counts), as pycocoevalcap computes them.

    ``parts`` holds every lower order too: ``parts["bleu_k"]`` (per caption) and
    ``parts["corpus_bleu_k"]`` for k = 1..n.
    """
    _check_order(n)
    batch = prepare(candidates, references, tokenizer)
    return bleu_scores(bleu_stats(batch, n), n=n, tokenizer=batch.tokenizer, ids=batch.ids)


def _check_order(n: int) -> None:
    if n not in (1, 2, 3, 4):
        raise ValueError(f"BLEU order n must be 1, 2, 3 or 4, got {n!r}")


def bleu_scores(stats: Mapping[str, np.ndarray], *, n: int = 4, tokenizer: str = "ptb",
                ids: tuple[str, ...] | None = None) -> Scores:
    """``Scores`` from ``bleu_stats`` of one batch, or of several chunks concatenated."""
    _check_order(n)
    per = bleu_from_stats(stats["correct"], stats["guess"], stats["testlen"],
                          stats["reflen"])                                        # (N, n)
    pooled = pooled_stats(stats)
    corpus = bleu_from_stats(pooled["correct"], pooled["guess"], pooled["testlen"],
                             pooled["reflen"])                                    # (n,)
    parts: dict[str, object] = {}
    for k in range(1, n + 1):
        parts[f"bleu_{k}"] = per[:, k - 1]
        parts[f"corpus_bleu_{k}"] = float(corpus[k - 1])
    parts.update(stats)
    sig = make_signature(f"bleu_{n}", n=n, bp="closest", smooth="1e-15/1e-9",
                         corpus="pooled", tok=tokenizer)
    return Scores(f"bleu_{n}", per[:, n - 1], float(corpus[n - 1]), sig, ids, parts)
