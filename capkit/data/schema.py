"""One in-memory schema for every dataset capkit reads.

Three shapes cover all of them:

* ``CaptionJudgments``: human ratings of single captions (Flickr8k-Expert/CF, Composite, THumB,
  Nebula, CapEval1k). A metric scores each unique *item* (candidate + references) once; the
  ratings point back to items, so Flickr8k-Expert's 3 un-averaged expert rows share one score.
* ``PairJudgments``: which of two captions people prefer (PASCAL-50S).
* ``SystemCaptions``: references plus the captions of several systems, no ratings (COCO Karpathy
  test, Flickr30k test).

Loaders apply each benchmark's row and reference rules (``docs/benchmarks.md``) and
record them in ``protocol`` so a printed number can be traced to them.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np


@dataclass(frozen=True)
class CaptionJudgments:
    name: str                        # registry name, e.g. "flickr8k_expert"
    candidates: list[str]            # (I,) unique scored captions (items)
    references: list[list[str]]      # (I,) references of each item, protocol removals applied
    images: list[str]                # (I,) image key of each item: the bootstrap resampling unit
    item_of_rating: np.ndarray       # (R,) int, index into items for each human rating
    human: np.ndarray                # (R,) float, the human target of each rating
    protocol: dict[str, str]         # rules applied, e.g. {"rows": ..., "references": ...}
    item_extra: dict[str, list] = field(default_factory=dict)  # per-item fields, e.g. "system"
    # image key -> PIL image, for datasets that make their own images (the world_* benchmarks)
    image_loader: Callable[[str], object] | None = field(default=None, repr=False, compare=False)
    # image key -> the capkit.world Scene it renders (world_* only), for metrics of scenes
    scene_loader: Callable[[str], object] | None = field(default=None, repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.human)


@dataclass(frozen=True)
class PairJudgments:
    name: str
    caption_a: list[str]             # (P,)
    caption_b: list[str]             # (P,)
    references: list[list[str]]      # (P,)
    images: list[str]                # (P,)
    label: np.ndarray                # (P,) int, 0 = people prefer caption_a, 1 = caption_b
    category: np.ndarray             # (P,) str, e.g. HC / HI / HM / MM
    protocol: dict[str, str]
    image_loader: Callable[[str], object] | None = field(default=None, repr=False, compare=False)
    scene_loader: Callable[[str], object] | None = field(default=None, repr=False, compare=False)
    ids: list[str] = field(default_factory=list)   # (P,) pair ids, where the set names its pairs

    def __len__(self) -> int:
        return len(self.label)


@dataclass(frozen=True)
class SystemCaptions:
    name: str
    references: dict[str, list[str]]         # image id -> references
    systems: dict[str, dict[str, str]]       # system -> image id -> caption
    images_dir: Path | None = None           # folder of the real images we have, if any
    protocol: dict[str, str] = field(default_factory=dict)
