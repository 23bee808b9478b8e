"""pycocoevalcap's ``Meteor`` scorer (METEOR 1.5, ``-l en -norm``) without Java.

``compute_score`` returns ``(corpus METEOR, [per-caption METEOR])`` as Python floats in
``gts``' key order; the corpus score comes from the summed statistics of each caption's best
reference, as the jar's ``EVAL`` line does. Computed by ``capkit.metrics.meteor`` (pure
Python, from the jar's own resource files): no JVM is started, so there is no process to
close. As in the original, ``|||`` is removed from candidates. The original would split a
*reference* containing ``|||`` into two references (it is the jar's field separator); here a
reference is always one reference.
"""
from __future__ import annotations

import threading
from collections.abc import Mapping

from capkit.compat.pycocoevalcap.inputs import Captions, captions, score_batch
from capkit.metrics import CaptionBatch


class Meteor:
    def __init__(self):
        self.lock = threading.Lock()    # the original's; kept for code that uses it

    def compute_score(self, gts, res):
        if isinstance(gts, Mapping) and isinstance(res, Mapping):
            # the original only checks that each res entry has one caption and hands the jar
            # the references joined: tuples work there, and no reference is one empty one
            gts = {k: [*v] or [""] if isinstance(v, (list, tuple)) else v for k, v in gts.items()}
            res = {k: [*v] if isinstance(v, tuple) else v for k, v in res.items()}
        return self.score_captions(captions(gts, res))

    def score_captions(self, caps: Captions):
        batch = caps.batch
        if any("|||" in c for c in caps.candidates):
            batch = CaptionBatch([c.replace("|||", "").split() for c in caps.candidates],
                                 batch.references, None, "split")
        with self.lock:
            s = score_batch("meteor", batch)
        return float(s.corpus), s.per_caption.tolist()

    def method(self) -> str:
        return "METEOR"
