"""Model configurations by preset name: the one lookup every capkit-trained model uses.

Each model module (``i2ce``, ``leic``, ``world_clip``, ``world_vilt``, ``world_captioner``)
keeps its frozen config dataclass and its ``PRESETS`` (``tiny``, ``small`` ...), and its
``get_config(preset, **changes)`` is ``preset_config`` over them.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, TypeVar

C = TypeVar("C")


def preset_config(presets: Mapping[str, C], preset: str | C, model: str,
                  changes: Mapping[str, Any]) -> C:
    """``presets[preset]``, or ``preset`` itself when it is a config of the same class, with the
    fields in ``changes`` replaced. ``model`` names the model in the error for an unknown name."""
    kind = type(next(iter(presets.values())))
    if isinstance(preset, kind):
        return dataclasses.replace(preset, **changes)
    if preset not in presets:
        article = "an" if kind.__name__[0] in "AEIOU" else "a"
        raise ValueError(f"unknown {model} preset {preset!r}; choose one of "
                         f"{', '.join(presets)} or pass {article} {kind.__name__}")
    return dataclasses.replace(presets[preset], **changes)
