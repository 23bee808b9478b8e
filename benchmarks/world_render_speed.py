"""Speed of capkit.world: rendering scenes, checking captions, writing references. One core.

    .venv/bin/python benchmarks/world_render_speed.py [--n 2000] [--size 64] [--repeat 3]

Prints scenes per second for ``make_scenes``, ``scene.render(size)`` (drawn at 4x, box
downsampled), ``check`` of one reference per scene and ``describe(scene, n=5)``, each the median
of --repeat runs. Speed is measured here, not in the unit tests (README, "Exactness and speed").
"""
from __future__ import annotations

import argparse

from capkit.speed import median_time


def _rate(fn, n: int, repeat: int) -> float:
    return n / median_time(fn, repeat)[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)

    from capkit.world import check, describe, make_scenes
    scenes = make_scenes(args.n, seed=0)
    refs = [describe(s, n=1, seed=i)[0] for i, s in enumerate(scenes)]
    rates = {
        "make_scenes": _rate(lambda: make_scenes(args.n, seed=0), args.n, args.repeat),
        f"render({args.size})": _rate(lambda: [s.render(args.size) for s in scenes], args.n,
                                      args.repeat),
        "check": _rate(lambda: [check(s, r) for s, r in zip(scenes, refs)], args.n, args.repeat),
        "describe(n=5)": _rate(lambda: [describe(s, n=5, seed=i) for i, s in enumerate(scenes)],
                               args.n, args.repeat),
    }
    for name, rate in rates.items():
        print(f"{name:>14}: {rate:9,.0f} scenes/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
