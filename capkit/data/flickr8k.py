"""Flickr8k-Expert and Flickr8k-CF (Hodosh, Young & Hockenmaier 2013) with the literature's rules.

Both judgment files pair a judged image with a candidate named by its caption id
(``<image>.jpg#<0-4>``); the candidate's text and the references come from ``Flickr8k.token.txt``.
Some candidates are captions *of the judged image itself*, and the two benchmarks treat them
differently (``docs/benchmarks.md``):

* Expert: those rows are dropped (a caption would otherwise be scored against itself).
* CF: every row is kept, but each image's judged own captions leave that image's reference list.
"""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np

from capkit.data.paths import require
from capkit.data.readers import malformed, read_tsv, to_float
from capkit.data.schema import CaptionJudgments

N_CAPTIONS = 5  # every Flickr8k image has 5 captions, #0..#4


def read_captions(folder: Path) -> dict[str, dict[str, str]]:
    """image file name -> {caption_id: caption}, in caption-number order."""
    path = folder / "Flickr8k.token.txt"
    by_image: dict[str, dict[str, str]] = defaultdict(dict)
    for n, (caption_id, text) in read_tsv(path, 2):
        image, sep, number = caption_id.rpartition("#")
        if not sep or not number.isdigit():
            raise malformed(path, f"line {n}", f"caption id {caption_id!r} is not <image>#<n>")
        if caption_id in by_image[image]:
            raise malformed(path, f"line {n}", f"caption id {caption_id!r} appears twice")
        by_image[image][caption_id] = text
    return {image: dict(sorted(caps.items(), key=lambda kv: int(kv[0].rpartition("#")[2])))
            for image, caps in by_image.items()}


def _image_captions(captions, image: str, path: Path, n: int) -> dict[str, str]:
    caps = captions.get(image)
    if caps is None or len(caps) != N_CAPTIONS:
        found = 0 if caps is None else len(caps)
        raise malformed(path, f"line {n}", f"judged image {image!r} has {found} captions in "
                        f"Flickr8k.token.txt, expected {N_CAPTIONS}")
    return caps


def _candidate(captions, caption_id: str, path: Path, n: int) -> str:
    text = captions.get(caption_id.rpartition("#")[0], {}).get(caption_id)
    if text is None:
        raise malformed(path, f"line {n}",
                        f"caption id {caption_id!r} is not in Flickr8k.token.txt")
    return text


def _is_own_caption(judged_image: str, caption_id: str) -> bool:
    return caption_id.rpartition("#")[0] == judged_image


def load_flickr8k_expert(drop_self: bool = True) -> CaptionJudgments:
    """Flickr8k-Expert: one item per (image, candidate) row, 3 un-averaged expert ratings each.

    ``drop_self`` drops the rows whose candidate is one of the judged image's own captions (158 of
    5,822), as the literature does: 5,664 items x 3 = 16,992 ratings, statistic Kendall tau-c.
    """
    folder = require("flickr8k")
    captions = read_captions(folder)
    path = folder / "ExpertAnnotations.txt"
    rows = read_tsv(path, 5)
    candidates, references, images, ids, ratings = [], [], [], [], []
    n_self = 0
    for n, (image, caption_id, *scores) in rows:
        refs = _image_captions(captions, image, path, n)
        text = _candidate(captions, caption_id, path, n)
        values = [to_float(s, path, f"line {n}", 1, 4) for s in scores]
        if _is_own_caption(image, caption_id):
            n_self += 1
            if drop_self:
                continue
        candidates.append(text)
        references.append(list(refs.values()))
        images.append(image)
        ids.append(caption_id)
        ratings.append(values)
    human = np.asarray(ratings, dtype=float).reshape(-1)  # (I*3,) item-major: i0e1 i0e2 i0e3 i1e1
    dropped = (f"the {n_self:,} rows whose candidate caption_id belongs to the judged image are "
               "dropped" if drop_self else
               f"all rows kept, including the {n_self:,} that judge one of the image's own "
               "captions (which then also appears among its references)")
    protocol = {
        "rows": (f"{len(rows):,} rows of ExpertAnnotations.txt; {dropped} -> {len(candidates):,} "
                 f"items x 3 experts = {len(human):,} ratings (not averaged), items in file order"),
        "references": "the 5 captions of the judged image (Flickr8k.token.txt #0-#4)",
        "target": ("expert score 1-4 (1 = does not describe the image, 4 = describes it); each "
                   "expert's score is a separate rating"),
        "statistic": "kendall_tau_c",
        "notes": ("the metric's score of an item is repeated for its 3 ratings; candidate text is "
                  "looked up by caption_id in Flickr8k.token.txt"),
    }
    return CaptionJudgments(
        name="flickr8k_expert", candidates=candidates, references=references, images=images,
        item_of_rating=np.repeat(np.arange(len(candidates)), 3), human=human, protocol=protocol,
        item_extra={"caption_id": ids})


