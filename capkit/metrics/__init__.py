"""Caption metrics: each one a function ``name(candidates, references, images=None, **options)
-> Scores`` (see STYLE.md), plus a registry so the CLI, the benchmark harness and the robustness
study can ask for them by name.
"""
from __future__ import annotations

import dataclasses
import functools
import importlib
from collections.abc import Callable, Sequence

from capkit.metrics.bertscore import bertscore
from capkit.metrics.bleu import bleu
from capkit.metrics.bleu_nostop import bleu_1_nostop
from capkit.metrics.cider import DocumentFrequencies, cider_d, document_frequencies
from capkit.metrics.clipscore import clipscore, needs_images, refclipscore
from capkit.metrics.i2ce import i2ce
from capkit.metrics.inputs import CaptionBatch, align, prepare
from capkit.metrics.mean_glove import mean_glove
from capkit.metrics.meteor import meteor
from capkit.metrics.rouge import rouge_l
from capkit.metrics.spice import spice
from capkit.metrics.spice_lite import spice_lite
from capkit.scores import Scores, as_scores

METRICS: dict[str, Callable[..., Scores]] = {
    "bleu_1": functools.partial(bleu, n=1),
    "bleu_2": functools.partial(bleu, n=2),
    "bleu_3": functools.partial(bleu, n=3),
    "bleu_4": functools.partial(bleu, n=4),
    "rouge_l": rouge_l,
    "cider_d": cider_d,
    "meteor": meteor,
    "spice_lite": spice_lite,     # Java-free approximation of SPICE (spaCy parse)
    "spice": spice,               # the official SPICE jar: needs Java and Stanford CoreNLP 3.6.0
    "mean_glove": mean_glove,     # I2CE's MEAN baseline (GloVe 6B 50-d, offline bundle)
    "bertscore": bertscore,       # all-MiniLM-L6-v2, layer 5, F (offline bundle)
    # the CLIPScore paper's BERTScore (needs the roberta-large weights from the hub)
    "bertscore_roberta_large": functools.partial(bertscore, model="roberta-large"),
    "bleu_1_nostop": bleu_1_nostop,   # I2CE paper's B@1*: BLEU-1 with stop words removed
    "i2ce": i2ce,                 # I2CE: GRU auto-encoder trained by capkit (shipped checkpoint)
    "i2ce_mean": functools.partial(i2ce, aggregate="mean"),
    "clipscore": clipscore,       # needs images; ViT-B/32 from the hub or $CAPKIT_CLIP_MODEL
    "refclipscore": refclipscore,
}
IMAGE_METRICS = ("clipscore", "refclipscore")
CLASSIC = ("bleu_1", "bleu_2", "bleu_3", "bleu_4", "rouge_l", "cider_d")
# metrics that take a tokenised CaptionBatch, so several of them share one tokenisation
TEXT_METRICS = CLASSIC + ("meteor", "bleu_1_nostop")
# what `capkit bench` and `make demo` run by default: every metric that needs no download
DEFAULT_BENCH = TEXT_METRICS + ("spice_lite", "mean_glove", "i2ce")


def get_metric(name: str) -> Callable[..., Scores]:
    """A built-in metric by name, or a user's ``package.module:function``."""
    if name in METRICS:
        return METRICS[name]
    if ":" in name:
        module, _, attr = name.partition(":")
        try:
            fn = getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as err:
            raise ValueError(f"cannot import metric {name!r} ({err}); give 'module:function' "
                             "with the module importable (e.g. on PYTHONPATH)") from err
        if not callable(fn):
            raise ValueError(f"{name!r} is not callable")
        return fn
    raise ValueError(f"unknown metric {name!r}; built-in metrics: {', '.join(METRICS)}; "
                     "or give your own as 'module:function'")


def score(candidates, references=None, metrics: Sequence[str] = CLASSIC,
          tokenizer: str = "ptb") -> dict[str, Scores]:
    """Several metrics on one input, tokenised once: ``{name: Scores}``.

    Built-in text metrics share one ``CaptionBatch``; any other callable (a user's
    ``module:function``) receives the plain texts aligned by position, like every metric.
    """
    fns = {name: get_metric(name) for name in metrics}
    batch = prepare(candidates, references, tokenizer)
    plain = None
    out = {}
    for name, fn in fns.items():
        if name in TEXT_METRICS:
            out[name] = fn(batch)
            continue
        if plain is None:
            plain = align(candidates, references)
        cands, refs, ids = plain
        result = as_scores(name, fn(cands, refs))
        if len(result) != len(cands):
            raise ValueError(f"metric {name!r} returned {len(result)} scores for "
                             f"{len(cands)} candidates; it must return one per candidate")
        out[name] = result if result.ids is not None else dataclasses.replace(result, ids=ids)
    return out


__all__ = ["METRICS", "CLASSIC", "DEFAULT_BENCH", "TEXT_METRICS", "IMAGE_METRICS", "bertscore", "bleu_1_nostop", "i2ce",
           "clipscore", "mean_glove", "meteor", "needs_images", "refclipscore", "spice", "spice_lite",
           "Scores", "CaptionBatch", "DocumentFrequencies", "bleu",
           "cider_d", "document_frequencies", "get_metric", "prepare", "rouge_l", "score"]
