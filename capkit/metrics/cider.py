"""CIDEr-D exactly as pycocoevalcap 1.2 computes it (Vedantam et al. 2015).

For n = 1..4, each sentence becomes a tf-idf vector of its n-grams, with
idf = log(D) - log(max(1, df)), where df counts the *documents* (one document = the reference
set of one scored candidate) that contain the n-gram and D is the number of documents. Then

    sim_n(c, r) = sum_g min(w_c[g], w_r[g]) * w_r[g] / (|w_c| |w_r|) * exp(-(l_c - l_r)^2 / (2 sigma^2))
    CIDEr-D(c)  = 10 * mean_n( sum_r sim_n(c, r) ) / |refs|

with sigma = 6 and the "clipping" min(). Two quirks of the reference code are reproduced:

* the length l in the Gaussian penalty counts *bigrams* (l = max(words - 1, 0));
* document frequencies come from the scored set itself, so scores depend on which other images
  are scored in the same call, and a single image scores 0 (every df = D). capkit raises an error
  for a single candidate unless ``document_frequency`` is given.

Explained in notebooks/01_classic_metrics.ipynb, section "CIDEr-D".
"""
from __future__ import annotations

import itertools
from collections.abc import Mapping
import functools
from dataclasses import dataclass

import numpy as np

from capkit.metrics.inputs import CaptionBatch, prepare, tokenize
from capkit.metrics.ngrams import NgramIndex, build_index, lookup, run_starts
from capkit.scores import Scores, content_hash, make_signature


@dataclass(frozen=True)
class DocumentFrequencies:
    """Precomputed CIDEr statistics of a reference corpus: df of each n-gram and D."""
    counts: Mapping[tuple[str, ...], float]  # n-gram -> number of documents containing it
    n_documents: int                         # D: the number of reference sets
    name: str = "given"                      # shown in the signature

    @property
    def log_documents(self) -> float:
        return float(np.log(float(self.n_documents)))

    @functools.cached_property
    def fingerprint(self) -> str:
        """``name#hash``: the content hash tells two tables with the same name apart."""
        return f"{self.name}#{content_hash([self.n_documents, self.counts])}"


def document_frequencies(references, *, n: int = 4, tokenizer: str = "ptb",
                         name: str = "given") -> DocumentFrequencies:
    """df over a reference corpus (a list of reference lists or {id: [refs]}), to score against."""
    ref_lists = list(references.values()) if isinstance(references, Mapping) else list(references)
    if len(ref_lists) < 2:
        raise ValueError("document frequencies need at least 2 reference sets (documents)")
    flat = tokenize([r for rs in ref_lists for r in rs], tokenizer)
    index = build_index(flat, n)
    owner = np.repeat(np.arange(len(ref_lists)), [len(rs) for rs in ref_lists])
    counts: dict[tuple[str, ...], float] = {}
    for k, table in enumerate(index.tables):
        df = _df_of_grams(owner[table.seg], table.gram, table.n_grams)
        grams = index.gram_tokens[k]
        for g in np.flatnonzero(df):
            counts[tuple(index.vocab[t] for t in grams[g])] = float(df[g])
    return DocumentFrequencies(counts, len(ref_lists), name)


def _df_of_grams(doc: np.ndarray, gram: np.ndarray, n_grams: int) -> np.ndarray:
    """(G,) number of distinct documents in which each gram occurs.

    Rows come in table order (gram, segment) and ``doc`` is non-decreasing in the segment, so a
    new (gram, doc) pair is wherever either changes.
    """
    return np.bincount(gram[run_starts(gram, doc)], minlength=n_grams).astype(np.float64)


def _given_df(index: NgramIndex, k: int, df: DocumentFrequencies) -> np.ndarray:
    """(G,) df of each k-gram of the batch; the n-gram tuples are built by numpy indexing, not
    token by token (this lookup is most of a self-critical reward batch's time)."""
    grams = index.gram_tokens[k]                                                   # (G, k)
    words = np.asarray(index.vocab, dtype=object)[grams].tolist()
    return np.fromiter(map(df.counts.get, map(tuple, words), itertools.repeat(0.0)),
                       dtype=np.float64, count=len(grams))


def cider_d(candidates, references=None, images=None, *, n: int = 4, sigma: float = 6.0,
            document_frequency: DocumentFrequencies | None = None,
            tokenizer: str = "ptb") -> Scores:
    """CIDEr-D per caption; corpus = mean of per-caption scores (pycocoevalcap's definition)."""
    batch = prepare(candidates, references, tokenizer)
    N = len(batch)
    if document_frequency is None and N < 2:
        raise ValueError(
            "CIDEr-D takes document frequencies from the references of the scored set, so with "
            "a single candidate every n-gram is in every document and every score is 0. Score "
            "more images together, or pass document_frequency=document_frequencies(corpus_refs)")
    per, parts = _cider_arrays(batch, n, sigma, document_frequency)
    df_name = "corpus" if document_frequency is None else document_frequency.fingerprint
    sig = make_signature("cider_d", n=n, sigma=sigma, clip="min", df=df_name,
                         tok=batch.tokenizer)
    return Scores("cider_d", per, float(per.mean()), sig, batch.ids, parts)


def _cider_arrays(batch: CaptionBatch, n: int, sigma: float,
                  given: DocumentFrequencies | None) -> tuple[np.ndarray, dict]:
    N, owner, n_refs = len(batch), batch.ref_owner, batch.n_refs
    R = len(owner)
    index = batch.ngrams(n)
    seg_owner = np.concatenate([np.arange(N, dtype=np.int64), owner])            # (S,)
    log_docs = given.log_documents if given is not None else float(np.log(float(N)))
    sims = np.zeros((n, R))                                                        # (n, R)
    for k, table in enumerate(index.tables[:n]):
        is_ref = table.seg >= N
        df = (_given_df(index, k, given) if given is not None else
              _df_of_grams(owner[table.seg[is_ref] - N], table.gram[is_ref], table.n_grams))
        weight = table.count * (log_docs - np.log(np.maximum(1.0, df[table.gram])))
        norm = np.sqrt(np.bincount(table.seg, weights=weight**2, minlength=N + R))
        w_cand = lookup(table.gram[is_ref] * N + seg_owner[table.seg[is_ref]],
                        table.gram[~is_ref] * N + table.seg[~is_ref], weight[~is_ref], 0.0)
        w_ref = weight[is_ref]
        dot = np.bincount(table.seg[is_ref] - N, weights=np.minimum(w_cand, w_ref) * w_ref,
                          minlength=R)
        denom = norm[:N][owner] * norm[N:]
        sims[k] = np.where(denom != 0, dot / np.where(denom != 0, denom, 1.0), dot)
    lengths = np.maximum(index.lengths - 1, 0) if n >= 2 else np.zeros_like(index.lengths)
    delta = (lengths[:N][owner] - lengths[N:]).astype(np.float64)
    sims *= np.e ** (-(delta**2) / (2 * sigma**2))
    starts = np.concatenate([[0], np.cumsum(n_refs)[:-1]])
    summed = np.add.reduceat(sims, starts, axis=1)                                 # (n, N)
    per = summed.mean(axis=0) / n_refs * 10.0
    return per, {f"cider_{k + 1}": summed[k] / n_refs * 10.0 for k in range(n)}
