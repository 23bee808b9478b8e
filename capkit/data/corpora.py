"""Caption sets without human ratings: references plus the captions of several systems.

* COCO Karpathy test: 5,000 images, 5 references (10 images have 6), 9 systems, 12 real images.
* Flickr30k Karpathy test: 1,000 images, 5 references, 6 zero-shot systems.
* Wang & Chan (2019): 10 sampled captions for each of 5,000 COCO images, for diversity metrics.
* CLIPScore's toy example: 2 images, a good and a subtly wrong caption each.
"""
from __future__ import annotations

import re
from pathlib import Path

from capkit.data.paths import require
from capkit.data.readers import check_references, check_text, malformed, read_csv, read_json
from capkit.data.schema import SystemCaptions

COCO_FILE = re.compile(r"COCO_val2014_(\d{12})\.jpg")


def coco_id(file_name: str) -> str:
    """``COCO_val2014_000000000042.jpg`` -> ``"42"``."""
    m = COCO_FILE.fullmatch(file_name)
    if m is None:
        raise ValueError(f"{file_name!r} is not a COCO val2014 file name "
                         "(COCO_val2014_<12 digits>.jpg).")
    return str(int(m.group(1)))


def _references(path: Path) -> dict[str, list[str]]:
    refs = read_json(path)
    if not isinstance(refs, dict) or not refs:
        raise malformed(path, "top level", "expected a non-empty {image: [references]} object")
    return {k: check_references(v, path, k) for k, v in refs.items()}


def karpathy_references() -> dict[str, list[str]]:
    """COCO Karpathy-test references keyed by file name (``COCO_val2014_<12d>.jpg``)."""
    return _references(require("coco_karpathy_test") / "references_karpathy_test5k.json")


def _systems(path: Path, key_column: str, refs: dict, key=lambda k: k) -> dict[str, dict[str, str]]:
    systems: dict[str, dict[str, str]] = {}
    for n, row in enumerate(read_csv(path, (key_column, "system", "caption")), 2):
        where = f"line {n}"
        file_name = row[key_column]
        if file_name not in refs:
            raise malformed(path, where, f"image {file_name!r} has no references")
        image = key(file_name)
        if "image_id" in row and row["image_id"] != image:
            raise malformed(path, where, f"image_id {row['image_id']} does not match {file_name}")
        captions = systems.setdefault(row["system"], {})
        if image in captions:
            raise malformed(path, where, f"system {row['system']!r} has two captions for {image}")
        captions[image] = check_text(row["caption"], path, where)
    return systems


def _coverage(systems: dict, n_images: int) -> str:
    return "; ".join(f"{s} {len(c):,}" for s, c in systems.items()) + f" (of {n_images:,} images)"


def load_coco_karpathy_test() -> SystemCaptions:
    """COCO Karpathy test: references and 9 systems keyed by str(COCO image id), e.g. ``"42"``."""
    folder = require("coco_karpathy_test")
    by_file = _references(folder / "references_karpathy_test5k.json")
    try:
        refs = {coco_id(f): r for f, r in by_file.items()}
    except ValueError as e:
        raise malformed(folder / "references_karpathy_test5k.json", "keys", str(e)) from None
    systems = _systems(folder / "predictions.csv", "file_name", by_file, coco_id)
    protocol = {
        "references": "5 COCO captions per image (10 images have 6), keyed by str(COCO image id)",
        "systems": _coverage(systems, len(refs)),
        "notes": ("no human ratings; zs_magic and zs_clipre cover 4,982 images and are not padded: "
                  "score each system on its own images or restrict all to the common ones. "
                  "images_dir holds 12 of the images (COCO_val2014_<12d>.jpg)"),
    }
    return SystemCaptions(name="coco_karpathy_test", references=refs, systems=systems,
                          images_dir=folder / "example_images", protocol=protocol)


