"""Logical forms of world captions and what they mean in a scene.

Four forms, with ShapeWorld-style semantics made exact:

* ``Exists(d)``: some object matches ``d`` ("a red circle").
* ``Conjunction((d1, ..., dk))``: k DIFFERENT objects match d1..dk, one each ("a red circle and a
  blue square" needs two objects even when one of them is red and square-ish in some other way).
* ``Count(n, d)``: EXACTLY n objects match ``d`` ("two red circles" is false with three).
* ``Relation(a, rel, b)``: some object matching ``a`` stands in ``rel`` to some OTHER object
  matching ``b``; left/right compare x, above/below compare y (y grows downward: above = smaller).

A ``Description`` leaves any attribute it does not say as ``None``, which matches every value.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

from capkit.world.scene import MAX_OBJECTS, Obj, Scene, check_attributes, whole

RELATIONS = ("left", "right", "above", "below")
OPPOSITE = {"left": "right", "right": "left", "above": "below", "below": "above"}


@dataclass(frozen=True)
class Description:
    shape: str | None = None
    color: str | None = None
    size: str | None = None

    def __post_init__(self):
        check_attributes(self.shape, self.color, self.size, unsaid=True)

    def matches(self, obj: Obj) -> bool:
        return all(want is None or want == have for want, have in
                   ((self.shape, obj.shape), (self.color, obj.color), (self.size, obj.size)))

    def to_dict(self) -> dict:
        return {"shape": self.shape, "color": self.color, "size": self.size}


@dataclass(frozen=True)
class Exists:
    what: Description

    def slots(self) -> tuple[Description, ...]:
        return (self.what,)


@dataclass(frozen=True)
class Conjunction:
    parts: tuple[Description, ...]

    def slots(self) -> tuple[Description, ...]:
        return self.parts


@dataclass(frozen=True)
class Count:
    n: int
    what: Description

    def __post_init__(self):
        says = f"a count says one to {MAX_OBJECTS} (a scene holds at most {MAX_OBJECTS} objects)"
        if whole("n", self.n, 1, says) > MAX_OBJECTS:
            raise ValueError(f"n={self.n}: {says}")

    def slots(self) -> tuple[Description, ...]:
        return (self.what,) * self.n


@dataclass(frozen=True)
class Relation:
    subject: Description
    relation: str
    object: Description

    def __post_init__(self):
        if self.relation not in RELATIONS:
            raise ValueError(f"unknown relation {self.relation!r}: use one of "
                             f"{', '.join(RELATIONS)}")

    def slots(self) -> tuple[Description, ...]:
        return (self.subject, self.object)


Form = Exists | Conjunction | Count | Relation


def holds(relation: str, a: Obj, b: Obj) -> bool:
    """``a`` is ``relation`` of ``b`` (image coordinates: above = smaller y)."""
    return {"left": a.x < b.x, "right": a.x > b.x, "above": a.y < b.y,
            "below": a.y > b.y}[relation]


def evaluate(form: Form, scene: Scene) -> bool:
    """Is ``form`` true in ``scene``? (semantics in the module docstring)"""
    objs = scene.objects
    if isinstance(form, Exists):
        return any(form.what.matches(o) for o in objs)
    if isinstance(form, Count):
        return sum(form.what.matches(o) for o in objs) == form.n
    if isinstance(form, Relation):
        return any(form.subject.matches(a) and form.object.matches(b) and
                   holds(form.relation, a, b)
                   for a, b in itertools.permutations(objs, 2))
    if isinstance(form, Conjunction):
        return any(all(d.matches(o) for d, o in zip(form.parts, pick))
                   for pick in itertools.permutations(objs, len(form.parts)))
    raise ValueError(f"not a logical form: {form!r}; use Exists, Conjunction, Count or Relation")


def coverage(form: Form, scene: Scene) -> float:
    """Fraction of the scene's objects the caption mentions: the most objects its noun phrases
    can name at once, each object named once (a count names up to n objects)."""
    slots = form.slots()
    matched: dict[int, int] = {}          # object index -> slot index (Kuhn's matching)

    def augment(slot: int, seen: set[int]) -> bool:
        for k, obj in enumerate(scene.objects):
            if k not in seen and slots[slot].matches(obj):
                seen.add(k)
                if k not in matched or augment(matched[k], seen):
                    matched[k] = slot
                    return True
        return False

    named = sum(augment(s, set()) for s in range(len(slots)))
    return named / len(scene.objects)


def to_dict(form: Form) -> dict:
    """A JSON-ready dict of a form: ``{"kind": ..., ...}``."""
    if isinstance(form, Exists):
        return {"kind": "exists", "what": form.what.to_dict()}
    if isinstance(form, Conjunction):
        return {"kind": "conjunction", "parts": [d.to_dict() for d in form.parts]}
    if isinstance(form, Count):
        return {"kind": "count", "n": form.n, "what": form.what.to_dict()}
    return {"kind": "relation", "subject": form.subject.to_dict(), "relation": form.relation,
            "object": form.object.to_dict()}
