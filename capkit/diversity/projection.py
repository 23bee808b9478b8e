"""Captions in a latent semantic space (Wang & Chan 2019, appendix A.2 and Fig. 9).

* ``lsa_projection``: M = U S V^T of the word-caption matrix (stop words removed, as the
  appendix does); caption j is the column j of the first k rows of V^T.
* ``kernel_projection``: K = V Lambda V^T of the Self-CIDEr kernel; caption j is row j of the
  first k eigenvectors.
* ``classical_mds``: 2-D coordinates whose distances approximate the kernel's feature-space
  distances d_ij^2 = K_ii + K_jj - 2 K_ij (Torgerson's classical MDS: the top-2 eigenvectors).
* ``metric_mds``: the same distances fitted by stress majorisation (SMACOF, the MDS of Buja et
  al. 2008 that the paper cites), started from ``classical_mds`` so it is deterministic. Better
  for many groups of captions: classical MDS can show only two directions of a 10-image set.

Singular / eigen vectors have arbitrary signs: each component is flipped so that its largest
entry (in absolute value) is positive, which makes the output deterministic.

Explained in notebooks/09_diversity.ipynb, section "Captions in latent space".
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from capkit.diversity.caption_sets import caption_sets
from capkit.diversity.kernels import bow_matrices
from capkit.diversity.lsa import self_cider_kernel
from capkit.metrics.cider import DocumentFrequencies
from capkit.text.stop_words import NLTK_ENGLISH, is_stop

# NLTK's English list, which the paper's appendix A.2 uses for LSA ("we use stop words in LSA",
# footnote: NLTK); embedded in capkit.text.stop_words (179 words, no data download).
STOP_WORDS = NLTK_ENGLISH


@dataclass(frozen=True)
class Projection:
    """Captions as k-dimensional points in a latent space."""
    coords: np.ndarray       # (m, k) caption j -> its weight on each latent semantic
    strengths: np.ndarray    # (k,) singular values (LSA) or eigenvalues (kernel), largest first
    captions: list[str]      # (m,) the captions, in order


def _fix_signs(vectors: np.ndarray) -> np.ndarray:
    """Flip columns so that each column's largest-magnitude entry is positive."""
    pick = np.abs(vectors).argmax(axis=0)
    signs = np.sign(vectors[pick, np.arange(vectors.shape[1])])
    return vectors * np.where(signs == 0, 1.0, signs)


def _check(captions, k: int) -> list[str]:
    if isinstance(captions, str) or len(captions) < 2:
        raise ValueError("give a list of at least 2 captions to project")
    if k < 1:
        raise ValueError(f"k must be a positive number of latent dimensions, got {k!r}")
    return list(captions)


def lsa_projection(captions, k: int = 5, *, stop_words=STOP_WORDS,
                   tokenizer: str = "ptb") -> Projection:
    """LSA coordinates of each caption on the k strongest topics (stop words removed)."""
    captions = _check(captions, k)
    sets = caption_sets([captions], tokenizer)
    stop = frozenset(stop_words or ())
    kept = [[t for t in toks if not is_stop(t, stop)] for toks in sets.tokens]   # "'s" too
    if not any(kept):
        raise ValueError("every word is a stop word; pass stop_words=() or other captions")
    matrix = bow_matrices(caption_sets([[" ".join(t) for t in kept]], "split"))[0]   # (d, m)
    _, s, vt = np.linalg.svd(matrix, full_matrices=False)
    k = min(k, len(s))
    return Projection(_fix_signs(vt[:k].T), s[:k], captions)


def kernel_projection(captions, k: int = 5, *,
                      document_frequency: DocumentFrequencies | None = None,
                      tokenizer: str = "ptb") -> Projection:
    """Self-CIDEr coordinates: the k leading eigenvectors of the caption kernel K."""
    captions = _check(captions, k)
    kernel = self_cider_kernel(captions, document_frequency=document_frequency,
                               tokenizer=tokenizer)
    values, vectors = np.linalg.eigh(kernel)
    order = np.argsort(-values, kind="stable")[:min(k, len(values))]
    return Projection(_fix_signs(vectors[:, order]), values[order], captions)


def classical_mds(kernel: np.ndarray, dim: int = 2) -> np.ndarray:
    """(m, dim) points whose distances approximate sqrt(K_ii + K_jj - 2 K_ij)."""
    kernel = np.asarray(kernel, dtype=np.float64)
    if kernel.ndim != 2 or kernel.shape[0] != kernel.shape[1] or len(kernel) < 2:
        raise ValueError(f"need a square (m, m) kernel with m >= 2, got shape {kernel.shape}")
    m = len(kernel)
    sym = (kernel + kernel.T) / 2
    centre = np.eye(m) - 1.0 / m
    values, vectors = np.linalg.eigh(centre @ sym @ centre)    # -1/2 J D^2 J = J K J
    order = np.argsort(-values, kind="stable")[:dim]
    return _fix_signs(vectors[:, order]) * np.sqrt(np.maximum(values[order], 0.0))


def kernel_distances(kernel: np.ndarray) -> np.ndarray:
    """(m, m) feature-space distances sqrt(K_ii + K_jj - 2 K_ij) of a (symmetrised) kernel."""
    sym = (np.asarray(kernel, dtype=np.float64) + np.asarray(kernel).T) / 2
    diag = np.diag(sym)
    return np.sqrt(np.maximum(diag[:, None] + diag[None, :] - 2 * sym, 0.0))


def metric_mds(kernel: np.ndarray, dim: int = 2, *, iterations: int = 300,
               tol: float = 1e-9) -> np.ndarray:
    """(m, dim) points fitted to the kernel distances by SMACOF, from the classical solution."""
    x = classical_mds(kernel, dim)
    target = kernel_distances(kernel)
    m = len(target)
    stress = np.inf
    for _ in range(iterations):
        dist = np.linalg.norm(x[:, None] - x[None], axis=-1)                # (m, m)
        ratio = np.divide(target, dist, out=np.zeros_like(dist), where=dist > 0)
        b = -ratio
        b[np.diag_indices(m)] = ratio.sum(axis=1)
        x = b @ x / m                                                        # Guttman transform
        new = float(((np.linalg.norm(x[:, None] - x[None], axis=-1) - target) ** 2).sum() / 2)
        if stress - new < tol * max(new, 1.0):
            break
        stress = new
    return _fix_signs(x - x.mean(axis=0))
