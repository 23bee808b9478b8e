"""One caption, one transform, one gamma, every metric: what the notebook's widget shows.

``transform_example`` transforms a human caption and scores the original and the transformed
caption against the image's other references; its result prints as a small table, so
``ipywidgets.interact(transform_example, ...)`` displays it directly.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from capkit.robustness.scoring import fix_references, score_against
from capkit.transforms import TransformContext, apply_transform
from capkit.transforms.words import normalise


@dataclass(frozen=True)
class TransformExample:
    transform: str
    gamma: float
    original: str                   # normal form of the human caption
    transformed: str
    original_scores: dict[str, float]
    transformed_scores: dict[str, float]

    def __repr__(self) -> str:
        lines = [f"{self.transform} at gamma = {self.gamma:.1f}",
                 f"  original:    {self.original}", f"  transformed: {self.transformed}",
                 f"  {'metric':10s} {'original':>9s} {'transformed':>12s} {'ratio':>7s}"]
        for m, a in self.original_scores.items():
            b = self.transformed_scores[m]
            ratio = f"{b / a:7.3f}" if a > 0 else f"{'-':>7s}"
            lines.append(f"  {m:10s} {_value(a):>9s} {_value(b):>12s} {ratio}")
        return "\n".join(lines)


def _value(x: float) -> str:
    """Three decimals, or two significant digits where three decimals would print 0.000 (a
    BLEU-4 of 1e-6 is not 0, and the ratio next to it is computed from the true values)."""
    return f"{x:.3f}" if x == 0 or abs(x) >= 0.0005 else f"{x:.1e}"


def transform_example(transform: str, gamma: float, caption: str, references: Sequence[str], *,
                      metrics=("bleu_1", "bleu_4", "rouge_l", "cider_d"), image: str | None = None,
                      context: TransformContext | None = None, document_frequency=None,
                      seed: int = 0) -> TransformExample:
    """``caption`` (a human caption of ``image``) transformed, and both versions scored.

    RC and HN need ``context`` and ``image``. CIDEr-D needs ``document_frequency`` (e.g.
    ``capkit.metrics.document_frequencies`` of the dataset's references): a single image has
    no corpus of its own.
    """
    if isinstance(references, str) or not references:
        raise ValueError("references must be a non-empty list of the image's other captions")
    if "cider_d" in metrics and document_frequency is None:
        raise ValueError("CIDEr-D on one caption needs document frequencies of a corpus: pass "
                         "document_frequency=document_frequencies(dataset_references)")
    original = normalise([caption])[0]
    images = None if image is None else [image]
    new = apply_transform(transform, [caption], gamma, images=images, context=context,
                          seed=seed)[0]
    fixed = fix_references(metrics, [list(references)] * 2, document_frequency)
    scores = score_against(fixed, [original, new])
    return TransformExample(transform, float(gamma), original, new,
                            {m: float(s.per_caption[0]) for m, s in scores.items()},
                            {m: float(s.per_caption[1]) for m, s in scores.items()})
