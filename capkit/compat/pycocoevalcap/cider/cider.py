"""pycocoevalcap's ``Cider`` (which is CIDEr-D) and self-critical.pytorch's ``CiderD``.

Both compute ``capkit.metrics.cider_d`` and return ``(mean, per-caption array)``. By default
(``df="corpus"``) document frequencies come from the scored references, as in pycocoevalcap: a
single scored image then gets 0 (every n-gram is in every document). For self-critical training
pass the training corpus' frequencies once, ``CiderD(df=...)``: a ``DocumentFrequencies``, a
file from ``save_document_frequencies``, or self-critical's ``{"document_frequency",
"ref_len"}`` dict (see ``document_frequency``). The log of the number of documents and the
``max(1, df)`` floor are the original's.

``n`` is the largest n-gram order. (pycocoevalcap 1.2's own ``Cider(n=...)`` always counts
1..4-grams: it fails for n < 4 and averages in empty orders for n > 4; only n = 4 compares.)

``compute_score(gts, res)`` takes ``res`` as ``{id: [caption]}`` (pycocoevalcap) or as
self-critical's ``[{"image_id": id, "caption": [caption]}, ...]``, one entry per sample.
"""
from __future__ import annotations

import numpy as np

from capkit.compat.pycocoevalcap.cider.document_frequency import as_document_frequencies
from capkit.compat.pycocoevalcap.inputs import Captions, captions, score_batch
from capkit.metrics import DocumentFrequencies


class Cider:
    def __init__(self, test=None, refs=None, n: int = 4, sigma: float = 6.0, *,
                 df="corpus"):
        self._n = n
        self._sigma = sigma
        self._df = None if isinstance(df, str) and df == "corpus" else as_document_frequencies(df)

    @property
    def document_frequency(self) -> DocumentFrequencies | None:
        """The given frequencies, or None when they come from the scored references."""
        return self._df

    def compute_score(self, gts, res):
        return self.score_captions(captions(gts, res))

    def score_captions(self, caps: Captions):
        if self._df is None and len(caps) == 1:
            per = np.zeros(1)       # D = 1: every idf is log(1) - log(1) = 0
        else:
            per = score_batch("cider_d", caps.batch, document_frequency=self._df, n=self._n,
                              sigma=self._sigma).per_caption
        per = np.array(per, dtype=np.float64)           # a writable copy, as the original
        return np.mean(per), per

    def method(self) -> str:
        return "CIDEr"


class CiderD(Cider):
    """self-critical.pytorch's ``CiderD(n=4, sigma=6.0, df="corpus")``, same numbers."""

    def __init__(self, n: int = 4, sigma: float = 6.0, df="corpus"):
        super().__init__(n=n, sigma=sigma, df=df)

    def method(self) -> str:
        return "CIDEr-D"
