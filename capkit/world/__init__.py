"""The captioned-image world: synthetic scenes whose captions can be checked for truth (#12)."""
from capkit.world.render import render
from capkit.world.scene import COLORS, SHAPES, SIZES, Obj, Scene, make_scenes

__all__ = ["COLORS", "SHAPES", "SIZES", "Obj", "Scene", "make_scenes", "render"]
