"""The caption datasets ``capkit robustness --dataset`` knows: {image: [human captions]}.

* ``coco_karpathy_test``: the 5,000 Karpathy-test images, 5 COCO captions each (10 have 6),
  from ``capkit.data.load("coco_karpathy_test").references``; Cui et al. use COCO.
* ``flickr8k``: the 1,000 images of the official test split (``Flickr_8k.testImages.txt``),
  5 captions each, read with ``capkit.data.flickr8k.read_captions`` from the fetched files.

* ``world``: ``WORLD_SCENES`` scenes of capkit's captioned world (their own split, which no world
  model was trained on), 5 ``describe()`` references each, with their rendered 64-px images and
  scenes (``dataset_pictures``): the dataset on which image metrics (UMIC, ViLBERTScore,
  CLIPScore of the world) can be studied offline.

``n_images`` keeps a seeded random subset (in the dataset's order) for quick runs; the whole
dataset (``n_images=None``) is then RW's vocabulary corpus, so the pool does not shrink with the
subset: ``robustness(subset, ..., dataset=name)`` loads it (``whole_dataset``, which checks that
the subset comes from that dataset), as ``capkit robustness`` does. For
the world that is its 500 robustness scenes: the split the subset is drawn from, as for COCO and
Flickr8k (no world model was trained on it; the world's grammar has a few dozen words, and the
500 scenes' references use nearly all of them at least 5 times).
``dataset_pictures`` gives the images (and, in the world, the scenes) of a dataset's images.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

ROBUSTNESS_DATASETS = ("coco_karpathy_test", "flickr8k", "world")
SALT_SUBSET = 300
WORLD_SCENES = 500
WORLD_IMAGE_SIZE = 64


def flickr8k_test_references() -> dict[str, list[str]]:
    """Flickr8k test split: image file name -> its 5 captions."""
    from capkit.data.flickr8k import read_captions
    from capkit.data.paths import require
    folder = require("flickr8k")
    captions = read_captions(folder)
    split = (folder / "Flickr_8k.testImages.txt").read_text().split()
    missing = [i for i in split if i not in captions]
    if missing:
        raise FileNotFoundError(f"{len(missing)} Flickr8k test images have no captions in "
                                f"Flickr8k.token.txt (first: {missing[:3]}); re-fetch flickr8k")
    return {image: list(captions[image].values()) for image in split}


def dataset_references(name: str, *, n_images: int | None = None,
                       seed: int = 0) -> dict[str, list[str]]:
    """{image: [captions]} of a robustness dataset, optionally a seeded subset of n_images."""
    if name == "coco_karpathy_test":
        from capkit.data import load
        refs = load("coco_karpathy_test").references
    elif name == "flickr8k":
        refs = flickr8k_test_references()
    elif name == "world":
        refs = _world(seed)[0]
    else:
        raise ValueError(f"unknown robustness dataset {name!r}; choose one of "
                         f"{', '.join(ROBUSTNESS_DATASETS)}")
    return subset(refs, n_images, seed=seed)


def whole_dataset(references: Mapping[str, Sequence[str]], name: str, *,
                  seed: int = 0) -> dict[str, list[str]]:
    """Every reference of robustness dataset ``name`` (``dataset_references(name, seed=seed)``),
    once it is checked that ``references`` were drawn from it: each image id is one of its
    images, with the same captions. ``robustness(..., dataset=name)`` builds RW's vocabulary
    from it, so the pool does not shrink with the subset scored. ValueError otherwise: a
    vocabulary from another dataset (or, in the world, from scenes of another seed) would be
    named after ``name`` in the signature."""
    whole = dataset_references(name, seed=seed)
    foreign = [i for i in references if i not in whole]
    changed = [i for i in references if i in whole and list(references[i]) != whole[i]]
    if foreign or changed:
        first = (f"{len(foreign)} image id(s) are not {name} images (first: {foreign[:3]})"
                 if foreign else f"the captions of {len(changed)} image(s) are not {name}'s "
                 f"(first: {changed[:3]})")
        world = (f" (the world's scenes and captions depend on the seed: these are not those "
                 f"of seed={seed}; to study a sample drawn with another seed, pass "
                 "vocabulary_captions=dataset_references('world', seed=<its seed>))"
                 if name == "world" and changed else "")
        raise ValueError(
            f"dataset={name!r}, but {first}{world}. dataset= names the dataset the references "
            f"were drawn from (dataset_references({name!r}, n_images=..., seed=...)), whose "
            "captions give RW its vocabulary; for other references pass dataset=None (or your "
            "own name), with vocabulary_captions= a corpus of your own if you like.")
    return whole


def subset(references: dict[str, list[str]], n_images: int | None,
           seed: int = 0) -> dict[str, list[str]]:
    """A seeded random subset of n_images images, in the original order (all if None)."""
    if n_images is None or n_images >= len(references):
        return dict(references)
    if n_images < 2:
        raise ValueError(f"n_images must be at least 2 (captions come from other images), got "
                         f"{n_images}")
    keep = np.sort(np.random.default_rng([int(seed), SALT_SUBSET])
                   .choice(len(references), n_images, replace=False))
    items = list(references.items())
    return dict(items[k] for k in keep)


def _world(seed: int) -> tuple[dict[str, list[str]], dict]:
    """({image id: 5 references}, {image id: Scene}) of the world's robustness split."""
    from capkit.world import describe
    from capkit.world.splits import split_scenes
    scenes = split_scenes("world_robustness", WORLD_SCENES, seed)
    keys = [f"world_robustness/{i}" for i in range(len(scenes))]
    refs = {k: describe(sc, n=5, seed=seed * 1_000_003 + i)
            for i, (k, sc) in enumerate(zip(keys, scenes))}
    return refs, dict(zip(keys, scenes))


def dataset_pictures(name: str, references: dict[str, list[str]], images_dir=None, *,
                     seed: int = 0) -> tuple[dict | None, dict | None]:
    """({image id: image}, {image id: Scene}) for ``references`` (ids of dataset ``name``):
    the world renders its scenes; a real dataset's images come from ``images_dir`` (every
    image present, COCO or Flickr file names), else (None, None)."""
    if name == "world":
        if images_dir is not None:
            raise ValueError("the world renders its own images; drop --images-dir")
        scenes = _world(seed)[1]
        missing = [k for k in references if k not in scenes]
        if missing:
            raise ValueError(f"{len(missing)} ids are not world robustness scenes (first: "
                             f"{missing[:3]}); take the references from dataset_references('world')")
        return ({k: scenes[k].render(WORLD_IMAGE_SIZE) for k in references},
                {k: scenes[k] for k in references})
    if images_dir is None:
        return None, None
    from capkit.models.images import find_image_files
    ids = list(references)
    return dict(zip(ids, find_image_files(ids, images_dir))), None
