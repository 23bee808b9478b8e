"""Every notebook follows the exercise house pattern (#15), and its student version still runs.

The pattern (CS231n / Neuromatch, with nbgrader's markers): a markdown cell that states the task,
a code cell that starts ``# Exercise N.k`` and holds the solution between ``### BEGIN SOLUTION``
and ``### END SOLUTION``, then a ``# NBVAL_CHECK_OUTPUT`` check cell that calls
``capkit.course.check`` / ``check_value`` (its stored output says "correct", and nbval re-checks
it in ``make test``), and "Think!" questions. The answer key ``notebooks/solutions/NN_*.py`` is
written from the same cells by ``make student`` and must not drift from them.
"""
import ast
import json
from pathlib import Path

import nbformat
import pytest

from capkit.course.student import answer_key, build_student, exercise_cells

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def _read(path):
    return nbformat.read(path, as_version=4)


def _is_check(cell) -> bool:
    return cell.cell_type == "code" and "# NBVAL_CHECK_OUTPUT" in cell.source and \
        ("check(" in cell.source or "check_value(" in cell.source)


def _defined(source: str) -> set[str]:
    names = set()
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return names


def _used(source: str) -> set[str]:
    try:
        tree = ast.parse(source)
    except SyntaxError:          # IPython magics: not our concern here
        return set()
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_at_least_three_exercises_each_checked(path):
    nb = _read(path)
    exercises = exercise_cells(nb)
    assert len(exercises) >= 3, f"{path.name}: {len(exercises)} exercises, the lab needs >= 3"
    number = path.name[:2].lstrip("0") or "0"
    for i in exercises:
        src = nb.cells[i].source
        assert src.startswith(f"# Exercise {number}."), \
            f"{path.name}: an exercise cell starts '# Exercise {number}.k: ...':\n{src[:80]}"
        assert "### END SOLUTION" in src
        after = nb.cells[i + 1]
        assert _is_check(after), f"{path.name}: cell {i + 1} must be the check cell of:\n{src[:80]}"
        text = "".join(o.get("text", "") for o in after.get("outputs", []))
        assert text.startswith("✓ Exercise"), f"{path.name}: the solution fails its check: {text}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_think_questions(path):
    prose = "\n".join(c.source for c in _read(path).cells if c.cell_type == "markdown")
    assert prose.count("**Think!**") >= 1, f"{path.name}: no **Think!** questions"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_nothing_after_an_exercise_needs_its_solution(path):
    """The student version must run on past a stub: later cells never use an exercise's names."""
    nb = _read(path)
    for i in exercise_cells(nb):
        names = _defined(nb.cells[i].source)
        for j, cell in enumerate(nb.cells[i + 2:], start=i + 2):
            if cell.cell_type != "code" or (_is_check(cell) and j == i + 1):
                continue
            clash = names & _used(cell.source) - _defined(cell.source)
            assert not clash, f"{path.name}: cell {j} uses {clash} from the exercise in cell {i}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_answer_key_is_written_from_the_notebook(path):
    key = ROOT / "notebooks" / "solutions" / f"{path.stem}.py"
    assert key.exists(), f"run `make student` to write {key.relative_to(ROOT)}"
    assert key.read_text() == answer_key(path), \
        f"{key.relative_to(ROOT)} is out of date with {path.name}: run `make student`"


def test_no_stray_answer_keys():
    stems = {p.stem for p in NOTEBOOKS}
    stray = [p.name for p in (ROOT / "notebooks" / "solutions").glob("*.py") if p.stem not in stems]
    assert not stray, f"answer keys of no notebook: {stray}"


def test_student_versions_have_no_solutions(tmp_path):
    for out in build_student(ROOT / "notebooks", tmp_path):
        nb = _read(out)
        text = json.dumps(nb)
        assert "BEGIN SOLUTION" not in text and "END SOLUTION" not in text
        stubs = len(exercise_cells(_read(ROOT / "notebooks" / out.name)))
        assert text.count("# YOUR CODE HERE\\n") >= stubs >= 3, out.name
        assert not any(c.get("outputs") for c in nb.cells if c.cell_type == "code")
        assert "widgets" not in nb.metadata, f"{out.name}: saved widget outputs left in"


def test_a_student_notebook_runs_top_to_bottom(tmp_path):
    """00 end to end as a student gets it: every check says 'not done yet', nothing fails."""
    from nbclient import NotebookClient
    build_student(ROOT / "notebooks", tmp_path)
    path = tmp_path / NOTEBOOKS[0].name
    nb = _read(path)
    NotebookClient(nb, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    checks = ["".join(o.get("text", "") for o in c.outputs) for c in nb.cells if _is_check(c)]
    assert len(checks) >= 3 and all("not done yet" in t for t in checks), checks
