"""Rule-based captioning systems of known quality: each makes one named kind of error.

``run_system(name, scenes, seed)`` captions every scene and returns each caption's ``Check``
record (caption, grammatical, true, coverage, form). ``correct`` writes true captions of varying
coverage; every other system starts from a true caption and breaks it one way (``ERRORS``). A
system whose error happens to leave the caption true or grammatical keeps that caption: the check
record, not the system's name, is the truth (it is rare: the error is re-drawn up to 50 times).
Caption i depends only on (system, seed, i). ``LEARNED`` names the trained captioner's
checkpoints, the world's learned systems (``capkit.data.world.learned_systems`` runs them).
"""
from __future__ import annotations

import dataclasses
import zlib
from collections.abc import Callable, Sequence

import numpy as np

from capkit.world.check import Check, check
from capkit.world.describe import TEMPLATES, WEIGHTS, true_form
from capkit.world.forms import (
    OPPOSITE, Conjunction, Count, Description, Exists, Form, evaluate,
)
from capkit.world.grammar import parse, realise
from capkit.world.scene import COLORS, SHAPES, Scene

ERRORS = {
    "correct": "true captions, from one object to all of them",
    "hallucinated_object": "names an object (shape and colour) that is not in the scene",
    "wrong_color": "one object gets a colour that makes the caption false",
    "wrong_shape": "one object gets a shape that makes the caption false",
    "wrong_relation": "left/right or above/below swapped (a one-object scene has no relation: "
                      "there a colour is swapped instead)",
    "wrong_count": "a count off by one",
    "generic": "true but says nothing: 'a shape', 'there is an object'",
    "repetition": "a true caption whose last words repeat, as degenerate decoders do",
    "shuffled": "the words of a true caption in random order",
    "ungrammatical": "a true caption with one word dropped or doubled, every a/an swapped, or "
                     "its shape nouns pluralised",
}
# the learned systems: capkit.models.world_captioner's shipped checkpoints, run by
# capkit.data.world.learned_systems (world never imports models); their errors are not named
LEARNED = {
    "captioner@150": "the world captioner (CNN + GRU) after 150 training steps: weak",
    "captioner@600": "the same training run after 600 steps",
    "captioner@2400": "the same run after all 2,400 steps: good",
}
TRIES = 50


def _template(rng: np.random.Generator, allowed=TEMPLATES) -> str:
    p = np.array([w for t, w in zip(TEMPLATES, WEIGHTS) if t in allowed])
    return allowed[rng.choice(len(allowed), p=p / p.sum())]


def _slots(form: Form) -> list[Description]:
    return list(form.slots()) if not isinstance(form, Count) else [form.what]


def _with_slot(form: Form, k: int, d: Description) -> Form:
    if isinstance(form, Exists | Count):
        return dataclasses.replace(form, what=d)
    if isinstance(form, Conjunction):
        return Conjunction(form.parts[:k] + (d,) + form.parts[k + 1:])
    return dataclasses.replace(form, **{("subject", "object")[k]: d})


def _false_variant(scene: Scene, rng, templates, mutate) -> str:
    """A caption from a true form of ``templates`` changed by ``mutate`` until it is false."""
    form = None
    for _ in range(TRIES):
        form = mutate(true_form(scene, _template(rng, templates), rng), rng)
        if form is not None and not evaluate(form, scene):
            break
    return realise(form, rng)


def _swap_attribute(attribute: str, values: Sequence[str]):
    def mutate(form: Form, rng) -> Form | None:
        k = int(rng.integers(len(_slots(form))))
        d = _slots(form)[k]
        choices = [v for v in values if v != getattr(d, attribute)]
        return _with_slot(form, k, dataclasses.replace(d, **{attribute: rng.choice(choices)}))
    return mutate


def _hallucinated(scene: Scene, rng) -> str:
    present = {(o.shape, o.color) for o in scene.objects}
    absent = [(s, c) for s in SHAPES for c in COLORS if (s, c) not in present]
    shape, color = absent[int(rng.integers(len(absent)))]
    objs = [scene.objects[k] for k in rng.permutation(len(scene.objects))]
    kept = [Description(o.shape, o.color) for o in objs[:int(rng.integers(1, len(objs) + 1))]]
    kept.insert(int(rng.integers(len(kept) + 1)), Description(shape, color))
    return realise(Conjunction(tuple(kept)), rng)


