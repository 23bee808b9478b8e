"""Scenes of the captioned-image world: 1-4 coloured shapes on a plain or noisy background.

A scene is pure data (no pixels): ``render.py`` draws it, ``grammar.py`` and ``forms.py`` talk
about it. Coordinates are image coordinates in [0, 1]: ``x`` grows to the right and ``y`` grows
DOWNWARD, so "above" means a smaller ``y``. ``make_scenes`` keeps every two objects at least
``MIN_GAP`` apart in x AND in y, so every left/right/above/below relation between two objects is
clear at a glance (ShapeWorld drops ambiguous scenes the same way). Every scene, hand-made ones
included, keeps each object's box inside the image and apart from every other box, so nothing a
caption talks about is clipped or hidden in the rendering.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

SHAPES = ("circle", "square", "triangle", "star", "cross")
COLORS = ("red", "green", "blue", "yellow", "purple", "white")
SIZES = ("small", "big")
BACKGROUNDS = ("plain", "noise")
HALF_EXTENT = {"small": 0.06, "big": 0.1}    # half the side of an object's box, in image units
MIN_GAP = 0.15                                # least |dx| and |dy| between two objects
MAX_OBJECTS = 4


@dataclass(frozen=True)
class Obj:
    shape: str
    color: str
    size: str
    x: float
    y: float

    def __post_init__(self):
        check_attributes(self.shape, self.color, self.size)
        m = HALF_EXTENT[self.size]
        for axis, value in (("x", self.x), ("y", self.y)):
            if isinstance(value, (bool, np.bool_)) or \
                    not isinstance(value, (int, float, np.floating, np.integer)) or \
                    not 0.0 <= float(value) <= 1.0:
                raise ValueError(f"object {axis}={value!r} is outside the image: centres are "
                                 "numbers in [0, 1] (y grows downward)")
            if not m <= float(value) <= 1.0 - m:       # the drawing would be clipped
                raise ValueError(f"a {self.size} object at {axis}={float(value):g} reaches over "
                                 f"the edge of the image: put its centre in [{m:g}, {1 - m:g}] "
                                 f"(half its side is {m:g})")

    def to_dict(self) -> dict:
        return {"shape": self.shape, "color": self.color, "size": self.size,
                "x": float(self.x), "y": float(self.y)}


@dataclass(frozen=True)
class Scene:
    """1-4 objects; ``background`` is "plain" or "noise", its grey level and noise come from
    ``background_seed`` so a scene renders the same way every time."""
    objects: tuple[Obj, ...]
    background: str = "plain"
    background_seed: int = 0

    def __post_init__(self):
        if isinstance(self.objects, (str, bytes)) or not hasattr(self.objects, "__len__"):
            raise ValueError(f"objects must be a list or tuple of Obj, not "
                             f"{type(self.objects).__name__}")
        object.__setattr__(self, "objects", tuple(self.objects))     # hashable, like make_scenes'
        if not 1 <= len(self.objects) <= MAX_OBJECTS:
            raise ValueError(f"a scene holds 1 to {MAX_OBJECTS} objects, not "
                             f"{len(self.objects)}: give a list of 1-{MAX_OBJECTS} objects")
        if self.background not in BACKGROUNDS:
            raise ValueError(f"unknown background {self.background!r}: use one of "
                             f"{', '.join(BACKGROUNDS)}")
        if isinstance(self.background_seed, (bool, np.bool_)) or \
                not isinstance(self.background_seed, (int, np.integer)) or self.background_seed < 0:
            raise ValueError(f"background_seed={self.background_seed!r}: give an integer >= 0")
        for k, obj in enumerate(self.objects):
            if not isinstance(obj, Obj):
                raise ValueError(f"object {k} is of type {type(obj).__name__}, not Obj: build "
                                 "objects with Obj(shape, color, size, x, y) or Scene.from_dict")
        for a, b in itertools.combinations(self.objects, 2):
            if not _apart((a.size, a.x, a.y), (b.size, b.x, b.y), 0.0, slack=1e-9):
                reach = HALF_EXTENT[a.size] + HALF_EXTENT[b.size]
                raise ValueError(f"the boxes of the {a.color} {a.shape} at ({a.x:g}, {a.y:g}) and "
                                 f"the {b.color} {b.shape} at ({b.x:g}, {b.y:g}) overlap, so one "
                                 "could hide part of the other: put their centres at least "
                                 f"{reach:g} apart in x or in y (half a side: small "
                                 f"{HALF_EXTENT['small']:g}, big {HALF_EXTENT['big']:g})")

    @classmethod
    def from_dict(cls, data: dict) -> Scene:
        """``{"objects": [{"shape", "color", "size", "x", "y"}, ...]}`` (+ optional background)."""
        if not isinstance(data, dict) or "objects" not in data or \
                not isinstance(data["objects"], (list, tuple)):
            raise ValueError('a scene dict needs "objects": a list of {"shape", "color", "size", '
                             '"x", "y"} dicts')
        objects = []
        for item in data["objects"]:
            if not isinstance(item, dict):
                raise ValueError(f"object {item!r} is not a dict: every object is a dict with "
                                 "shape, color, size, x and y")
            missing = {"shape", "color", "size", "x", "y"} - set(item)
            if missing:
                raise ValueError(f"object {item!r} lacks {', '.join(sorted(missing))}: every "
                                 "object needs shape, color, size, x and y")
            objects.append(Obj(item["shape"], item["color"], item["size"], item["x"], item["y"]))
        return cls(tuple(objects), data.get("background", "plain"),
                   data.get("background_seed", 0))

    def to_dict(self) -> dict:
        return {"objects": [o.to_dict() for o in self.objects], "background": self.background,
                "background_seed": self.background_seed}

    def render(self, size: int = 64):
        """The scene as a ``size`` x ``size`` PIL RGB image (see ``capkit.world.render``)."""
        from capkit.world.render import render
        return render(self, size)


def _apart(a: tuple[str, float, float], b: tuple[str, float, float], gap: float,
           slack: float = 0.0) -> bool:
    """Two (size, x, y) boxes do not overlap (up to ``slack``, for hand-written decimals), and
    their centres are ``gap`` apart in x and y."""
    dx, dy = abs(a[1] - b[1]), abs(a[2] - b[2])
    reach = HALF_EXTENT[a[0]] + HALF_EXTENT[b[0]] - slack
    return dx >= gap and dy >= gap and (dx >= reach or dy >= reach)


def _fits(new: tuple[str, float, float], placed: list[tuple[str, float, float]]) -> bool:
    return all(_apart(new, other, MIN_GAP) for other in placed)


def random_scene(rng: np.random.Generator, n_objects: int | None = None) -> Scene:
    """One scene drawn with ``rng``: 1-4 objects, spaced and non-overlapping (see module doc)."""
    n = int(rng.integers(1, MAX_OBJECTS + 1)) if n_objects is None else n_objects
    while True:                      # restart when a crowded draw leaves no room (rare)
        placed: list[tuple[str, float, float]] = []
        for _ in range(200):
            size = SIZES[rng.integers(len(SIZES))]
            m = HALF_EXTENT[size]
            x, y = (float(round(v, 4)) for v in rng.uniform(m, 1 - m, size=2))
            if _fits((size, x, y), placed):
                placed.append((size, x, y))
                if len(placed) == n:
                    break
        if len(placed) == n:
            break
    objects = tuple(Obj(SHAPES[rng.integers(len(SHAPES))], COLORS[rng.integers(len(COLORS))],
                        size, x, y) for size, x, y in placed)
    return Scene(objects, BACKGROUNDS[rng.integers(len(BACKGROUNDS))],
                 int(rng.integers(2**31 - 1)))


def check_attributes(shape, color, size, *, unsaid: bool = False) -> None:
    """ValueError naming the first unknown shape, colour or size (``unsaid``: None allowed, as
    in a caption's description that leaves it out)."""
    for field, value, allowed in (("shape", shape, SHAPES), ("color", color, COLORS),
                                  ("size", size, SIZES)):
        if value not in allowed and not (unsaid and value is None):
            raise ValueError(f"unknown {field} {value!r}: use one of {', '.join(allowed)}"
                             + (", or None to leave it unsaid" if unsaid else ""))


def require_scene(scene, who: str) -> None:
    """ValueError unless ``scene`` is a Scene (``who``: the function that needs it)."""
    if not isinstance(scene, Scene):
        raise ValueError(f"{who} needs a capkit.world.Scene, not {type(scene).__name__}: build "
                         "one with Scene.from_dict or make_scenes")


def whole(name: str, value, least: int = 0, what: str = "") -> int:
    """``value`` as an int when it is a whole number >= ``least`` (numpy integers included, bools
    and floats not), else a ValueError that names the argument."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or \
            value < least:
        raise ValueError(f"{name}={value!r}: {what or f'give a whole number >= {least}'}")
    return int(value)


def make_scenes(n: int, seed: int = 0, *, stream: int = 0) -> list[Scene]:
    """``n`` random scenes; scene ``i`` depends only on (``stream``, ``seed``, ``i``), so the first
    100 of 1,000 scenes are the 100 scenes of ``make_scenes(100, seed)``. ``stream`` keeps
    splits apart (``capkit.world.splits``)."""
    n = whole("n", n, 0, "ask for zero or more scenes (a whole number)")
    seed, stream = whole("seed", seed), whole("stream", stream)
    return [random_scene(np.random.default_rng([stream, seed, i])) for i in range(n)]
