"""Caption metrics: each one a function ``name(candidates, references, images=None, **options)
-> Scores`` (see STYLE.md), a registry of ``MetricSpec`` records that says what each one needs,
and one scorer that runs any set of them on one input.

    >>> from capkit.metrics import score, cider_d
    >>> score(cands, refs, ["bleu_4", "cider_d"])          # doctest: +SKIP
    >>> capkit.metrics.registered()                        # doctest: +SKIP  (`capkit metrics`)

Importing this package loads numpy and the metric modules, never a model or torch: encoders and
checkpoints load on a metric's first call.
"""
from __future__ import annotations

from capkit.metrics.bertscore import bertscore
from capkit.metrics.bleu import bleu
from capkit.metrics.bleu_nostop import bleu_1_nostop
from capkit.metrics.catalog import register_builtins
from capkit.metrics.cider import DocumentFrequencies, cider_d, document_frequencies
from capkit.metrics.clipscore import clipscore, refclipscore
from capkit.metrics.i2ce import i2ce
from capkit.metrics.inputs import CaptionBatch, align, prepare
from capkit.metrics.mean_glove import mean_glove
from capkit.metrics.meteor import meteor
from capkit.metrics.registry import (
    SUITES, MetricSpec, get_spec, register, registered, resolve, suite, unregister,
)
from capkit.metrics.rouge import rouge_l
from capkit.metrics.scorer import Scorer, score
from capkit.metrics.spice import spice, spice_lite
from capkit.scores import Scores

register_builtins()


def get_metric(name):
    """The function behind a registered name or ``"module:function"`` (options bound)."""
    return get_spec(name).function


__all__ = ["SUITES", "CaptionBatch", "DocumentFrequencies", "MetricSpec", "Scorer", "Scores",
           "align", "bertscore", "bleu", "bleu_1_nostop", "cider_d", "clipscore",
           "document_frequencies", "get_metric", "get_spec", "i2ce", "mean_glove", "meteor",
           "prepare", "refclipscore", "register", "registered", "resolve", "rouge_l", "score",
           "spice", "spice_lite", "suite", "unregister"]
