"""INSTRUCTORS.md and the Think! answer key cannot go stale (#42).

Citation convention: the guide and the answer key (notebooks/solutions/think_answers.md) have
one section per notebook, headed ``### NN · title``. Inside it, a number quoted from that
notebook's stored outputs is written in backticks, alone or as printed (`69.2`,
`+1.7 [-1.5, +5.3]`, `0.785`); the test finds every such span and fails unless the notebook's
stored outputs (stream text and text/plain, text/html, text/markdown data) contain it as
printed. Numbers that are not quotes of outputs (times, counts of exercises, a paper's numbers)
stay unmarked, and backticked numbers outside a notebook's section are refused. In the answer
key's sections listed in ``EVERY_FIGURE_CHECKED`` no decimal figure may stay unmarked: it is a
quote, a formula in a code span with its result, or it is reworded.

Also: the run-time table is the one rendered from docs/measurements/notebook_times.json (the
browser test's record); each notebook's section names exactly that notebook's exercises; the
contents list links every section; no build-log words.

``python tests/test_instructors_guide.py`` prints the run-time table to paste into the guide.
"""
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "INSTRUCTORS.md"
ANSWERS = ROOT / "notebooks" / "solutions" / "think_answers.md"
TIMES = ROOT / "docs" / "measurements" / "notebook_times.json"
NOTEBOOKS = {p.name[:2]: p for p in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))}

SECTION = re.compile(r"^### (\d\d) · ", flags=re.M)
# a backticked span that starts with a number and holds only numbers as printed: digits, signs,
# a decimal point, thousands commas, brackets, percent, spaces and "/" separators (a code
# literal such as `(0, 0.1)` or `[0]` starts with a bracket and is not a quote)
QUOTE = re.compile(r"`([-+−]?\d[-+−\[\].,%/\s\d]*)`")
EXERCISE = re.compile(r"Exercise\s+(\d+)\.(\d+)")


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def stored_outputs(path: Path) -> str:
    """Every text a notebook's stored outputs show: streams and the plain, HTML and Markdown data."""
    parts = []
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
        for out in cell.get("outputs", []):
            if "text" in out:
                parts.append(_text(out["text"]))
            for kind in ("text/plain", "text/html", "text/markdown"):
                if kind in out.get("data", {}):
                    parts.append(_text(out["data"][kind]))
    return "\n".join(parts)


def printed(quote: str, outputs: str) -> bool:
    """The quote as printed, not inside a longer number (0.78 is not found in 0.785)."""
    quote = quote.replace("−", "-")
    return re.search(r"(?<![\d.])" + re.escape(quote) + r"(?![\d])", outputs) is not None \
        or (quote.startswith("+") and printed(quote[1:], outputs))


def sections(text: str) -> dict[str, str]:
    """Each notebook's section (from its ``### NN · `` heading to the next heading of level 1-3)."""
    out = {}
    for m in SECTION.finditer(text):
        end = re.compile(r"^#{1,3} ", flags=re.M).search(text, m.end())
        out[m.group(1)] = text[m.start():end.start() if end else len(text)]
    return out


def _without_code_blocks(text: str) -> str:
    return re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)


def quotes(text: str) -> list[tuple[str, str]]:
    """(notebook, quoted number) for every marked number; notebook '' outside a section."""
    text = _without_code_blocks(text)
    inside = sections(text)
    found = [(nb, q) for nb, body in inside.items() for q in QUOTE.findall(body)]
    rest = text
    for body in inside.values():
        rest = rest.replace(body, "")
    return found + [("", q) for q in QUOTE.findall(rest)]


def times_table(record: dict) -> str:
    """The run-time table of the guide, one row per notebook, from the browser test's record."""
    def fmt(s):
        if s is None:
            return "not measured"
        return f"about {s // 60} min" if s >= 60 and s % 60 == 0 else f"about {s} s"
    rows = ["| notebook | Run All, warm | first run, empty cache |", "|---|---|---|"]
    for nb, path in NOTEBOOKS.items():
        r = record["results"].get(nb, {})
        rows.append(f"| [{path.stem}](notebooks/{path.name}) | {fmt(r.get('warm_s'))} | "
                    f"{fmt(r.get('first_run_s'))} |")
    return "\n".join(rows)


DOCS = {"INSTRUCTORS.md": GUIDE, "think_answers.md": ANSWERS}


@pytest.mark.parametrize("name", DOCS)
def test_every_quoted_number_is_in_the_cited_notebooks_outputs(name):
    text = DOCS[name].read_text(encoding="utf-8")
    found = quotes(text)
    assert found, f"{name} quotes no notebook number: is the convention still in use?"
    outputs = {nb: stored_outputs(path) for nb, path in NOTEBOOKS.items()}
    stray = [q for nb, q in found if not nb]
    assert not stray, f"{name}: numbers in backticks outside a notebook's section: {stray}"
    unknown = sorted({nb for nb, _ in found} - outputs.keys())
    assert not unknown, f"{name}: sections for notebooks that do not exist: {unknown}"
    missing = [f"{nb}: `{q}`" for nb, q in found if not printed(q, outputs[nb])]
    assert not missing, (f"{name} quotes numbers that the cited notebook's stored outputs do not "
                         "print (fix the quote to the output, or drop it):\n  "
                         + "\n  ".join(missing))


