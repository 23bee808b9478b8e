"""House rules for the notebooks, checked without running them (nbval runs them in `make test`)."""
import json
import re
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def _cells(path):
    return json.loads(path.read_text())["cells"]


def test_there_are_notebooks():
    assert NOTEBOOKS, "no notebooks found"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_same_opening_and_executed_in_order(path):
    cells = _cells(path)
    head = "".join(cells[0]["source"])
    assert cells[0]["cell_type"] == "markdown" and head.startswith("# ")
    for needed in ("What you will learn", "Runtime", "capkit modules"):
        assert needed in head, f"{path.name}: header lacks {needed!r}"
    code = [c for c in cells if c["cell_type"] == "code"]
    assert "import" in "".join(code[0]["source"])
    assert "FULL" in "".join(code[1]["source"]) and "SEED" in "".join(code[1]["source"])
    assert [c["execution_count"] for c in code] == list(range(1, len(code) + 1)), \
        f"{path.name}: execute it top to bottom before committing"
    # figures at a readable size cost bytes: the cap is raised, never the dpi lowered (#15)
    assert path.stat().st_size < 800_000


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_figures_are_not_shrunk_below_screen_resolution(path):
    for cell in _cells(path):
        for dpi in re.findall(r"figure\.dpi\"\]\s*=\s*(\d+)", "".join(cell["source"])):
            assert int(dpi) >= 72, f"{path.name}: figure.dpi = {dpi} makes figure text unreadable"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_cells_are_short_and_import_rather_than_define(path):
    for cell in _cells(path):
        if cell["cell_type"] != "code":
            continue
        src = "".join(cell["source"])
        assert "interact_manual" not in src
        assert len(src.splitlines()) <= 20, f"{path.name}: cell too long:\n{src[:200]}"
        if re.search(r"^(def|class) ", src, flags=re.M):
            # the one allowed kind: a from-scratch cell checked against the library
            assert "assert" in src, f"{path.name}: library code belongs in capkit/:\n{src[:200]}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_numbers_in_prose_come_from_checked_cells(path):
    checked = [c for c in _cells(path) if c["cell_type"] == "code"
               and "# NBVAL_CHECK_OUTPUT" in "".join(c["source"])]
    assert checked, f"{path.name}: mark the cells that print the numbers the prose relies on"
    for c in checked:
        assert c.get("outputs"), f"{path.name}: a checked cell has no output"
