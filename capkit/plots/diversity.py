"""Figures of Wang & Chan (2019): the diversity-accuracy plane (Fig. 4), diversity against the
number of captions (Fig. 6), word-frequency tails (Fig. 3), MDS maps (Fig. 9) and radar charts
of latent semantics (Fig. 14), plus the caption kernel as a heat map.

Each helper takes ``ax=None``, returns the axes, never calls ``show()`` or changes global
style. Used in notebooks/09_diversity.ipynb.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np


def _axes(ax, **subplot_kw):
    if ax is None:
        import matplotlib.pyplot as plt
        _, ax = plt.subplots(subplot_kw=subplot_kw or None)
    return ax


def diversity_accuracy(points: Mapping[str, tuple[float, float]], ax=None, *,
                       diversity_label: str = "Self-CIDEr diversity"):
    """Each method as a point (x: accuracy = mean CIDEr-D, y: diversity), labelled."""
    ax = _axes(ax)
    for name, (div, acc) in points.items():
        ax.scatter([acc], [div], s=50)
        ax.annotate(name, (acc, div), textcoords="offset points", xytext=(5, 4), fontsize=8)
    ax.set_xlabel("accuracy (mean CIDEr-D)")
    ax.set_ylabel(diversity_label)
    ax.set_title("diversity against accuracy")
    return ax


def diversity_by_m(curves: Mapping[str, Mapping[int, float]], ax=None, *,
                   dashed: Mapping[str, Mapping[int, float]] | None = None,
                   ylabel: str = "diversity"):
    """Diversity against the number of captions m: solid lines, plus optional dashed ones
    (the paper draws Self-CIDEr solid and LSA dashed, one colour per method)."""
    ax = _axes(ax)
    for i, (name, by_m) in enumerate(curves.items()):
        ms = sorted(by_m)
        ax.plot(ms, [by_m[m] for m in ms], "-o", color=f"C{i}", label=name)
        if dashed and name in dashed:
            ax.plot(ms, [dashed[name][m] for m in ms], "--s", color=f"C{i}", alpha=0.7)
    ax.set_xlabel("captions per image m")
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=8)
    return ax


def word_frequency_tails(frequencies: Mapping[str, Sequence[tuple[str, int]]], ax=None, *,
                         top: int = 5000):
    """Word count against frequency rank (log-log) for the ``top`` words of each method."""
    ax = _axes(ax)
    for name, pairs in frequencies.items():
        counts = np.array([c for _, c in pairs[:top]], dtype=np.float64)
        ax.loglog(np.arange(1, len(counts) + 1), counts, label=f"{name} ({len(pairs):,} words)")
    ax.set_xlabel("word rank")
    ax.set_ylabel("count")
    ax.legend(fontsize=8)
    return ax


def caption_map(coords: np.ndarray, groups: Sequence | None = None, ax=None, *,
                labels: Sequence[str] | None = None):
    """2-D caption positions (e.g. ``classical_mds``); colour = group (image), marker area grows
    with the number of captions at the same position, as in paper Fig. 9."""
    ax = _axes(ax)
    coords = np.asarray(coords, dtype=np.float64)
    groups = np.zeros(len(coords), dtype=int) if groups is None else np.asarray(groups)
    rounded = np.round(coords, 6)
    for gi, g in enumerate(dict.fromkeys(groups.tolist())):
        pts = rounded[groups == g]
        uniq, counts = np.unique(pts, axis=0, return_counts=True)
        ax.scatter(uniq[:, 0], uniq[:, 1], s=30 * counts, color=f"C{gi % 10}", alpha=0.7,
                   label=str(g))
    for i, text in enumerate(labels or []):
        ax.annotate(text, coords[i], fontsize=8, textcoords="offset points", xytext=(3, 3))
    ax.set_xticks([])
    ax.set_yticks([])
    return ax


def radar(coords: np.ndarray, ax=None, *, captions: Sequence[str] | None = None,
          title: str = ""):
    """Radar chart: one polygon per caption over the k latent semantics S1..Sk (Fig. 14).

    ``ax`` must be a polar axes (``plt.subplots(subplot_kw={"projection": "polar"})``).
    """
    ax = _axes(ax, projection="polar")
    if getattr(ax, "name", "") != "polar":
        raise ValueError("radar needs a polar axes: create it with "
                         "plt.subplots(subplot_kw={'projection': 'polar'}) or pass ax=None")
    coords = np.asarray(coords, dtype=np.float64)
    k = coords.shape[1]
    angles = np.linspace(0, 2 * np.pi, k, endpoint=False)
    closed = np.r_[angles, angles[:1]]
    for i, row in enumerate(coords):
        label = f"{i + 1}" + (f": {captions[i][:40]}" if captions is not None else "")
        ax.plot(closed, np.r_[row, row[:1]], lw=0.8, label=label)
    ax.set_yticklabels([])
    ax.set_xticks(angles)
    ax.set_xticklabels([f"S{j + 1}" for j in range(k)])
    ax.set_title(title)
    return ax


def latent_semantics(captions: Sequence[str], axes=None, *, document_frequency=None,
                     k: int = 5, tokenizer: str = "ptb"):
    """One caption set on radar charts: LSA topics (left), Self-CIDEr eigenvectors (right), as
    paper Fig. 14. ``axes``: two polar axes, or None for a new figure. Returns the axes."""
    from capkit.diversity.projection import kernel_projection, lsa_projection
    if axes is None:
        import matplotlib.pyplot as plt
        _, axes = plt.subplots(1, 2, figsize=(9, 3.6), subplot_kw={"projection": "polar"})
    lsa = lsa_projection(captions, k, tokenizer=tokenizer)
    kern = kernel_projection(captions, k, document_frequency=document_frequency,
                             tokenizer=tokenizer)
    radar(lsa.coords, axes[0], title="LSA (stop words removed)")
    radar(kern.coords, axes[1], captions=captions, title="Self-CIDEr kernel")
    axes[1].legend(fontsize=8, loc="center left", bbox_to_anchor=(1.15, 0.5))
    return axes


def kernel_heatmap(kernel: np.ndarray, ax=None, *, title: str = "caption kernel K"):
    """The m x m kernel as an annotated heat map (rows: candidate i, columns: caption j)."""
    ax = _axes(ax)
    kernel = np.asarray(kernel, dtype=np.float64)
    image = ax.imshow(kernel, cmap="viridis")
    m = len(kernel)
    if m <= 12:
        for i in range(m):
            for j in range(m):
                ax.text(j, i, f"{kernel[i, j]:.1f}", ha="center", va="center", fontsize=8,
                        color="w" if kernel[i, j] < kernel.max() / 2 else "k")
    ax.set_xticks(range(m))
    ax.set_yticks(range(m))
    ax.set_xticklabels(range(1, m + 1))
    ax.set_yticklabels(range(1, m + 1))
    ax.figure.colorbar(image, ax=ax, fraction=0.046)
    ax.set_title(title)
    return ax
