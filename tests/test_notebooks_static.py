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
    # figures at a readable size cost bytes: they are stored as palette PNGs by make notebooks
    # (capkit.course.figures), never shrunk by lowering the dpi (#15)
    assert path.stat().st_size < 300_000, f"{path.name}: run make notebooks NB={path.name}"


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
        if re.search(r"^(def|class) ", src, flags=re.M) and "### BEGIN SOLUTION" not in src:
            # the allowed kinds: an exercise (solution region, checked by the next cell) and a
            # from-scratch cell checked against the library
            assert "assert" in src, f"{path.name}: library code belongs in capkit/:\n{src[:200]}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_numbers_in_prose_come_from_checked_cells(path):
    checked = [c for c in _cells(path) if c["cell_type"] == "code"
               and "# NBVAL_CHECK_OUTPUT" in "".join(c["source"])]
    assert checked, f"{path.name}: mark the cells that print the numbers the prose relies on"
    for c in checked:
        assert c.get("outputs"), f"{path.name}: a checked cell has no output"


# A decimal in the prose is a claim: it must be printed by a checked cell, or be marked as the
# paper's (a dagger right after it: "0.466†"), or be a version or section number ("METEOR 1.5",
# "§3.2"). Settings written as code (`beta = 1.2`) are not prose claims.
DECIMAL = re.compile(r"(?<![\w.\-/])[-−]?(\d+\.\d+)(?![\w.]*\d)(\s*†)?")
NOT_PROSE = re.compile(r"`[^`]*`|\]\([^)]*\)|https?://\S+|arXiv:\s*\d{4}\.\d{4,5}|\$[^$]*\$")
VERSION_OR_SECTION = re.compile(
    r"(pycocoevalcap|METEOR|CoreNLP|JupyterLab|Python|spaCy|SPICE|Java|version|torch|"
    r"transformers|ipywidgets|§|[Ss]ections?|Fig\.|Figure|Table|[Ee]q\.|[Ee]xercises?)\s*$")


def _output_text(cell) -> str:
    parts = []
    for out in cell.get("outputs", []):
        parts.append("".join(out.get("text", "")))
        parts += ["".join(v) for k, v in out.get("data", {}).items() if k.startswith("text/")]
    return "\n".join(parts)


def unbacked_decimals(cells) -> list[str]:
    """Decimals of the prose that no checked output prints and that are not marked."""
    checked = "\n".join(_output_text(c) for c in cells if c["cell_type"] == "code"
                        and "# NBVAL_CHECK_OUTPUT" in "".join(c["source"]))
    bad = []
    for cell in cells:
        if cell["cell_type"] != "markdown":
            continue
        text = NOT_PROSE.sub(" ", "".join(cell["source"]))
        for m in DECIMAL.finditer(text):
            number = m.group(1)
            if m.group(2) or VERSION_OR_SECTION.search(text[:m.start()]):
                continue
            forms = {number, number[1:]} if number.startswith("0.") else {number}
            if not any(f in checked for f in forms):
                bad.append(f"{number!r} in ...{text[max(0, m.start() - 60):m.end()]}...")
    return bad


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_decimal_in_the_prose_is_printed_by_a_checked_cell_or_marked(path):
    bad = unbacked_decimals(_cells(path))
    assert not bad, (f"{path.name}: print these in a # NBVAL_CHECK_OUTPUT cell, mark a paper's "
                     "value with a dagger (0.466†), or write a setting as code:\n" +
                     "\n".join(bad))


def test_the_decimal_rule_catches_an_unbacked_claim():
    cells = [{"cell_type": "markdown", "source": ["BLEU-4 reaches 0.731 here; the paper 0.466†."]},
             {"cell_type": "code", "source": ["# NBVAL_CHECK_OUTPUT\n"],
              "outputs": [{"output_type": "stream", "text": ["BLEU-4 0.732\n"]}]}]
    assert [b.split(" in ")[0] for b in unbacked_decimals(cells)] == ["'0.731'"]
    cells[1]["outputs"][0]["text"] = ["BLEU-4 0.731\n"]
    assert unbacked_decimals(cells) == []


# Figure text: matplotlib sizes text in points and the notebooks store figures at >= 72 dpi
# (test above), so text drawn at >= 8 pt is >= 8 pt at the stored size. These catch every way a
# notebook or a capkit.plots helper can ask for less: a numeric fontsize below 8, the named
# sizes below 8 pt at matplotlib's default 10 pt (x-small 6.9, xx-small 5.8), an rcParams size.
SMALL_TEXT = re.compile(r"\b(fontsize|labelsize|title_fontsize|size)\s*=\s*([0-7](\.\d+)?)\b|"
                        r"[\"'](x-small|xx-small)[\"']|"
                        r"rcParams\[[\"'][\w.]*size[\"']\]\s*=\s*([0-7](\.\d+)?)\b")
PLOTS = sorted((Path(__file__).resolve().parents[1] / "capkit" / "plots").glob("*.py"))


@pytest.mark.parametrize("path", NOTEBOOKS + PLOTS, ids=lambda p: p.name)
def test_no_figure_text_below_8_points(path):
    if path.suffix == ".ipynb":
        sources = ["".join(c["source"]) for c in _cells(path) if c["cell_type"] == "code"]
    else:
        sources = [path.read_text()]
    bad = [m.group(0) for src in sources for m in SMALL_TEXT.finditer(src)]
    assert not bad, f"{path.name}: figure text below 8 pt at its stored size: {bad}"
