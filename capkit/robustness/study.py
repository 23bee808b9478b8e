"""The robustness study: every metric against every transform, curves over gamma, AUCs.

``robustness(references, metrics, transforms)`` runs the leave-one-out protocol of
``protocol.py`` on a caption dataset {image: [references]}: the held-out human caption of every
image is transformed at each gamma (same seed at every gamma, so the changes are nested) and
scored by every metric against the image's other references; each (metric, transform) gives a
``RobustnessCurve`` with a bootstrap band and its AUC (lower = more robust).

On a subset of a dataset, RW needs the whole dataset's vocabulary: built from the evaluated
references alone, Cui et al.'s rule (words seen at least 5 times) keeps only the commonest words
of a small subset, and RW's AUC then depends on how many images are scored. ``dataset=`` one of
``ROBUSTNESS_DATASETS`` loads it (checking that the references were drawn from it); for other
data, give it as ``vocabulary_captions``.
RC's and HN's neighbours stay within the evaluated images (``TransformContext``). The signature
names the dataset and, when RW runs, its vocabulary corpus and pool size.

Explained in notebooks/04_robustness.ipynb, sections 2 ("The protocol from scratch") to 4.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from capkit.robustness.datasets import ROBUSTNESS_DATASETS, whole_dataset
from capkit.robustness.protocol import (
    area_under_curve,
    bootstrap_curves,
    bootstrap_weights,
    leave_one_out,
    normalised_curve,
)
from capkit.models.protocol import clean_signature
from capkit.robustness.scoring import fix_references, per_caption, score_against
from capkit.scores import make_signature
from capkit.transforms import GAMMAS, PAPER_TRANSFORMS, TransformContext, apply_transform
from capkit.transforms.registry import get_transform
from capkit.transforms.words import normalise


@dataclass(frozen=True)
class RobustnessCurve:
    metric: str
    transform: str
    gamma: np.ndarray          # (G,) strengths, gamma[0] = 0
    per_image: np.ndarray      # (G, I) metric score of each image's transformed held-out caption
    score: np.ndarray          # (G,) normalised: mean over images / mean at gamma = 0
    low: np.ndarray            # (G,) bootstrap percentile band
    high: np.ndarray           # (G,)
    auc: float                 # area under ``score`` (lower = more robust)
    auc_low: float
    auc_high: float

    def __repr__(self) -> str:
        return (f"RobustnessCurve({self.metric} under {self.transform}: AUC {self.auc:.3f} "
                f"[{self.auc_low:.3f}, {self.auc_high:.3f}], {self.per_image.shape[1]} images)")


@dataclass(frozen=True)
class RobustnessResult:
    curves: dict[str, dict[str, RobustnessCurve]]   # metric -> transform -> curve
    images: tuple[str, ...]                         # (I,) evaluated images
    held_out: tuple[str, ...]                       # (I,) their untransformed held-out captions
    captions: dict[str, list[list[str]]]            # transform -> (G, I) transformed captions
    signature: str                                  # the study's settings
    metric_signatures: dict[str, str] = field(default_factory=dict)

    @property
    def metrics(self) -> list[str]:
        return list(self.curves)

    @property
    def transforms(self) -> list[str]:
        return list(next(iter(self.curves.values())))

    def auc(self) -> dict[str, dict[str, float]]:
        """{metric: {transform: AUC}}."""
        return {m: {t: c.auc for t, c in by_t.items()} for m, by_t in self.curves.items()}

    def to_dict(self) -> dict:
        """The JSON layout of ``capkit robustness --format json``."""
        curves = {m: {t: {"gamma": c.gamma.tolist(), "score": c.score.tolist(),
                          "low": c.low.tolist(), "high": c.high.tolist()}
                      for t, c in by_t.items()} for m, by_t in self.curves.items()}
        return {"auc": self.auc(), "curves": curves,
                "signature": {"robustness": self.signature, **self.metric_signatures}}


def _check_gammas(gammas: Sequence[float]) -> np.ndarray:
    g = np.asarray(gammas, dtype=np.float64)
    if g.ndim != 1 or len(g) < 2 or g[0] != 0.0 or np.any(np.diff(g) <= 0) or g[-1] > 1.0:
        raise ValueError(f"gammas must increase from 0 (the untransformed captions, which every "
                         f"curve is normalised by) to at most 1, e.g. {list(GAMMAS)}; got "
                         f"{list(gammas)}")
    return g


def _curve(metric, transform, gamma, per_image, weights, level) -> RobustnessCurve:
    score = normalised_curve(per_image)
    tail = (1.0 - level) / 2 * 100
    if len(weights):
        boot = bootstrap_curves(per_image, weights)                         # (B, G)
        low, high = np.nanpercentile(boot, [tail, 100 - tail], axis=0)
        auc_low, auc_high = np.nanpercentile(area_under_curve(gamma, boot), [tail, 100 - tail])
    else:
        low, high, auc_low, auc_high = score, score, np.nan, np.nan
    return RobustnessCurve(metric, transform, gamma, per_image, score, low, high,
                           float(area_under_curve(gamma, score)), float(auc_low),
                           float(auc_high))


def robustness(references: Mapping[str, Sequence[str]], metrics=None,
               transforms: Sequence[str] = PAPER_TRANSFORMS, *,
               gammas: Sequence[float] = GAMMAS, seed: int = 0, n_boot: int = 1000,
               level: float = 0.95, context: TransformContext | None = None,
               features=None, vocabulary_captions=None, vocabulary_source: str | None = None,
               dataset: str | None = None, images: Mapping | None = None,
               scenes: Mapping | None = None, progress: bool | str = "auto") -> RobustnessResult:
    """Robustness curves and AUCs of ``metrics`` under ``transforms`` (see the module docstring).

    ``metrics``: names (``capkit.metrics``; default: the ``classic`` suite, BLEU-1..4, ROUGE-L, CIDEr-D),
    ``module:function`` strings, callables
    ``fn(candidates, references) -> Scores | array``, or a mapping {name: any of those}.
    ``context``: a ``TransformContext`` to reuse (its neighbours, vocabulary, tags), else built
    from ``references`` (with ``features`` for image neighbours, else the tf-idf proxy, and with
    ``vocabulary_captions`` / ``vocabulary_source`` for RW's vocabulary: see
    ``TransformContext.from_references``). ``dataset``: the name of the references' dataset, for
    the signature (default ``"user"``). When it is one of ``ROBUSTNESS_DATASETS`` and RW runs
    without a context, ``vocabulary_captions`` or ``vocabulary_source``, RW's vocabulary comes
    from that whole dataset (``datasets.whole_dataset``; the world's scenes of this ``seed``), as
    on the command line; otherwise from the evaluated references.
    ``images`` / ``scenes``: ``{image_id: image}`` / ``{image_id: Scene}`` for metrics that
    see them (``dataset_pictures`` gives both for ``"world"``).
    """
    gamma = _check_gammas(gammas)
    codes = [get_transform(t).code for t in transforms]
    if not 0 < level < 1:
        raise ValueError(f"level is a coverage in (0, 1), e.g. 0.95; got {level!r}")
    if metrics is None:
        from capkit.metrics import suite
        metrics = suite("classic")
    if context is not None and (features is not None or vocabulary_captions is not None
                                or vocabulary_source is not None):
        raise ValueError("give either context= or the settings to build one (features, "
                         "vocabulary_captions, vocabulary_source), not both: a given context "
                         "keeps its own neighbours and vocabulary")
    if (context is None and vocabulary_captions is None and vocabulary_source is None
            and "RW" in codes and dataset in ROBUSTNESS_DATASETS):
        vocabulary_captions = whole_dataset(references, dataset, seed=seed)
        vocabulary_source = dataset
    loo = leave_one_out(references, seed=seed)
    if context is None:
        context = TransformContext.from_references(references, features,
                                                   vocabulary_captions=vocabulary_captions,
                                                   vocabulary_source=vocabulary_source)
    fixed = fix_references(metrics, loo.references, images=_rows(images, loo.images, "images"),
                           scenes=_rows(scenes, loo.images, "scenes"))
    held = normalise(loo.held_out)
    base_scores = score_against(fixed, held)
    base = per_caption(base_scores)
    raw = {m: {} for m in fixed.metrics}
    captions = {}
    steps = [(t, g) for t in codes for g in gamma[1:]]
    for t, g in _progress(steps, progress):
        cands = apply_transform(t, held, float(g), images=loo.images, context=context, seed=seed)
        captions.setdefault(t, [held]).append(cands)
        for m, values in per_caption(score_against(fixed, cands)).items():
            raw[m].setdefault(t, [base[m]]).append(values)
    weights = bootstrap_weights(len(loo), n_boot, seed)
    curves = {m: {t: _curve(m, t, gamma, np.vstack(raw[m][t]), weights, level) for t in codes}
              for m in fixed.metrics}
    rw = context.vocabulary_provenance() if "RW" in codes else {}     # which pool RW drew from
    sig = make_signature("robustness", protocol="leave-one-out", norm="ratio-of-means",
                         auc="trapezoid", gammas=",".join(f"{x:g}" for x in gamma),
                         seed=seed, boot=n_boot, level=level,
                         dataset=clean_signature(str(dataset or "user")),
                         images=len(loo), neighbours=context.neighbour_source, words="ptb", **rw)
    return RobustnessResult(curves, loo.images, tuple(held), captions, sig,
                            {m: s.signature for m, s in base_scores.items()})


def _rows(pictures: Mapping | None, ids: Sequence[str], what: str) -> list | None:
    """``pictures[id]`` for each row's image id (None if no pictures were given)."""
    if pictures is None:
        return None
    missing = [i for i in ids if i not in pictures]
    if missing:
        raise ValueError(f"{len(missing)} image id(s) of the references have no {what} (first: "
                         f"{missing[:5]}); give one for every image id")
    return [pictures[i] for i in ids]


def _progress(steps, progress: bool | str):
    from capkit.progress import bar
    return bar(steps, desc="robustness", unit="step", progress=progress, leave=True)
