"""MEAN (Zeng & Kwong, "Intrinsic Image Captioning Evaluation", I2CE baseline): cosine of the
average GloVe vectors of a caption's non-stop-words, averaged over its references.

    MEAN(c, {s_j}) = (1 / m) sum_j cos(I(c), I(s_j)),   I(x) = (1 / k) sum_{i=1..k} w_i

where w_1..w_k are the GloVe vectors of the words of x that are not stop words (the paper uses
NLTK's English list; capkit embeds it, 179 words, since NLTK's data packages cannot be
downloaded offline). The corpus score is the mean over captions, as in the paper.

Choices the paper leaves open, fixed here and recorded in the signature:

* vectors: GloVe 6B 50-d from the offline bundle (``capkit.models.glove``); any GloVe text file
  via ``glove=`` (the paper does not say which GloVe; 300-d is common), named in the signature
  by file name and a hash of its words and vectors;
* words: lower-cased runs of letters and digits, inner hyphens / apostrophes kept when GloVe has
  the whole word ("t-shirt"), else split ("dog's" -> "dog", "s"); words GloVe lacks are skipped;
* a caption with no known content word has the zero vector; its cosines are 0 (``n_empty``).

Explained in notebooks/03_embedding_metrics.ipynb, section 2 "GloVe MEAN".
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from capkit.metrics.inputs import align
from capkit.scores import Scores, content_hash, make_signature
from capkit.text.stop_words import NLTK_ENGLISH, stop_words  # noqa: F401 (public here too)

WORD = re.compile(r"[a-z0-9]+(?:['\-][a-z0-9]+)*")
SPLIT = re.compile(r"['\-]")


def content_words(text: str, vocabulary, stop: frozenset[str]) -> list[str]:
    """The words of ``text`` that count for MEAN: known to GloVe and not stop words."""
    out = []
    for word in WORD.findall(text.lower()):
        parts = [word] if word in vocabulary or word in stop else SPLIT.split(word)
        out.extend(p for p in parts if p not in stop and p in vocabulary)
    return out


def sentence_vectors(texts: list[str], glove,
                     stop: frozenset[str]) -> tuple[np.ndarray, np.ndarray]:
    """(N, d) mean GloVe vector of each text's content words (zeros if none) and (N,) counts."""
    vecs = np.zeros((len(texts), glove.dim), np.float64)
    counts = np.zeros(len(texts), np.int64)
    for i, text in enumerate(texts):
        rows = [glove.index[w] for w in content_words(text, glove.index, stop)]
        if rows:
            vecs[i] = glove.vectors[rows].astype(np.float64).mean(axis=0)
            counts[i] = len(rows)
    return vecs, counts


def _unit(x: np.ndarray) -> np.ndarray:
    norm = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.where(norm > 0, norm, 1.0)


def vectors_name(glove) -> str:
    """The offline bundle by its pin; any other vectors (a text file, a given ``GloVe``) by
    name and a hash of their content, since a path or "given" does not say which numbers."""
    from capkit.models.glove import BUNDLE_SOURCE
    if glove.source == BUNDLE_SOURCE:
        return glove.source.split(" ")[0]
    return f"{Path(glove.source).name}#{glove.digest}"


def mean_glove(candidates, references=None, images=None, *, glove=None,
               stopwords: str | Iterable[str] = "nltk") -> Scores:
    """MEAN per caption: mean over references of cos(mean vector of candidate, of reference).

    ``glove``: None (the offline GloVe 6B 50-d bundle), a GloVe text file, or a loaded
    ``capkit.models.glove.GloVe``. ``parts``: ``n_words`` (content words of each candidate) and
    ``n_empty`` (texts without any). ``images`` is ignored.
    """
    from capkit.models.glove import GloVe, load_glove
    cands, refs, ids = align(candidates, references)
    vectors = glove if isinstance(glove, GloVe) else load_glove(glove)
    stop = stop_words(stopwords)
    texts = list(dict.fromkeys(cands + [r for rs in refs for r in rs]))
    where = {t: i for i, t in enumerate(texts)}
    vecs, counts = sentence_vectors(texts, vectors, stop)
    unit = _unit(vecs)
    owner = np.repeat(np.arange(len(cands)), [len(rs) for rs in refs])
    c_rows = np.array([where[c] for c in cands], np.int64)
    r_rows = np.array([where[r] for rs in refs for r in rs], np.int64)
    cos = (unit[c_rows][owner] * unit[r_rows]).sum(axis=1)                  # (R,)
    per = np.bincount(owner, weights=cos, minlength=len(cands)) / np.maximum(
        np.bincount(owner, minlength=len(cands)), 1)
    stop_name = stopwords if isinstance(stopwords, str) else f"given#{content_hash(stop)}"
    sig = make_signature("mean_glove", vectors=vectors_name(vectors), dim=vectors.dim,
                         stopwords=f"{stop_name}({len(stop)})", refs="mean_cos",
                         tok="words", oov="skip")
    parts = {"n_words": counts[c_rows], "n_empty": int((counts == 0).sum())}
    return Scores("mean_glove", per, float(per.mean()) if len(per) else float("nan"), sig, ids,
                  parts)
