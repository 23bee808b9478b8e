"""Figures of Cui et al. (2018): normalised score against transformation strength (Fig. 6), one
panel per transformation, one line per metric, with bootstrap bands; and the AUC table as a heat
map.

gamma is drawn as capkit writes it everywhere (``capkit.transforms.GAMMAS``, the widgets, the
AUC): a fraction in [0, 1], not a percentage. The AUCs belong in a table (``result.auc()``, or
the heat map); a legend only names the metrics, unless ``legend_auc=True`` asks for the old
"metric (AUC)" labels. The heat map uses cividis, a colour map readable with every common
colour-vision deficiency, with the value printed in each cell in black or white by contrast.

Each helper takes ``ax=None`` (``axes=None`` for the multi-panel figure), returns the axes,
never calls ``show()`` or changes global style. Used in notebooks/04_robustness.ipynb and by
``capkit robustness``.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

HEATMAP_CMAP = "cividis"          # colour-blind safe, perceptually uniform


def _label(metric: str, curve, legend_auc: bool) -> str:
    return f"{metric} ({curve.auc:.3f})" if legend_auc else metric


def robustness_curves(result, transform: str, ax=None, *, metrics: Sequence[str] | None = None,
                      bands: bool = True, legend: bool = True, legend_auc: bool = False):
    """Normalised score (y) against gamma in [0, 1] (x) of every metric under one transform."""
    if ax is None:
        import matplotlib.pyplot as plt
        _, ax = plt.subplots(figsize=(4.2, 3.6))
    for i, metric in enumerate(metrics or result.metrics):
        c = result.curves[metric][transform]
        ax.plot(c.gamma, c.score, "-o", ms=3, color=f"C{i}", label=_label(metric, c, legend_auc))
        if bands:
            ax.fill_between(c.gamma, c.low, c.high, color=f"C{i}", alpha=0.2, lw=0)
    ax.set_xlabel("γ (strength, 0 to 1)")
    ax.set_ylabel("normalised score")
    ax.set_title(transform)
    ax.set_xlim(0, 1)
    ax.set_ylim(bottom=0)
    if legend:
        ax.legend(fontsize=8, title="metric (AUC)" if legend_auc else "metric", title_fontsize=8)
    return ax


def robustness_figure(result, axes=None, *, transforms: Sequence[str] | None = None,
                      metrics: Sequence[str] | None = None, bands: bool = True,
                      legend_auc: bool = False):
    """One panel per transform in a row, as the second row of the paper's Fig. 6; one legend,
    outside the last panel (the lines have the same colours in every panel)."""
    transforms = list(transforms or result.transforms)
    if axes is None:
        import matplotlib.pyplot as plt
        _, axes = plt.subplots(1, len(transforms), figsize=(4.2 * len(transforms), 3.6),
                               sharey=True, squeeze=False)
    axes = np.asarray(axes).ravel()
    if len(axes) < len(transforms):
        raise ValueError(f"need {len(transforms)} axes (one per transform), got {len(axes)}")
    for ax, t in zip(axes, transforms):
        robustness_curves(result, t, ax, metrics=metrics, bands=bands, legend=legend_auc,
                          legend_auc=legend_auc)
    if not legend_auc:
        axes[len(transforms) - 1].legend(fontsize=8, title="metric", title_fontsize=8,
                                         loc="upper left", bbox_to_anchor=(1.02, 1.0))
    return axes


def auc_heatmap(result, ax=None, *, metrics: Sequence[str] | None = None,
                transforms: Sequence[str] | None = None, cmap: str = HEATMAP_CMAP):
    """The AUC table (rows: metrics, columns: transforms), values printed in the cells."""
    import matplotlib

    metrics = list(metrics or result.metrics)
    transforms = list(transforms or result.transforms)
    if ax is None:
        import matplotlib.pyplot as plt
        _, ax = plt.subplots(figsize=(1.1 * len(transforms) + 3, 0.4 * len(metrics) + 1.2))
    table = np.array([[result.curves[m][t].auc for t in transforms] for m in metrics])
    colours = matplotlib.colormaps[cmap]
    image = ax.imshow(table, cmap=colours, vmin=0, vmax=1, aspect="auto")
    for (r, c), v in np.ndenumerate(table):
        red, green, blue, _ = colours(float(np.clip(v, 0, 1)))
        light = 0.299 * red + 0.587 * green + 0.114 * blue > 0.5     # luma of the cell
        ax.text(c, r, f"{v:.2f}", ha="center", va="center", fontsize=8,
                color="black" if light else "white")
    ax.set_xticks(range(len(transforms)), transforms)
    ax.set_yticks(range(len(metrics)), metrics)
    ax.figure.colorbar(image, ax=ax, label="AUC", fraction=0.04, pad=0.02)
    ax.set_title("AUC (lower = the metric notices the damage more)")
    return ax
