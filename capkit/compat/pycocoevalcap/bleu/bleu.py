"""pycocoevalcap's ``Bleu`` scorer, computed by ``capkit.metrics.bleu``.

``Bleu(n).compute_score(gts, res, verbose=1)`` returns ``([corpus BLEU-1..n], [[per-caption
BLEU-k] for k = 1..n])`` as Python floats, per-caption lists in ``gts``' key order: corpus BLEU
pools the counts ("closest" reference length), per-caption BLEU carries the original's
1e-15/1e-9 smoothing. ``verbose=1`` prints the pooled counts and the length ratio, as the
original does (``verbose=0``: nothing). See ``capkit.metrics.bleu`` and ``bleu_scorer``.
"""
from __future__ import annotations

from capkit.compat.pycocoevalcap.bleu.bleu_scorer import bleu_lists
from capkit.compat.pycocoevalcap.inputs import Captions, captions


class Bleu:
    def __init__(self, n: int = 4):
        if n not in (1, 2, 3, 4):
            raise ValueError(f"BLEU order n must be 1, 2, 3 or 4 (capkit computes up to 4-grams), "
                             f"got {n!r}")
        self._n = n
        self._hypo_for_image: dict = {}
        self.ref_for_image: dict = {}

    def compute_score(self, gts, res, verbose: int = 1):
        return self.score_captions(captions(gts, res), verbose)

    def score_captions(self, caps: Captions, verbose: int = 1):
        return bleu_lists(caps, self._n, "closest", None, verbose)

    def method(self) -> str:
        return "Bleu"
