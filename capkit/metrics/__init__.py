"""Caption metrics: each one a function ``name(candidates, references, images=None, **options)
-> Scores``, a registry of ``MetricSpec`` records that says what each one needs,
and one scorer that runs any set of them on one input.

    >>> from capkit.metrics import score, cider_d
    >>> score(cands, refs, ["bleu_4", "cider_d"])          # doctest: +SKIP
    >>> capkit.metrics.registered()                        # doctest: +SKIP  (`capkit metrics`)

Importing this package loads numpy and the n-gram metrics, never a model or torch. METEOR,
SPICE and the model-backed metrics (``LAZY``) load on first use: scoring BLEU, ROUGE-L and
CIDEr-D does not pay for them (``capkit score``'s start-up).
"""
from __future__ import annotations

import importlib
import sys
import types

from capkit.metrics.bleu import bleu
from capkit.metrics.bleu_nostop import bleu_1_nostop
from capkit.metrics.catalog import register_builtins
from capkit.metrics.cider import DocumentFrequencies, cider_d, document_frequencies
from capkit.metrics.inputs import CaptionBatch, align, prepare
from capkit.metrics.registry import (
    SUITES, MetricSpec, get_spec, register, registered, resolve, suite, unregister,
)
from capkit.metrics.rouge import rouge_l
from capkit.metrics.scorer import Scorer, score
from capkit.scores import Scores

# public name -> the module that defines it, imported when the name is first read
LAZY = {
    "bertscore": "capkit.metrics.bertscore",
    "clipscore": "capkit.metrics.clipscore",
    "refclipscore": "capkit.metrics.clipscore",
    "i2ce": "capkit.metrics.i2ce",
    "leic": "capkit.metrics.leic",
    "mean_glove": "capkit.metrics.mean_glove",
    "meteor": "capkit.metrics.meteor",
    "spice": "capkit.metrics.spice",
    "spice_lite": "capkit.metrics.spice",
    "umic": "capkit.metrics.umic",
    "umic_c": "capkit.metrics.umic",
    "vilbertscore": "capkit.metrics.vilbertscore",
}

register_builtins()


def __getattr__(name: str):
    if name in LAZY:
        function = getattr(importlib.import_module(LAZY[name]), name)
        globals()[name] = function
        return function
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(LAZY))


class _Package(types.ModuleType):
    """This package's module type. Python records an imported submodule as an attribute of its
    package (``import capkit.metrics.meteor.resources`` sets ``capkit.metrics.meteor``); where
    a public function has its submodule's name (meteor, spice, i2ce, ...), the attribute stays
    the function, as it is when the package imports the function eagerly."""

    def __setattr__(self, name: str, value: object) -> None:
        if isinstance(value, types.ModuleType) and LAZY.get(name) == value.__name__:
            value = getattr(value, name)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


def get_metric(name):
    """The function behind a registered name or ``"module:function"`` (options bound)."""
    return get_spec(name).function


__all__ = ["SUITES", "CaptionBatch", "DocumentFrequencies", "MetricSpec", "Scorer", "Scores",
           "align", "bertscore", "bleu", "bleu_1_nostop", "cider_d", "clipscore",
           "document_frequencies", "get_metric", "get_spec", "i2ce", "leic", "mean_glove",
           "meteor", "prepare", "refclipscore", "register", "registered", "resolve", "rouge_l",
           "score", "spice", "spice_lite", "suite", "umic", "umic_c", "unregister",
           "vilbertscore"]
