"""PASCAL-50S (Vedantam, Zitnick & Parikh 2015): which of two captions people prefer.

4,000 pairs, 1,000 in each category: HC (two human captions of the image), HI (a human caption of
this image vs one of another image), HM (human vs machine), MM (two machine captions). The label is
the consensus preference as used by PAC-S / Polos / FLEUR; the 5 references per pair are the fixed
draw those papers share (``refs5``), all among the image's 50 sentences in ``pascal50S.mat``.
The literature also averages over 5 random draws of 5 of the 50: ``load_pascal50s(
references="draw", draw_seed=k)`` is draw k (numbered, so that draws 0-4 are the same for
everyone), and ``capkit.meta_eval.pascal50s_draws`` scores metrics over several.
"""
from __future__ import annotations

import json

import numpy as np

from capkit.data.paths import require
from capkit.data.readers import check_references, check_text, malformed, read_csv
from capkit.data.schema import PairJudgments

COLUMNS = ("pair_index", "image", "category", "caption_a", "caption_b", "label_consensus", "refs5")
CATEGORIES = ("HC", "HI", "HM", "MM")
REFERENCE_SETS = ("refs5", "draw")
SALT_DRAW = 5050            # seeds the draws of 5 references with (draw_seed, SALT_DRAW, image)


def _refs5(value: str, path, where: str) -> list[str]:
    try:
        refs = json.loads(value)
    except json.JSONDecodeError:
        raise malformed(path, where, "refs5 is not a JSON list") from None
    return check_references(refs, path, where)


def _drawn(sentences: list[str], draw_seed: int, image: str) -> list[str]:
    """5 of an image's 50 sentences, without replacement, for draw ``draw_seed`` (the same for
    every pair of the image; the image's number in its file name keys the generator)."""
    key = int("".join(ch for ch in image if ch.isdigit()) or 0)
    picks = np.random.default_rng([draw_seed, SALT_DRAW, key]).choice(len(sentences), 5,
                                                                       replace=False)
    return [sentences[i] for i in sorted(picks)]


def load_pascal50s(references: str = "refs5", draw_seed: int = 0) -> PairJudgments:
    """PASCAL-50S: 4,000 pairs, label 0 = caption_a preferred, 1 = caption_b.

    ``references="refs5"``: the fixed 5 references of PAC-S / Polos / FLEUR (the protocol).
    ``references="draw"``: 5 of the image's 50 sentences drawn at random, draw ``draw_seed``
    (a non-negative integer; needs ``pascal50S.mat``, fetched with the benchmark)."""
    if references not in REFERENCE_SETS:
        raise ValueError(f"references={references!r}: choose one of {REFERENCE_SETS}")
    if references == "draw" and not (isinstance(draw_seed, (int, np.integer))
                                     and not isinstance(draw_seed, bool) and draw_seed >= 0):
        raise ValueError(f"draw_seed must be a non-negative integer (draw 0, 1, ...), got "
                         f"{draw_seed!r}")
    fifty = pascal50s_references() if references == "draw" else None
    folder = require("pascal50s")
    path = folder / "pascal50s_pairs.csv"
    rows = read_csv(path, COLUMNS)
    a, b, refs, images, labels, cats = [], [], [], [], [], []
    for n, row in enumerate(rows, 2):  # line 1 is the header
        where = f"line {n}"
        if row["category"] not in CATEGORIES:
            raise malformed(path, where, f"category {row['category']!r} is not one of {CATEGORIES}")
        if row["label_consensus"] not in ("0", "1"):
            raise malformed(path, where,
                            f"label_consensus {row['label_consensus']!r} is not 0 or 1")
        a.append(check_text(row["caption_a"], path, where))
        b.append(check_text(row["caption_b"], path, where))
        refs5 = _refs5(row["refs5"], path, where)
        if fifty is None:
            refs.append(refs5)
        elif row["image"] not in fifty:
            raise malformed(path, where, f"image {row['image']} has no sentences in pascal50S.mat")
        else:
            refs.append(_drawn(fifty[row["image"]], int(draw_seed), row["image"]))
        images.append(row["image"])
        labels.append(int(row["label_consensus"]))
        cats.append(row["category"])
    counts = {c: cats.count(c) for c in CATEGORIES}
    protocol = {
        "rows": (f"{len(rows):,} pairs (" + ", ".join(f"{c} {k:,}" for c, k in counts.items())
                 + ") from pascal50s_pairs.csv"),
        "references": ("refs5: the fixed 5 of the image's 50 sentences used by PAC-S/Polos/FLEUR"
                       if fifty is None else
                       f"draw {draw_seed}: 5 of the image's 50 sentences (pascal50S.mat) drawn at "
                       "random, the same for every pair of the image"),
        "target": ("label_consensus: 0 = people prefer caption_a, 1 = caption_b (majority of the "
                   "48 consensus triplets, ties broken randomly upstream)"),
        "statistic": "accuracy",
        "notes": ("accuracy % per category and the mean of the 4; a metric tie must be counted as "
                  "wrong or broken randomly, and the choice reported. The literature also averages "
                  "over 5 random draws of 5 of the 50 references (see pascal50s_references)"),
    }
    return PairJudgments(name="pascal50s", caption_a=a, caption_b=b, references=refs,
                         images=images, label=np.asarray(labels, dtype=int),
                         category=np.asarray(cats, dtype=str), protocol=protocol)


def pascal50s_references() -> dict[str, list[str]]:
    """image file name (e.g. ``2008_006488.jpg``) -> its 50 reference sentences (pascal50S.mat)."""
    from scipy.io import loadmat  # scipy is only needed here

    path = require("pascal50s") / "pascal50S.mat"
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing; refetch with `capkit data fetch "
                                "pascal50s --force --mirror ../shared/data`.")
    try:
        refs = loadmat(path, squeeze_me=True, struct_as_record=False)["refs"]
        out = {str(r.image): [str(s) for s in np.atleast_1d(r.sent)] for r in np.atleast_1d(refs)}
    except Exception as e:  # scipy raises several types for a damaged .mat file
        raise malformed(path, "refs", f"expected a struct array refs(image, sent) ({e})") from None
    for image, sents in out.items():
        check_references(sents, path, image)
    return out
