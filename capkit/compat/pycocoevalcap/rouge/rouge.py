"""pycocoevalcap's ``Rouge`` scorer (ROUGE-L, beta = 1.2), computed by ``capkit.metrics.rouge_l``.

Returns ``(mean, per-caption array)`` in ``gts``' key order; tokens are split on ``" "`` as in
the original. See ``capkit.metrics.rouge``.
"""
from __future__ import annotations

import numpy as np

from capkit.compat.pycocoevalcap.inputs import Captions, captions, score_batch


class Rouge:
    def __init__(self):
        self.beta = 1.2

    def compute_score(self, gts, res):
        return self.score_captions(captions(gts, res))

    def score_captions(self, caps: Captions):
        s = score_batch("rouge_l", caps.rouge_batch, beta=self.beta)
        per = np.array(s.per_caption, dtype=np.float64)        # a writable copy, as the original
        return np.mean(per), per

    def method(self) -> str:
        return "Rouge"
