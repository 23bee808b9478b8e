"""I2CE's vocabulary and embedding table: PTB tokens, GloVe rows, the four special tokens.

Words of the training captions seen at least ``min_count`` times AND present in GloVe keep their
GloVe row; every other word is ``<unk>``, whose vector is the mean of the vocabulary's GloVe rows.
``<bos>``/``<eos>`` get fixed random vectors (seeded), ``<pad>`` zeros. The model that reads these
rows is ``capkit.models.i2ce``. Explained in notebooks/06_intrinsic_i2ce.ipynb, "The auto-encoder".
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

SPECIALS = ("<pad>", "<unk>", "<bos>", "<eos>")
PAD, UNK, BOS, EOS = range(4)

def tokenize(texts: list[str]) -> list[list[str]]:
    """Lower-case PTB tokens without punctuation, one list per text."""
    from capkit.text import ptb_tokenize
    distinct = list(dict.fromkeys(texts))
    tokens = dict(zip(distinct, (t.split() for t in ptb_tokenize(distinct))))
    return [tokens[t] for t in texts]


@dataclass(frozen=True)
class Vocabulary:
    words: tuple[str, ...]                 # (V,) row -> word; the first 4 are SPECIALS

    @functools.cached_property
    def index(self) -> dict[str, int]:
        return {w: i for i, w in enumerate(self.words)}

    def __len__(self) -> int:
        return len(self.words)

    def ids(self, tokens: list[str]) -> list[int]:
        """Word ids of a token list (unknown words -> UNK, an empty list -> [UNK])."""
        index = self.index
        return [index.get(w, UNK) for w in tokens] or [UNK]


def build_vocabulary(sentences: list[list[str]], glove, min_count: int = 2) -> Vocabulary:
    """Words seen ``min_count`` times and known to GloVe, most frequent first (ties: a-z)."""
    from collections import Counter
    if min_count < 1:
        raise ValueError(f"min_count must be at least 1, got {min_count!r}")
    counts = Counter(w for s in sentences for w in s)
    kept = sorted((w for w, n in counts.items() if n >= min_count and w in glove.index),
                  key=lambda w: (-counts[w], w))
    return Vocabulary(SPECIALS + tuple(kept))


def embedding_matrix(vocab: Vocabulary, glove, seed: int = 0) -> np.ndarray:
    """(V, E) GloVe rows; <pad> 0, <unk> the mean row, <bos>/<eos> seeded random vectors."""
    rows = np.array([glove.index[w] for w in vocab.words[len(SPECIALS):]], dtype=np.int64)
    known = glove.vectors[rows].astype(np.float32)                        # (V-4, E)
    specials = np.zeros((len(SPECIALS), glove.dim), np.float32)
    specials[UNK] = known.mean(axis=0)
    scale = float(known.std())
    specials[[BOS, EOS]] = np.random.default_rng([seed, 7]).normal(0, scale, (2, glove.dim))
    return np.concatenate([specials, known])
