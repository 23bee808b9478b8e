"""Paired A/B of whole `capkit score` processes: two capkit source trees, run alternately.

    .venv/bin/python benchmarks/paired_runs.py OLD_TREE [--new NEW_TREE] [--rounds 20]
        [--system updown_paddle] [--kind first|repeated]

A tree is a folder holding a ``capkit`` package, e.g. ``git worktree add /tmp/old <commit>``;
each side's process imports its tree through PYTHONPATH (NEW_TREE: this checkout by default),
with this environment's Python and packages. The inputs are one COCO Karpathy-test system
(5,000 captions, 25,010 references), scored by ``python -m capkit score --metrics
bleu_4,rouge_l,cider_d --format json``. Each round runs the old side, then the new one, so that
both meet the same machine (its speed drifts from minute to minute; docs/speed.md):

* ``--kind first`` (default): a first run, the references never tokenised: a cache folder
  without a tokens file each time, holding only the tokenizer's compiled lexer
  (``capkit.text.pattern_cache``) that a warm-up run of the same side left there, as any earlier
  run on a machine does;
* ``--kind repeated``: a repeated run, each side reading its own warm cache folder.

Both trees' modules are compiled to bytecode first. Prints each side's median and fastest
time, the median of the paired differences and in how many rounds the new side was faster, and
fails if the two sides ever print different scores. docs/speed.md's paired figures since the
fifth session of 2026-12-06 come from this script.
"""
from __future__ import annotations

import argparse
import compileall
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old", type=Path, help="folder holding the old capkit package")
    parser.add_argument("--new", type=Path, default=REPO, help="the new one (this checkout)")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--system", default="updown_paddle")
    parser.add_argument("--kind", choices=["first", "repeated"], default="first")
    args = parser.parse_args()
    trees = {"old": args.old.resolve(), "new": args.new.resolve()}
    for side, tree in trees.items():
        if not (tree / "capkit" / "__init__.py").is_file():
            parser.error(f"{side} tree {tree} holds no capkit package")
        compileall.compile_dir(tree / "capkit", quiet=2)
    from capkit.data import load
    from capkit.speed import first_run_folder
    corpus = load("coco_karpathy_test")
    cands = corpus.systems[args.system]
    with tempfile.TemporaryDirectory(prefix="capkit-paired-") as tmp:
        c, r = Path(tmp) / "c.json", Path(tmp) / "r.json"
        c.write_text(json.dumps(cands))
        r.write_text(json.dumps({i: corpus.references[i] for i in cands}))
        command = [sys.executable, "-m", "capkit", "score", "--candidates", str(c),
                   "--references", str(r), "--metrics", "bleu_4,rouge_l,cider_d", "--format", "json"]
        env = {k: v for k, v in os.environ.items() if not k.startswith("CAPKIT_")}
        for side, tree in trees.items():      # (python -m puts the working folder first)
            where = _run([sys.executable, "-c", "import capkit; print(capkit.__file__)"], env,
                         tree, Path(tmp) / "unused")[1].strip()
            if not Path(where).resolve().is_relative_to(tree):
                sys.exit(f"the {side} side imports capkit from {where}, not from {tree}")
        warm = {side: Path(tmp) / f"warm-{side}" for side in trees}
        outputs = {side: _run(command, env, trees[side], warm[side])[1] for side in trees}
        times: dict[str, list[float]] = {side: [] for side in trees}
        for i in range(args.rounds):
            for side in trees:
                folder = warm[side]
                if args.kind == "first":
                    folder = Path(first_run_folder(str(warm[side]), str(Path(tmp) / f"{side}-{i}")))
                seconds, out = _run(command, env, trees[side], folder)
                if out != outputs[side] or out != outputs["old"]:
                    sys.exit("the two trees printed different scores: compare them first")
                times[side].append(seconds)
    differences = [new - old for old, new in zip(times["old"], times["new"])]
    print(f"{args.kind} runs, {args.system}, {args.rounds} rounds alternating, load "
          f"{os.getloadavg()[0]:.2f}:")
    for side, tree in trees.items():
        print(f"  {side} ({tree}): median {statistics.median(times[side]):.3f} s, fastest "
              f"{min(times[side]):.3f} s")
    print(f"  new - old, paired: median {statistics.median(differences) * 1000:+.0f} ms; new faster "
          f"in {sum(d < 0 for d in differences)} of {args.rounds}")


def _run(command: list[str], env: dict[str, str], tree: Path, cache: Path) -> tuple[float, str]:
    """Run ``command`` with ``tree``'s capkit, in the cache folder's parent (not a checkout:
    ``python -m`` imports from its working folder first)."""
    side_env = {**env, "PYTHONPATH": str(tree), "CAPKIT_CACHE_DIR": str(cache)}
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=side_env, check=False,
                          cwd=cache.parent)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"capkit score failed with the tree {tree}: {done.stderr.strip()[-500:]}")
    return seconds, done.stdout


if __name__ == "__main__":
    main()
