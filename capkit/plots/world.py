"""Figures for the captioned-image world (``capkit.world``): scenes with their captions.

Explained in notebooks/10_captioned_world.ipynb, section 1 "The world".
"""
from __future__ import annotations

import textwrap
from collections.abc import Sequence

import numpy as np


def scene_grid(scenes: Sequence, captions: Sequence[Sequence[str]] | None = None, *,
               columns: int = 4, image_size: int = 96, width: int = 32, axes=None,
               fontsize: float = 8):
    """Each scene rendered (``scene.render(image_size)``) over its captions (one list per scene,
    wrapped at ``width`` characters); titles number the scenes 0..n-1. ``axes``: an array of at
    least ``len(scenes)`` axes, or None for a new figure. Returns the axes (flat array)."""
    import matplotlib.pyplot as plt

    if captions is not None and len(captions) != len(scenes):
        raise ValueError(f"{len(scenes)} scenes but {len(captions)} caption lists: give one list "
                         "of captions per scene (or captions=None)")
    if axes is None:
        rows = -(-len(scenes) // columns)
        _, axes = plt.subplots(rows, columns, figsize=(2.4 * columns, 3.5 * rows))
    axes = np.atleast_1d(axes).ravel()
    if len(axes) < len(scenes):
        raise ValueError(f"{len(scenes)} scenes need at least as many axes, got {len(axes)}")
    for k, ax in enumerate(axes):
        ax.axis("off")
        if k >= len(scenes):
            continue
        ax.imshow(scenes[k].render(image_size))
        ax.set_title(f"scene {k}", fontsize=fontsize + 1)
        if captions is not None:
            text = "\n".join(textwrap.fill(c, width) for c in captions[k])
            ax.text(0.0, -0.04, text, transform=ax.transAxes, va="top", fontsize=fontsize)
    return axes


def checked_scene(scene, caption: str, *, image_size: int = 96, ax=None):
    """``scene`` drawn, titled with the verdict of ``check(scene, caption)``; the full record is
    printed under it (what notebook 10's checker widget shows). Returns the axes."""
    import matplotlib.pyplot as plt

    from capkit.world import check
    record = check(scene, caption)
    verdict = ("not grammatical" if not record.grammatical else
               f"{'TRUE' if record.true else 'FALSE'}, covers {record.coverage:.0%} of the objects")
    if ax is None:
        _, ax = plt.subplots(figsize=(2.6, 2.9))
    ax.imshow(scene.render(image_size))
    ax.axis("off")
    ax.set_title(verdict, fontsize=9)
    print(record)
    return ax
