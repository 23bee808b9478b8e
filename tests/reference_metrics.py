"""pycocoevalcap 1.2's scorers, called the way its COCOEvalCap does (test-side reference)."""
from __future__ import annotations

import numpy as np
from pycocoevalcap.bleu.bleu import Bleu
from pycocoevalcap.cider.cider import Cider
from pycocoevalcap.rouge.rouge import Rouge


def reference_scores(gts: dict[str, list[str]], res: dict[str, list[str]]) -> dict:
    """{metric: (corpus, per_caption array)} on already tokenised {id: [text]} dicts."""
    out = {}
    corpus, per = Bleu(4).compute_score(gts, res, verbose=0)
    for k in range(4):
        out[f"bleu_{k + 1}"] = (corpus[k], np.asarray(per[k]))
    out["rouge_l"] = Rouge().compute_score(gts, res)
    out["cider_d"] = Cider().compute_score(gts, res)
    return out
