"""Figures for system-level tables: how the classic metrics rank a set of captioning systems."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def rank_matrix(corpus_scores: dict[str, dict[str, float]], metrics: Sequence[str]) -> np.ndarray:
    """(systems, metrics) rank of each system under each metric, 1 = best."""
    systems = list(corpus_scores)
    values = np.array([[corpus_scores[s][m] for m in metrics] for s in systems])
    return (-values).argsort(axis=0).argsort(axis=0) + 1


def system_ranks(corpus_scores: dict[str, dict[str, float]], metrics: Sequence[str], ax=None):
    """Heat map of ranks (rows: systems, columns: metrics), annotated with the corpus scores."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    if ax is None:
        _, ax = plt.subplots(figsize=(1.2 * len(metrics) + 3, 0.45 * len(corpus_scores) + 1))
    systems = list(corpus_scores)
    ranks = rank_matrix(corpus_scores, metrics)
    labels = np.array([[f"{corpus_scores[s][m]:.3f}" for m in metrics] for s in systems])
    sns.heatmap(ranks, annot=labels, fmt="", cmap="viridis_r", cbar_kws={"label": "rank"},
                xticklabels=list(metrics), yticklabels=systems, ax=ax)
    ax.set_title("corpus score (colour: rank, 1 = best)")
    return ax