# The answer key's sections in which every figure is tied to the notebook: a decimal number is
# either quoted from the stored outputs (in backticks, checked above) or written as code (a
# formula with its result, `exp(1 - 9/2) = 0.030`, or a literal such as `< 0.001`); an unmarked
# one is refused. Add a notebook here once its section follows the rule.
EVERY_FIGURE_CHECKED = ["00", "01", "02", "03", "04", "07", "08"]
DECIMAL = re.compile(r"(?<![\w.])[-+−]?\d[\d,]*\.\d+(?:e[-+]?\d+)?(?!\w|\.\d)")


def unmarked_figures(nb: str, body: str, labels: set[str]) -> list[str]:
    """The decimal numbers of a section outside code spans and code blocks, other than the
    notebook's own exercise numbers (``0.1`` of "Exercise 0.1")."""
    plain = re.sub(r"`[^`]*`", " ", _without_code_blocks(body))
    return [m.group(0) for m in DECIMAL.finditer(plain) if m.group(0) not in labels]


@pytest.mark.parametrize("nb", EVERY_FIGURE_CHECKED)
def test_every_figure_of_the_answer_key_is_quoted_from_the_outputs(nb):
    body = sections(ANSWERS.read_text(encoding="utf-8")).get(nb)
    assert body, f"think_answers.md has no section '### {nb} · ...'"
    labels = {f"{a}.{b}" for a, b in EXERCISE.findall(body)}
    loose = unmarked_figures(nb, body, labels)
    assert not loose, (f"think_answers.md, section {nb}: figures not tied to the notebook's "
                       f"outputs: {loose}; quote them as printed in backticks, write the formula "
                       "that gives them as code, or reword them")


def test_the_checker_finds_quotes_and_misses():
    text = "### 07 · UMIC\nUMIC `69.2` and `+1.7 [-1.5, +5.3]`, not `beta = 2`.\n"
    assert quotes(text) == [("07", "69.2"), ("07", "+1.7 [-1.5, +5.3]")]
    out = "world_foil  +1.7 [-1.5, +5.3]  p = 0.254\numic 69.25"
    assert printed("+1.7 [-1.5, +5.3]", out) and printed("0.254", out)
    assert not printed("69.2", out) and not printed("3.7", out)
    body = "- 7.1: UMIC `69.2`, 71.2 by hand, 3.0e-5, `exp(-1) = 0.368`; Exercise 7.1 and 7.2.\n"
    assert unmarked_figures("07", body, {"7.1"}) == ["71.2", "3.0e-5", "7.2"]


def test_the_run_time_table_is_the_browser_tests_record():
    record = json.loads(TIMES.read_text())
    assert {"command", "date", "machine", "results"} <= record.keys()
    assert "test-browser" in record["command"]
    assert set(record["results"]) == set(NOTEBOOKS), "one run time per notebook in the record"
    assert times_table(record) in GUIDE.read_text(encoding="utf-8"), (
        "INSTRUCTORS.md's run-time table differs from docs/measurements/notebook_times.json: "
        "paste the output of `python tests/test_instructors_guide.py`")


@pytest.mark.parametrize("nb", sorted(NOTEBOOKS))
def test_each_notebooks_section_names_its_own_exercises(nb):
    """The guide's exercise list of a notebook is the notebook's (no exercise it does not have)."""
    import nbformat

    from capkit.course.student import exercise_cells
    notebook = nbformat.read(NOTEBOOKS[nb], as_version=4)
    has = {m.group(0) for i in exercise_cells(notebook)
           for m in [re.search(r"Exercise \d+\.\d+", notebook.cells[i].source)] if m}
    section = sections(GUIDE.read_text(encoding="utf-8")).get(nb)
    assert section, f"INSTRUCTORS.md has no section '### {nb} · ...'"
    named = {f"Exercise {a}.{b}" for a, b in EXERCISE.findall(section)}
    assert named == has, (f"notebook {nb}: the guide names {sorted(named)}, the notebook has "
                          f"{sorted(has)}")


def _anchor(heading: str) -> str:
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_the_contents_link_every_section():
    text = GUIDE.read_text(encoding="utf-8")
    headings = re.findall(r"^## (.+)$", text, flags=re.M)
    links = re.findall(r"^- \[[^\]]+\]\(#([^)]+)\)", text, flags=re.M)
    assert links == [_anchor(h) for h in headings]


@pytest.mark.parametrize("name", DOCS)
def test_no_build_log_voice(name):
    text = DOCS[name].read_text(encoding="utf-8")
    words = re.compile(r"\b(session|agents?|the lead|I tried|I also|now says|we tried)\b|"
                       r"load average", flags=re.I)
    assert not [m.group(0) for m in words.finditer(text)], f"{name} speaks of how it was built"


if __name__ == "__main__":
    print(times_table(json.loads(TIMES.read_text())))
