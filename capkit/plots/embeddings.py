"""Figures for embedding metrics (notebooks/03_embedding_metrics.ipynb).

* ``word_map``: words placed by the first two principal components of their vectors;
* ``token_similarity``: BERTScore's token-by-token cosine matrix with its greedy matches
  (``token_match_map``: the same from two texts, for ``ipywidgets.interact``);
* ``image_scores``: images with their captions and scores;
* ``layer_curve``: a statistic per encoder layer.

Each helper takes ``ax=None`` (or ``axes=None``), returns what it drew on, never calls ``show()``
or changes global style.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def _axes(ax, size: tuple[float, float]):
    if ax is None:
        import matplotlib.pyplot as plt
        _, ax = plt.subplots(figsize=size)
    return ax


def word_map(words: Sequence[str], vectors: np.ndarray, ax=None, *,
             groups: Sequence[str] | None = None):
    """Words at their first two principal components (PCA of ``vectors``, centred)."""
    ax = _axes(ax, (6, 5))
    x = np.asarray(vectors, dtype=np.float64)
    x = x - x.mean(axis=0)
    _, _, vt = np.linalg.svd(x, full_matrices=False)
    xy = x @ vt[:2].T                                                    # (N, 2)
    labels = list(groups) if groups is not None else [""] * len(words)
    for g in dict.fromkeys(labels):
        idx = [i for i, lab in enumerate(labels) if lab == g]
        ax.scatter(xy[idx, 0], xy[idx, 1], label=g or None, s=25)
    for (px, py), w in zip(xy, words):
        ax.annotate(w, (px, py), textcoords="offset points", xytext=(3, 3), fontsize=9)
    if groups is not None:
        ax.legend(fontsize=8, loc="best")
    ax.set_xlabel("principal component 1")
    ax.set_ylabel("principal component 2")
    return ax


def token_similarity(match, ax=None, *, title: str | None = None):
    """Heat map of ``capkit.metrics.bertscore.token_match``: rows candidate tokens, columns
    reference tokens. White dots: each candidate token's best match (precision); black rings:
    each reference token's best match (recall)."""
    sim = match.similarity
    ax = _axes(ax, (0.55 * sim.shape[1] + 2, 0.45 * sim.shape[0] + 1.5))
    image = ax.imshow(sim, cmap="viridis", vmin=min(0.0, float(sim.min())), vmax=1.0)
    rows = np.arange(sim.shape[0])
    ax.scatter(sim.argmax(axis=1), rows, s=18, c="white", edgecolors="black", linewidths=0.5,
               label="precision match")
    ax.scatter(np.arange(sim.shape[1]), sim.argmax(axis=0), s=90, facecolors="none",
               edgecolors="black", label="recall match")
    ax.set_xticks(range(sim.shape[1]), match.reference_tokens, rotation=60, ha="right")
    ax.set_yticks(range(sim.shape[0]), match.candidate_tokens)
    ax.set_xlabel("reference tokens")
    ax.set_ylabel("candidate tokens")
    p, r, f = match.prf
    ax.set_title(title or f"P {p:.3f}  R {r:.3f}  F {f:.3f}")
    ax.figure.colorbar(image, ax=ax, fraction=0.04, label="cosine")
    ax.legend(loc="upper left", bbox_to_anchor=(1.25, 1.0), fontsize=8)
    return ax


def token_match_map(candidate: str, reference: str, layer: int = 5, model: str = "minilm",
                    ax=None):
    """``token_similarity`` of a (candidate, reference) pair at one layer: the function a
    notebook passes to ``ipywidgets.interact``."""
    from capkit.metrics.bertscore import token_match
    return token_similarity(token_match(candidate, reference, model=model, layer=layer), ax=ax,
                            title=None)


def image_scores(images: Sequence, captions: Sequence[str], scores: Sequence[float],
                 axes=None, *, ncols: int = 4, label: str = "score", width: int = 28):
    """A grid of images, each titled with its caption (wrapped) and score."""
    import textwrap

    from capkit.models.images import open_image
    n = len(images)
    if axes is None:
        import matplotlib.pyplot as plt
        nrows = -(-n // ncols)
        _, axes = plt.subplots(nrows, ncols, figsize=(3.2 * ncols, 3.6 * nrows), squeeze=False)
    flat = np.asarray(axes).ravel()
    for ax, img, cap, s in zip(flat, images, captions, scores):
        thumb = open_image(img)
        thumb.thumbnail((256, 256))
        ax.imshow(thumb)
        ax.set_title(f"{label} {s:.3f}\n" + "\n".join(textwrap.wrap(cap, width)[:3]),
                     fontsize=8)
    for ax in flat:
        ax.axis("off")
    return axes


def layer_curve(values: dict[str, Sequence[float]], ax=None, *, ylabel: str = "value",
                mark: int | None = None):
    """One line per series over encoder layers 0..L; ``mark`` draws the chosen layer."""
    ax = _axes(ax, (5, 3.5))
    for name, ys in values.items():
        ax.plot(range(len(ys)), ys, marker="o", label=name)
    if mark is not None:
        ax.axvline(mark, color="grey", linestyle="--", linewidth=1, label=f"layer {mark}")
    ax.set_xlabel("layer (0 = embeddings)")
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=8)
    return ax
