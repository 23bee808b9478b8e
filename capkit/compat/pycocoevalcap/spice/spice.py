"""pycocoevalcap's ``Spice`` scorer through capkit's wrapper of the official SPICE 1.0 jar.

SPICE needs Java and Stanford CoreNLP 3.6.0. The original downloads CoreNLP when ``Spice()``
is created; capkit never downloads at run time, so ``Spice()`` checks that CoreNLP is there and
otherwise raises a ``FileNotFoundError`` that says how to get it (``python -m
data_scripts.spice_corenlp``, or ``$CAPKIT_CORENLP_DIR``). The jar runs through
``capkit.metrics.spice.official.run_spice`` (Java 15+ support, a parse cache outside
site-packages, a time limit). The return shape is the original's: ``(mean F, [per-image dict
of categories -> {"pr", "re", "f", ...}])`` in sorted id order, NaN where the jar gave none
(then the mean is NaN too, as in the original; ``capkit.metrics.spice`` scores those 0).
"""
from __future__ import annotations

import numpy as np

from capkit.compat.pycocoevalcap.inputs import InputError


def _spice_module():
    import importlib
    return importlib.import_module("capkit.metrics.spice.official")


class Spice:
    def __init__(self, *, corenlp_dir=None, java=None, timeout: float = 3600,
                 threads: int | None = None, memory: str = "8G"):
        # fail now, before any scoring, as the original's download would; the same java as
        # run_spice will use (java=, else $CAPKIT_JAVA, else PATH)
        _spice_module().find_spice_java(java)
        _spice_module().find_corenlp(corenlp_dir)
        self._options = dict(corenlp_folder=corenlp_dir, java=java, timeout=timeout,
                             threads=threads, memory=memory)

    def float_convert(self, obj) -> float:
        try:
            return float(obj)
        except (TypeError, ValueError):
            return np.nan

    def compute_score(self, gts, res):
        if sorted(gts.keys()) != sorted(res.keys()):
            raise InputError("gts and res must have the same ids")
        img_ids = sorted(gts.keys())
        for k in img_ids:
            if type(res[k]) is not list or len(res[k]) != 1 or type(gts[k]) is not list \
                    or len(gts[k]) == 0:
                raise InputError(f"id {k!r}: res needs a list of one caption and gts a "
                                 "non-empty list of references")
        results = _spice_module().run_spice([res[k][0] for k in img_ids],
                                            [gts[k] for k in img_ids], **self._options)
        scores = [{cat: {key: self.float_convert(v) for key, v in tup.items()}
                   for cat, tup in item.items()} for item in results]
        average = np.mean(np.array([s["All"]["f"] for s in scores]))
        return average, scores

    def method(self) -> str:
        return "SPICE"
