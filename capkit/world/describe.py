"""``describe(scene, n, seed)``: n different true references per scene, like COCO's five.

Each reference draws a template (all objects joined by "and", a spatial relation between two
objects, an exact count, some of the objects, one object), how much detail each noun phrase
keeps (colour, shape, size), the object order and the surface paraphrase. Dropping detail never
makes a caption false: the objects that made it true still do.
"""
from __future__ import annotations

import numpy as np

from capkit.world.check import check
from capkit.world.forms import Conjunction, Count, Description, Exists, Form, Relation
from capkit.world.grammar import realise, tokens
from capkit.world.scene import Obj, Scene, require_scene, whole

TEMPLATES = ("all", "relation", "count", "some", "one")
WEIGHTS = (0.35, 0.25, 0.15, 0.15, 0.10)


def detail(obj: Obj, rng: np.random.Generator, *, keep: float = 0.9) -> Description:
    """A description of ``obj`` that keeps each attribute with some chance (size less often)."""
    return Description(obj.shape if rng.random() < keep else None,
                       obj.color if rng.random() < keep else None,
                       obj.size if rng.random() < 0.35 else None)


def relation_between(a: Obj, b: Obj, rng: np.random.Generator) -> str:
    """A relation that holds from ``a`` to ``b`` (x or y axis drawn at random; the other axis
    when the two centres tie on the drawn one, as hand-made scenes may: a tie is neither left
    nor right)."""
    use_x = rng.random() < 0.5
    if (use_x and a.x != b.x) or a.y == b.y:
        return "left" if a.x < b.x else "right"
    return "above" if a.y < b.y else "below"


def true_form(scene: Scene, template: str, rng: np.random.Generator) -> Form:
    """A logical form of ``template`` that is true in ``scene`` (by construction)."""
    objs = [scene.objects[k] for k in rng.permutation(len(scene.objects))]
    if template == "all" and len(objs) > 1:
        return Conjunction(tuple(detail(o, rng) for o in objs))
    if template == "some" and len(objs) > 2:
        k = int(rng.integers(2, len(objs)))
        return Conjunction(tuple(detail(o, rng) for o in objs[:k]))
    if template == "relation" and len(objs) > 1:
        a, b = objs[:2]
        return Relation(detail(a, rng), relation_between(a, b, rng), detail(b, rng))
    if template == "count":
        d = detail(objs[0], rng, keep=0.6)
        return Count(sum(d.matches(o) for o in objs), d)
    return Exists(detail(objs[0], rng))


def describe(scene: Scene, n: int = 5, seed: int = 0) -> list[str]:
    """``n`` different true references of ``scene`` (different after tokenisation)."""
    require_scene(scene, "describe")
    n = whole("n", n, 0, "ask for zero or more references (a whole number)")
    rng = np.random.default_rng(whole("seed", seed))
    out, seen = [], set()
    if n == 0:
        return out
    for _ in range(200 * n):
        template = TEMPLATES[rng.choice(len(TEMPLATES), p=WEIGHTS)]
        caption = realise(true_form(scene, template, rng), rng)
        key = " ".join(tokens(caption))
        if key not in seen and check(scene, caption).true:
            seen.add(key)
            out.append(caption)
            if len(out) == n:
                return out
    raise ValueError(f"could not find {n} different true references of this scene: ask for fewer")
