"""The layer rules of ARCHITECTURE.md, read from the source: which capkit package may import which.

Every import counts, including the lazy ones inside functions, because a lazy import is still a
dependency (it only moves the cost). A new package must be given a layer here and in the map.
"""
import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "capkit"

# layer of each top-level name under capkit/ (packages and modules alike)
LAYERS = {
    "scores": 0, "text": 0, "report": 0, "progress": 0, "caption_files": 0, "cache_files": 0, "cache_trust": 0,
    "data": 1, "models": 1, "world": 1,
    "metrics": 2,
    "transforms": 3, "diversity": 3, "meta_eval": 3, "robustness": 3, "systems": 3, "speed": 3,
    "plots": 3, "compat": 3, "torchmetrics": 3, "course": 3,
    "training": 4,
    "commands": 5, "cli": 5, "__main__": 5,
}


def _imports(package: Path = PACKAGE) -> list[tuple[str, str, int]]:
    """(importing top-level name, imported top-level name, line) for every capkit import:
    ``import``, ``from ... import`` (relative ones resolved), and the module names given as text
    (``importlib.import_module("capkit...")``, ``f"capkit.commands.{name}"``, registry targets
    ``"capkit.metrics.bleu:bleu"``)."""
    found = []
    for path in package.rglob("*.py"):
        parts = path.relative_to(package).with_suffix("").parts
        top = parts[0] if parts[0] != "__init__" else "capkit"
        here = ["capkit", *parts[:-1]]                 # the package a relative import starts in
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:                      # from ..training import x
                    up = here[:len(here) - (node.level - 1)]
                    base = ".".join(up + ([node.module] if node.module else []))
                names = [base] + [f"{base}.{a.name}" for a in node.names if base == "capkit"]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                    _NAMED_MODULE.match(node.value):
                names = [node.value.partition(":")[0]]
            else:
                continue
            for name in names:
                bits = name.split(".")
                if bits[0] == "capkit" and len(bits) > 1 and bits[1] and bits[1] != top:
                    found.append((f"{top} ({path.relative_to(package)})", bits[1], node.lineno))
    return found


# a module named as text: "capkit.metrics.bleu:bleu", "capkit.training.i2ce", "capkit.commands."
_NAMED_MODULE = re.compile(r"^capkit\.\w+(?:\.\w+)*\.?(?::\w+)?$")


def test_the_reader_sees_relative_and_textual_imports(tmp_path):
    bad = tmp_path / "capkit" / "metrics"
    bad.mkdir(parents=True)
    (bad / "sneaky.py").write_text(
        "import importlib\nfrom ..training import corpus\nfrom . import bleu\n"
        "def f():\n    return importlib.import_module('capkit.commands.score')\n"
        "TARGET = 'capkit.training.umic:train'\nDOC = 'see capkit.training for how'\n")
    targets = sorted(t for _, t, _ in _imports(tmp_path / "capkit"))
    assert targets == ["commands", "training", "training"]


def test_every_package_has_a_layer():
    tops = {p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"} | \
        {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    missing = sorted(tops - set(LAYERS))
    assert not missing, f"give {missing} a layer in ARCHITECTURE.md and in this test"


def test_layers_import_only_downwards():
    bad = []
    for where, target, line in _imports():
        top = where.split(" ")[0]
        if top == "capkit" or target not in LAYERS:
            continue
        if LAYERS[target] >= LAYERS[top] and top != target and not _same_layer_ok(top, target):
            bad.append(f"{where}:{line} imports capkit.{target}")
    assert not bad, "imports against the layer rules of ARCHITECTURE.md:\n" + "\n".join(bad)


# within one layer, these uses are part of the design (a study builds on another study)
SAME_LAYER = {("transforms", "diversity"), ("plots", "diversity"), ("plots", "meta_eval"),
              ("plots", "robustness"), ("robustness", "transforms"), ("cli", "commands"),
              ("__main__", "cli"), ("data", "world"),
              ("data", "models"),           # the world benchmarks run the trained world captioner
              ("course", "meta_eval"),      # the lab's benchmark runs on its dev/test sets
              ("cache_files", "cache_trust")}   # every cache read checks who wrote it


def _same_layer_ok(top: str, target: str) -> bool:
    return LAYERS[top] == LAYERS[target] and (top, target) in SAME_LAYER


@pytest.mark.parametrize("forbidden", ["training", "commands", "cli"])
def test_inference_never_imports_training_or_the_command_line(forbidden):
    allowed = {"training": {"training", "commands", "cli", "__main__"},
               "commands": {"commands", "cli", "__main__"}, "cli": {"cli", "__main__"}}[forbidden]
    bad = [f"{where}:{line}" for where, target, line in _imports()
           if target == forbidden and where.split(" ")[0] not in allowed]
    assert not bad, f"capkit.{forbidden} imported from {bad}"


def test_metrics_never_import_the_command_line():
    bad = [f"{where}:{line}" for where, target, line in _imports()
           if where.startswith("metrics") and target in ("commands", "cli", "training")]
    assert not bad


def test_every_torch_load_is_weights_only():
    """A pickle can run code when it is loaded: capkit unpickles tensors only (#17)."""
    bad = []
    for folder in ("capkit", "benchmarks", "data_scripts"):
        for path in (PACKAGE.parent / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                        node.func.attr == "load" and getattr(node.func.value, "id", "") == "torch":
                    safe = any(k.arg == "weights_only" and getattr(k.value, "value", None) is True
                               for k in node.keywords)
                    if not safe:
                        bad.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
    assert not bad, f"torch.load without weights_only=True at {bad}"
