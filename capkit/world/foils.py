"""One-word foils of true captions, as FOIL-COCO (Shekhar et al. 2017) makes them: one colour,
shape, number or relation word swapped so that the caption becomes false and stays grammatical.
"""
from __future__ import annotations

import numpy as np

from capkit.world.check import check
from capkit.world.describe import true_form
from capkit.world.forms import Count
from capkit.world.grammar import NUMBERS, PLURAL, realise
from capkit.world.scene import COLORS, SHAPES, Scene

FOIL_TYPES = ("color", "shape", "count", "relation")
_PLURALS = tuple(PLURAL.values())
RELATION_SWAPS = {"left": ("right",), "right": ("left",), "above": ("below", "under"),
                  "below": ("above", "over"), "over": ("under", "below"),
                  "under": ("over", "above"), "beneath": ("above", "over")}
# which words a foil type may replace, and with what
_SWAPS = {
    "color": lambda w: [c for c in COLORS if c != w] if w in COLORS else [],
    "shape": lambda w: ([s for s in SHAPES if s != w] if w in SHAPES else
                        [p for p in _PLURALS if p != w] if w in _PLURALS else []),
    "count": lambda w: [n for n in ("two", "three", "four") if n != w]
    if w in NUMBERS and w != "one" else [],
    "relation": lambda w: list(RELATION_SWAPS.get(w, ())),
}
_TEMPLATES = {"color": ("all", "some", "one", "relation"), "shape": ("all", "some", "one",
                                                                     "relation"),
              "count": ("count",), "relation": ("relation",)}


def _swap_word(caption: str, foil_type: str, rng: np.random.Generator) -> str | None:
    words = caption.split()
    places = [(k, options) for k, w in enumerate(words)
              if (options := _SWAPS[foil_type](w.lower().rstrip(".,")))]
    if not places:
        return None
    k, options = places[int(rng.integers(len(places)))]
    core = words[k].lower().rstrip(".,")
    new = options[int(rng.integers(len(options)))]
    if words[k][0].isupper():
        new = new[0].upper() + new[1:]
    words[k] = new + words[k][len(core):]
    return " ".join(words)


def foil_pair(scene: Scene, foil_type: str, rng: np.random.Generator,
              tries: int = 30) -> tuple[str, str] | None:
    """(true caption, its one-word foil) of ``foil_type``, or None when the scene has none (a count
    foil needs two objects alike, a relation foil two objects)."""
    if foil_type not in FOIL_TYPES:
        raise ValueError(f"unknown foil type {foil_type!r}: choose one of {', '.join(FOIL_TYPES)}")
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng is a {type(rng).__name__}: pass np.random.default_rng(seed)")
    for _ in range(tries):
        template = _TEMPLATES[foil_type][int(rng.integers(len(_TEMPLATES[foil_type])))]
        form = true_form(scene, template, rng)
        if foil_type == "count" and (not isinstance(form, Count) or form.n < 2):
            continue
        caption = realise(form, rng)
        foil = _swap_word(caption, foil_type, rng)
        if foil is None:
            continue
        record = check(scene, foil)
        if record.grammatical and record.true is False and check(scene, caption).true:
            return caption, foil
    return None
