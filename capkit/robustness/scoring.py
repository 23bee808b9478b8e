"""Scoring many candidate sets against one fixed set of references, tokenised once.

The robustness study scores the same images' references 1 + len(transforms) * 10 times; they
are tokenised once. CIDEr-D takes its document frequencies from the references of the scored
set, never from the candidates (``capkit.metrics.cider``), and here those references are always
the untransformed leave-one-out references of the evaluated images: its idf weights are the
same at every gamma and for every transform (tests/test_robustness.py checks this against
explicit ``document_frequencies`` of those references). A ``document_frequency`` given to
``fix_references`` is passed to CIDEr-D instead (needed when scoring a single image).

Built-in text metrics (``capkit.metrics.TEXT_METRICS``) receive a ``CaptionBatch`` whose
candidate tokens are the transformed words themselves; any other metric, built in or a user's
``module:function`` / callable, receives plain text: ``fn(candidates, references)``.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from capkit.scores import Scores, as_scores


@dataclass(frozen=True)
class FixedReferences:
    metrics: dict[str, Callable[..., object]]     # name -> metric function
    references: list[list[str]]                   # (I,) raw reference texts
    tokens: list[list[list[str]]]                 # (I,) their PTB tokens
    document_frequency: object | None             # CIDEr-D statistics; None: the refs' own


def resolve_metrics(metrics) -> dict[str, Callable[..., object]]:
    """{name: function} from names (built-in or 'module:function'), callables or a mapping."""
    from capkit.metrics import get_metric
    if isinstance(metrics, str):
        metrics = [m.strip() for m in metrics.split(",") if m.strip()]
    items = metrics.items() if isinstance(metrics, Mapping) else \
        [(m if isinstance(m, str) else getattr(m, "__name__", repr(m)), m) for m in metrics]
    out = {}
    for name, m in items:
        fn = get_metric(m) if isinstance(m, str) else m
        if not callable(fn):
            raise ValueError(f"metric {name!r} is not callable; give a name, 'module:function' "
                             "or a function fn(candidates, references)")
        out[str(name)] = fn
    if not out:
        raise ValueError("give at least one metric")
    return out


def fix_references(metrics, references: Sequence[Sequence[str]],
                   document_frequency=None) -> FixedReferences:
    """Tokenise the references once (``document_frequency``: CIDEr-D statistics to use)."""
    from capkit.metrics.inputs import tokenize
    fns = resolve_metrics(metrics)
    refs = [list(r) for r in references]
    flat = tokenize([r for rs in refs for r in rs], "ptb")
    tokens, pos = [], 0
    for rs in refs:
        tokens.append(flat[pos:pos + len(rs)])
        pos += len(rs)
    return FixedReferences(fns, refs, tokens, document_frequency)


def _options(name: str, fixed: FixedReferences) -> dict:
    if name == "cider_d" and fixed.document_frequency is not None:
        return {"document_frequency": fixed.document_frequency}
    return {}


def score_against(fixed: FixedReferences, candidates: Sequence[str]) -> dict[str, Scores]:
    """Every metric's Scores of ``candidates`` (normal-form texts, aligned with the refs)."""
    from capkit.metrics import TEXT_METRICS
    from capkit.metrics.inputs import CaptionBatch
    if len(candidates) != len(fixed.references):
        raise ValueError(f"got {len(candidates)} candidates for {len(fixed.references)} "
                         "reference sets; they must be aligned one to one")
    batch = CaptionBatch([c.split() for c in candidates], fixed.tokens, None, "ptb")
    out = {}
    for name, fn in fixed.metrics.items():
        if name in TEXT_METRICS and fn is _builtin(name):
            out[name] = fn(batch, **_options(name, fixed))
            continue
        result = as_scores(name, fn(list(candidates), fixed.references))
        if len(result) != len(candidates):
            raise ValueError(f"metric {name!r} returned {len(result)} scores for "
                             f"{len(candidates)} candidates; it must return one per candidate")
        out[name] = result
    return out


def _builtin(name: str):
    from capkit.metrics import METRICS
    return METRICS.get(name)


def per_caption(scores: Mapping[str, Scores]) -> dict[str, np.ndarray]:
    return {name: np.asarray(s.per_caption, dtype=np.float64) for name, s in scores.items()}
