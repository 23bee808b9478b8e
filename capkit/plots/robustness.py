"""Figures of Cui et al. (2018): normalised score against transformation strength (Fig. 6), one
panel per transformation, one line per metric labelled with its AUC, with bootstrap bands; and
the AUC table as a heat map.

Each helper takes ``ax=None`` (``axes=None`` for the multi-panel figure), returns the axes,
never calls ``show()`` or changes global style. Used in notebooks/04_robustness.ipynb and by
``capkit robustness``.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def robustness_curves(result, transform: str, ax=None, *, metrics: Sequence[str] | None = None,
                      bands: bool = True, legend: bool = True):
    """Normalised score (y) against gamma in % (x) of every metric under one transform."""
    if ax is None:
        import matplotlib.pyplot as plt
        _, ax = plt.subplots(figsize=(4.2, 3.6))
    for i, metric in enumerate(metrics or result.metrics):
        c = result.curves[metric][transform]
        x = 100 * c.gamma
        ax.plot(x, c.score, "-o", ms=3, color=f"C{i}", label=f"{metric} ({c.auc:.3f})")
        if bands:
            ax.fill_between(x, c.low, c.high, color=f"C{i}", alpha=0.2, lw=0)
    ax.set_xlabel("γ (%)")
    ax.set_ylabel("normalised score")
    ax.set_title(transform)
    ax.set_xlim(0, 100)
    ax.set_ylim(bottom=0)
    if legend:
        ax.legend(fontsize=8, title="metric (AUC)", title_fontsize=8)
    return ax


def robustness_figure(result, axes=None, *, transforms: Sequence[str] | None = None,
                      metrics: Sequence[str] | None = None, bands: bool = True):
    """One panel per transform in a row, as the second row of the paper's Fig. 6."""
    transforms = list(transforms or result.transforms)
    if axes is None:
        import matplotlib.pyplot as plt
        _, axes = plt.subplots(1, len(transforms), figsize=(4.2 * len(transforms), 3.6),
                               sharey=True, squeeze=False)
    axes = np.asarray(axes).ravel()
    if len(axes) < len(transforms):
        raise ValueError(f"need {len(transforms)} axes (one per transform), got {len(axes)}")
    for ax, t in zip(axes, transforms):
        robustness_curves(result, t, ax, metrics=metrics, bands=bands)
    return axes


def auc_heatmap(result, ax=None, *, metrics: Sequence[str] | None = None,
                transforms: Sequence[str] | None = None):
    """The AUC table (rows: metrics, columns: transforms), values printed in the cells."""
    metrics = list(metrics or result.metrics)
    transforms = list(transforms or result.transforms)
    if ax is None:
        import matplotlib.pyplot as plt
        _, ax = plt.subplots(figsize=(1.1 * len(transforms) + 2, 0.4 * len(metrics) + 1))
    table = np.array([[result.curves[m][t].auc for t in transforms] for m in metrics])
    ax.imshow(table, cmap="RdYlGn_r", vmin=0, vmax=1, aspect="auto")
    for (r, c), v in np.ndenumerate(table):
        ax.text(c, r, f"{v:.2f}", ha="center", va="center", fontsize=8)
    ax.set_xticks(range(len(transforms)), transforms)
    ax.set_yticks(range(len(metrics)), metrics)
    ax.set_title("AUC (lower = more robust)")
    return ax
