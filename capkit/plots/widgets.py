"""Plots inside ``ipywidgets.interact``: the figure, without the ``<Axes: ...>`` line under it.

``interact`` shows a function's return value, and every capkit plot returns its axes (so a
notebook can add to it). ``drawn(plot)`` is the same function returning nothing, with the same
signature, so ``interact`` still builds one control per parameter::

    interact(drawn(emb_plots.token_match_map), candidate="a man bites a dog", layer=(0, 6))
"""
from __future__ import annotations

import functools


def drawn(plot):
    """``plot`` that draws its figure and returns None (for ``interact``)."""
    @functools.wraps(plot)
    def draw(*args, **kwargs):
        plot(*args, **kwargs)
    return draw
