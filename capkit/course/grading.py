"""The notebooks as nbgrader assignments (``capkit student --nbgrader COURSE``).

nbgrader grades cells by their metadata, which the committed notebooks do not carry (nbstripout
removes it). :func:`nbgrader_source` writes a copy of each notebook into an nbgrader course folder,
``COURSE/source/<NN_name>/<NN_name>.ipynb``, with the metadata nbgrader's Create Assignment
toolbar would set, read from the exercise markers:

* each exercise cell (one holding ``### BEGIN SOLUTION``) is an "Autograded answer"
  (``grade_id`` ``exercise_N_k``);
* the check cell after it (the next code cell that calls ``check(`` / ``check_value(`` on
  exercise ``N.k``) is "Autograder tests", worth ``points``, locked (``grade_id`` ``check_N_k``),
  and gains a hidden test, ``require_passed("N.k")``: it raises unless that check passed, so
  the cell scores its points only for a correct answer. ``nbgrader generate_assignment`` removes
  the hidden test from the release (a student's Run All still never stops at a check) and
  ``nbgrader autograde`` puts it back.
"""
from __future__ import annotations

import re
from pathlib import Path

from capkit.cache_files import write_output
from capkit.course.student import _check_regions, _notebooks, exercise_cells

__all__ = ["nbgrader_source", "write_nbgrader_course"]

_CHECK = re.compile(r"""\bcheck(?:_value)?\(\s*["']([0-9]+\.[0-9]+)\b""")
HIDDEN = ('### BEGIN HIDDEN TESTS\nfrom capkit.course.exercises import require_passed\n'
          'require_passed("{number}")\n### END HIDDEN TESTS')


def _meta(grade_id: str, *, grade: bool, solution: bool, points: float = 0) -> dict:
    meta = {"grade": grade, "solution": solution, "locked": grade, "grade_id": grade_id,
            "schema_version": 3}
    if grade:
        meta["points"] = points
    return meta


def nbgrader_source(nb, name: str = "notebook", points: float = 1):
    """The notebook (an nbformat node, changed in place and returned) marked for nbgrader:
    every exercise and its check cell, ``points`` per exercise."""
    _check_regions(nb, Path(name))
    exercises = exercise_cells(nb)
    for i in exercises:
        check = next((j for j in range(i + 1, len(nb.cells)) if j in exercises or (
            nb.cells[j].cell_type == "code" and _CHECK.search(nb.cells[j].source))), None)
        if check is None or check in exercises:
            first = nb.cells[i].source.splitlines()[0][:60]
            raise ValueError(f"{name}, cell {i} ({first!r}): no check cell follows this exercise "
                             "before the next one; add a cell that calls check(\"N.k ...\", ...)")
        number = _CHECK.search(nb.cells[check].source).group(1)
        tag = number.replace(".", "_")
        nb.cells[i].metadata["nbgrader"] = _meta(f"exercise_{tag}", grade=False, solution=True)
        nb.cells[check].metadata["nbgrader"] = _meta(f"check_{tag}", grade=True, solution=False,
                                                     points=points)
        nb.cells[check].source = nb.cells[check].source.rstrip() + "\n" + \
            HIDDEN.format(number=number)
    return nb


def write_nbgrader_course(src: str | Path, course: str | Path, *, points: float = 1,
                          only: list[str] | None = None) -> list[Path]:
    """``course/source/<NN_name>/<NN_name>.ipynb`` for every notebook of ``src`` that has
    exercises (or those whose name starts with one of ``only``, e.g. ``["00"]``)."""
    import nbformat

    written = []
    for path in _notebooks(Path(src)):
        if only and not any(path.stem.startswith(o) for o in only):
            continue
        nb = nbformat.read(path, as_version=4)
        if not exercise_cells(nb):
            continue
        nb = nbgrader_source(nb, path.name, points)
        target = Path(course) / "source" / path.stem / path.name
        write_output(target, nbformat.writes(nb) + "\n")
        written.append(target)
    if only and not written:
        raise ValueError(f"no notebook with exercises in {src} starts with "
                         f"{', '.join(only)}: give notebook numbers such as 00 or 09")
    return written
