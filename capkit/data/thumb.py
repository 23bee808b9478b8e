"""THumB 1.0 for MSCOCO (Kasai et al. 2022): rubric-based human scores of 5 systems' captions.

500 COCO Karpathy-test images x 5 systems (Up-Down, Unified-VLP, VinVL-base, VinVL-large and the
Human 5th COCO caption). ``human_score = (P + R) / 2 + Fl + Con + Inc`` (precision and recall 1-5,
penalties <= 0). The 4 references in ``mscoco_references.json`` are the image's other COCO
captions (the Human caption is the 5th), so the Human system can be scored against them. COCO holds
duplicate captions, though: some Human captions also occur, word for word, among their 4
references (39 of 500, counting case and punctuation as equal), which raises the Human system's
n-gram scores. ``load_thumb(drop_human_copies=True)`` leaves those copies out of its references;
the protocol says how many there are either way.
"""
from __future__ import annotations

import re

import numpy as np

from capkit.data.corpora import coco_id, karpathy_references
from capkit.data.paths import require
from capkit.data.readers import check_references, check_text, malformed, read_jsonl, to_float
from capkit.data.schema import CaptionJudgments

FIELDS = ("SYS", "seg_id", "hyp", "image", "P", "R", "Fl", "Con", "Inc", "human_score")
REFERENCE_SETS = ("thumb", "karpathy5")


def _thumb_references(path) -> dict[str, list[str]]:
    refs = {}
    for i, row in enumerate(read_jsonl(path)):
        if "seg_id" not in row or "refs" not in row:
            raise malformed(path, f"record {i}", "expected {seg_id, refs}")
        refs[str(row["seg_id"])] = check_references(row["refs"], path, f"seg_id {row['seg_id']}")
    return refs


def _check_row(row: dict, path, where: str) -> dict[str, float]:
    missing = [f for f in FIELDS if f not in row]
    if missing:
        raise malformed(path, where, f"missing fields {missing}")
    try:
        image_id = coco_id(str(row["image"]))
    except ValueError as e:
        raise malformed(path, where, str(e)) from None
    if image_id != str(row["seg_id"]):
        raise malformed(path, where, f"seg_id {row['seg_id']} does not match image {row['image']}")
    v = {f: to_float(row[f], path, where) for f in ("P", "R", "Fl", "Con", "Inc", "human_score")}
    if abs((v["P"] + v["R"]) / 2 + v["Fl"] + v["Con"] + v["Inc"] - v["human_score"]) > 1e-6:
        raise malformed(path, where, "human_score != (P + R) / 2 + Fl + Con + Inc")
    return v


def _same_words(text: str) -> str:
    """A caption compared case- and punctuation-blind (COCO's duplicates differ only so)."""
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


def load_thumb(include_human: bool = True, references: str = "thumb",
               drop_human_copies: bool = False) -> CaptionJudgments:
    """THumB 1.0 MSCOCO: 2,500 items (2,000 without the Human system), target human_score.

    ``references="thumb"``: the 4 references of ``mscoco_references.json`` (the paper's setting).
    ``references="karpathy5"``: the 5 COCO Karpathy-test references (needs ``coco_karpathy_test``);
    the Human caption is one of them, so this requires ``include_human=False``.
    ``drop_human_copies=True``: a Human caption's references leave out those equal to it (case and
    punctuation ignored; COCO's duplicate captions); the default keeps them, as the paper does.
    """
    if references not in REFERENCE_SETS:
        raise ValueError(f"references={references!r}: choose one of {REFERENCE_SETS}.")
    if references == "karpathy5" and include_human:
        raise ValueError("The Human system's caption is one of the 5 Karpathy references, so it "
                         "would be scored against itself: use include_human=False with "
                         "references='karpathy5', or references='thumb'.")
    folder = require("thumb")
    path = folder / "mscoco_THumB-1.0.jsonl"
    rows = read_jsonl(path)
    if references == "thumb":  # by seg_id
        source, key_field = _thumb_references(folder / "mscoco_references.json"), "seg_id"
    else:  # by image file name
        source, key_field = karpathy_references(), "image"
    candidates, refs, images, human, seen, copies = [], [], [], [], set(), 0
    extra: dict[str, list] = {k: [] for k in ("system", "seg_id", "P", "R", "Fl", "Con", "Inc")}
    for i, row in enumerate(rows):
        where = f"record {i}"
        v = _check_row(row, path, where)
        system, seg = str(row["SYS"]), str(row["seg_id"])
        if (system, seg) in seen:
            raise malformed(path, where, f"system {system!r} judged twice on seg_id {seg}")
        seen.add((system, seg))
        if system == "Human" and not include_human:
            continue
        key = str(row[key_field])
        if key not in source:
            raise malformed(path, where, f"no {references} references for {key}")
        candidates.append(check_text(row["hyp"], path, where))
        item_refs = list(source[key])
        if system == "Human":
            same = [r for r in item_refs if _same_words(r) == _same_words(row["hyp"])]
            copies += bool(same)
            if drop_human_copies and same:
                item_refs = [r for r in item_refs if r not in same]
                if not item_refs:
                    raise malformed(path, where, "every reference is a copy of the Human caption")
        refs.append(item_refs)
        images.append(row["image"])
        human.append(v["human_score"])
        extra["system"].append(system)
        extra["seg_id"].append(seg)
        for f in ("P", "R", "Fl", "Con", "Inc"):
            extra[f].append(v[f])
    systems = sorted(set(extra["system"]))
    protocol = {
        "rows": (f"{len(candidates):,} of {len(rows):,} judged captions, systems "
                 + ", ".join(systems)
                 + ("" if include_human else " (Human excluded)")),
        "references": (("the 4 references of mscoco_references.json by seg_id (the image's other "
                        "COCO captions)" if references == "thumb" else
                        "the 5 COCO Karpathy-test references (6 for a few images) by image file")
                       + (f"; {copies} Human captions also occur word for word among them (COCO's "
                          "duplicate captions), " + ("left out of their references"
                                                     if drop_human_copies else "kept")
                          if copies else "")),
        "target": "human_score = (P + R) / 2 + Fl + Con + Inc (P, R 1-5; penalties <= 0)",
        "statistic": "kendall_tau_c",
        "notes": ("instance level; system level correlates the per-system means over the systems; "
                  "item_extra has system, seg_id, P, R, Fl, Con, Inc"),
    }
    return CaptionJudgments(
        name="thumb", candidates=candidates, references=refs, images=images,
        item_of_rating=np.arange(len(candidates)), human=np.asarray(human, dtype=float),
        protocol=protocol, item_extra=extra)
