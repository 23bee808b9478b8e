"""Which captions a learned metric may train on: every benchmark's images and texts held out.

A metric evaluated against human judgments must never have seen the judged captions, nor any
caption of a judged image (the references it will be scored against are captions of that image).
``training_corpus()`` builds the two-stage corpus of ``capkit.training.i2ce`` from the captions
capkit has, after removing:

1. benchmark images, by identity:
   * Flickr8k: the whole official test split (``Flickr_8k.testImages.txt``, 1,000 images). It is
     every image judged in Flickr8k-Expert and Flickr8k-CF, the image of every candidate caption
     judged there, and all 997 Flickr8k images of Composite (all checked, not assumed);
   * COCO (Karpathy test, keyed by COCO id): Composite's 2,007 COCO images, THumB's 500 and
     CapEval1k's 250;
   * Flickr30k: Composite's 991 of the 1,000 test images, so Flickr30k is not used at all (9
     images would be left);
   * PASCAL-50S (1,000 PASCAL images, 50 sentences each) and the Wang & Chan diversity set are not
     used at all. The diversity set's 5,000 COCO images cannot be checked against Nebula, whose
     images are known only by a hash;
2. benchmark texts: any image one of whose captions equals (lower-case, alphanumeric runs) a
   candidate or reference of any of the 7 benchmarks (Flickr8k-Expert/CF, Composite with the rated
   captions, PASCAL-50S's 50 references per image and its candidates, THumB, Nebula, all 1,000
   CapEval1k captions) is dropped whole. This catches Nebula, whose COCO images share their
   references with the Karpathy test split, and the generic captions ("a dog runs through the
   grass") that several datasets contain.

What is left (``training_corpus().summary()`` prints the counts):

* stage 1, broad captions: Flickr8k's official train split (train) and dev split (held out);
* stage 2, in-domain adaptation: the remaining COCO Karpathy-test images, split by image into
  train and a seeded held-out ``val_fraction``.

The paper's stage 1 is a general English corpus (the English half of the Anki Spanish-English
pairs, ~100k sentences); none is available offline here, so stage 1 uses Flickr8k's captions:
another domain (people, dogs, outdoor scenes) than stage 2's COCO. Tested in
tests/test_i2ce.py (``test_no_leakage``); explained in notebooks/06_intrinsic_i2ce.ipynb,
section "Training data".
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

import numpy as np

SALT_VAL = 606        # seeds the stage-2 held-out split together with the user's seed
STAGES = ("stage1", "stage2")
_NON_ALNUM = re.compile(r"[^a-z0-9]+")


def normalise(text: str) -> str:
    """Lower-case alphanumeric runs joined by single spaces: the key for text overlap."""
    return " ".join(_NON_ALNUM.sub(" ", text.lower()).split())


@dataclass(frozen=True)
class TrainingCorpus:
    """Captions by stage and split, the images they come from, and what was removed."""
    texts: dict[str, dict[str, list[str]]]          # stage -> "train"/"val" -> captions
    images: dict[str, dict[str, tuple[str, ...]]]   # stage -> split -> image keys used
    removed: dict[str, int]                         # rule -> images removed
    protocol: dict[str, str] = field(default_factory=dict)

    def summary(self) -> str:
        lines = [f"{stage}: train {len(self.texts[stage]['train']):,} captions "
                 f"({len(self.images[stage]['train']):,} images), held out "
                 f"{len(self.texts[stage]['val']):,} ({len(self.images[stage]['val']):,} images)"
                 for stage in STAGES]
        lines += [f"removed: {rule} {n:,} images" for rule, n in self.removed.items()]
        return "\n".join(lines)


def benchmark_images() -> dict[str, frozenset[str]]:
    """Images judged by any benchmark: {"flickr8k": file names, "coco": str(COCO id),
    "flickr30k": file names}. Read once per process and data folder."""
    from capkit.data.paths import data_dir
    return dict(_benchmark_images(str(data_dir())))


@functools.lru_cache(maxsize=2)
def _benchmark_images(root: str) -> dict[str, frozenset[str]]:
    from capkit.data import load
    from capkit.data.corpora import coco_id
    from capkit.data.paths import require
    folder = require("flickr8k")
    flickr8k = set((folder / "Flickr_8k.testImages.txt").read_text().split())
    for name in ("flickr8k_expert", "flickr8k_cf"):
        data = load(name)
        flickr8k |= set(data.images)
        flickr8k |= {c.rpartition("#")[0] for c in data.item_extra["caption_id"]}
    composite = load("composite")
    by_subset: dict[str, set[str]] = {"flickr8k": set(), "flickr30k": set(), "coco": set()}
    for image, subset in zip(composite.images, composite.item_extra["subset"]):
        by_subset[subset].add(image)
    coco = {coco_id(i) for i in by_subset["coco"]}
    coco |= {coco_id(i) for i in load("thumb").images}
    coco |= {coco_id(i) for i in load("capeval1k", exact_only=False).images}
    return {"flickr8k": frozenset(flickr8k | by_subset["flickr8k"]),
            "coco": frozenset(coco), "flickr30k": frozenset(by_subset["flickr30k"])}


def benchmark_texts() -> frozenset[str]:
    """Every candidate and reference of the 7 benchmarks, ``normalise``d (read once per process
    and data folder)."""
    from capkit.data.paths import data_dir
    return _benchmark_texts(str(data_dir()))


@functools.lru_cache(maxsize=2)
def _benchmark_texts(root: str) -> frozenset[str]:
    from capkit.data import load, pascal50s_references
    texts: set[str] = set()
    for name, options in [("flickr8k_expert", {"drop_self": False}),
                          ("flickr8k_cf", {"remove_judged_from_refs": False}),
                          ("composite", {"remove_rated_from_refs": False}),
                          ("thumb", {}), ("nebula", {}), ("capeval1k", {"exact_only": False})]:
        data = load(name, **options)
        texts.update(data.candidates)
        texts.update(r for refs in data.references for r in refs)
    pascal = load("pascal50s")
    texts.update(pascal.caption_a)
    texts.update(pascal.caption_b)
    texts.update(s for sents in pascal50s_references().values() for s in sents)
    return frozenset(normalise(t) for t in texts)


def _clean(captions: dict[str, list[str]], images, held: frozenset[str], texts: frozenset[str],
           removed: dict[str, int], source: str) -> dict[str, list[str]]:
    """The images of ``images`` that no benchmark judges and whose captions no benchmark has."""
    out = {}
    n_held = n_text = 0
    for image in images:
        if image in held:
            n_held += 1
        elif any(normalise(c) in texts for c in captions[image]):
            n_text += 1
        else:
            out[image] = captions[image]
    removed[f"{source}: benchmark images"] = removed.get(f"{source}: benchmark images", 0) + n_held
    removed[f"{source}: a caption equals a benchmark text"] = \
        removed.get(f"{source}: a caption equals a benchmark text", 0) + n_text
    return out


def training_corpus(seed: int = 0, val_fraction: float = 0.1) -> TrainingCorpus:
    """The leakage-free two-stage corpus (see the module docstring)."""
    from capkit.data import load
    from capkit.data.flickr8k import read_captions
    from capkit.data.paths import require
    if not 0 < val_fraction < 1:
        raise ValueError(f"val_fraction is the share of stage-2 images held out, in (0, 1); "
                         f"got {val_fraction!r}")
    held, texts = benchmark_images(), benchmark_texts()
    removed: dict[str, int] = {}
    folder = require("flickr8k")
    flickr = {i: list(c.values()) for i, c in read_captions(folder).items()}
    split = {s: (folder / f"Flickr_8k.{s}Images.txt").read_text().split() for s in ("train", "dev")}
    f_train = _clean(flickr, split["train"], held["flickr8k"], texts, removed, "flickr8k train")
    f_val = _clean(flickr, split["dev"], held["flickr8k"], texts, removed, "flickr8k dev")
    coco_refs = load("coco_karpathy_test").references
    coco = _clean(coco_refs, list(coco_refs), held["coco"], texts, removed, "coco karpathy test")
    keys = list(coco)
    n_val = max(1, round(val_fraction * len(keys)))
    val_rows = set(np.random.default_rng([int(seed), SALT_VAL]).choice(len(keys), n_val,
                                                                       replace=False).tolist())
    c_val = {k: coco[k] for i, k in enumerate(keys) if i in val_rows}
    c_train = {k: coco[k] for i, k in enumerate(keys) if i not in val_rows}
    parts = {"stage1": {"train": f_train, "val": f_val},
             "stage2": {"train": c_train, "val": c_val}}
    protocol = {
        "stage1": "Flickr8k official train split (train) / dev split (held out), 5 captions each",
        "stage2": (f"COCO Karpathy-test images outside every benchmark, split by image: "
                   f"{val_fraction:g} held out (seed {seed})"),
        "removed": ("Flickr8k test split, Composite/THumB/CapEval1k images, images with a caption "
                    "equal to any benchmark text; PASCAL-50S, Flickr30k, Nebula, diversity set "
                    "unused"),
    }
    return TrainingCorpus(
        texts={s: {k: [c for caps in d.values() for c in caps] for k, d in p.items()}
               for s, p in parts.items()},
        images={s: {k: tuple(d) for k, d in p.items()} for s, p in parts.items()},
        removed=removed, protocol=protocol)
