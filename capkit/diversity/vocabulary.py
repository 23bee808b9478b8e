"""Vocabulary statistics of generated captions (Wang & Chan 2019, section 5.1; distinct-n).

* ``distinct_n``: distinct n-grams / all n-grams, inside each caption set (the "percentage of
  unique uni-grams and bi-grams in the set of captions" of Shetty et al. 2017).
* ``word_frequencies``: every word with its count, most frequent first: its length is the
  vocabulary size of paper Fig. 2, its counts against rank the long tail of Fig. 3.

Explained in notebooks/09_diversity.ipynb, section "Vocabulary and the long tail".
"""
from __future__ import annotations

from collections import Counter

import numpy as np

from capkit.diversity.caption_sets import caption_sets
from capkit.metrics.inputs import tokenize
from capkit.metrics.ngrams import run_starts
from capkit.scores import Scores, make_signature


def distinct_n(sets, n: int = 1, *, tokenizer: str = "ptb") -> Scores:
    """distinct-n of each caption set; corpus = mean over sets, ``parts["pooled"]`` = over all."""
    if n < 1:
        raise ValueError(f"n-gram order n must be at least 1, got {n!r}")
    sets = caption_sets(sets, tokenizer)
    table = sets.ngrams(n).tables[n - 1]
    own = sets.owner[table.seg]
    total = np.bincount(own, table.count, minlength=len(sets))              # n-grams per set
    distinct = np.bincount(own[run_starts(table.gram, own)], minlength=len(sets))
    per = np.divide(distinct, total, out=np.zeros(len(sets)), where=total > 0)
    pooled = table.n_grams / table.count.sum() if table.count.sum() else 0.0
    sig = make_signature(f"distinct_{n}", n=n, scope="set", m=sets.size_label,
                         tok=sets.tokenizer)
    return Scores(f"distinct_{n}", per, float(per.mean()), sig, sets.ids,
                  {"pooled": float(pooled), "distinct": distinct, "total": total})


def _texts(captions) -> list[str]:
    """Captions from caption sets ({id: [caps]}, lists of lists) or a flat list of strings."""
    if isinstance(captions, dict):
        captions = list(captions.values())
    flat: list[str] = []
    for c in captions:
        if isinstance(c, str):
            flat.append(c)
        elif isinstance(c, (list, tuple)):
            flat.extend(c)
        else:
            raise TypeError(f"expected captions (strings) or lists of captions, got {c!r}")
    return flat


def word_frequencies(captions, *, tokenizer: str = "ptb") -> list[tuple[str, int]]:
    """(word, count) for every word, most frequent first (ties: first seen first)."""
    counts = Counter(t for toks in tokenize(_texts(captions), tokenizer) for t in toks)
    return counts.most_common()


def vocabulary_size(captions, *, tokenizer: str = "ptb") -> int:
    """Number of distinct words in all the captions (paper Fig. 2)."""
    return len(word_frequencies(captions, tokenizer=tokenizer))


def tail_share(frequencies: list[tuple[str, int]], top: int) -> float:
    """Share of all word occurrences outside the ``top`` most frequent words."""
    counts = np.array([c for _, c in frequencies], dtype=np.float64)
    return float(counts[top:].sum() / counts.sum()) if counts.sum() else 0.0
