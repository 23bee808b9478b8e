"""The three world benchmarks, generated (nothing to fetch) from ``capkit.world``: truth known.

* ``world_expert``: captions of the rule-based systems, of the trained world captioner at three
  checkpoints (``learned_systems``) and one held-out reference per scene, rated 1-4 by a stated
  rubric (``Check.rating``), Kendall tau-c as Flickr8k-Expert.
* ``world_foil``: a true caption and its one-word foil (colour, shape, count or relation), pairwise
  accuracy per foil type, as FOIL-COCO.
* ``world_systems``: systems of graded quality (rule-based at three error rates, and the
  captioner's checkpoints); system level: mean metric vs mean truth.

Scenes come from the benchmark's own split (``capkit.world.splits``), never the training one.
Every item's image is the rendering of its scene: the data carry ``image_loader`` (image key ->
PIL image, rendered by ``renderer``, default ``scene.render(image_size)``), so image metrics run
with no images folder, and ``scene_loader`` (image key -> ``Scene``), which ``capkit bench`` hands
to metrics that read scenes (spec ``scenes=True``). The same options give the same data, byte for
byte.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from capkit.data.schema import CaptionJudgments, PairJudgments
from capkit.world import Scene, describe
from capkit.world.captioners import SYSTEMS, run_system
from capkit.world.check import check
from capkit.world.foils import FOIL_TYPES, foil_pair
from capkit.world.grammar import tokens
from capkit.world.splits import split_scenes

RUBRIC = ("4 = true and names every object; 3 = true but misses an object; 2 = grammatical but "
          "false; 1 = ungrammatical (capkit.world.Check.rating)")
SYSTEM_RATES = (0.3, 0.6, 0.9)


def _image_loader(name: str, scenes: list[Scene], image_size: int,
                  renderer: Callable | None) -> Callable[[str], object]:
    draw = renderer or (lambda scene: scene.render(image_size))
    cache: dict[str, object] = {}

    def load(key: str):
        if key not in cache:
            index = int(key.rsplit("/", 1)[1])
            cache[key] = draw(scenes[index])
        return cache[key]
    return load


def _scene_loader(scenes: list[Scene]) -> Callable[[str], Scene]:
    return lambda key: scenes[int(key.rsplit("/", 1)[1])]


def learned_systems(scenes: list[Scene]) -> dict[str, list]:
    """The world captioner's shipped checkpoints (``capkit.models.world_captioner``; trained on
    the ``train`` split) as systems ``captioner@<step>``: greedy captions of each scene's 64-px
    render, each with its ``check`` record."""
    from capkit.models.world_captioner import SHIPPED_STEPS, load_world_captioner
    images = np.stack([np.asarray(s.render(64)) for s in scenes])
    return {f"captioner@{step}": [check(s, c) for s, c in zip(
        scenes, load_world_captioner(step).caption(images))] for step in SHIPPED_STEPS}


def _key(name: str, i: int) -> str:
    return f"{name}/{i:05d}"


def _references(scene: Scene, seed: int, i: int, n: int = 5, avoid: str | None = None):
    """``n`` references of a scene and one held-out true caption that is none of them."""
    refs = describe(scene, n=n + 2, seed=seed * 1_000_003 + i)
    if avoid is not None:
        refs = [r for r in refs if tokens(r) != tokens(avoid)]
    return refs[:n], refs[n]


def load_world_expert(n_scenes: int = 150, seed: int = 0, image_size: int = 64,
                      renderer: Callable | None = None, learned: bool = True) -> CaptionJudgments:
    """Every rule-based system (``capkit.world.captioners``), the world captioner's checkpoints
    (``learned``; ``learned_systems``) and a held-out reference on ``n_scenes``."""
    scenes = split_scenes("world_expert", n_scenes, seed)
    refs, heldout = zip(*(_references(s, seed, i) for i, s in enumerate(scenes)))
    records = {name: run_system(name, scenes, seed) for name in SYSTEMS}
    if learned:
        records.update(learned_systems(scenes))
    records["reference"] = [check(s, h) for s, h in zip(scenes, heldout)]
    cands, references, images, extra = [], [], [], {"system": [], "true": [], "coverage": []}
    for i in range(n_scenes):
        for name, out in records.items():
            cands.append(out[i].caption)
            references.append(list(refs[i]))
            images.append(_key("world_expert", i))
            extra["system"].append(name)
            extra["true"].append(out[i].true)
            extra["coverage"].append(out[i].coverage)
    human = np.array([out[i].rating for i in range(n_scenes) for out in records.values()], float)
    return CaptionJudgments(
        name="world_expert", candidates=cands, references=references, images=images,
        item_of_rating=np.arange(len(cands)), human=human,
        protocol={"rows": f"{n_scenes} scenes x {len(records)} captions ({len(records) - 1} "
                          "systems + 1 held-out reference), one rating each", "references": "5 describe() references",
                  "target": RUBRIC, "seed": str(seed)},
        item_extra=extra, image_loader=_image_loader("world_expert", scenes, image_size, renderer),
        scene_loader=_scene_loader(scenes))


VAL_FIRST = 5000          # world_foil_val: val scenes 5,000 on (training reads 0-499; the world
#                           backbone's measurement 1,000-2,999)


def load_world_foil(n_scenes: int = 150, seed: int = 0, image_size: int = 64,
                    renderer: Callable | None = None, *, split: str = "world_foil",
                    first: int = 0) -> PairJudgments:
    """Per scene, one (true, foil) pair of each foil type the scene allows; the true caption's
    position (a or b) is drawn at random; references never contain the true caption. ``split``
    / ``first``: draw the scenes ``first`` .. ``first + n_scenes - 1`` of another split
    (``load_world_foil_val``)."""
    name = "world_foil" if split == "world_foil" else f"world_foil_{split}"
    scenes = split_scenes(split, first + n_scenes, seed)[first:]
    rows: dict[str, list] = {k: [] for k in ("a", "b", "refs", "images", "label", "category")}
    for i, scene in enumerate(scenes):
        rng = np.random.default_rng([seed, i])
        for foil_type in FOIL_TYPES:
            pair = foil_pair(scene, foil_type, rng)
            if pair is None:
                continue
            true, foil = pair
            label = int(rng.integers(2))
            rows["a"].append(true if label == 0 else foil)
            rows["b"].append(foil if label == 0 else true)
            rows["refs"].append(_references(scene, seed, i, avoid=true)[0])
            rows["images"].append(_key(name, i))
            rows["label"].append(label)
            rows["category"].append(foil_type)
    return PairJudgments(
        name=name, caption_a=rows["a"], caption_b=rows["b"], references=rows["refs"],
        images=rows["images"], label=np.array(rows["label"]), category=np.array(rows["category"]),
        protocol={"rows": f"{n_scenes} scenes x up to 4 foil types (count and relation foils need "
                          "2 objects alike / 2 objects)", "references": "5 describe() references",
                  "target": "the true caption (label 0 = caption_a)", "seed": str(seed)},
        image_loader=_image_loader(name, scenes, image_size, renderer),
        scene_loader=_scene_loader(scenes))


def load_world_foil_val(n_scenes: int = 150, seed: int = 0, image_size: int = 64,
                        renderer: Callable | None = None) -> PairJudgments:
    """World-FOIL built the same way on validation scenes (``val`` split, scenes 5,000 on), for
    choices (a layer, a checkpoint, a threshold) that the World-FOIL test must not see; no
    reported number comes from it."""
    return load_world_foil(n_scenes, seed, image_size, renderer, split="val", first=VAL_FIRST)


def load_world_systems(n_scenes: int = 60, seed: int = 0, image_size: int = 64,
                       renderer: Callable | None = None, learned: bool = True) -> CaptionJudgments:
    """``correct`` and every error system at error rates 0.3 / 0.6 / 0.9 (28 systems), plus the
    world captioner's checkpoints (``learned``: 3 more), on the same scenes; the human target of
    a caption is its truth (1 true, 0 false or ungrammatical)."""
    scenes = split_scenes("world_systems", n_scenes, seed)
    refs = [_references(s, seed, i)[0] for i, s in enumerate(scenes)]
    runs = {"correct": run_system("correct", scenes, seed)}
    for name in SYSTEMS:
        if name != "correct":
            runs.update({f"{name}@{r}": run_system(name, scenes, seed, error_rate=r)
                         for r in SYSTEM_RATES})
    if learned:
        runs.update(learned_systems(scenes))
    order = [(name, i) for i in range(n_scenes) for name in runs]
    return CaptionJudgments(
        name="world_systems", candidates=[runs[n][i].caption for n, i in order],
        references=[list(refs[i]) for _, i in order],
        images=[_key("world_systems", i) for _, i in order],
        item_of_rating=np.arange(len(order)),
        human=np.array([float(runs[n][i].true is True) for n, i in order]),
        protocol={"rows": f"{n_scenes} scenes x {len(runs)} systems",
                  "references": "5 describe() references", "target": "truth (1 / 0)",
                  "seed": str(seed)},
        item_extra={"system": [n for n, _ in order]},
        image_loader=_image_loader("world_systems", scenes, image_size, renderer),
        scene_loader=_scene_loader(scenes))
