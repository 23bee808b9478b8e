"""What a reader reads speaks to the reader, in the present tense, not as a build log (issue #42):
no sessions, agents, leads or first-person trials in the README, ARCHITECTURE.md, the docs pages
or the notebooks' prose; the README stays a front door of one or two screens; every docs page says
what it is for in its first line, as ``# Title: purpose``.

INSTRUCTORS.md is checked too. History belongs in git and CHANGELOG.md, which is not checked.
"""
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Words of a build log. Each is matched on word boundaries, case-insensitively unless it is a
# first-person phrase. "session" is safe here: the course speaks of class *meetings*, and a
# Jupyter kernel is a "kernel".
BUILD_LOG = [
    re.compile(r"\bsessions?\b", re.I),
    re.compile(r"\bagents?\b", re.I),
    re.compile(r"\bthe lead\b", re.I),
    re.compile(r"\bnow says\b", re.I),
    re.compile(r"\bthe issue's\b", re.I),
    re.compile(r"\bthis issue\b", re.I),
    re.compile(r"\b(?:I|we) (?:tried|also|reran|re-ran|recomputed|measured|found|checked|ran|added"
               r"|changed|fixed|moved|asked)\b"),
]


def _pages():
    pages = [ROOT / "README.md", ROOT / "ARCHITECTURE.md", ROOT / "INSTRUCTORS.md",
             *sorted((ROOT / "docs").glob("*.md"))]
    docs = [(p.relative_to(ROOT).as_posix(), p.read_text(encoding="utf-8")) for p in pages
            if p.exists()]
    for nb in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        cells = json.loads(nb.read_text(encoding="utf-8"))["cells"]
        prose = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
        docs.append((nb.relative_to(ROOT).as_posix(), prose))
    return docs


def build_log_words(text: str) -> list[str]:
    """Each build-log phrase in ``text``, with its line number."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        for pattern in BUILD_LOG:
            found += [f"line {number}: {m.group(0)!r}" for m in pattern.finditer(line)]
    return found


DOCUMENTS = _pages()


@pytest.mark.parametrize("where,text", DOCUMENTS, ids=[d[0] for d in DOCUMENTS])
def test_no_build_log_voice(where, text):
    found = build_log_words(text)
    assert not found, (f"{where} speaks as a build log: {found}; write to the reader in the "
                       f"present tense (what a thing does, how to use it, what it costs) and "
                       f"put history in CHANGELOG.md")


def test_the_check_finds_build_log_words():
    assert build_log_words("Numbers the lead asked for.\nI tried it; the header now says 35 s.")
    assert build_log_words("six agents shared two cores in the fifth session")
    for clean in ("I2CE's score", "Type I error", "leading words", "a class meeting",
                  "the agenda", "Table I gives"):
        assert not build_log_words(clean), clean


def test_the_readme_is_a_front_door():
    size = (ROOT / "README.md").stat().st_size
    assert size < 10_240, f"README.md is {size} bytes; move detail to a docs/ page and link it"


PURPOSE = re.compile(r"^# [^:\n]+: \S[^\n]{10,}$")


@pytest.mark.parametrize("page", sorted((ROOT / "docs").glob("*.md")), ids=lambda p: p.name)
def test_every_docs_page_states_its_purpose_first(page):
    first = page.read_text(encoding="utf-8").splitlines()[0]
    assert PURPOSE.match(first), (f"docs/{page.name} starts with {first!r}; start it with "
                                  f"'# Title: what the page is for'")


def _run_time(seconds: int) -> str:
    return f"about {seconds // 60} min" if seconds >= 60 and seconds % 60 == 0 else \
        f"about {seconds} s"


def test_the_readme_gives_each_notebook_the_recorded_run_time():
    """One run time per notebook, from the browser test's record, the same everywhere."""
    record = json.loads((ROOT / "docs" / "measurements" / "notebook_times.json").read_text())
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\| \[(\d\d)_\w+\]\([^)]*\) \|.*\| ([^|]+?) \|$", readme, re.M))
    assert rows.keys() == record["results"].keys()
    wrong = {nb: (rows[nb], _run_time(r["warm_s"])) for nb, r in record["results"].items()
             if rows[nb] != _run_time(r["warm_s"])}
    assert not wrong, f"README.md's notebook run times differ from the record: {wrong}"
