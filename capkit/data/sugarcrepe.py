"""SugarCrepe (Hsieh et al. 2023): 7,511 COCO val2017 captions, each with a hard negative.

Each negative adds, replaces or swaps one object, attribute or relation of its positive, and was
filtered so that grammar and plausibility do not give it away. capkit asks of a caption metric what
CLIPScore, PAC-S and Polos ask on FOIL: scored against the image's *other* COCO captions, does the
positive score higher than its negative? (``capkit.meta_eval`` protocols ``sugarcrepe_refs4`` and
``sugarcrepe_refs1``; docs/benchmarks.md.)

References of a pair: its image's val2017 captions in annotation-id order, minus every caption
equal to the positive under ``caption_key`` (lower-cased, runs of white space collapsed, ends
stripped, one final full stop dropped). ``references="refs4"`` keeps all that remain (4 for 7,459
pairs, 5 for 47, fewer for 5), ``"refs1"`` the first. Pair ``i`` of the result has
``caption_a`` = positive, ``caption_b`` = negative, label 0, category = its type, and image = the
COCO val2017 file name (the bootstrap's unit).
"""
from __future__ import annotations

import re

import numpy as np

from capkit.data.paths import require
from capkit.data.readers import check_text, malformed, read_json
from capkit.data.schema import PairJudgments

TYPES = ("add_att", "add_obj", "replace_att", "replace_obj", "replace_rel", "swap_att",
         "swap_obj")
REFERENCE_SETS = ("refs4", "refs1")
CAPTIONS = "captions_val2017.json"


def caption_key(text: str) -> str:
    """The form two captions are compared in: lower case, one space for every run of white space,
    no spaces at the ends, one final full stop dropped (then no space at the end)."""
    text = re.sub(r"\s+", " ", text.lower()).strip()
    return text[:-1].rstrip() if text.endswith(".") else text


def val2017_captions(folder) -> dict[str, list[str]]:
    """COCO val2017 file name -> its captions in annotation-id order."""
    path = folder / CAPTIONS
    data = read_json(path)
    if not isinstance(data, dict) or "images" not in data or "annotations" not in data:
        raise malformed(path, "top level", "expected COCO's {images, annotations, ...}")
    names = {im["id"]: im["file_name"] for im in data["images"]}
    out: dict[str, list[str]] = {name: [] for name in names.values()}
    for ann in sorted(data["annotations"], key=lambda a: a["id"]):
        if ann.get("image_id") not in names:
            raise malformed(path, f"annotation {ann.get('id')}", "its image_id has no image")
        out[names[ann["image_id"]]].append(check_text(ann["caption"], path,
                                                      f"annotation {ann['id']}"))
    return out


def _pairs(folder, kind: str) -> list[tuple[str, str, str, str]]:
    """(pair id, file name, positive, negative) of one type file, in key order."""
    path = folder / f"{kind}.json"
    data = read_json(path)
    if not isinstance(data, dict):
        raise malformed(path, "top level", "expected an object keyed 0, 1, ...")
    out = []
    for key in sorted(data, key=int):
        entry, where = data[key], f"entry {key}"
        if not isinstance(entry, dict) or {"filename", "caption", "negative_caption"} - set(entry):
            raise malformed(path, where, "expected {filename, caption, negative_caption}")
        out.append((f"{kind}/{key}", entry["filename"], check_text(entry["caption"], path, where),
                    check_text(entry["negative_caption"], path, where)))
    return out


def load_sugarcrepe(references: str = "refs4", types: tuple[str, ...] = TYPES) -> PairJudgments:
    """SugarCrepe pairs of ``types`` (all seven by default), positive = ``caption_a``.

    ``references``: ``"refs4"`` (every remaining val2017 caption) or ``"refs1"`` (the first).
    ``ids`` name the pairs ``"<type>/<key>"``, types in ``TYPES`` order, keys in number order."""
    if references not in REFERENCE_SETS:
        raise ValueError(f"references={references!r}: choose one of {REFERENCE_SETS}")
    types = (types,) if isinstance(types, str) else tuple(types)
    unknown = [t for t in types if t not in TYPES]
    if unknown or not types:
        raise ValueError(f"types={types!r}: give one or more of {', '.join(TYPES)}")
    folder = require("sugarcrepe")
    captions = val2017_captions(folder)
    rows: dict[str, list] = {k: [] for k in ("ids", "a", "b", "refs", "images", "category")}
    for kind in types:
        for pair_id, image, positive, negative in _pairs(folder, kind):
            if image not in captions:
                raise malformed(folder / f"{kind}.json", pair_id, f"{image} is not a val2017 image")
            key = caption_key(positive)
            refs = [c for c in captions[image] if caption_key(c) != key]
            if not refs:
                raise malformed(folder / f"{kind}.json", pair_id, "no reference is left once the "
                                "positive is removed")
            for name, value in zip(rows, (pair_id, positive, negative,
                                          refs if references == "refs4" else refs[:1], image,
                                          kind)):
                rows[name].append(value)
    counts = {t: rows["category"].count(t) for t in types}
    protocol = {
        "rows": f"{len(rows['a']):,} (positive, negative) pairs (" + ", ".join(
            f"{t} {n:,}" for t, n in counts.items()) + ")",
        "references": ("the image's val2017 captions in annotation-id order minus every caption "
                       "equal to the positive (caption_key); "
                       + ("all that remain" if references == "refs4" else "the first of them")),
        "target": "the positive (label 0 = caption_a) on every pair",
        "statistic": "accuracy over all pairs, a tie counting one half",
    }
    return PairJudgments(name="sugarcrepe", caption_a=rows["a"], caption_b=rows["b"],
                         references=rows["refs"], images=rows["images"],
                         label=np.zeros(len(rows["a"]), dtype=int),
                         category=np.asarray(rows["category"], dtype=str), protocol=protocol,
                         ids=rows["ids"])
