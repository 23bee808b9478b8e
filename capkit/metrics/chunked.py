"""Scoring inputs too large to hold as token lists: chunk by chunk, with each metric's own kernel.

``Scorer(chunk_size=...)`` (and ``capkit score``, automatically above ``CHUNK_SIZE``
candidates) tokenises the input once into ``CompactCaptions`` and scores BLEU, ROUGE-L and CIDEr-D
here; any other metric of the same call is scored in memory as usual. Each of the three metrics
is split into the same two functions its in-memory form is made of:

* ``*_stats(batch, ...)``: per-caption statistics of one batch (a chunk of candidates with their
  references), concatenated over the chunks;
* ``*_scores(stats, ...)``: the ``Scores`` from them. BLEU's corpus score pools the matched and
  guessed n-gram counts and the lengths of all captions (``bleu.pooled_stats``), as in memory.

CIDEr-D takes document frequencies from ALL the references of the scored set, so when no table is
given a first pass counts them over every chunk (``cider.corpus_document_frequencies``) and each
chunk's n-grams are then looked up in that table. Peak memory is then the compact captions, one
chunk's n-gram tables and the per-caption results, whatever the number of candidates.
"""
from __future__ import annotations

import inspect
from collections.abc import Mapping

import numpy as np

from capkit.metrics.bleu import bleu_scores, bleu_stats
from capkit.metrics.cider import cider_scores, cider_stats, corpus_document_frequencies
from capkit.metrics.compact import CompactCaptions
from capkit.metrics.registry import MetricSpec
from capkit.metrics.rouge import rouge_scores, rouge_stats
from capkit.scores import Scores

# chunk_size="auto": inputs with more candidates go in chunks of this many (about 0.6 GB of
# n-gram tables each); from 100,000 candidates on, chunks take less time and half the memory
CHUNK_SIZE = 50_000

# metric function -> (statistics of one batch, Scores from the concatenated statistics)
CHUNKED = {
    "capkit.metrics.bleu:bleu": (bleu_stats, bleu_scores),
    "capkit.metrics.rouge:rouge_l": (rouge_stats, rouge_scores),
    "capkit.metrics.cider:cider_d": (cider_stats, cider_scores),
}
CIDER = "capkit.metrics.cider:cider_d"
_GIVEN = ("batch", "stats", "tokenizer", "ids")     # arguments the driver itself passes


def _options(fn) -> set[str]:
    return set(inspect.signature(fn).parameters) - set(_GIVEN)


def chunkable(spec: MetricSpec, options: Mapping[str, object]) -> bool:
    """Whether ``spec`` (with these options) can be scored in chunks."""
    target = spec.target if isinstance(spec.target, str) else None
    if target not in CHUNKED:
        return False
    stats, finish = CHUNKED[target]
    # "tokenizer" is the scorer's (the batch is tokenised already), as in memory
    return set(spec.options) | set(options) <= _options(stats) | _options(finish) | {"tokenizer"}


def _call(fn, first, options: Mapping[str, object], **given):
    accepted = set(inspect.signature(fn).parameters) - set(given)
    return fn(first, **{k: v for k, v in options.items() if k in accepted}, **given)


def score_chunks(specs: Mapping[str, MetricSpec], captions: CompactCaptions, chunk_size: int,
                 options: Mapping[str, Mapping[str, object]]) -> dict[str, Scores]:
    """``{name: Scores}`` of chunkable ``specs`` (see ``chunkable``) on ``captions``, scored
    ``chunk_size`` candidates at a time; ``options[name]``: that metric's keyword arguments
    (a ``document_frequency`` among them replaces the first pass)."""
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive number of candidates, got {chunk_size}")
    kwargs = {name: {**spec.options, **options.get(name, {})} for name, spec in specs.items()}
    corpus_n = [kwargs[name].get("n", 4) for name, spec in specs.items()
                if spec.target == CIDER and kwargs[name].get("document_frequency") is None]
    corpus_df = corpus_document_frequencies(captions.chunks(chunk_size), n=max(corpus_n)) \
        if corpus_n and len(captions) >= 2 else None
    orders = [kwargs[name].get("n", 4) for name, spec in specs.items()
              if spec.target in (CIDER, "capkit.metrics.bleu:bleu")]
    stats: dict[str, list[dict[str, np.ndarray]]] = {name: [] for name in specs}
    for batch in captions.chunks(chunk_size):
        if len(orders) > 1:
            batch.ngrams(max(orders))          # BLEU and CIDEr-D share one n-gram index
        for name, spec in specs.items():
            fn, options_ = CHUNKED[spec.target][0], kwargs[name]
            if spec.target == CIDER and options_.get("document_frequency") is None:
                options_ = {**options_, "document_frequency": corpus_df}
            stats[name].append(_call(fn, batch, options_))
    out = {}
    for name, spec in specs.items():
        parts = stats.pop(name)
        joined = {key: np.concatenate([p[key] for p in parts]) for key in parts[0]}
        del parts
        out[name] = _call(CHUNKED[spec.target][1], joined, kwargs[name],
                          tokenizer=captions.tokenizer, ids=captions.ids)
    return out
