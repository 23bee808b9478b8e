"""Grading with nbgrader's own flow (INSTRUCTORS.md, "Grading with nbgrader"): the guide's
commands, run as written on notebook 00, release the student version, autograde a planted
correct and a planted wrong submission, and give points per exercise; and the pieces they rest
on (``capkit.course.grading``, ``require_passed``)."""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from capkit.course.exercises import check, require_passed
from capkit.course.grading import nbgrader_source, write_nbgrader_course

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
NOTEBOOK = "00_start_here"
_MARKS = re.compile(r"^[ \t]*### (BEGIN|END) SOLUTION[ \t]*\n?", flags=re.M)


def guide_commands() -> list[str]:
    """The shell lines of INSTRUCTORS.md's "Grading with nbgrader" code block."""
    text = (ROOT / "INSTRUCTORS.md").read_text(encoding="utf-8")
    section = text.split("### Grading with nbgrader", 1)[1]
    return section.split("```", 2)[1].strip().splitlines()


def _run(line: str, cwd: Path) -> None:
    argv = shlex.split(line)
    env = {**os.environ, "PATH": str(BIN) + os.pathsep + os.environ.get("PATH", ""),
           "CAPKIT_PROGRESS": "0"}
    run = subprocess.run([str(BIN / argv[0]), *argv[1:]], cwd=cwd, env=env, capture_output=True,
                         text=True, timeout=400)
    assert run.returncode == 0, f"{line}\n{run.stdout[-1500:]}\n{run.stderr[-3000:]}"


def _submit(course: Path, student: str, bodies: dict[str, str | None]) -> None:
    """A submission: the released notebook with each exercise's stub replaced by the
    instructors' solution, or by ``bodies[number]`` (None: left unfinished)."""
    released = nbformat.read(course / "release" / NOTEBOOK / f"{NOTEBOOK}.ipynb", as_version=4)
    source = nbformat.read(ROOT / "notebooks" / f"{NOTEBOOK}.ipynb", as_version=4)
    assert len(released.cells) == len(source.cells)
    for cell, original in zip(released.cells, source.cells):
        meta = cell.metadata.get("nbgrader", {})
        if not meta.get("solution"):
            continue
        number = meta["grade_id"].removeprefix("exercise_").replace("_", ".")
        assert "raise NotImplementedError()" in cell.source       # the release holds the stub
        body = bodies.get(number, "solution")
        if body == "solution":
            cell.source = _MARKS.sub("", original.source)
        elif body is not None:
            cell.source = cell.source.replace("raise NotImplementedError()", body)
    target = course / "submitted" / student / NOTEBOOK / f"{NOTEBOOK}.ipynb"
    target.parent.mkdir(parents=True)
    nbformat.write(released, target)


