"""CapEval1k (Lee et al. 2021, UMIC): 1,000 captions of 250 COCO images, human scores in [0, 1].

The captions were released only as BERT-base-cased word-piece ids of the lower-cased text. 700 of
them decode exactly to words (``decoded_fully``); the other 300 contain word pieces or ids whose
text is unknown offline and are shown as ``<idNNN>`` (see capeval1k/SOURCE.md).
"""
from __future__ import annotations

import numpy as np

from capkit.data.corpora import karpathy_references
from capkit.data.paths import require
from capkit.data.readers import check_text, malformed, read_jsonl, to_float
from capkit.data.schema import CaptionJudgments

FIELDS = ("txt_id", "coco_file", "human_score", "decoded_text_approx", "decoded_fully")


def load_capeval1k(exact_only: bool = True) -> CaptionJudgments:
    """CapEval1k: target human_score, references = the COCO Karpathy-test references of the image.

    ``exact_only`` keeps the 700 captions that decode exactly; the other 300 contain undecodable
    word pieces (``<idNNN>``). Needs ``coco_karpathy_test`` for the references. Kendall tau-b.
    """
    path = require("capeval1k") / "capeval1k_umic_txtdb.jsonl"
    rows = read_jsonl(path)
    coco_refs = karpathy_references()
    candidates, references, images, human = [], [], [], []
    extra: dict[str, list] = {"txt_id": [], "decoded_fully": []}
    for i, row in enumerate(rows):
        where = f"record {i}"
        if any(f not in row for f in FIELDS):
            raise malformed(path, where, f"expected fields {FIELDS}")
        if not isinstance(row["decoded_fully"], bool):
            raise malformed(path, where, "decoded_fully is not true/false")
        if row["coco_file"] not in coco_refs:
            raise malformed(path, where, f"{row['coco_file']} is not a COCO Karpathy-test image")
        score = to_float(row["human_score"], path, where, 0, 1)
        if exact_only and not row["decoded_fully"]:
            continue
        candidates.append(check_text(row["decoded_text_approx"], path, where))
        references.append(list(coco_refs[row["coco_file"]]))
        images.append(row["coco_file"])
        human.append(score)
        extra["txt_id"].append(row["txt_id"])
        extra["decoded_fully"].append(row["decoded_fully"])
    n_full = sum(bool(r.get("decoded_fully")) for r in rows)
    kept = (f"only the {n_full:,} captions that decode exactly (decoded_fully); the other "
            f"{len(rows) - n_full:,} contain undecodable word pieces (<idNNN>) and are left out"
            if exact_only else
            f"all {len(rows):,} captions; {len(rows) - n_full:,} contain undecodable word pieces "
            "shown as <idNNN>")
    protocol = {
        "rows": f"{len(candidates):,} of {len(rows):,} captions: {kept}",
        "references": "the COCO Karpathy-test references of coco_file (5, or 6 for a few images)",
        "target": "human_score: averaged human rating in [0, 1]",
        "statistic": "kendall_tau_b",
        "notes": ("candidate text is the decode of UMIC's word-piece ids: lower-cased, punctuation "
                  "space-separated, so case-sensitive metrics see other text than the raters did"),
    }
    return CaptionJudgments(
        name="capeval1k", candidates=candidates, references=references, images=images,
        item_of_rating=np.arange(len(candidates)), human=np.asarray(human, dtype=float),
        protocol=protocol, item_extra=extra)
