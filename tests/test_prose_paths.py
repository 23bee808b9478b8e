"""Every path a reader is sent to from the README, the docs or a notebook's prose exists in the
repository (issue #20): a student who clones capkit has nothing beside it.

A "path" here is a link target (``[text](target)``) that is not a URL, or a word that starts with
one of the repository's folders (``capkit/``, ``tests/``, ``notebooks/``, ...) or climbs out of it
(``../``), or names a notebook (``NN_name.ipynb``) or a Markdown page (``NAME.md``). Fenced code
blocks are commands, not prose: their output paths (``results/``) do not exist before one runs them.
"""
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("capkit", "tests", "notebooks", "data_scripts", "benchmarks", "docs", ".ci")
URL = re.compile(r"(?:https?://|www\.|github\.com/|doi\.org/)\S+")
LINK = re.compile(r"\]\(([^)\s]+)\)")
WORD = re.compile(r"[\w./-]+")
NOTEBOOK = re.compile(r"^\d\d_\w+\.ipynb$")
PAGE = re.compile(r"^[A-Z][\w-]*\.md$")


def _documents():
    docs = [("README.md", (ROOT / "README.md").read_text())]
    docs += [(p.relative_to(ROOT).as_posix(), p.read_text())
             for p in [ROOT / "ARCHITECTURE.md", *sorted((ROOT / "docs").glob("*.md"))]
             if p.exists()]
    docs += [(p.relative_to(ROOT).as_posix(), p.read_text()) for p in ROOT.glob("*.md")
             if p.name not in ("README.md", "ARCHITECTURE.md")]
    for nb in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        cells = json.loads(nb.read_text())["cells"]
        prose = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
        docs.append((nb.relative_to(ROOT).as_posix(), prose))
    return docs


def _prose(text: str) -> str:
    """The text outside fenced code blocks, with URLs and templates removed."""
    text = URL.sub(" ", re.sub(r"```.*?```", " ", text, flags=re.S))
    return re.sub(r"\S*<[^>\s]*>\S*", " ", text)      # templates: `tests/test_<name>.py`


def paths_in(text: str) -> set[str]:
    text = _prose(text)
    found = {t for t in LINK.findall(text) if not t.startswith("#")}
    for word in WORD.findall(text):
        word = word.rstrip(".,;:")
        if (word.startswith("../") or word.startswith("shared/")
                or any(word.startswith(f + "/") for f in FOLDERS)
                or NOTEBOOK.match(word) or PAGE.match(word)):
            found.add(word)
    return {p.split("#")[0] for p in found if p.split("#")[0]}


def _exists(where: str, path: str) -> bool:
    if path.startswith("../") and not (ROOT / where).parent.joinpath(path).resolve() \
            .is_relative_to(ROOT):
        return False
    candidates = [ROOT / path, (ROOT / where).parent / path, ROOT / "notebooks" / path]
    if path.startswith("shared/"):
        return False
    return any(c.exists() for c in candidates)


DOCUMENTS = _documents()


@pytest.mark.parametrize("where,text", DOCUMENTS, ids=[d[0] for d in DOCUMENTS])
def test_every_path_in_prose_exists_in_the_repository(where, text):
    missing = sorted(p for p in paths_in(text) if not _exists(where, p))
    assert not missing, (f"{where} sends readers to paths that are not in the repository: "
                         f"{missing}; put what they need into the repo (e.g. docs/) or cite it "
                         f"by title and link")


def test_the_check_finds_bad_paths():
    text = ("See `../shared/papers/cui.txt`, [the protocol](docs/nowhere.md), "
            "notebooks/99_missing.ipynb and 42_gone.ipynb.\n```\ncapkit score --out results/\n```")
    found = paths_in(text)
    assert found == {"../shared/papers/cui.txt", "docs/nowhere.md",
                     "notebooks/99_missing.ipynb", "42_gone.ipynb"}
    assert not any(_exists("README.md", p) for p in found)
    assert _exists("README.md", "capkit/metrics/catalog.py")
    assert _exists("notebooks/01_classic_metrics.ipynb", "02_human_correlation.ipynb")
