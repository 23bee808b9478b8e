"""Figures for I2CE (notebooks/06_intrinsic_i2ce.ipynb).

* ``training_curves``: loss and held-out reconstruction per epoch, stages marked;
* ``attention_map``: the decoder's Bahdanau weights while it rebuilds a caption;
* ``intrinsic_map``: captions at the first two principal components of their intrinsic vectors;
* ``reference_bars``: one candidate's cosine with each reference (the paper's Fig. 2/3 layout).

Each helper takes ``ax=None`` (or ``axes=None``), returns what it drew on, never calls ``show()``
or changes global style.
"""
from __future__ import annotations

import textwrap
from collections.abc import Sequence

import numpy as np


def _axes(ax, size: tuple[float, float], n: int = 1):
    if ax is None:
        import matplotlib.pyplot as plt
        _, ax = plt.subplots(1, n, figsize=size, squeeze=True)
    return ax


def training_curves(history: Sequence[dict], axes=None):
    """Left: training and held-out loss; right: held-out token accuracy and exact match. One
    point per epoch; the dotted line is where stage 2 (adaptation) starts."""
    ax_loss, ax_acc = _axes(axes, (10, 3.6), 2)
    x = np.arange(1, len(history) + 1)
    ax_loss.plot(x, [h["train_loss"] for h in history], "o-", label="train loss")
    ax_loss.plot(x, [h["val_loss"] for h in history], "s--", label="held-out loss (own stage)")
    ax_acc.plot(x, [h["token_accuracy"] for h in history], "o-", label="token accuracy")
    ax_acc.plot(x, [h["exact_match"] for h in history], "s--", label="exact match")
    other = [h.get("stage1_token_accuracy") for h in history]
    if any(v is not None for v in other):
        ax_acc.plot(x, [np.nan if v is None else v for v in other], "^:",
                    label="token accuracy, stage-1 held-out")
    stages = [h["stage"] for h in history]
    for ax in (ax_loss, ax_acc):
        if "stage2" in stages and "stage1" in stages:
            ax.axvline(stages.index("stage2") + 0.5, color="grey", ls=":", lw=1)
        ax.set_xlabel("epoch (stage 1, then stage 2)")
        ax.legend(fontsize=8)
    ax_loss.set_ylabel("cross-entropy per token")
    ax_acc.set_ylabel("held-out reconstruction")
    ax_acc.set_ylim(0, 1)
    return ax_loss, ax_acc


def attention_map(source: Sequence[str], output: Sequence[str], weights: np.ndarray, ax=None):
    """Heat map of attention ``weights`` (T, S): rows the decoded words (and <eos>), columns
    the input words."""
    rows = list(output) + ["<eos>"]
    w = np.asarray(weights)[:len(rows), :len(source)]
    ax = _axes(ax, (0.5 * len(source) + 2, 0.4 * len(rows) + 1.5))
    image = ax.imshow(w, cmap="viridis", vmin=0, vmax=1, aspect="auto")
    ax.set_xticks(range(len(source)), source, rotation=60, ha="right")
    ax.set_yticks(range(len(rows)), rows[:w.shape[0]])
    ax.set_xlabel("input (encoder) words")
    ax.set_ylabel("decoded words")
    ax.figure.colorbar(image, ax=ax, fraction=0.04)
    return ax


def intrinsic_map(texts: Sequence[str], vectors: np.ndarray, ax=None, *,
                  groups: Sequence[str] | None = None, width: int = 28):
    """Captions at the first two principal components of their (unit) intrinsic vectors."""
    ax = _axes(ax, (7, 5.5))
    x = np.asarray(vectors, dtype=np.float64)
    x = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
    x = x - x.mean(axis=0)
    _, _, vt = np.linalg.svd(x, full_matrices=False)
    xy = x @ vt[:2].T                                                    # (N, 2)
    labels = list(groups) if groups is not None else [""] * len(texts)
    for g in dict.fromkeys(labels):
        idx = [i for i, lab in enumerate(labels) if lab == g]
        ax.scatter(xy[idx, 0], xy[idx, 1], label=g or None, s=25)
    for (px, py), t in zip(xy, texts):
        ax.annotate(textwrap.shorten(t, width), (px, py), textcoords="offset points",
                    xytext=(3, 3), fontsize=8)
    if groups is not None:
        ax.legend(fontsize=8, loc="best")
    ax.set_xlabel("principal component 1")
    ax.set_ylabel("principal component 2")
    return ax


def reference_bars(candidate: str, references: Sequence[str], cosines: Sequence[float],
                   ax=None, *, width: int = 60):
    """One bar per reference: its cosine with the candidate; the best one is darker."""
    ax = _axes(ax, (8, 0.45 * len(references) + 1.2))
    c = np.asarray(cosines, dtype=np.float64)
    colors = ["tab:blue" if i == int(np.argmax(c)) else "lightsteelblue" for i in range(len(c))]
    y = np.arange(len(c))[::-1]
    ax.barh(y, c, color=colors)
    ax.set_yticks(y, [textwrap.shorten(f"{i + 1}. {r}", width) for i, r in enumerate(references)],
                  fontsize=8)
    for yi, v in zip(y, c):
        ax.text(v, yi, f" {v:.3f}", va="center", fontsize=8)
    ax.set_xlim(min(0.0, float(c.min())), 1.1)
    ax.set_xlabel("cosine of intrinsic vectors")
    ax.set_title(textwrap.shorten(f"candidate: {candidate}", width + 20), fontsize=9)
    return ax