def _flip_relation(form: Form, rng) -> Form:
    return dataclasses.replace(form, relation=OPPOSITE[form.relation])


def _off_by_one(form: Form, rng) -> Form:
    steps = [s for s in (-1, 1) if 1 <= form.n + s <= 4]
    return dataclasses.replace(form, n=form.n + int(rng.choice(steps)))


def _correct(scene: Scene, rng) -> str:
    return realise(true_form(scene, _template(rng), rng), rng)


def _generic(scene: Scene, rng) -> str:
    return realise(Exists(Description()), rng)


def _repetition(scene: Scene, rng) -> str:
    words = _correct(scene, rng).rstrip(".").split()
    tail = words[-int(rng.integers(2, 4)):]
    return " ".join(words + tail * int(rng.integers(1, 3)))


def _shuffled(scene: Scene, rng) -> str:
    words = _correct(scene, rng).rstrip(".").lower().split()
    for _ in range(TRIES):
        order = rng.permutation(len(words))
        if list(order) != sorted(order) or len(words) < 2:
            break
    return " ".join(words[k] for k in order)


def _break_grammar(words: list[str], rng) -> list[str]:
    k = int(rng.integers(len(words)))
    how = rng.choice(["drop", "double", "article", "plural"])
    if how == "drop":
        return words[:k] + words[k + 1:]
    if how == "double":
        return words[:k + 1] + words[k:]
    if how == "article":
        return [{"a": "an", "an": "a"}.get(w, w) for w in words]
    return [w + ("es" if w.endswith("s") else "s") if w in SHAPES else w for w in words]


def _ungrammatical(scene: Scene, rng) -> str:
    caption = _correct(scene, rng).rstrip(".")
    for _ in range(TRIES):
        broken = " ".join(_break_grammar(caption.split(), rng))
        if parse(broken) is None:
            return broken
    return broken


SYSTEMS: dict[str, Callable[[Scene, np.random.Generator], str]] = {
    "correct": _correct,
    "hallucinated_object": _hallucinated,
    "wrong_color": lambda s, rng: _false_variant(
        s, rng, ("all", "relation", "some", "one"), _swap_attribute("color", COLORS)),
    "wrong_shape": lambda s, rng: _false_variant(
        s, rng, ("all", "relation", "some", "one"), _swap_attribute("shape", SHAPES)),
    "wrong_relation": lambda s, rng: _false_variant(s, rng, ("relation",), _flip_relation)
    if len(s.objects) > 1 else _false_variant(s, rng, ("one",), _swap_attribute("color", COLORS)),
    "wrong_count": lambda s, rng: _false_variant(s, rng, ("count",), _off_by_one),
    "generic": _generic,
    "repetition": _repetition,
    "shuffled": _shuffled,
    "ungrammatical": _ungrammatical,
}


def run_system(name: str, scenes: Sequence[Scene], seed: int = 0, *,
               error_rate: float = 1.0) -> list[Check]:
    """Caption each scene with system ``name`` and check each caption.

    ``error_rate`` < 1 makes a system of graded quality: each caption comes from ``name`` with
    that chance and from ``correct`` otherwise (world_systems uses 0.3, 0.6 and 0.9).
    """
    if name not in SYSTEMS:
        raise ValueError(f"unknown world system {name!r}: choose one of {', '.join(SYSTEMS)}")
    if not 0.0 <= error_rate <= 1.0:
        raise ValueError(f"error_rate={error_rate}: give a chance in [0, 1]")
    stream = zlib.crc32(f"{name}@{error_rate}".encode() if error_rate < 1 else name.encode())
    out = []
    for i, scene in enumerate(scenes):
        rng = np.random.default_rng([stream, seed, i])
        system = SYSTEMS[name] if error_rate == 1.0 or rng.random() < error_rate else _correct
        out.append(check(scene, system(scene, rng)))
    return out

