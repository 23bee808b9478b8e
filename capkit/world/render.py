"""Pixels of a scene: shapes drawn at 4x and box-downsampled (antialiased), over a grey background.

The background is a plain grey or grey noise whose level comes from ``scene.background_seed``, so
a model cannot find the objects by their contrast with one fixed colour. Its grey never exceeds
120, and every object colour has a channel of 180 or more, so white shapes stay visible (by
brightness alone red, blue and purple, about 90-100, can be darker than the noisiest grey: the
background is darker in every colour's strongest channel, not in luminance).
Same scene, same size -> same pixels.
Speed: ``benchmarks/world_render_speed.py``.
"""
from __future__ import annotations

import math

import numpy as np

from capkit.world.scene import HALF_EXTENT, Scene, require_scene, whole

RGB = {"red": (220, 35, 35), "green": (35, 180, 60), "blue": (45, 90, 235),
       "yellow": (240, 215, 35), "purple": (150, 55, 205), "white": (245, 245, 245)}
SUPERSAMPLE = 4


def _star(cx: float, cy: float, r: float) -> list[tuple[float, float]]:
    points = []
    for k in range(10):                       # 5 outer and 5 inner corners, top corner first
        radius = r if k % 2 == 0 else 0.45 * r
        angle = -math.pi / 2 + k * math.pi / 5
        points.append((cx + radius * math.cos(angle), cy + radius * math.sin(angle)))
    return points


def _cross(cx: float, cy: float, r: float) -> list[tuple[float, float]]:
    t = 0.35 * r                              # half the width of each bar
    return [(cx - t, cy - r), (cx + t, cy - r), (cx + t, cy - t), (cx + r, cy - t),
            (cx + r, cy + t), (cx + t, cy + t), (cx + t, cy + r), (cx - t, cy + r),
            (cx - t, cy + t), (cx - r, cy + t), (cx - r, cy - t), (cx - t, cy - t)]


def _draw(draw, shape: str, cx: float, cy: float, r: float, fill) -> None:
    if shape == "circle":
        draw.ellipse((cx - r, cy - r, cx + r, cy + r), fill=fill)
    elif shape == "square":
        draw.rectangle((cx - r, cy - r, cx + r, cy + r), fill=fill)
    elif shape == "triangle":
        draw.polygon([(cx, cy - r), (cx + r, cy + r), (cx - r, cy + r)], fill=fill)
    elif shape == "star":
        draw.polygon(_star(cx, cy, r), fill=fill)
    else:
        draw.polygon(_cross(cx, cy, r), fill=fill)


def background(scene: Scene, size: int):
    """The scene's background alone: plain grey or grey noise, (size, size) RGB."""
    from PIL import Image
    rng = np.random.default_rng(scene.background_seed)
    level = int(rng.integers(15, 90))
    if scene.background == "plain":
        return Image.new("RGB", (size, size), (level, level, level))
    noise = rng.normal(level, 22.0, size=(size, size, 1)).clip(0, 120).astype(np.uint8)
    return Image.fromarray(np.repeat(noise, 3, axis=2), "RGB")


def render(scene: Scene, size: int = 64):
    """A ``size`` x ``size`` PIL RGB image of ``scene`` (also ``scene.render(size)``)."""
    from PIL import Image, ImageDraw
    require_scene(scene, "render")
    size = whole("size", size, 8, "render at a whole number of 8 pixels or more (64 is the "
                                  "default)")
    big = size * SUPERSAMPLE
    colors = Image.new("RGB", (big, big))
    mask = Image.new("L", (big, big))
    paint, cover = ImageDraw.Draw(colors), ImageDraw.Draw(mask)
    for obj in scene.objects:
        cx, cy, r = obj.x * big, obj.y * big, HALF_EXTENT[obj.size] * big
        _draw(paint, obj.shape, cx, cy, r, RGB[obj.color])
        _draw(cover, obj.shape, cx, cy, r, 255)
    # box downsampling of colour and coverage, then one blend: antialiased edges on any background
    colors, mask = colors.reduce(SUPERSAMPLE), mask.reduce(SUPERSAMPLE)
    return Image.composite(colors, background(scene, size), mask)