def load_flickr30k_test() -> SystemCaptions:
    """Flickr30k Karpathy test: references and 6 zero-shot systems keyed by file name."""
    folder = require("flickr30k_test")
    refs = _references(folder / "references_1k.json")
    systems = _systems(folder / "predictions.csv", "file_name", refs)
    protocol = {
        "references": "5 Flickr30k captions per image, keyed by file name (e.g. 1007129816.jpg)",
        "systems": _coverage(systems, len(refs)),
        "notes": "no human ratings; no images",
    }
    return SystemCaptions(name="flickr30k_test", references=refs, systems=systems,
                          protocol=protocol)


def load_diversity_set() -> dict[str, list[str]]:
    """Wang & Chan (2019): str(COCO image id) -> 10 captions sampled from one model (no refs)."""
    path = require("diversity_wang_chan") / "merge_results.json"
    data = read_json(path)
    if not isinstance(data, list) or not data:
        raise malformed(path, "top level", "expected a non-empty list of {image_id, captions}")
    out: dict[str, list[str]] = {}
    for i, entry in enumerate(data):
        where = f"entry {i}"
        if not isinstance(entry, dict) or "image_id" not in entry or "captions" not in entry:
            raise malformed(path, where, "expected {image_id, captions}")
        image, captions = str(entry["image_id"]), entry["captions"]
        if image in out:
            raise malformed(path, where, f"image_id {image} appears twice")
        if not isinstance(captions, list) or len(captions) != 10:
            raise malformed(path, where, "expected a list of 10 captions")
        out[image] = [check_text(c, path, where) for c in captions]
    return out


def load_clipscore_example() -> SystemCaptions:
    """CLIPScore's toy example: systems "good" and "bad"; keys image1/image2 = images/<key>.jpg."""
    folder = require("clipscore_example")
    refs = _references(folder / "refs.json")
    systems = {}
    for system in ("good", "bad"):
        path = folder / f"{system}_captions.json"
        captions = read_json(path)
        if not isinstance(captions, dict) or set(captions) != set(refs):
            raise malformed(path, "top level", f"expected one caption for each of {sorted(refs)}")
        systems[system] = {k: check_text(v, path, k) for k, v in captions.items()}
    images_dir = folder / "images"
    missing = [k for k in refs if not (images_dir / f"{k}.jpg").is_file()]
    if missing:
        raise FileNotFoundError(f"{images_dir} lacks {missing}; refetch with `capkit data "
                                "fetch clipscore_example --force`.")
    protocol = {
        "references": "3 references per image",
        "systems": "good: a correct caption; bad: a subtly wrong one (sound metrics: good > bad)",
        "notes": "image files are images_dir/<key>.jpg",
    }
    return SystemCaptions(name="clipscore_example", references=refs, systems=systems,
                          images_dir=images_dir, protocol=protocol)


def real_photographs(system: str = "updown_paddle") -> tuple[dict, dict, dict]:
    """The 14 real photographs that come with the data, as ({key: caption}, {key: [references]},
    {key: image path}): the 12 COCO Karpathy-test images of ``coco_karpathy_test`` captioned by
    ``system``, then CLIPScore's two example images (``image1``, ``image2``) with their good
    captions. Image metrics run on them offline only with world or UNTRAINED weights."""
    from capkit.models.images import find_image_files
    coco, example = load_coco_karpathy_test(), load_clipscore_example()
    if system not in coco.systems:
        raise ValueError(f"no system {system!r}; choose one of {', '.join(coco.systems)}")
    ids = sorted(coco_id(p.name) for p in coco.images_dir.glob("COCO_val2014_*.jpg"))
    cands = {i: coco.systems[system][i] for i in ids}
    refs = {i: coco.references[i] for i in ids}
    images = dict(zip(ids, find_image_files(ids, coco.images_dir)))
    for key, caption in example.systems["good"].items():
        cands[key], refs[key] = caption, example.references[key]
        images[key] = example.images_dir / f"{key}.jpg"
    return cands, refs, images
