"""The record every metric returns: per-caption scores, a corpus score, named parts, a signature.

The signature is a settings string in the spirit of bert_score's hash and sacrebleu's signature:
print it next to a number and anyone can tell exactly how the number was computed.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from capkit import __version__


@dataclass(frozen=True)
class Scores:
    metric: str                          # registry name, e.g. "cider_d"
    per_caption: np.ndarray              # (N,) float64, one score per candidate
    corpus: float                        # the metric's own corpus definition (documented per metric)
    signature: str                       # exact settings, e.g. "cider_d|n:4|sigma:6|df:corpus|tok:ptb"
    ids: tuple[str, ...] | None = None   # candidate ids, aligned with per_caption
    parts: dict[str, object] = field(default_factory=dict)  # named extras (P/R, lower BLEU orders...)

    def __len__(self) -> int:
        return len(self.per_caption)

    def __repr__(self) -> str:
        return f"Scores({self.metric}: corpus={self.corpus:.4f}, n={len(self)}, {self.signature})"

    def by_id(self) -> dict[str, float]:
        """Per-caption scores keyed by candidate id (positions as strings when no ids were given)."""
        ids = self.ids if self.ids is not None else [str(i) for i in range(len(self))]
        return {i: float(s) for i, s in zip(ids, self.per_caption)}


def make_signature(metric: str, **settings: object) -> str:
    """`metric|key:value|...|capkit:<version>`, keys in the order given."""
    items = [f"{k}:{v}" for k, v in settings.items()]
    return "|".join([metric, *items, f"capkit:{__version__}"])


def as_scores(metric: str, values: object, signature: str | None = None) -> Scores:
    """Wrap what a user metric returned (a Scores or an array of per-caption scores)."""
    if isinstance(values, Scores):
        return values
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"metric {metric!r} must return a Scores or a 1-d array of per-caption "
                         f"scores; it returned shape {arr.shape}")
    return Scores(metric, arr, float(arr.mean()) if len(arr) else float("nan"),
                  signature or make_signature(metric, source="user"))
