"""Meta-evaluation: how well caption metrics agree with people, on the benchmarks of the literature.

``benchmark(metrics, benchmarks)`` runs each benchmark's exact protocol (``protocols.py``,
docs/benchmarks.md) and reports the statistic x 100 with a 95% bootstrap interval over
images, next to the published number (``published.json``). The statistics themselves
(``kendall_tau``, ``pairwise_accuracy``, ``bootstrap_ci``, ``paired_bootstrap``...) are in
``stats.py``; plots in ``capkit.plots.bench``.

Importing this package loads only numpy; data, metrics, tqdm and matplotlib load on first use.
"""
from capkit.meta_eval.harness import (
    DEFAULT_N_BOOT, BenchResult, BenchResults, benchmark, compare, pascal50s_draws,
)
from capkit.meta_eval.protocols import (
    ALL, GROUPS, HARD_NEGATIVES, PROTOCOLS, Protocol, expand, get_protocol,
)
from capkit.meta_eval.published import Published, load_published, published
from capkit.meta_eval.stats import (
    Interval, PairedComparison, bootstrap_ci, kendall_tau, pair_credit, paired_bootstrap,
    pairwise_accuracy, pearson, row_statistic, spearman, system_level, tie_codes, tied,
)

__all__ = [
    "ALL", "DEFAULT_N_BOOT", "GROUPS", "HARD_NEGATIVES", "PROTOCOLS", "BenchResult",
    "BenchResults", "Interval", "PairedComparison", "Protocol", "Published", "benchmark", "bootstrap_ci", "compare",
    "expand", "get_protocol", "kendall_tau", "load_published", "pair_credit", "paired_bootstrap",
    "pairwise_accuracy", "pascal50s_draws", "pearson", "published", "row_statistic", "spearman",
    "system_level", "tie_codes", "tied",
]
