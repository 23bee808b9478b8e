"""pycocoevalcap's ``CiderScorer``: (hypothesis, references) pairs added with ``+=``, scored at
once as ``Cider`` scores them (CIDEr-D, document frequencies from the added references).

    scorer = CiderScorer(n=4, sigma=6.0)
    scorer += (hypothesis, [reference, ...])          # already tokenised, split on whitespace
    mean, scores = scorer.compute_score()

Computed by ``capkit.metrics.cider_d`` through ``Cider`` (see ``cider``).
"""
from __future__ import annotations

from capkit.compat.pycocoevalcap.cider.cider import Cider
from capkit.compat.pycocoevalcap.inputs import Captions


class CiderScorer:
    def __init__(self, test=None, refs=None, n: int = 4, sigma: float = 6.0):
        self.n = n
        self.sigma = sigma
        self.ctest: list = []       # the hypotheses as added (None where none was given)
        self.crefs: list = []       # their reference lists
        self.cook_append(test, refs)

    def cook_append(self, test, refs) -> None:
        if refs is not None:
            self.crefs.append(list(refs))
            self.ctest.append(test)

    def size(self) -> int:
        assert len(self.crefs) == len(self.ctest), \
            f"refs/test mismatch! {len(self.crefs)}<>{len(self.ctest)}"
        return len(self.crefs)

    def __iadd__(self, other):
        if type(other) is tuple:
            self.cook_append(other[0], other[1])
        else:
            self.ctest.extend(other.ctest)
            self.crefs.extend(other.crefs)
        return self

    def copy(self) -> CiderScorer:
        new = CiderScorer(n=self.n, sigma=self.sigma)
        new.ctest, new.crefs = list(self.ctest), list(self.crefs)
        return new

    def compute_score(self, option=None, verbose: int = 0):
        """``(mean, per-pair array)``; ``option`` and ``verbose`` are ignored, as in the
        original."""
        missing = [i for i, t in enumerate(self.ctest) if t is None]
        if missing:
            raise ValueError(f"pair {missing[0]} has references but no hypothesis; add "
                             "(hypothesis, references) pairs")
        caps = Captions(list(range(len(self.ctest))), list(self.ctest), self.crefs)
        return Cider(n=self.n, sigma=self.sigma).score_captions(caps)
