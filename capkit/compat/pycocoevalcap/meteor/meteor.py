"""pycocoevalcap's ``Meteor`` scorer (METEOR 1.5, ``-l en -norm``) without Java.

``compute_score`` returns ``(corpus METEOR, [per-caption METEOR])`` as Python floats in
``gts``' key order; the corpus score comes from the summed statistics of each caption's best
reference, as the jar's ``EVAL`` line does. Computed by ``capkit.metrics.meteor`` (pure
Python, from the jar's own resource files): no JVM is started, so there is no process to
close. As in the original, ``|||`` is removed from candidates. The original would split a
*reference* containing ``|||`` into two references (it is the jar's field separator); here a
reference is always one reference.

The original hands each caption to the jar whole, and the jar splits it by its own rules
(``-norm``, then ``java.util.StringTokenizer``). So captions are split here at spaces only and
METEOR's normaliser does the rest: ``str.split()`` would also split at characters the jar keeps
inside a word (``\x0b``, ``\x1c``-``\x1f``, ``\x85``, U+1680, U+2028, U+2029), which changed scores.
"""
from __future__ import annotations

import threading
from collections.abc import Mapping

from capkit.compat.pycocoevalcap.inputs import Captions, captions, score_batch
from capkit.metrics import CaptionBatch


def _words(text: str) -> list[str]:
    """Split at spaces only: joined again, the text reaches METEOR's normaliser as the jar
    would read it (runs of spaces count as one, as there)."""
    return [w for w in text.split(" ") if w]


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
        batch = CaptionBatch([_words(c.replace("|||", "")) for c in caps.candidates],
                             [[_words(r) for r in rs] for rs in caps.references], None, "split")
        with self.lock:
            s = score_batch("meteor", batch)
        return float(s.corpus), s.per_caption.tolist()

    def method(self) -> str:
        return "METEOR"
