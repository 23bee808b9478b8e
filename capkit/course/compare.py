"""Two methods on the same images, compared per image, and two runs of one sampler (notebook 09,
§4 and §6).

==========================  ================================================================
``paired_difference``       mean(a - b) over the same images: a paired bootstrap over images,
                            its 95% interval and p-value (``capkit.meta_eval.paired_bootstrap``)
``mean_shifts``             where two runs of the same method differ by more than sampling noise
                            (z standard errors of the per-image differences)
``run_agreement``           (ok, why) for runs at several settings: Exercise 9.3's check
==========================  ================================================================
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

__all__ = ["mean_shifts", "paired_difference", "run_agreement"]


def paired_difference(a: Sequence[float], b: Sequence[float], *, n_boot: int = 1000,
                      seed: int | None = 0, alternative: str = "two-sided"):
    """mean(a) - mean(b) of per-image values on the same images, with the percentile interval and
    the shift p-value of a paired bootstrap over the images (a ``PairedComparison``)."""
    from capkit.meta_eval.stats import paired_bootstrap
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape or a.ndim != 1 or len(a) < 2:
        raise ValueError(f"a and b are per-image values on the same images (two equal 1-d "
                         f"sequences of at least 2), got shapes {a.shape} and {b.shape}")
    return paired_bootstrap(lambda rows: a[rows].mean(), lambda rows: b[rows].mean(),
                            np.arange(len(a)), n_boot, seed, alternative=alternative)


def mean_shifts(yours: Mapping[str, Sequence[float]], reference: Mapping[str, Sequence[float]],
                *, z: float = 4.0) -> dict[str, tuple[float, float]]:
    """{measure: (mean difference, in standard errors)} for every measure whose mean per-image
    difference ``yours - reference`` lies more than ``z`` standard errors from 0; {} when two
    runs agree as two runs of the same sampler with different seeds do (a false alarm has
    probability about 6e-5 per measure at z = 4). A missing measure or a shape mismatch is a
    ValueError."""
    out = {}
    for key, ref in reference.items():
        if key not in yours:
            raise ValueError(f"no {key!r} in the run to compare; it has {sorted(yours)}")
        d = np.asarray(yours[key], dtype=float) - np.asarray(ref, dtype=float)
        se = d.std(ddof=1) / np.sqrt(len(d)) if len(d) > 1 else 0.0
        if not abs(d.mean()) <= z * se + 1e-12:
            out[key] = (float(d.mean()), float(abs(d.mean()) / se) if se > 0 else float("inf"))
    return out


def run_agreement(yours: Mapping, reference: Mapping, *, z: float = 4.0) -> tuple[bool, str]:
    """``(ok, why)`` for two runs given as {setting: {measure: per-image values}}: ok when every
    measure of every setting passes ``mean_shifts``; ``why`` names the settings and measures
    compared, or each one that differs (Exercise 9.3's check, through ``check_value``)."""
    if set(yours) != set(reference):
        return False, f"your run has the settings {sorted(yours)}, expected {sorted(reference)}"
    off = {f"{key} at {setting}": shift for setting in reference
           for key, shift in mean_shifts(yours[setting], reference[setting], z=z).items()}
    if off:
        return False, "differs from the reference run: " + "; ".join(
            f"{k} by {d:+.3f} ({n:.1f} standard errors)" for k, (d, n) in off.items())
    measures = sorted({k for run in reference.values() for k in run})
    return True, (f"agrees with the reference run at {', '.join(map(str, reference))} on "
                  f"{', '.join(measures)} (each mean within {z:g} standard errors)")
