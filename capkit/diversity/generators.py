"""Caption sets that need no captioning model (Wang & Chan 2019, section 4.1).

* ``synonym_switch``: each word is replaced, with probability p, by one of its 10 nearest word
  vectors, drawn with probability proportional to the (positive) cosine similarity. The paper
  trained word2vec on COCO; capkit uses GloVe 6B 50-d offline (``capkit.models.glove``), searched
  among its ``restrict_vocab`` most frequent alphabetic words.
* ``synonym_sets``: the paper's SS generator: the caption itself, then one switched copy for
  each p in 0.10, 0.15, ..., 0.50 (10 captions).
* ``sample_references``: k of each image's human references, without replacement.

Every random choice comes from ``numpy.random.default_rng(seed)``: same seed, same sets.

Explained in notebooks/09_diversity.ipynb, section "Model samples, human references and
synonym switches".
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

PAPER_PS = tuple(round(0.10 + 0.05 * i, 2) for i in range(9))   # 0.10 ... 0.50


def _neighbour_table(words, glove, k: int, restrict_vocab: int | None):
    """word -> (neighbours, probabilities) for every word that has positive-similarity ones."""
    found = glove.neighbours_many(sorted(set(words)), k, restrict_vocab=restrict_vocab,
                                  alphabetic_only=True)
    table = {}
    for word, pairs in found.items():
        sims = np.array([max(s, 0.0) for _, s in pairs])
        if sims.sum() > 0:
            table[word] = ([w for w, _ in pairs], sims / sims.sum())
    return table


def _switch(words: list[str], p: float, table: dict, rng: np.random.Generator) -> str:
    out = []
    for word in words:
        draw = rng.random()          # one draw per word keeps the stream aligned across p
        if draw < p and word in table:
            choices, probs = table[word]
            word = choices[rng.choice(len(choices), p=probs)]
        out.append(word)
    return " ".join(out)


def _glove(glove):
    if glove is None:
        from capkit.models.glove import load_glove
        return load_glove()
    return glove


def synonym_switch(captions: Sequence[str], p: float, *, glove=None, k: int = 10,
                   restrict_vocab: int | None = 50_000, seed: int = 0) -> list[str]:
    """Each caption with every word switched, with probability ``p``, to a GloVe neighbour.

    Captions are lower-cased and split on whitespace (GloVe 6B is uncased); words without
    vectors stay. ``glove``: a ``capkit.models.glove.GloVe`` (default: the offline bundle).
    """
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"p is a probability and must lie in [0, 1], got {p!r}")
    if isinstance(captions, str):
        raise TypeError("captions must be a list of strings; wrap a single caption in a list")
    words = [c.lower().split() for c in captions]
    table = _neighbour_table([w for ws in words for w in ws], _glove(glove), k, restrict_vocab)
    rng = np.random.default_rng(seed)
    return [_switch(ws, p, table, rng) for ws in words]


def synonym_sets(captions: Mapping[str, str], ps: Sequence[float] = PAPER_PS, *, glove=None,
                 k: int = 10, restrict_vocab: int | None = 50_000,
                 seed: int = 0) -> dict[str, list[str]]:
    """The paper's SS sets: {id: [caption, switched at ps[0], switched at ps[1], ...]}."""
    if not isinstance(captions, Mapping):
        raise TypeError("captions must be a mapping {image_id: caption}")
    if not ps or any(not 0.0 <= p <= 1.0 for p in ps):
        raise ValueError(f"ps must be a non-empty list of probabilities in [0, 1], got {ps!r}")
    ids = [str(i) for i in captions]
    words = [c.lower().split() for c in captions.values()]
    table = _neighbour_table([w for ws in words for w in ws], _glove(glove), k, restrict_vocab)
    rng = np.random.default_rng(seed)
    return {i: [" ".join(ws)] + [_switch(ws, p, table, rng) for p in ps]
            for i, ws in zip(ids, words)}


def sample_references(references: Mapping[str, Sequence[str]], k: int = 5, *,
                      seed: int = 0) -> dict[str, list[str]]:
    """k references of every image, drawn without replacement (in their original order)."""
    if k < 1:
        raise ValueError(f"k must be a positive number of references, got {k!r}")
    short = [i for i, r in references.items() if len(r) < k]
    if short:
        raise ValueError(f"{len(short)} image(s) have fewer than {k} references (first: "
                         f"{short[:5]}); lower k or drop those images")
    rng = np.random.default_rng(seed)
    return {str(i): [r[j] for j in np.sort(rng.choice(len(r), size=k, replace=False))]
            for i, r in references.items()}
