"""Scene splits whose seeds never meet: training scenes (a future world-CLIP, captioners) and the
scenes of each world benchmark come from different random streams.

Scene i of split s with seed k is drawn from ``np.random.default_rng([STREAMS[s], k, i])``: two
splits differ in the first word of every seed, so no choice of ``seed`` or ``n`` makes a training
scene and a benchmark scene share a random stream (``tests/test_world_benchmarks.py``).
"""
from __future__ import annotations

from capkit.world.scene import Scene, make_scenes

STREAMS = {"train": 1, "val": 2, "world_expert": 101, "world_foil": 102, "world_systems": 103,
           "world_robustness": 104}
TRAINING = ("train", "val")
BENCHMARKS = ("world_expert", "world_foil", "world_systems", "world_robustness")  # evaluation


def split_scenes(split: str, n: int, seed: int = 0) -> list[Scene]:
    """The first ``n`` scenes of ``split`` (one of ``STREAMS``) for ``seed``."""
    if split not in STREAMS:
        raise ValueError(f"unknown split {split!r}: choose one of {', '.join(STREAMS)}")
    return make_scenes(n, seed, stream=STREAMS[split])


def seed_words(split: str, n: int, seed: int = 0) -> set[tuple[int, int, int]]:
    """The random-stream seeds of the first ``n`` scenes of ``split``, to test that splits never
    meet."""
    return {(STREAMS[split], seed, i) for i in range(n)}