def test_the_guides_nbgrader_flow_grades_points_per_exercise(tmp_path, shared_data):
    from nbgrader.api import Gradebook
    lines = guide_commands()
    assert [x.split()[:2] for x in lines] == [
        ["capkit", "student"], ["cd", "course"], ["nbgrader", "generate_assignment"],
        ["nbgrader", "autograde"], ["nbgrader", "export"]]
    (tmp_path / "notebooks").symlink_to(ROOT / "notebooks")      # run from the repository root
    _run(lines[0], tmp_path)
    course = tmp_path / lines[1].split()[1]
    _run(lines[2], course)
    released = nbformat.read(course / "release" / NOTEBOOK / f"{NOTEBOOK}.ipynb", as_version=4)
    assert "require_passed" not in nbformat.writes(released)    # hidden tests stay hidden
    assert "### BEGIN SOLUTION" not in nbformat.writes(released)
    _submit(course, "right", {})
    _submit(course, "wrong", {"0.1": "return 0.5", "0.2": None})  # wrong value; unfinished
    _run(lines[3], course)
    _run(lines[4], course)
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        points = {student: {g.name: (g.score, g.max_score) for g in gb.find_submission_notebook(
            NOTEBOOK, NOTEBOOK, student).grades} for student in ("right", "wrong")}
    assert points["right"] == {"check_0_1": (1, 1), "check_0_2": (1, 1), "check_0_3": (1, 1)}
    assert points["wrong"] == {"check_0_1": (0, 1), "check_0_2": (0, 1), "check_0_3": (1, 1)}
    graded = nbformat.read(course / "autograded" / "wrong" / NOTEBOOK / f"{NOTEBOOK}.ipynb",
                           as_version=4)
    errors = [o["evalue"] for c in graded.cells for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert errors[0].startswith("exercise 0.1: case 1 of 6 differs") and "yours 0.5" in errors[0]
    assert errors[1].startswith("exercise 0.2: not done yet") and len(errors) == 2
    grades = (course / "grades.csv").read_text()
    assert re.search(r"^00_start_here,.*,right,.*,3\.0,3\.0", grades, flags=re.M)
    assert re.search(r"^00_start_here,.*,wrong,.*,1\.0,3\.0", grades, flags=re.M)


def _toy(cells: list[str]):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    return nb


EXERCISE = "# Exercise 9.1: add\ndef add(a, b):\n    ### BEGIN SOLUTION\n    return a + b\n" \
           "    ### END SOLUTION"
CHECK = "_ = check(\"9.1 add\", add, lambda a, b: a + b, [(1, 2)])"


def test_nbgrader_source_marks_each_exercise_and_its_check_cell():
    nb = nbgrader_source(_toy(["import numpy", EXERCISE, "print(1)", CHECK]), "99_toy.ipynb", 2)
    assert "nbgrader" not in nb.cells[0].metadata and "nbgrader" not in nb.cells[2].metadata
    assert nb.cells[1].metadata["nbgrader"] == {
        "grade": False, "solution": True, "locked": False, "grade_id": "exercise_9_1",
        "schema_version": 3}
    assert nb.cells[3].metadata["nbgrader"] == {
        "grade": True, "solution": False, "locked": True, "grade_id": "check_9_1",
        "schema_version": 3, "points": 2}
    assert nb.cells[3].source == CHECK + '\n### BEGIN HIDDEN TESTS\nfrom capkit.course.exercises ' \
        'import require_passed\nrequire_passed("9.1")\n### END HIDDEN TESTS'


def test_nbgrader_source_needs_a_check_cell_after_each_exercise():
    for cells in ([EXERCISE], [EXERCISE, EXERCISE.replace("9.1", "9.2"), CHECK]):
        with pytest.raises(ValueError, match=r"99_toy.ipynb, cell 1 \('# Exercise 9.1: add'\): "
                                             "no check cell follows this exercise"):
            nbgrader_source(_toy(["x = 1", *cells]), "99_toy.ipynb")


def test_every_instructors_notebook_pairs_its_exercises_with_check_cells(tmp_path):
    written = write_nbgrader_course(ROOT / "notebooks", tmp_path)
    assert [p.parent.name for p in written] == [p.stem for p in written]
    for path in written:
        nb = nbformat.read(path, as_version=4)
        marks = [c.metadata["nbgrader"] for c in nb.cells if "nbgrader" in c.metadata]
        assert len(marks) >= 6 and len(marks) % 2 == 0, path.name     # >= 3 exercises each
    with pytest.raises(ValueError, match="no notebook with exercises in .* starts with 77"):
        write_nbgrader_course(ROOT / "notebooks", tmp_path, only=["77"])


def test_require_passed_raises_unless_the_latest_check_passed(capsys):
    with pytest.raises(AssertionError, match="exercise 9.7 was not checked: run its check cell"):
        require_passed("9.7")
    check("9.8 twice", lambda a: a + 1, lambda a: a * 2, [(1,)])
    require_passed("9.8")                                          # 1 + 1 == 1 * 2
    check("9.8 twice", lambda a: a + 1, lambda a: a * 2, [(3,)])
    with pytest.raises(AssertionError, match=r"exercise 9.8: case 1 of 1 differs .* yours 4"):
        require_passed("9.8")


def test_capkit_student_nbgrader_rejects_no_points(tmp_path):
    from capkit.cli import main
    assert main(["student", "--nbgrader", str(tmp_path), "--points", "0"]) == 2


def test_capkit_student_nbgrader_checks_its_folder_first(capsys):
    from capkit.cli import main
    assert main(["student", "--nbgrader", "/proc/nope"]) == 2
    assert "--nbgrader /proc/nope" in capsys.readouterr().err
