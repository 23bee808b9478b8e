"""Every notebook section capkit's code sends a reader to exists (issue #11: a newcomer finds a
metric's model, training, test and notebook section by following names): the ``notebook`` field
of each built-in metric's spec, and each docstring's ``notebooks/NN_name.ipynb, section "X"``,
name a notebook that exists and one of its headings that contains X (case aside)."""
import json
import re
from functools import lru_cache
from pathlib import Path

import pytest

from capkit.metrics import registered

ROOT = Path(__file__).resolve().parents[1]
# a notebook, then its section names: 'section "X"', 'sections 9 "X" and 10 "Y"', ...
SECTIONS = re.compile(r'notebooks/(\d\d_\w+\.ipynb)([^"]{0,40}?"[^"]+"'
                      r'(?:\s*(?:,|and)\s*(?:\d+\s*)?"[^"]+")*)')


@lru_cache(maxsize=None)
def _headings(notebook: str) -> tuple[str, ...]:
    path = ROOT / "notebooks" / notebook
    assert path.exists(), f"no notebook {notebook}"
    cells = json.loads(path.read_text())["cells"]
    return tuple(line.lower() for c in cells if c["cell_type"] == "markdown"     # (not the
                 for line in "".join(c["source"]).splitlines() if line.startswith("##"))  # title)


def _docstring_links():
    for path in sorted((ROOT / "capkit").rglob("*.py")):
        for m in SECTIONS.finditer(path.read_text()):
            for section in re.findall(r'"([^"]+)"', m.group(2)):
                yield pytest.param(m.group(1), " ".join(section.split()),
                                   id=f"{path.relative_to(ROOT)}:{section[:20]}")


@pytest.mark.parametrize("notebook, section", list(_docstring_links()))
def test_docstring_sections_exist(notebook, section):
    assert any(section.lower() in h for h in _headings(notebook)), \
        f"{notebook} has no heading with {section!r}"


@pytest.mark.parametrize("spec", [s for s in registered() if s.notebook], ids=lambda s: s.name)
def test_each_metrics_notebook_section_exists(spec):
    notebook, _, section = spec.notebook.partition(" ")
    assert section, f"{spec.name}: give the section after the notebook's file name"
    assert any(section.lower() in h for h in _headings(notebook)), \
        f"{spec.name}: {notebook} has no heading with {section!r}"
