"""capkit's datasets: one schema, one loader per benchmark, and ``load(name)`` to reach them.

Nothing is read at import time. Data are fetched once with ``capkit data fetch`` (``fetch.py``,
folders in ``paths.py``); a loader whose dataset is missing raises FileNotFoundError with that
command.

>>> from capkit.data import load
>>> judgments = load("flickr8k_expert")          # doctest: +SKIP
>>> judgments.protocol["statistic"]              # doctest: +SKIP
'kendall_tau_c'
"""
from __future__ import annotations

import inspect

from capkit.data.capeval1k import load_capeval1k
from capkit.data.composite import load_composite
from capkit.data.corpora import (
    load_clipscore_example,
    load_coco_karpathy_test,
    load_diversity_set,
    load_flickr30k_test,
    real_photographs,
)
from capkit.data.flickr8k import load_flickr8k_cf, load_flickr8k_expert
from capkit.data.nebula import load_nebula
from capkit.data.pascal50s import load_pascal50s, pascal50s_references
from capkit.data.paths import DATASETS, data_dir, require
from capkit.data.schema import CaptionJudgments, PairJudgments, SystemCaptions
from capkit.data.sugarcrepe import load_sugarcrepe
from capkit.data.thumb import load_thumb
from capkit.data.world import (load_world_expert, load_world_foil, load_world_foil_val,
                               load_world_systems)

# registry name -> loader; every loader sets ``name`` to its registry name
LOADERS = {
    "flickr8k_expert": load_flickr8k_expert,
    "flickr8k_cf": load_flickr8k_cf,
    "composite": load_composite,
    "pascal50s": load_pascal50s,
    "thumb": load_thumb,
    "nebula": load_nebula,
    "capeval1k": load_capeval1k,
    "coco_karpathy_test": load_coco_karpathy_test,
    "flickr30k_test": load_flickr30k_test,
    "diversity_wang_chan": load_diversity_set,
    "clipscore_example": load_clipscore_example,
    "sugarcrepe": load_sugarcrepe,             # hard negatives, no human ratings
    "world_expert": load_world_expert,         # generated from capkit.world: nothing to fetch
    "world_foil": load_world_foil,
    "world_foil_val": load_world_foil_val,     # validation scenes: for choices, never reported
    "world_systems": load_world_systems,
}
JUDGMENT_SETS = ("flickr8k_expert", "flickr8k_cf", "composite", "pascal50s", "thumb", "nebula",
                 "capeval1k")


def load(name: str, **options):
    """Load a dataset by registry name; ``options`` go to its loader (e.g. ``drop_self=False``)."""
    if name not in LOADERS:
        raise ValueError(f"Unknown dataset {name!r}: choose one of {', '.join(LOADERS)}.")
    loader = LOADERS[name]
    accepted = inspect.signature(loader).parameters
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        raise ValueError(f"{name} has no option {', '.join(unknown)}: its options are "
                         f"{', '.join(accepted) or 'none'}.")
    return loader(**options)


__all__ = [
    "CaptionJudgments", "PairJudgments", "SystemCaptions",
    "DATASETS", "JUDGMENT_SETS", "LOADERS", "data_dir", "load", "require",
    "load_flickr8k_expert", "load_flickr8k_cf", "load_composite", "load_pascal50s",
    "pascal50s_references", "load_thumb", "load_nebula", "load_capeval1k",
    "load_coco_karpathy_test", "load_flickr30k_test", "load_diversity_set",
    "load_clipscore_example", "load_sugarcrepe", "load_world_expert", "load_world_foil",
    "load_world_foil_val",
    "load_world_systems", "real_photographs",
]
