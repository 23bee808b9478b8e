"""Every notebook as a student meets it: JupyterLab 4 in headless Chromium, Run All, look (#20).

Run with ``make test-browser`` (not part of ``make test``, which needs no browser). For each
notebook: no error output, every code cell ran, every widget is drawn as a control and reacts when
one of its controls moves, every stored figure is drawn, no ``<Axes ...>`` / ``<Figure size ...>``
/ ``interactive(children=...`` text, no error in the browser console. Screenshots and a timing
table go to ``$CAPKIT_BROWSER_OUT`` (default ``browser-test-output/``) for a person to look at.
``test_the_check_catches_a_broken_notebook`` runs the same check on notebooks broken on purpose.
"""
import json
import os
import shutil
import time
from pathlib import Path

import pytest

from lab_driver import REPO, lab_server, open_browser, run_notebook

NOTEBOOKS = sorted((REPO / "notebooks").glob("[0-9][0-9]_*.ipynb"))
OUT = Path(os.environ.get("CAPKIT_BROWSER_OUT", REPO / "browser-test-output"))
TIMINGS: dict[str, float] = {}


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        b = open_browser(p)
        yield b
        b.close()


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A server on a copy of notebooks/: the run must never write into the repository."""
    root = tmp_path_factory.mktemp("lab")
    shutil.copytree(REPO / "notebooks", root / "notebooks")
    with lab_server(root) as server:
        yield server
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "timings.json").write_text(json.dumps(TIMINGS, indent=1))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs_and_reads_well_in_jupyterlab(browser, lab, path):
    base, token = lab
    report = run_notebook(browser, base, token, path.relative_to(REPO).as_posix(), OUT)
    TIMINGS[path.name] = round(report.seconds, 1)
    print(f"{path.name}: Run All {report.seconds:.0f} s, {report.cells} cells, "
          f"{report.widgets} widgets, {report.figures_shown} figures; screenshots in {OUT}")
    assert report.cells > 0
    assert not report.problems(), f"{path.name} in JupyterLab:\n  " + "\n  ".join(
        report.problems())


HEALTHY = [
    "from ipywidgets import interact",
    "interact(lambda k: print('k squared is', k * k), k=(0, 5));",
    "import matplotlib.pyplot as plt\nfig, ax = plt.subplots(figsize=(2, 2))\n"
    "ax.plot([0, 1], [1, 0]);\nplt.show()",
    # a long cell with a bar (capkit.progress: "auto" shows tqdm's notebook bar in a kernel)
    "import time\nfrom capkit.progress import bar\n"
    "for _ in bar(range(12), desc='work'):\n    time.sleep(1)",
]
BROKEN = [
    "from ipywidgets import interact",
    "import time\ntime.sleep(12)",                             # a long cell with no progress
    "interact(lambda k: print('always the same'), k=(0, 5));",      # moving k changes nothing
    "import matplotlib.pyplot as plt\nfig, ax = plt.subplots(figsize=(2, 2))\nax",  # stray repr
    "raise RuntimeError('a cell that fails')",
]


def _notebook(folder: Path, name: str, cells: list[str]) -> str:
    nb = {"cells": [{"cell_type": "code", "execution_count": None, "metadata": {},
                     "outputs": [], "source": src} for src in cells],
          "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python",
                                      "name": "python3"}},
          "nbformat": 4, "nbformat_minor": 5}
    (folder / name).write_text(json.dumps(nb))
    return name


def test_the_check_catches_a_broken_notebook(browser, tmp_path):
    """The same check on two small notebooks: it passes the healthy one and names every fault
    planted in the broken one (a widget that does not react, a stray repr, a failing cell, a
    12-second cell without progress)."""
    healthy = _notebook(tmp_path, "healthy.ipynb", HEALTHY)
    broken = _notebook(tmp_path, "broken.ipynb", BROKEN)
    with lab_server(tmp_path) as (base, token):
        good = run_notebook(browser, base, token, healthy, tmp_path / "shots", widget_timeout=20)
        time.sleep(1)
        bad = run_notebook(browser, base, token, broken, tmp_path / "shots", widget_timeout=20)
    assert good.problems() == [] and good.widgets == 1 and good.figures_shown == 1
    problems = "\n".join(bad.problems())
    assert bad.widgets == 1 and "widget 1: slider one step right changed nothing" in problems
    assert "stray text: <Axes" in problems
    assert "cell error:" in problems and "a cell that fails" in problems
    assert "no progress shown: code cell 2 ran 1" in problems and "time.sleep(12)" in problems
