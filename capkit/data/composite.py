"""Composite correctness judgments (Aditya et al. 2015), as reconstructed in ../shared/data.

11,985 candidates (997 Flickr8k, 991 Flickr30k and 2,007 COCO images x 3) rated 1-5 for
correctness. One candidate per image is usually a human caption that is also one of the image's
dataset references (``candidate_in_refs``); the literature removes it from the references of its
own row, otherwise reference metrics see an exact match (BLEU-4 tau-c ~28 -> ~50).
"""
from __future__ import annotations

import re

import numpy as np

from capkit.data.paths import require
from capkit.data.readers import (
    check_references, check_text, malformed, read_csv, read_json, to_float)
from capkit.data.schema import CaptionJudgments

COLUMNS = ("subset", "image", "candidate", "human_correctness", "candidate_in_refs", "fleur_score")
SUBSETS = ("flickr8k", "flickr30k", "coco")


def match_key(text: str) -> str:
    """Lower-case, each run of non-alphanumerics -> one space: the rule of candidate_in_refs."""
    return " ".join(re.sub(r"[^a-z0-9]+", " ", text.lower()).split())


def remove_rated_caption(candidate: str, refs: list[str]) -> tuple[list[str], int]:
    """Drop the first reference equal to ``candidate`` under ``match_key``.

    Returns the remaining references and how many references matched (the caller checks it).
    """
    key = match_key(candidate)
    hits = [i for i, r in enumerate(refs) if match_key(r) == key]
    if not hits:
        return list(refs), 0
    return refs[:hits[0]] + refs[hits[0] + 1:], len(hits)


def _row_references(row: dict, all_refs: dict, remove: bool, path, ref_path, where: str):
    """The row's references with the protocol applied, and how many references matched it."""
    image, text, flagged = row["image"], row["candidate"], row["candidate_in_refs"]
    if image not in all_refs:
        raise malformed(ref_path, image, "image of composite_correctness.csv has no references")
    refs = check_references(all_refs[image], ref_path, image)
    if flagged not in ("0", "1"):
        raise malformed(path, where, f"candidate_in_refs {flagged!r} is not 0 or 1")
    if not (remove and flagged == "1"):
        return refs, 0
    refs, hits = remove_rated_caption(text, refs)
    if hits == 0:
        raise malformed(path, where, f"candidate {text!r} is flagged candidate_in_refs=1 but "
                        f"equals none of the references of {image}: {all_refs[image]}")
    if not refs:
        raise malformed(ref_path, image, "no reference is left once the rated caption is removed")
    return refs, hits


def _protocol(n_rows: int, counts: dict, remove: bool, n_removed: int, n_duplicate: int) -> dict:
    refs_rule = ("dataset captions of the image (composite_references.json) with, for each row "
                 "flagged candidate_in_refs=1, the one reference equal to that row's candidate "
                 "(lower-case, non-alphanumerics -> space) removed from that row only: "
                 f"{n_removed:,} rows" if remove else
                 "dataset captions of the image, the rated human caption kept (this inflates "
                 "reference metrics)")
    return {
        "rows": (f"all {n_rows:,} rows pooled ("
                 + ", ".join(f"{s} {c:,}" for s, c in counts.items())
                 + "), one item and one rating each"),
        "references": refs_rule,
        "target": "human_correctness: AMT correctness 1-5 (no thoroughness ratings exist here)",
        "statistic": "kendall_tau_c",
        "notes": (f"{n_duplicate} flagged rows have the rated caption twice among the references "
                  "(duplicate COCO captions): only one copy is removed. Reconstructed set, see "
                  "composite/SOURCE.md; item_extra['fleur_score'] reproduces FLEUR's 63.5 tau-c"),
    }


def load_composite(remove_rated_from_refs: bool = True) -> CaptionJudgments:
    """Composite: 11,985 items, target human correctness 1-5, statistic Kendall tau-c.

    With ``remove_rated_from_refs`` a row flagged ``candidate_in_refs == 1`` loses, from its own
    references only, the one reference equal to the candidate after lower-case/alphanumeric
    normalisation. A flagged row with no such reference is an error.
    """
    folder = require("composite")
    path, ref_path = folder / "composite_correctness.csv", folder / "composite_references.json"
    rows = read_csv(path, COLUMNS)
    all_refs = read_json(ref_path)
    if not isinstance(all_refs, dict):
        raise malformed(ref_path, "top level", "expected {image: [references]}")
    candidates, references, human = [], [], []
    extra: dict[str, list] = {"subset": [], "candidate_in_refs": [], "fleur_score": []}
    n_removed = n_duplicate = 0
    for n, row in enumerate(rows, 2):  # line 1 is the header
        where = f"line {n}"
        if row["subset"] not in SUBSETS:
            raise malformed(path, where, f"subset {row['subset']!r} is not one of {SUBSETS}")
        refs, hits = _row_references(row, all_refs, remove_rated_from_refs, path, ref_path, where)
        n_removed += hits > 0
        n_duplicate += hits > 1
        candidates.append(check_text(row["candidate"], path, where))
        references.append(refs)
        human.append(to_float(row["human_correctness"], path, where, 1, 5))
        extra["subset"].append(row["subset"])
        extra["candidate_in_refs"].append(int(row["candidate_in_refs"]))
        extra["fleur_score"].append(to_float(row["fleur_score"], path, where))
    counts = {s: extra["subset"].count(s) for s in SUBSETS}
    return CaptionJudgments(
        name="composite", candidates=candidates, references=references,
        images=[row["image"] for row in rows], item_of_rating=np.arange(len(candidates)),
        human=np.asarray(human, dtype=float), item_extra=extra,
        protocol=_protocol(len(rows), counts, remove_rated_from_refs, n_removed, n_duplicate))
