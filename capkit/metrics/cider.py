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

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from capkit.metrics.inputs import CaptionBatch, prepare, tokenize
from capkit.metrics.ngrams import (Encoded, GramCounts, GramCountsView, NgramIndex, build_index,
                                   merge_counts, pack_grams, run_starts)
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

    @functools.cached_property
    def table(self) -> GramCounts:
        """The counts as sorted integer keys (built once): what n-grams are looked up in."""
        if isinstance(self.counts, GramCountsView):
            return self.counts.table
        return GramCounts.from_mapping(self.counts)

    def of_grams(self, index: NgramIndex, k: int) -> np.ndarray:
        """(G,) df of each (k + 1)-gram of ``index`` (0 for n-grams not in the corpus)."""
        return self.table.lookup(self.table.codes(index.vocab)[index.gram_tokens[k]])


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


def corpus_document_frequencies(batches: Iterable[CaptionBatch], *, n: int = 4,
                                name: str = "corpus") -> DocumentFrequencies:
    """df of the references of several batches, one document per candidate, as ``cider_d``
    computes it from the references of one batch: for a set scored in chunks
    (``capkit.metrics.chunked``). The batches share one vocabulary list (token ids)."""
    keys: list[list[np.ndarray]] = [[] for _ in range(n)]
    counts: list[list[np.ndarray]] = [[] for _ in range(n)]
    vocab, n_documents = None, 0
    for batch in batches:
        enc, N = batch.encoded(), len(batch)
        if vocab is None:
            vocab = enc.vocab
        elif enc.vocab is not vocab:
            raise ValueError("corpus_document_frequencies needs batches that share one vocabulary")
        first = int(enc.starts[N])
        refs = Encoded(enc.tokens[first:], enc.lengths[N:], enc.starts[N:] - first, vocab)
        index, owner = build_index(refs, n), batch.ref_owner
        for k, table in enumerate(index.tables):
            keys[k].append(pack_grams(index.gram_tokens[k] + 1, len(vocab) + 1))
            counts[k].append(_df_of_grams(owner[table.seg], table.gram, table.n_grams))
            pending = sum(map(len, keys[k][1:]))         # keys[k][0]: what was merged so far
            if pending > max(len(keys[k][0]), 1 << 22):  # merge: memory stays ~2x the table
                merged_keys, merged_counts = merge_counts(keys[k], counts[k])
                keys[k], counts[k] = [merged_keys], [merged_counts]
        n_documents += N
    merged = [merge_counts(k, c) for k, c in zip(keys, counts)]
    table = GramCounts(list(vocab or []), tuple(m[0] for m in merged), tuple(m[1] for m in merged))
    return DocumentFrequencies(GramCountsView(table), n_documents, name)


def _df_of_grams(doc: np.ndarray, gram: np.ndarray, n_grams: int) -> np.ndarray:
    """(G,) number of distinct documents in which each gram occurs.

    Rows come in table order (gram, segment) and ``doc`` is non-decreasing in the segment, so a
    new (gram, doc) pair is wherever either changes.
    """
    return np.bincount(gram[run_starts(gram, doc)], minlength=n_grams).astype(np.float64)


def cider_d(candidates, references=None, images=None, *, n: int = 4, sigma: float = 6.0,
            document_frequency: DocumentFrequencies | None = None,
            tokenizer: str = "ptb") -> Scores:
    """CIDEr-D per caption; corpus = mean of per-caption scores (pycocoevalcap's definition)."""
    batch = prepare(candidates, references, tokenizer)
    _check_documents(len(batch), document_frequency)
    return cider_scores(cider_stats(batch, n=n, sigma=sigma,
                                    document_frequency=document_frequency),
                        n=n, sigma=sigma, document_frequency=document_frequency,
                        tokenizer=batch.tokenizer, ids=batch.ids)


def _check_documents(n_candidates: int, document_frequency) -> None:
    if document_frequency is None and n_candidates < 2:
        raise ValueError(
            "CIDEr-D takes document frequencies from the references of the scored set, so with "
            "a single candidate every n-gram is in every document and every score is 0. Score "
            "more images together, or pass document_frequency=document_frequencies(corpus_refs)")


def cider_scores(stats: Mapping[str, np.ndarray], *, n: int = 4, sigma: float = 6.0,
                 document_frequency: DocumentFrequencies | None = None,
                 tokenizer: str = "ptb", ids: tuple[str, ...] | None = None) -> Scores:
    """``Scores`` from ``cider_stats`` of one batch, or of several chunks concatenated.

    ``document_frequency``: the table the user gave (it names the signature), None for df taken
    from the scored references (``df:corpus``), in one batch or by ``corpus_document_frequencies``.
    """
    per = stats["cider_d"]
    _check_documents(len(per), document_frequency)
    df_name = "corpus" if document_frequency is None else document_frequency.fingerprint
    sig = make_signature("cider_d", n=n, sigma=sigma, clip="min", df=df_name, tok=tokenizer)
    parts = {k: v for k, v in stats.items() if k != "cider_d"}
    return Scores("cider_d", per, float(per.mean()), sig, ids, parts)


def cider_stats(batch: CaptionBatch, *, n: int = 4, sigma: float = 6.0,
                document_frequency: DocumentFrequencies | None = None) -> dict[str, np.ndarray]:
    """Per-caption CIDEr-D (``"cider_d"``) and its orders (``"cider_k"``) of one batch, with df
    from ``document_frequency`` or, when None, from the batch's own references."""
    N, owner, n_refs = len(batch), batch.ref_owner, batch.n_refs
    R = len(owner)
    given = document_frequency
    index = batch.ngrams(n)
    log_docs = given.log_documents if given is not None else float(np.log(float(N)))
    codes = given.table.codes(index.vocab) if given is not None else None        # (V,)
    sims = np.zeros((n, R))                                                        # (n, R)
    for k, table in enumerate(index.tables[:n]):
        join = batch.candidate_join(index, k)
        df = (given.table.lookup(codes[index.gram_tokens[k]]) if given is not None else
              # documents (candidates) whose references hold the gram: one per run
              np.bincount(join.run_gram, minlength=table.n_grams).astype(np.float64))
        idf = log_docs - np.log(np.maximum(1.0, df))                               # (G,)
        weight = table.count * idf[table.gram]
        norm = np.sqrt(np.bincount(table.seg, weights=weight**2, minlength=N + R))
        w_ref = weight[join.is_ref]
        # the candidate's weight of each reference row's gram (0 where it lacks the gram)
        hit = join.ref_cand_row >= 0
        w_cand = np.zeros(len(w_ref))
        w_cand[hit] = weight[~join.is_ref][join.ref_cand_row[hit]]
        dot = np.bincount(join.ref_seg - N, weights=np.minimum(w_cand, w_ref) * w_ref,
                          minlength=R)
        denom = norm[:N][owner] * norm[N:]
        sims[k] = np.where(denom != 0, dot / np.where(denom != 0, denom, 1.0), dot)
    lengths = np.maximum(index.lengths - 1, 0) if n >= 2 else np.zeros_like(index.lengths)
    delta = (lengths[:N][owner] - lengths[N:]).astype(np.float64)
    sims *= np.e ** (-(delta**2) / (2 * sigma**2))
    starts = np.concatenate([[0], np.cumsum(n_refs)[:-1]])
    summed = np.add.reduceat(sims, starts, axis=1)                                 # (n, N)
    per = summed.mean(axis=0) / n_refs * 10.0
    return {"cider_d": per, **{f"cider_{k + 1}": summed[k] / n_refs * 10.0 for k in range(n)}}
