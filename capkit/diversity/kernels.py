"""Caption-by-caption matrices of every set at once, built from capkit's n-gram tables.

The authors' code builds a new CIDEr scorer for each of the m(m+1)/2 caption pairs of each image.
Here all captions of all sets share one n-gram index (``capkit.metrics.ngrams``): its tables are
sorted by (gram, caption), and captions are laid out set after set, so the rows of one n-gram
inside one set are a contiguous run. Expanding every run of length L into its L x L row pairs
gives, in one array operation, every (caption i, caption j, n-gram) triple that any pairwise
similarity needs. Matrices come back zero-padded to the largest set size M: shape (N, M, M).

Explained in notebooks/09_diversity.ipynb, section "Self-CIDEr from scratch".
"""
from __future__ import annotations

import functools

import numpy as np

from capkit.diversity.caption_sets import CaptionSets
from capkit.metrics.cider import DocumentFrequencies, document_frequencies
from capkit.metrics.ngrams import NgramIndex, NgramTable, run_starts

REFERENCE_CORPUS = "coco_karpathy_test"   # the default document-frequency corpus


def within_set_pairs(table: NgramTable, owner: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row pairs (a, b) of ``table`` holding the same n-gram in two captions of one set.

    ``owner`` maps caption -> set and is non-decreasing. Pairs include a == b and come sorted
    by a, which ``np.*.reduceat`` callers rely on.
    """
    starts = run_starts(table.gram, owner[table.seg])               # (R,) runs of (gram, set)
    lengths = np.diff(np.r_[starts, len(table.gram)])                # (R,)
    sizes = lengths * lengths
    run = np.repeat(np.arange(len(starts)), sizes)                   # (P,)
    offset = np.arange(int(sizes.sum())) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    width = lengths[run]
    return starts[run] + offset // width, starts[run] + offset % width


def gram_document_frequencies(index: NgramIndex, k: int, df: DocumentFrequencies) -> np.ndarray:
    """(G,) document frequency of each (k+1)-gram of ``index`` in the corpus ``df``."""
    return df.of_grams(index, k)


def df_label(df: DocumentFrequencies, given: DocumentFrequencies | None) -> str:
    """The df in a signature: a given table by name and content hash (two tables of one name
    give other numbers), the default by its name (the pinned COCO Karpathy-test references, or
    for accuracy the references passed in: the input, as CIDEr-D's ``df:corpus``)."""
    return df.name if given is None else df.fingerprint


@functools.lru_cache(maxsize=4)
def reference_document_frequencies(tokenizer: str = "ptb") -> DocumentFrequencies:
    """df of the COCO Karpathy-test references (5,000 documents), cached per tokenizer.

    The authors used COCO-train (Karpathy split) document frequencies, which are not public as a
    file; pass those (or any corpus) as ``document_frequencies(refs, name=...)`` instead.
    """
    from capkit.data import load
    refs = load(REFERENCE_CORPUS).references
    return document_frequencies(refs, tokenizer=tokenizer, name=REFERENCE_CORPUS)


def _padded(sets: CaptionSets, values: np.ndarray) -> np.ndarray:
    """(S,) per-caption values -> (N, M) zero-padded."""
    out = np.zeros((len(sets), sets.max_size), dtype=np.float64)
    out[sets.owner, sets.position] = values
    return out


def cider_d_kernel(sets: CaptionSets, document_frequency: DocumentFrequencies, *, n: int = 4,
                   sigma: float = 6.0) -> np.ndarray:
    """(N, M, M) Self-CIDEr kernels: K[i, j] = CIDEr-D(c_i, [c_j]) for i <= j, mirrored.

    Exactly the authors' construction: CIDEr-D as pycocoevalcap computes it (tf-idf with the
    given corpus' df and log D, clipped products, Gaussian penalty on bigram counts, x10) with
    the caption of the smaller index as candidate; the diagonal is CIDEr-D(c_i, [c_i]).
    """
    if n < 1:
        raise ValueError(f"n-gram order n must be at least 1, got {n!r}")
    N, M = len(sets), sets.max_size
    index = sets.ngrams(n)
    owner, pos = sets.owner, sets.position
    cell_of = owner * M * M + pos * M                                   # (S,) row offset
    log_docs = document_frequency.log_documents
    sims = np.zeros((N, M, M))
    for k, table in enumerate(index.tables[:n]):
        idf = log_docs - np.log(np.maximum(1.0, gram_document_frequencies(
            index, k, document_frequency)))
        weight = table.count * idf[table.gram]                          # (E,)
        norm = _padded(sets, np.sqrt(np.bincount(table.seg, weight**2, len(sets.tokens))))
        a, b = within_set_pairs(table, owner)
        cell = cell_of[table.seg[a]] + pos[table.seg[b]]                # candidate a, ref b
        dot = np.bincount(cell, np.minimum(weight[a], weight[b]) * weight[b],
                          minlength=N * M * M).reshape(N, M, M)
        denom = norm[:, :, None] * norm[:, None, :]
        sims += np.where(denom != 0, dot / np.where(denom != 0, denom, 1.0), dot)
    bigrams = _padded(sets, np.maximum(index.lengths - 1, 0)) if n >= 2 else np.zeros((N, M))
    delta = bigrams[:, :, None] - bigrams[:, None, :]
    kernel = sims * np.e ** (-(delta**2) / (2 * sigma**2)) / n * 10.0
    upper = np.triu(kernel)
    return upper + np.swapaxes(np.triu(kernel, 1), 1, 2)


def bow_matrices(sets: CaptionSets) -> np.ndarray:
    """(N, V, M) word-caption count matrices (rows: each set's words, zero-padded)."""
    table = sets.ngrams(1).tables[0]
    own = sets.owner[table.seg]
    key = own * max(table.n_grams, 1) + table.gram
    uniq, inverse = np.unique(key, return_inverse=True)                 # (set, word) pairs
    set_of = uniq // max(table.n_grams, 1)
    local = np.arange(len(uniq)) - np.searchsorted(set_of, set_of)     # word index inside set
    out = np.zeros((len(sets), int(local.max()) + 1, sets.max_size))
    out[own, local[inverse], sets.position[table.seg]] = table.count
    return out
