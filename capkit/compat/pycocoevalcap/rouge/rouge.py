"""pycocoevalcap's ``Rouge`` scorer (ROUGE-L, beta = 1.2), computed by ``capkit.metrics.rouge_l``.

``compute_score`` returns ``(mean, per-caption array)`` in ``gts``' key order; tokens are split
on ``" "`` as in the original. ``calc_score([candidate], references)`` scores one image and
``my_lcs(tokens, tokens)`` is the length of a longest common subsequence, as in the original.
See ``capkit.metrics.rouge``.
"""
from __future__ import annotations

import numpy as np

from capkit.compat.pycocoevalcap.inputs import Captions, InputError, captions, score_batch
from capkit.metrics.rouge import lcs_length as my_lcs  # noqa: F401  (the original's name)


class Rouge:
    def __init__(self):
        self.beta = 1.2

    def calc_score(self, candidate, refs) -> float:
        """ROUGE-L of ``candidate`` (a list holding one caption) against ``refs`` (captions)."""
        if len(candidate) != 1 or len(refs) == 0:
            raise InputError("calc_score takes a list holding one candidate and a non-empty "
                             f"list of references, got {candidate!r:.80} and {refs!r:.80}")
        return float(self.score_captions(Captions([0], [candidate[0]], [list(refs)]))[1][0])

    def compute_score(self, gts, res):
        return self.score_captions(captions(gts, res))

    def score_captions(self, caps: Captions):
        s = score_batch("rouge_l", caps.rouge_batch, beta=self.beta)
        per = np.array(s.per_caption, dtype=np.float64)        # a writable copy, as the original
        return np.mean(per), per

    def method(self) -> str:
        return "Rouge"
