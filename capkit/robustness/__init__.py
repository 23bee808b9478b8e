"""How robust is a metric to pathological captions? Cui et al. (CVPR 2018, section 3.4).

For a metric and a transformation (``capkit.transforms``): hold out one human caption per image,
transform it with strength gamma = 0, 0.1, ..., 1, score it against the image's other
references, normalise so the untransformed caption scores 1 (ratio of means over images), and
report the area under that curve (AUC; lower = more robust) with bootstrap bands over images.

==========================  ====================================================================
``robustness``              every metric x every transform: curves, bands, AUCs
``RobustnessResult``        ``.curves[metric][transform]``, ``.auc()``, ``.to_dict()`` (CLI JSON)
``leave_one_out``           the held-out caption and the remaining references of each image
``normalised_curve``        ratio of means, the paper's normalisation made precise
``area_under_curve``        trapezoidal AUC over gamma
``bootstrap_weights``       image resamples; ``bootstrap_curves`` the curves on them
``transform_example``       one caption transformed and scored (the notebook's widget)
``dataset_references``      {image: [captions]} of coco_karpathy_test, flickr8k (test) or world
``dataset_pictures``        their images (world: rendered, with scenes; else a folder's files)
==========================  ====================================================================

Works with every metric of ``capkit.metrics`` by name and with any callable
``fn(candidates, references) -> Scores | array`` (``module:function`` on the command line).
Taught in notebooks/04_robustness.ipynb; the command is ``capkit robustness``.
"""
from capkit.robustness.datasets import (ROBUSTNESS_DATASETS, dataset_pictures,
                                        dataset_references, subset)
from capkit.robustness.example import TransformExample, transform_example
from capkit.robustness.protocol import (
    LeaveOneOut,
    area_under_curve,
    bootstrap_curves,
    bootstrap_weights,
    leave_one_out,
    normalised_curve,
)
from capkit.robustness.scoring import FixedReferences, fix_references, score_against
from capkit.robustness.study import RobustnessCurve, RobustnessResult, robustness

__all__ = [
    "ROBUSTNESS_DATASETS", "FixedReferences", "LeaveOneOut", "RobustnessCurve",
    "RobustnessResult", "TransformExample", "area_under_curve", "bootstrap_curves",
    "bootstrap_weights", "dataset_pictures", "dataset_references", "fix_references",
    "leave_one_out",
    "normalised_curve", "robustness", "score_against", "subset", "transform_example",
]
