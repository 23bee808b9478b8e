"""capkit.speed: what the whole-process benchmark prepares before it times anything."""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path

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
