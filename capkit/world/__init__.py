"""The captioned-image world (#12): synthetic scenes whose captions can be checked for truth.

>>> from capkit.world import make_scenes, describe, check
>>> scene = make_scenes(1, seed=0)[0]
>>> image = scene.render(64)                            # PIL RGB, antialiased
>>> all(check(scene, r).true for r in describe(scene, n=5, seed=0))
True

Modules: ``scene`` (objects, validation, ``make_scenes``), ``render`` (pixels), ``forms`` (logical
forms and their exact semantics), ``grammar`` (the closed grammar: parse and realise), ``check``
(grammatical / true / coverage), ``describe`` (true references), ``captioners`` (rule-based
systems that make one named kind of error), ``splits`` (scene seeds that never meet).
Layer 1 (data-like): nothing here imports metrics.
"""
from capkit.world.check import Check, check
from capkit.world.describe import describe
from capkit.world.forms import Conjunction, Count, Description, Exists, Relation, evaluate
from capkit.world.grammar import parse, realise
from capkit.world.render import render
from capkit.world.scene import COLORS, SHAPES, SIZES, Obj, Scene, make_scenes

__all__ = ["COLORS", "SHAPES", "SIZES", "Obj", "Scene", "make_scenes", "render", "Check", "check",
           "describe", "parse", "realise", "evaluate", "Description", "Exists", "Conjunction",
           "Count", "Relation"]