def load_flickr8k_cf(remove_judged_from_refs: bool = True) -> CaptionJudgments:
    """Flickr8k-CF (CrowdFlower): all 47,830 rows, one rating each (the fraction of "yes" votes).

    With ``remove_judged_from_refs``, every caption of an image that is itself judged as a candidate
    for that image somewhere in the file leaves that image's reference list (for all its rows).
    Statistic Kendall tau-b.
    """
    folder = require("flickr8k")
    captions = read_captions(folder)
    path = folder / "CrowdFlowerAnnotations.txt"
    rows = read_tsv(path, 5)
    judged_own: dict[str, set[str]] = defaultdict(set)
    for _, (image, caption_id, *_) in rows:
        if _is_own_caption(image, caption_id):
            judged_own[image].add(caption_id)
    candidates, references, images, ids, human, n_yes, n_no = [], [], [], [], [], [], []
    for n, (image, caption_id, fraction, yes, no) in rows:
        where = f"line {n}"
        refs = _image_captions(captions, image, path, n)
        if remove_judged_from_refs:
            refs = {cid: t for cid, t in refs.items() if cid not in judged_own.get(image, ())}
        if not refs:
            raise malformed(path, where, f"no reference of {image!r} is left once its judged own "
                            "captions are removed; use remove_judged_from_refs=False to keep them")
        y, o = to_float(yes, path, where, 0), to_float(no, path, where, 0)
        f = to_float(fraction, path, where, 0, 1)
        if y + o == 0 or abs(f - y / (y + o)) > 1e-6:
            raise malformed(path, where, f"fraction_yes {fraction} != n_yes/(n_yes+n_no) = {yes}/"
                            f"({yes}+{no})")
        candidates.append(_candidate(captions, caption_id, path, n))
        references.append(list(refs.values()))
        images.append(image)
        ids.append(caption_id)
        human.append(f)
        n_yes.append(int(y))
        n_no.append(int(o))
    n_removed = sum(len(v) for v in judged_own.values())
    refs_rule = (f"the judged image's 5 captions minus every caption of that image that is itself "
                 f"a judged candidate for it anywhere in the file ({n_removed:,} captions of "
                 f"{len(judged_own):,} images; the removal applies to the image's whole reference "
                 "list)" if remove_judged_from_refs else
                 "the judged image's 5 captions, none removed (judged own captions stay in)")
    protocol = {
        "rows": f"all {len(rows):,} rows of CrowdFlowerAnnotations.txt, one item and rating each",
        "references": refs_rule,
        "target": "fraction_yes: share of 'yes' (describes the image) votes, >= 3 votes per pair",
        "statistic": "kendall_tau_b",
        "notes": "candidate text is looked up by caption_id in Flickr8k.token.txt",
    }
    return CaptionJudgments(
        name="flickr8k_cf", candidates=candidates, references=references, images=images,
        item_of_rating=np.arange(len(candidates)), human=np.asarray(human, dtype=float),
        protocol=protocol, item_extra={"caption_id": ids, "n_yes": n_yes, "n_no": n_no})
