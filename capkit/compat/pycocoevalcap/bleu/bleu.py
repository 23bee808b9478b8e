"""pycocoevalcap's ``Bleu`` scorer, computed by ``capkit.metrics.bleu``.

``Bleu(n).compute_score(gts, res)`` returns ``([corpus BLEU-1..n], [[per-caption BLEU-k] for
k = 1..n])`` as Python floats, per-caption lists in ``gts``' key order: corpus BLEU pools the
counts ("closest" reference length), per-caption BLEU carries the original's 1e-15/1e-9
smoothing. See ``capkit.metrics.bleu``.
"""
from __future__ import annotations

import logging

from capkit.compat.pycocoevalcap.inputs import Captions, captions, score_batch

log = logging.getLogger(__name__)


class Bleu:
    def __init__(self, n: int = 4):
        if n not in (1, 2, 3, 4):
            raise ValueError(f"BLEU order n must be 1, 2, 3 or 4 (capkit computes up to 4-grams), "
                             f"got {n!r}")
        self._n = n
        self._hypo_for_image: dict = {}
        self.ref_for_image: dict = {}

    def compute_score(self, gts, res, verbose: int = 1):
        """``verbose > 0`` logs the pooled counts and length ratio (the original prints them)."""
        return self.score_captions(captions(gts, res), verbose)

    def score_captions(self, caps: Captions, verbose: int = 1):
        s = score_batch(f"bleu_{self._n}", caps.batch)
        if verbose > 0:
            p = s.parts
            testlen, reflen = int(p["testlen"].sum()), int(p["reflen"].sum())
            log.info("%s", {"testlen": testlen, "reflen": reflen,
                            "guess": p["guess"].sum(0).tolist(),
                            "correct": p["correct"].sum(0).tolist()})
            log.info("ratio: %s", (testlen + 1e-15) / (reflen + 1e-9))
        score = [s.parts[f"corpus_bleu_{k}"] for k in range(1, self._n + 1)]
        scores = [s.parts[f"bleu_{k}"].tolist() for k in range(1, self._n + 1)]
        return score, scores

    def method(self) -> str:
        return "Bleu"
