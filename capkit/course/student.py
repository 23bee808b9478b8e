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


def _check_regions(nb, path: Path) -> None:
    """Every solution region of a code cell opened and closed, before nbgrader sees it."""
    for i, cell in enumerate(nb.cells):
        marks = [m.group(1) for m in _REGION.finditer(cell.source)] \
            if cell.cell_type == "code" else []
        if marks[0::2] != ["BEGIN"] * len(marks[0::2]) or marks[1::2] != ["END"] * len(
                marks[1::2]) or len(marks) % 2:
            first = cell.source.splitlines()[0][:60]
            raise ValueError(f"{path.name}, cell {i} ({first!r}): its '### BEGIN SOLUTION' / "
                             "'### END SOLUTION' markers do not pair up; close each solution "
                             "region in that cell, then build the student versions again")


def build_student(src: str | Path, out: str | Path, *, force: bool = False) -> list[Path]:
    """Write the student version of every ``NN_*.ipynb`` in ``src`` into ``out``.

    Nothing is written unless every notebook converts. A notebook already in ``out`` that
    differs from its new student version (a student's answers and outputs, or an older build) is
    overwritten only with ``force=True``; otherwise a ValueError lists them.
    """
    import nbformat

    src, out = Path(src).resolve(), Path(out).resolve()
    if out == src:
        raise ValueError(f"the student versions would overwrite the instructors' notebooks in "
                         f"{src}: give another output folder (make student writes student/)")
    copies = {}
    for path in _notebooks(src):
        nb = nbformat.read(path, as_version=4)
        _check_regions(nb, path)
        copies[out / path.name] = nbformat.writes(_student_copy(nb)) + "\n"
    changed = [t.name for t, text in copies.items()
               if t.exists() and t.read_text(encoding="utf-8") != text]
    if changed and not force:
        raise ValueError(f"{len(changed)} notebook(s) in {out} differ from their new student "
                         f"version and would be overwritten ({', '.join(changed)}): a student's "
                         "work there would be lost. Give another output folder, or overwrite "
                         "them with --force (make student FORCE=1)")
    for target, text in copies.items():
        write_output(target, text)
    return list(copies)


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
