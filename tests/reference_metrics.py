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


def reference_cider_given_df(gts: dict, res: list[dict], document_frequency: dict,
                             n_documents: float, n: int = 4, sigma: float = 6.0):
    """pycocoevalcap 1.2's CiderScorer with external document frequencies, as self-critical's
    CiderD uses them: ``document_frequency`` a ``defaultdict(float)`` of n-gram tuples, idf
    log(n_documents) - log(max(1, df)); ``res`` self-critical's list of
    ``{"image_id", "caption": [text]}``. Returns (mean, per-caption array).

    pycocoevalcap's ``compute_score`` would recount df from the scored references and its
    ``compute_cider`` overwrites ``ref_len`` with log(#scored); so ``compute_cider`` runs
    directly, with ``ref_len`` pinned by a property that ignores that write.
    """
    from pycocoevalcap.cider.cider_scorer import CiderScorer

    class PinnedCiderScorer(CiderScorer):
        ref_len = property(lambda self: self._pinned, lambda self, value: None)

    scorer = PinnedCiderScorer(n=n, sigma=sigma)
    scorer._pinned = np.log(float(n_documents))
    for item in res:
        scorer += (item["caption"][0], gts[item["image_id"]])
    scorer.document_frequency = document_frequency
    per = np.array(scorer.compute_cider())
    return np.mean(per), per
