"""Student versions of the notebooks and their answer key, from one source (``make student``).

The committed notebooks are the instructors' versions: each exercise's solution sits in its
cell between nbgrader's ``### BEGIN SOLUTION`` / ``### END SOLUTION`` markers, and its check
cell's output ("correct ...") is checked by nbval. :func:`build_student` runs nbgrader's own
``ClearSolutions`` preprocessor (the region becomes ``# YOUR CODE HERE`` /
``raise NotImplementedError()``) and nbconvert's ``ClearOutputPreprocessor`` on a copy of every
notebook; :func:`answer_key` writes each notebook's solution cells to ``solutions/NN_*.py``
(Neuromatch's layout: the solutions a reader can open beside the notebook).
"""
from __future__ import annotations

import re
from pathlib import Path

from capkit.cache_files import write_output

__all__ = ["EXERCISE_MARK", "exercise_cells", "build_student", "answer_key", "write_answer_keys"]

EXERCISE_MARK = "### BEGIN SOLUTION"
_REGION = re.compile(r"^[ \t]*### (BEGIN|END) SOLUTION[ \t]*\n?", flags=re.M)
_TITLE = re.compile(r"^# Exercise ([0-9]+\.[0-9]+)", flags=re.M)


def _notebooks(src: Path) -> list[Path]:
    found = sorted(Path(src).glob("[0-9][0-9]_*.ipynb"))
    if not found:
        raise FileNotFoundError(f"no numbered notebooks (NN_*.ipynb) in {src}")
    return found


def exercise_cells(nb) -> list[int]:
    """Indices of the code cells that hold a solution region."""
    return [i for i, c in enumerate(nb.cells)
            if c.cell_type == "code" and EXERCISE_MARK in c.source]


def _student_copy(nb):
    """The notebook with every solution region stubbed out and every output cleared."""
    from nbconvert.preprocessors import ClearOutputPreprocessor
    from nbgrader.preprocessors import ClearSolutions

    # enforce_metadata=False: the markers alone mark a solution (no nbgrader cell metadata, which
    # nbstripout would drop); the stub is nbgrader's default for Python
    nb, _ = ClearSolutions(enforce_metadata=False).preprocess(nb, {"language": "python"})
    nb, _ = ClearOutputPreprocessor().preprocess(nb, {})
    # the saved widget state holds the widgets' last outputs (figures, printed tables) and would
    # only be dead weight once the cells' outputs that show those widgets are cleared
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.execution_count = None
    return nb


def build_student(src: str | Path, out: str | Path) -> list[Path]:
    """Write the student version of every ``NN_*.ipynb`` in ``src`` into ``out``."""
    import nbformat

    src, out = Path(src).resolve(), Path(out).resolve()
    if out == src:
        raise ValueError(f"the student versions would overwrite the instructors' notebooks in "
                         f"{src}: give another output folder (make student writes student/)")
    notebooks = _notebooks(src)
    written = []
    for path in notebooks:
        nb = _student_copy(nbformat.read(path, as_version=4))
        target = out / path.name
        write_output(target, nbformat.writes(nb) + "\n")
        written.append(target)
    return written


def answer_key(path: str | Path) -> str:
    """The solution cells of one notebook as a Python file (markers removed), or '' if none."""
    import nbformat

    path = Path(path)
    nb = nbformat.read(path, as_version=4)
    cells = [nb.cells[i].source for i in exercise_cells(nb)]
    if not cells:
        return ""
    head = (f'"""Solutions to the exercises of notebooks/{path.name}.\n\n'
            "Written by `make student` from the notebook's solution cells (the one source):\n"
            "edit the notebook, then run `make student`; tests/test_notebook_exercises.py fails\n"
            'when this file and the notebook disagree.\n"""\n')
    body = []
    for src in cells:
        title = _TITLE.search(src)
        label = f"Exercise {title.group(1)}" if title else "Exercise"
        body.append(f"# {'-' * 20} {label} {'-' * 20}\n" + _REGION.sub("", src).strip() + "\n")
    return head + "\n\n" + "\n\n".join(body)


def write_answer_keys(src: str | Path, out: str | Path) -> list[Path]:
    """``out/NN_name.py`` for every notebook in ``src`` that has exercises."""
    written = []
    for path in _notebooks(Path(src)):
        text = answer_key(path)
        if text:
            target = Path(out) / f"{path.stem}.py"
            write_output(target, text)
            written.append(target)
    return written
