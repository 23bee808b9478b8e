"""The robustness protocol of Cui et al. (2018, section 3.4), made precise.

Leave-one-out: for every image one human caption (drawn with the seed) is held out; it is the
caption that gets transformed, and it is scored against the image's *other* references. At
gamma = 0 it is the untransformed human caption, i.e. what the paper normalises to 1.

Normalisation (ratio of means, on the set of images):

    s(gamma) = mean_i m(T_gamma(h_i), R_i \\ h_i)  /  mean_i m(h_i, R_i \\ h_i)

where m is the metric's per-caption score, h_i the held-out caption of image i and R_i its
references. Not per image: a per-image ratio divides by scores near 0 (per-caption BLEU-4 of a
human caption is often ~1e-5), and the paper's own curve (eq. 10) is an average over the set.
Not the metric's corpus score either: for BLEU that pools counts, which is not eq. 10's average.
The ratio only rescales, so a metric whose scores have an offset (a cosine that is 0.6 for
unrelated captions) keeps it: its curves stay high and look less robust than a 0-based metric.

AUC: the area under s(gamma) over gamma in [0, 1] by the trapezoidal rule on the grid (paper
eq. 11; lower = more robust, 1 = the metric does not notice the transformation at all).

Bootstrap: images are resampled with replacement; each resample recomputes the ratio (numerator
and denominator on the same images) and the AUC; bands are percentile intervals. The metric is
not re-run on resamples, so corpus-dependent statistics (CIDEr-D's document frequencies) stay
those of the full evaluated set.

Explained in notebooks/04_robustness.ipynb, sections 2 ("The protocol from scratch") and 5
("Why a ratio of means").
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

SALT_HELD_OUT, SALT_BOOTSTRAP = 100, 200


@dataclass(frozen=True)
class LeaveOneOut:
    images: tuple[str, ...]                      # (I,) image ids
    held_out: tuple[str, ...]                    # (I,) the human caption that is transformed
    held_out_index: np.ndarray                   # (I,) its position among the image's refs
    references: tuple[tuple[str, ...], ...]      # (I,) the image's other references

    def __len__(self) -> int:
        return len(self.images)


def leave_one_out(references: Mapping[str, Sequence[str]], *, seed: int = 0) -> LeaveOneOut:
    """Hold out one reference per image, drawn uniformly with ``seed``.

    The draws follow the mapping's order (one random number per position): the same images in
    another order hold out other captions, so curves and AUCs move within their bootstrap
    bands. Keep the dataset's order (``dataset_references`` and ``subset`` do) to repeat a run.
    """
    if not isinstance(references, Mapping) or len(references) < 2:
        raise ValueError("references must be a mapping {image: [captions]} with at least 2 "
                         "images")
    short = [i for i, r in references.items() if isinstance(r, str) or len(r) < 2]
    if short:
        raise ValueError(f"{len(short)} image(s) have fewer than 2 references (first: "
                         f"{short[:5]}); the leave-one-out protocol scores one reference "
                         "against the others, so drop those images")
    images = tuple(str(i) for i in references)
    refs = list(references.values())
    draws = np.random.default_rng([int(seed), SALT_HELD_OUT]).random(len(refs))
    index = (draws * np.array([len(r) for r in refs])).astype(np.int64)
    held = tuple(r[k] for r, k in zip(refs, index))
    rest = tuple(tuple(c for j, c in enumerate(r) if j != k) for r, k in zip(refs, index))
    return LeaveOneOut(images, held, index, rest)


def normalised_curve(per_image: np.ndarray) -> np.ndarray:
    """(G,) ratio of means: per_image (G, I) averaged over images, divided by row 0's average."""
    per_image = np.asarray(per_image, dtype=np.float64)
    base = per_image[0].mean()
    if not np.isfinite(base) or base <= 0:
        raise ValueError(f"the metric's mean score of the untransformed human captions is {base}; "
                         "normalising needs a positive number (shift the metric so that "
                         "unrelated captions score about 0)")
    return per_image.mean(axis=1) / base


def area_under_curve(gamma: Sequence[float], score: np.ndarray) -> np.ndarray:
    """Trapezoidal area under score(gamma) along the last axis (the paper's robustness)."""
    return np.trapezoid(np.asarray(score, dtype=np.float64), np.asarray(gamma, dtype=np.float64),
                        axis=-1)


def bootstrap_weights(n_images: int, n_boot: int, seed: int = 0) -> np.ndarray:
    """(B, I) how often each image appears in each resample (images drawn with replacement)."""
    if n_boot < 0:
        raise ValueError(f"n_boot must be >= 0 resamples, got {n_boot}")
    rng = np.random.default_rng([int(seed), SALT_BOOTSTRAP])
    weights = np.zeros((n_boot, n_images), dtype=np.float64)
    for b in range(n_boot):
        weights[b] = np.bincount(rng.integers(0, n_images, n_images), minlength=n_images)
    return weights


def bootstrap_curves(per_image: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """(B, G) the normalised curve of every resample (``weights`` from bootstrap_weights)."""
    sums = weights @ np.asarray(per_image, dtype=np.float64).T          # (B, G)
    base = sums[:, :1]
    return sums / np.where(base > 0, base, np.nan)
