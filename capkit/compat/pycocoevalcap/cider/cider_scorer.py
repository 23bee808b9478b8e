"""pycocoevalcap's ``CiderScorer``: (hypothesis, references) pairs added with ``+=``, scored at
once as ``Cider`` scores them (CIDEr-D, document frequencies from the added references).

    scorer = CiderScorer(n=4, sigma=6.0)
    scorer += (hypothesis, [reference, ...])          # already tokenised, split on whitespace
    mean, scores = scorer.compute_score()

Computed by ``capkit.metrics.cider_d`` through ``Cider`` (see ``cider``).
"""
from __future__ import annotations

from capkit.compat.pycocoevalcap.cider.cider import Cider
from capkit.compat.pycocoevalcap.inputs import Pairs


class CiderScorer(Pairs):
    def __init__(self, test=None, refs=None, n: int = 4, sigma: float = 6.0):
        self.n = n
        self.sigma = sigma
        super().__init__(test, refs)

    def copy(self) -> CiderScorer:
        return self._with_pairs_of(CiderScorer(n=self.n, sigma=self.sigma))

    def compute_score(self, option=None, verbose: int = 0):
        """``(mean, per-pair array)``; ``option`` and ``verbose`` are ignored, as in the
        original."""
        return Cider(n=self.n, sigma=self.sigma).score_captions(self.captions())
