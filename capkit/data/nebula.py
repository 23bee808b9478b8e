"""Nebula test split (Matsuda et al. 2024, DENEB): 3,298 captions, 5-10 references, text only."""
from __future__ import annotations

import numpy as np

from capkit.data.paths import require
from capkit.data.readers import check_references, check_text, malformed, read_json, to_float
from capkit.data.schema import CaptionJudgments

FIELDS = ("imgid", "mt", "refs", "score")


def load_nebula() -> CaptionJudgments:
    """Nebula test: one item per entry (``mt`` against ``refs``), target ``score`` in [0, 1]."""
    path = require("nebula") / "nebula_test.json"
    data = read_json(path)
    if not isinstance(data, list) or not data:
        raise malformed(path, "top level", "expected a non-empty list of {imgid, mt, refs, score}")
    candidates, references, images, human = [], [], [], []
    for i, entry in enumerate(data):
        where = f"entry {i}"
        if not isinstance(entry, dict) or any(k not in entry for k in FIELDS):
            raise malformed(path, where, "expected {imgid, mt, refs, score}")
        candidates.append(check_text(entry["mt"], path, where))
        references.append(check_references(entry["refs"], path, where))
        images.append(str(entry["imgid"]))
        human.append(to_float(entry["score"], path, where, 0, 1))
    n_refs = sorted({len(r) for r in references})
    protocol = {
        "rows": f"all {len(candidates):,} entries of nebula_test.json, one item and rating each",
        "references": f"the entry's refs ({n_refs[0]}-{n_refs[-1]} per entry), raw text",
        "target": "score: mean human rating in [0, 1]",
        "statistic": "kendall_tau_c",
        "notes": "images are not available (imgid is the Nebula image hash): text metrics only",
    }
    return CaptionJudgments(
        name="nebula", candidates=candidates, references=references, images=images,
        item_of_rating=np.arange(len(candidates)), human=np.asarray(human, dtype=float),
        protocol=protocol)
