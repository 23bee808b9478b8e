"""Scoring many candidate sets against one fixed set of references, tokenised once.

The robustness study scores the same images' references 1 + len(transforms) * 10 times; they
are tokenised once. CIDEr-D takes its document frequencies from the references of the scored
set, never from the candidates (``capkit.metrics.cider``), and here those references are always
the untransformed leave-one-out references of the evaluated images: its idf weights are the
same at every gamma and for every transform (tests/test_robustness.py checks this against
explicit ``document_frequencies`` of those references). A ``document_frequency`` given to
``fix_references`` is passed to CIDEr-D instead (needed when scoring a single image).

Every metric goes through the one scorer (``capkit.metrics.Scorer``): the metrics that take
tokens receive a ``CaptionBatch`` whose candidate tokens are the transformed words themselves; any
other metric, built in or a user's ``module:function`` / callable, receives plain text: the
transformed caption in the transforms' normal form (lower case, PTB words, punctuation dropped,
at gamma = 0 too) and the references as given. The curve is divided by the gamma = 0 score,
which has the same mismatch, so it largely cancels, though not wholly (a review's one-off
comparison moved BERTScore's RC AUC on 100 COCO images by about 0.01). Image
metrics (UMIC, ViLBERTScore, CLIPScore) also receive each row's image (``images=``), world
metrics its scene: the image stays fixed while its caption is transformed.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from capkit.metrics.registry import MetricSpec
from capkit.scores import Scores


@dataclass(frozen=True)
class FixedReferences:
    metrics: dict[str, MetricSpec]                # name -> spec
    references: list[list[str]]                   # (I,) raw reference texts
    tokens: list[list[list[str]]]                 # (I,) their PTB tokens
    document_frequency: object | None             # CIDEr-D statistics; None: the refs' own
    images: list | None = None                    # (I,) the image of each row, for image metrics
    scenes: list | None = None                    # (I,) the world scene of each row


def fix_references(metrics, references: Sequence[Sequence[str]], document_frequency=None, *,
                   images: Sequence | None = None,
                   scenes: Sequence | None = None) -> FixedReferences:
    """Tokenise the references once (``document_frequency``: CIDEr-D statistics to use).
    ``images`` / ``scenes``: one per row, for metrics that see the image (or the world scene)."""
    from capkit.metrics import resolve
    from capkit.metrics.inputs import tokenize
    specs = resolve(metrics)
    for what, given in (("images", images), ("scenes", scenes)):
        needing = [n for n, spec in specs.items() if getattr(spec, what)]
        if needing and given is None:
            raise ValueError(
                f"{', '.join(needing)} score captions against {what}: pass {what}= (one per "
                "image, {image_id: ...} to robustness()); on the command line use --dataset "
                "world (rendered scenes with their images) or --images-dir DIR (a folder with "
                "every image of the dataset)")
        if given is not None and len(given) != len(references):
            raise ValueError(f"got {len(given)} {what} for {len(references)} reference sets; "
                             "they must be aligned one to one")
    refs = [list(r) for r in references]
    flat = tokenize([r for rs in refs for r in rs], "ptb")
    tokens, pos = [], 0
    for rs in refs:
        tokens.append(flat[pos:pos + len(rs)])
        pos += len(rs)
    return FixedReferences(specs, refs, tokens, document_frequency,
                           None if images is None else list(images),
                           None if scenes is None else list(scenes))


def score_against(fixed: FixedReferences, candidates: Sequence[str]) -> dict[str, Scores]:
    """Every metric's Scores of ``candidates`` (normal-form texts, aligned with the refs)."""
    from capkit.metrics import Scorer
    from capkit.metrics.inputs import CaptionBatch
    if len(candidates) != len(fixed.references):
        raise ValueError(f"got {len(candidates)} candidates for {len(fixed.references)} "
                         "reference sets; they must be aligned one to one")
    batch = CaptionBatch([c.split() for c in candidates], fixed.tokens, None, "ptb")
    return Scorer(fixed.metrics).score(list(candidates), fixed.references, batch=batch,
                                       document_frequency=fixed.document_frequency,
                                       images=fixed.images, scenes=fixed.scenes)


def per_caption(scores: Mapping[str, Scores]) -> dict[str, np.ndarray]:
    return {name: np.asarray(s.per_caption, dtype=np.float64) for name, s in scores.items()}
