"""pycocoevalcap's ``BleuScorer``: (hypothesis, references) pairs added with ``+=``, scored at once.

    scorer = BleuScorer(n=4)
    scorer += (hypothesis, [reference, ...])          # already tokenised, split on whitespace
    score, scores = scorer.compute_score(option="closest", verbose=0)

``score`` is corpus BLEU-1..n (pooled counts), ``scores[k - 1]`` the per-pair BLEU-k with the
original's 1e-15/1e-9 smoothing; ``option`` picks the reference length of the brevity penalty:
``"closest"`` (what ``Bleu`` uses), ``"shortest"`` or ``"average"`` (None: ``"average"`` for
one pair, else ``"closest"``, as in the original); ``special_reflen`` fixes it. ``verbose=1``
prints the pooled counts and length ratio, ``2`` also each pair's, as the original prints them.
Computed by ``capkit.metrics.bleu`` (the counts of the one ``Scorer``). One difference: a second
``compute_score`` returns ``(score, scores)`` again, where the original returns ``score`` alone.
"""
from __future__ import annotations

import numpy as np

from capkit.compat.pycocoevalcap.inputs import Captions, Pairs, score_batch
from capkit.metrics.bleu import bleu_from_stats

REFLEN_OPTIONS = ("closest", "shortest", "average")


class BleuScorer(Pairs):
    def __init__(self, test=None, refs=None, n: int = 4, special_reflen=None):
        self.n = n
        self.special_reflen = special_reflen
        self._score = None
        super().__init__(test, refs)

    def _changed(self) -> None:
        self._score = None

    def copy(self) -> BleuScorer:
        return self._with_pairs_of(BleuScorer(n=self.n, special_reflen=self.special_reflen))

    def compute_score(self, option=None, verbose: int = 0):
        if self._score is None:
            if option is None:
                option = "average" if len(self.crefs) == 1 else "closest"
            self._score = bleu_lists(self.captions(), self.n, option, self.special_reflen,
                                     verbose)
        return self._score

    def recompute_score(self, option=None, verbose: int = 0):
        self._score = None
        return self.compute_score(option, verbose)


def bleu_lists(caps: Captions, n: int, option: str = "closest", special_reflen=None,
               verbose: int = 0) -> tuple[list[float], list[list[float]]]:
    """``([corpus BLEU-1..n], [[per-caption BLEU-k] for k = 1..n])`` as pycocoevalcap's
    ``BleuScorer.compute_score`` returns them, printing what it prints."""
    if option not in REFLEN_OPTIONS:
        raise ValueError(f"unsupported reflen option {option!r}; choose one of {REFLEN_OPTIONS}")
    p = score_batch(f"bleu_{n}", caps.batch).parts
    if option == "closest" and special_reflen is None:
        reflen = p["reflen"]
        score = [p[f"corpus_bleu_{k}"] for k in range(1, n + 1)]
        scores = [p[f"bleu_{k}"].tolist() for k in range(1, n + 1)]
    else:
        lengths = [[len(r) for r in rs] for rs in caps.batch.references]
        reflen = np.array([special_reflen if special_reflen is not None else
                           min(ls) if option == "shortest" else float(sum(ls)) / len(ls)
                           for ls in lengths] if lengths else [], dtype=np.float64)
        per = bleu_from_stats(p["correct"], p["guess"], p["testlen"], reflen)
        pooled = bleu_from_stats(p["correct"].sum(0), p["guess"].sum(0), p["testlen"].sum(),
                                 reflen.sum())
        score, scores = pooled.tolist(), per.T.tolist()
    if verbose > 1:
        for rs, t, g, c, r in zip(caps.batch.references, p["testlen"].tolist(),
                                  p["guess"].tolist(), p["correct"].tolist(), reflen.tolist()):
            print({"reflen": [len(x) for x in rs], "testlen": t, "guess": g, "correct": c}, r)
    if verbose > 0:
        testlen, total_reflen = int(p["testlen"].sum()), reflen.sum().item()
        print({"testlen": testlen, "reflen": total_reflen, "guess": p["guess"].sum(0).tolist(),
               "correct": p["correct"].sum(0).tolist()})
        print("ratio:", (testlen + 1e-15) / (total_reflen + 1e-9))
    return score, scores
