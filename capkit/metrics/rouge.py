"""ROUGE-L exactly as pycocoevalcap 1.2 computes it (Lin 2004, COCO flavour).

For each reference: LCS length, precision = LCS / |candidate|, recall = LCS / |reference|.
Precision and recall are maximised over the references *separately*, then combined as
F = (1 + beta^2) P R / (R + beta^2 P) with beta = 1.2. This is not "the best F over references".
The corpus score is the mean of the per-caption scores.

The LCS lengths of all (candidate, reference) pairs are computed together with the bit-parallel
algorithm of Allison & Dix (1986) / Hyyro (2004): one 64-bit word per pair holds a row of the
dynamic-programming table, and each reference token updates all pairs with a few array ops.

Explained in notebooks/01_classic_metrics.ipynb, section "ROUGE-L".
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from capkit.metrics.inputs import CaptionBatch, prepare
from capkit.metrics.ngrams import lookup, run_starts
from capkit.scores import Scores, make_signature


def lcs_lengths(batch: CaptionBatch) -> np.ndarray:
    """(R,) LCS length of every reference with its candidate."""
    enc, N, owner = batch.encoded(), len(batch), batch.ref_owner
    cand_len, ref_len = enc.lengths[:N], enc.lengths[N:]
    V = max(len(enc.vocab), 1)
    # bit mask of the candidate positions holding each (candidate, token)
    pos = np.arange(int(cand_len.sum()))                          # candidates come first
    cand_of = np.repeat(np.arange(N), cand_len)
    offset = pos - enc.starts[:N][cand_of]
    short = offset < 64
    key = cand_of[short] * V + enc.tokens[pos[short]]
    bits = np.left_shift(np.uint64(1), offset[short].astype(np.uint64))
    order = np.argsort(key, kind="stable")
    skey = key[order]
    starts = run_starts(skey)
    masks = np.bitwise_or.reduceat(bits[order], starts) if len(starts) else bits[:0]
    ukey = skey[starts]

    lcs = np.zeros(len(ref_len), dtype=np.int64)
    fits = cand_len[owner] <= 64
    r_idx = np.flatnonzero(fits)
    r_idx = r_idx[np.argsort(-ref_len[r_idx], kind="stable")]     # longest references first
    m = cand_len[owner[r_idx]].astype(np.uint64)
    full = np.where(m == 64, np.uint64(2**64 - 1),
                    np.left_shift(np.uint64(1), m % np.uint64(64)) - np.uint64(1))
    row = full.copy()                                             # (P,) DP row as bits
    # the candidate's mask of every reference token, looked up once for all positions
    first_ref = int(enc.starts[N]) if len(ref_len) else 0
    ref_tokens = enc.tokens[first_ref:]
    ref_masks = lookup(np.repeat(owner, ref_len) * V + ref_tokens, ukey, masks, np.uint64(0))
    ref_start = enc.starts[N:][r_idx] - first_ref
    lens = ref_len[r_idx]
    for j in range(int(lens.max(initial=0))):
        live = int(np.searchsorted(-lens, -j, side="left"))       # pairs with len > j
        match = ref_masks[ref_start[:live] + j]
        v, u = row[:live], row[:live] & match
        row[:live] = ((v + u) | (v - u)) & full[:live]
    lcs[r_idx] = m.astype(np.int64) - np.bitwise_count(row).astype(np.int64)
    for r in np.flatnonzero(~fits):                               # candidates over 64 tokens
        i, j = owner[r], N + r
        lcs[r] = lcs_length(enc.tokens[enc.starts[i]:enc.starts[i] + enc.lengths[i]].tolist(),
                             enc.tokens[enc.starts[j]:enc.starts[j] + enc.lengths[j]].tolist())
    return lcs


def lcs_length(a: list, b: list) -> int:
    """Length of the longest common subsequence of two token lists: the same bit-parallel LCS
    with Python's unbounded integers (tokens or token ids; pycocoevalcap's ``my_lcs``)."""
    masks: dict = {}
    for i, t in enumerate(a):
        masks[t] = masks.get(t, 0) | (1 << i)
    full = (1 << len(a)) - 1
    row = full
    for t in b:
        u = row & masks.get(t, 0)
        row = ((row + u) | (row - u)) & full
    return len(a) - bin(row).count("1")


def rouge_l(candidates, references=None, images=None, *, beta: float = 1.2,
            tokenizer: str = "ptb") -> Scores:
    """ROUGE-L F per caption (P and R maximised separately over references); corpus = mean."""
    batch = prepare(candidates, references, tokenizer)
    return rouge_scores(rouge_stats(batch), beta=beta, tokenizer=batch.tokenizer, ids=batch.ids)


def rouge_stats(batch: CaptionBatch) -> dict[str, np.ndarray]:
    """Per caption the best precision and recall over its references, and every LCS length."""
    batch = batch.cache.get("rouge_view", batch)       # see inputs.prepare
    N, lcs = len(batch), lcs_lengths(batch)
    enc = batch.encoded()
    # pycocoevalcap splits on " ", so a caption with no tokens counts as one empty token
    cand_len = np.maximum(enc.lengths[:N], 1)[batch.ref_owner]
    ref_len = np.maximum(enc.lengths[N:], 1)
    starts = np.concatenate([[0], np.cumsum(batch.n_refs)[:-1]])
    prec = np.maximum.reduceat(lcs / cand_len, starts)
    rec = np.maximum.reduceat(lcs / ref_len, starts)
    return {"precision": prec, "recall": rec, "lcs": lcs}


def rouge_scores(stats: Mapping[str, np.ndarray], *, beta: float = 1.2, tokenizer: str = "ptb",
                 ids: tuple[str, ...] | None = None) -> Scores:
    """``Scores`` from ``rouge_stats`` of one batch, or of several chunks concatenated."""
    prec, rec = stats["precision"], stats["recall"]
    with np.errstate(invalid="ignore", divide="ignore"):
        f = ((1 + beta**2) * prec * rec) / (rec + beta**2 * prec)
    per = np.where((prec != 0) & (rec != 0), f, 0.0)
    sig = make_signature("rouge_l", beta=beta, pr="max-separately", tok=tokenizer)
    return Scores("rouge_l", per, float(per.mean()), sig, ids, dict(stats))
