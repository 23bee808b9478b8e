"""Figures of a benchmark run (``capkit.meta_eval.benchmark``): a metrics x benchmarks heat map and,
per benchmark, bars with 95% bootstrap intervals next to the published numbers.

Each helper takes ``ax=None``, returns the axes, never calls ``show()`` or changes global style;
``save_figures`` draws on its own ``Figure`` objects (Agg canvas), not on pyplot's state.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np


def _axes(ax, size: tuple[float, float]):
    if ax is None:
        import matplotlib.pyplot as plt
        _, ax = plt.subplots(figsize=size)
    return ax


def _grid(results) -> tuple[list[str], list[str], np.ndarray]:
    benchmarks = list(results.results)
    metrics = list(dict.fromkeys(m for by in results.results.values() for m in by))
    values = np.full((len(metrics), len(benchmarks)), np.nan)
    for j, b in enumerate(benchmarks):
        for i, m in enumerate(metrics):
            if m in results.results[b]:
                values[i, j] = results.results[b][m].value
    return metrics, benchmarks, values


def heatmap(results, ax=None):
    """Metrics (rows) x benchmarks (columns), each cell the benchmark's statistic x 100.

    Colours are per column (each benchmark's own range), since tau and accuracy scales differ.
    """
    metrics, benchmarks, values = _grid(results)
    ax = _axes(ax, (1.3 * len(benchmarks) + 2, 0.45 * len(metrics) + 1.5))
    low, high = np.nanmin(values, axis=0), np.nanmax(values, axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        scaled = np.where(high > low, (values - low) / (high - low), 0.5)
    ax.imshow(np.ma.masked_invalid(scaled), cmap="viridis", aspect="auto", vmin=0, vmax=1)
    for i in range(len(metrics)):
        for j in range(len(benchmarks)):
            if np.isfinite(values[i, j]):
                ax.text(j, i, f"{values[i, j]:.1f}", ha="center", va="center", fontsize=8,
                        color="white" if scaled[i, j] < 0.6 else "black")
    ax.set_xticks(range(len(benchmarks)), benchmarks, rotation=30, ha="right")
    ax.set_yticks(range(len(metrics)), metrics)
    ax.set_title("agreement with people (x 100; colour per benchmark)")
    return ax


def bar_with_ci(results, benchmark: str, ax=None):
    """One bar per metric with its 95% bootstrap interval; published numbers as black diamonds."""
    if benchmark not in results.results:
        raise ValueError(f"benchmark {benchmark!r} is not in these results; they hold "
                         f"{', '.join(results.results)}")
    cells = list(results.results[benchmark].values())
    ax = _axes(ax, (0.7 * len(cells) + 2, 3.5))
    x = np.arange(len(cells))
    values = np.array([c.value for c in cells])
    err = np.array([[c.value - c.ci95[0] for c in cells], [c.ci95[1] - c.value for c in cells]])
    ax.bar(x, values, yerr=err, capsize=3, color="tab:blue", alpha=0.8, label="capkit (95% CI)")
    pub = [(i, c.published) for i, c in enumerate(cells) if c.published is not None]
    if pub:
        ax.scatter([i for i, _ in pub], [v for _, v in pub], marker="D", color="black",
                   zorder=3, label="published")
    ax.set_xticks(x, [c.metric for c in cells], rotation=30, ha="right")
    ax.set_ylabel(f"{cells[0].statistic} x 100" if cells else "")
    ax.set_title(benchmark)
    ax.legend(fontsize=8, loc="lower right")
    return ax


def save_figures(results, out_dir) -> list[Path]:
    """Write ``heatmap.png`` and ``bars_<benchmark>.png`` into ``out_dir``; return their paths.

    Each file is written atomically (``capkit.plots.save_figure``); one that cannot be written
    raises ``capkit.cache_files.OutputError`` naming it."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from capkit.plots import save_figure
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    metrics, benchmarks, _ = _grid(results)
    jobs = [("heatmap.png", (1.3 * len(benchmarks) + 2, 0.45 * len(metrics) + 1.5),
             lambda ax: heatmap(results, ax=ax))]
    for b in benchmarks:
        jobs.append((f"bars_{b}.png", (0.7 * len(results.results[b]) + 2, 3.5),
                     lambda ax, b=b: bar_with_ci(results, b, ax=ax)))
    paths = []
    for name, size, draw in jobs:
        fig = Figure(figsize=size)
        FigureCanvasAgg(fig)
        draw(fig.add_subplot())
        fig.tight_layout()
        paths.append(save_figure(fig, out / name, dpi=120))     # whole, or not at all
    return paths
