"""capkit.speed: what the whole-process benchmark prepares before it times anything."""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

import capkit
from capkit import speed


def test_compile_bytecode_leaves_every_module_compiled():
    """Both sides are timed as pip leaves an installed package: with fresh bytecode, so that
    neither side pays the compiler at start-up (PYTHONDONTWRITEBYTECODE would make it pay at
    every start)."""
    assert speed.compile_bytecode() is True
    modules = sorted(Path(capkit.__file__).parent.rglob("*.py"))
    assert len(modules) > 100
    for source in modules:
        cached = Path(importlib.util.cache_from_source(str(source)))
        assert cached.exists(), f"no bytecode for {source}"
        assert os.stat(cached).st_mtime >= os.stat(source).st_mtime - 1, f"stale bytecode for {source}"


@pytest.mark.parametrize("repeat", [0, -1, 2.0, True])
def test_a_benchmark_without_timed_runs_is_refused_before_any_work(repeat):
    # repeat=0 had nothing to take the median of (statistics.median raised on the empty list
    # only after pycocoevalcap's side had run)
    for run in (lambda: speed.bench_speed({"1": "a dog"}, {"1": ["a dog"]}, repeat=repeat),
                lambda: speed.whole_process("/nonexistent/c.json", "/nonexistent/r.json",
                                            repeat=repeat)):
        with pytest.raises(ValueError, match="at least 1"):
            run()
