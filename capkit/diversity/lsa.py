"""LSA diversity and Self-CIDEr diversity (Wang & Chan, CVPR 2019, sections 3.1 and 3.2).

Both read the diversity of a set of m captions off singular values:

* LSA: the word-caption count matrix M (d x m) has singular values s; r = s_1 / sum(s).
* Self-CIDEr: the kernel K[i, j] = CIDEr-D(c_i, [c_j]) (m x m) has singular values s; since K
  plays the role of M^T M, sigma = sqrt(s) and r = max(sqrt(s)) / sum(sqrt(s)).

Then div = -log(r) / log(m): 0 when every caption says the same thing (one topic), 1 when the
captions share nothing. Self-CIDEr follows the authors' code (qingzwang/DiversityMetrics), not
only the paper's text: CIDEr-D with its clipping and length penalty, the smaller index as
candidate, an SVD (so a negative eigenvalue of the non-PSD kernel counts by its magnitude), no
clipping of r. One addition: singular values below numpy's rank tolerance (s_max * M * eps) are
set to 0, so exact duplicates give an exact 0 rather than round-off (a change below 1e-6).

Explained in notebooks/09_diversity.ipynb, sections "Three diversity scores" and "Self-CIDEr
from scratch".
"""
from __future__ import annotations

import numpy as np

from capkit.diversity.caption_sets import caption_sets
from capkit.diversity.kernels import (
    bow_matrices,
    cider_d_kernel,
    df_label,
    reference_document_frequencies,
)
from capkit.metrics.cider import DocumentFrequencies
from capkit.scores import Scores, make_signature


def singular_values(matrices: np.ndarray) -> np.ndarray:
    """(N, k) singular values of a stack of matrices, largest first, round-off set to 0."""
    s = np.linalg.svd(matrices, compute_uv=False)
    tol = s[..., :1] * max(matrices.shape[-2:]) * np.finfo(np.float64).eps
    return np.where(s > tol, s, 0.0)


def diversity_from_singular_values(sigma: np.ndarray,
                                   m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(div, r) from (N, k) singular values sigma of a word-caption-like matrix and set sizes m."""
    m = np.asarray(m)
    if (m < 2).any():
        raise ValueError("diversity needs m >= 2 captions per set (it divides by log m)")
    total = sigma.sum(axis=-1)
    if (total <= 0).any():
        raise ValueError("a set has only zero singular values (its captions have no words, or, "
                         "for Self-CIDEr, only n-grams that every reference document contains, "
                         "which weigh 0); its diversity is undefined: drop it")
    r = sigma.max(axis=-1) / total
    return 0.0 - np.log(r) / np.log(m), r     # 0.0 - x turns -0.0 into 0.0


def lsa_diversity(sets, *, tokenizer: str = "ptb") -> Scores:
    """LSA diversity of each caption set from its bag-of-words word-caption matrix.

    Returns ``Scores`` with one value per set (``per_caption`` holds the sets, ``ids`` their ids),
    corpus = mean over sets, and ``parts["ratio"]`` = r. Words are the tokenizer's tokens with no
    stop-word removal (the authors split on spaces).
    """
    sets = caption_sets(sets, tokenizer)
    sigma = singular_values(bow_matrices(sets))
    div, r = diversity_from_singular_values(sigma, sets.sizes)
    sig = make_signature("lsa", features="bow", sv="svd", map="-log_m(r)", m=sets.size_label,
                         tok=sets.tokenizer)
    return Scores("lsa", div, float(div.mean()), sig, sets.ids,
                  {"ratio": r, "m": sets.sizes.copy()})


def _df(document_frequency: DocumentFrequencies | None, tokenizer: str) -> DocumentFrequencies:
    return reference_document_frequencies(tokenizer) if document_frequency is None \
        else document_frequency


def self_cider(sets, *, document_frequency: DocumentFrequencies | None = None, n: int = 4,
               sigma: float = 6.0, tokenizer: str = "ptb") -> Scores:
    """Self-CIDEr diversity of each caption set, as the authors' code computes it.

    ``document_frequency``: the corpus whose df and log(number of documents) weight the n-grams.
    Default: the COCO Karpathy-test references (the authors used COCO train, not public as a
    file; give it with ``capkit.metrics.document_frequencies(coco_train_refs, name=...)``).
    Returns ``Scores`` with one value per set, corpus = mean over sets, ``parts["ratio"]`` = r.
    """
    sets = caption_sets(sets, tokenizer)
    df = _df(document_frequency, sets.tokenizer)
    kernel = cider_d_kernel(sets, df, n=n, sigma=sigma)
    div, r = diversity_from_singular_values(np.sqrt(singular_values(kernel)), sets.sizes)
    sig = make_signature("self_cider", kernel="cider_d", n=n, sigma=sigma,
                         df=df_label(df, document_frequency),
                         sv="sqrt(svd)", map="-log_m(r)", m=sets.size_label,
                         tok=sets.tokenizer)
    return Scores("self_cider", div, float(div.mean()), sig, sets.ids,
                  {"ratio": r, "m": sets.sizes.copy()})


def self_cider_kernel(captions: list[str], *, document_frequency: DocumentFrequencies | None = None,
                      n: int = 4, sigma: float = 6.0, tokenizer: str = "ptb") -> np.ndarray:
    """(m, m) Self-CIDEr kernel of one list of captions (e.g. for plots and MDS)."""
    sets = caption_sets([captions], tokenizer)
    return cider_d_kernel(sets, _df(document_frequency, sets.tokenizer), n=n, sigma=sigma)[0]

