"""UMIC and UMIC-C (Lee et al., ACL 2021): reference-free scores from an image-text matcher.

    UMIC(v, c)   = sigmoid(W . pool(ViLT([c ; v])) + b)     after UMIC's contrastive fine-tuning
    UMIC-C(v, c) = the same with the pre-trained matching head, no fine-tuning

The head is ``ViltForImageAndTextRetrieval.rank_output`` (UMIC's ``Linear(768, 1)`` on the
pooled [CLS]); the corpus score is the mean over captions (UMIC's ``compute_metric.py``).
References are ignored. In the world, ``model="umic-world"`` is the shipped checkpoint made by
``capkit train umic`` and ``umic_c`` reads ``world-vilt``, the pre-trained model it started from
(``capkit train world-vilt``): WORLD numbers. Online, name a ViLT checkpoint or folder
(``umic_c(..., model="dandelin/vilt-b32-finetuned-coco")``: ViLT's own retrieval head, the
UMIC-C analogue; the UMIC paper's UNITER is not in transformers). Explained in
notebooks/07_umic.ipynb, sections "The score and the ranking loss" and "The world benchmarks".
"""
from __future__ import annotations

import numpy as np

from capkit.metrics.inputs import candidate_texts
from capkit.scores import Scores, make_signature


def _matching(metric: str, candidates, images, model, batch_size, device) -> Scores:
    from capkit.models.images import align_images
    from capkit.models.world_vilt import load_named
    texts, ids = candidate_texts(candidates)
    pictures = align_images(candidates, images)
    enc = load_named(model, device=device)
    logits = enc.matching_logits(texts, pictures, batch_size)
    per = 1.0 / (1.0 + np.exp(-logits))
    sig = make_signature(metric, model=enc.signature, head="rank_output", score="sigmoid")
    return Scores(metric, per, float(per.mean()) if len(per) else float("nan"), sig, ids,
                  {"logit": logits})


def umic(candidates, references=None, images=None, *, model: object = "umic-world",
         batch_size: int = 128, device: str | None = None) -> Scores:
    """UMIC per caption: sigmoid of the fine-tuned matching logit (``references`` ignored).

    ``images``: a list aligned with ``candidates``, ``{id: image}`` or a folder of ``<id>.jpg``.
    ``parts``: ``logit``."""
    return _matching("umic", candidates, images, model, batch_size, device)


def umic_c(candidates, references=None, images=None, *, model: object = "world-vilt",
           batch_size: int = 128, device: str | None = None) -> Scores:
    """UMIC-C per caption: sigmoid of the pre-trained matching logit, no contrastive
    fine-tuning (the paper's ablation)."""
    return _matching("umic_c", candidates, images, model, batch_size, device)
