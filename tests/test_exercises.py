"""The course lab's exercises (#15): the check helpers, the student versions, the answer keys.

The solutions themselves are checked by nbval: every check cell of the committed (instructors')
notebooks is a ``# NBVAL_CHECK_OUTPUT`` cell whose stored output says "correct", so
``make test`` fails when a solution stops matching the library. Here: the machinery, the house
pattern in every notebook, the answer keys in sync, and a student version that still runs.
"""
import ast
import json
import re
from pathlib import Path

import nbformat
import pytest

from capkit.course import check, check_value
from capkit.course.student import answer_key, build_student, exercise_cells

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
CHECK_CALL = re.compile(r"\bcheck(_value)?\(")


# --- check() and check_value(): one line, never an exception --------------------------------

def _add(a, b):
    return a + b


def test_check_reports_correct(capsys):
    result = check("0.1 add", _add, lambda a, b: a + b, [(1, 2), (0.1, 0.2)])
    assert result.done and result.passed and bool(result)
    assert capsys.readouterr().out == "✓ Exercise 0.1 add: correct on 2 cases, equal to the library\n"


def test_check_reports_a_stub_as_not_done(capsys):
    def add(a, b):
        # YOUR CODE HERE
        raise NotImplementedError()
    result = check("0.1 add", add, _add, [(1, 2)])
    assert not result.done and not result.passed
    assert "not done yet: write the body of `add`" in capsys.readouterr().out


def test_check_shows_the_first_differing_case_without_raising(capsys):
    result = check("0.1 add", lambda a, b: a - b, _add, [(1, 0), (1, 2)], against="a + b")
    out = capsys.readouterr().out
    assert result.done and not result.passed
    assert "case 2 of 2 differs from a + b: yours -1, expected 3 (input (1, 2))" in out


def test_check_reports_the_students_exception(capsys):
    result = check("0.1 add", lambda a, b: a / 0, _add, [(1, 2)])
    assert not result.passed and "raised ZeroDivisionError" in capsys.readouterr().out


def test_check_compares_nested_values_with_tolerance():
    assert check("t", lambda: {"p": [1.0, 2.0 + 1e-12]}, lambda: {"p": [1.0, 2.0]}, [()])
    assert not check("t", lambda: {"p": [1.0, 2.1]}, lambda: {"p": [1.0, 2.0]}, [()])
    assert not check("t", lambda: {"q": 1}, lambda: {"p": 1}, [()])
    assert check("t", lambda: "a b", lambda: "a b", [()])
    assert not check("t", lambda: [1, 2], lambda: [1, 2, 3], [()])


def test_check_needs_cases():
    with pytest.raises(ValueError, match="at least one case"):
        check("t", _add, _add, [])


def test_check_value(capsys):
    assert check_value("0.2 find", lambda: 3, lambda v: (v > 2, f"{v} > 2"))
    def stub():
        raise NotImplementedError()
    assert not check_value("0.2 find", stub, lambda v: (True, "")).done
    assert not check_value("0.2 find", lambda: 1, lambda v: (v > 2, f"{v} is not > 2"))
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "✓ Exercise 0.2 find: 3 > 2" and "not done yet" in out[1]
    assert out[2] == "✗ Exercise 0.2 find: 1 is not > 2"


# --- a function that changes its input in place ----------------------------------------------
# The check hands each function its own copies (capkit.course.copies): the expected value comes
# from the input as given, the message shows that input, the caller's objects stay as they were,
# and a student's function that changes its input fails with a line that says so.

def _split_sorting_in_place(images, seed=0, fraction=0.5):
    from capkit.course.lab import split_images
    images.sort()                              # the reviewer's bug: right value, changed input
    return split_images(images, seed, fraction)


def test_a_function_that_sorts_its_input_fails_and_the_callers_list_is_kept(capsys):
    from capkit.course.lab import split_images
    images = ["c.jpg", "a.jpg", "b.jpg", "a.jpg"]
    result = check("11.2 split", _split_sorting_in_place, split_images,
                   [(images, 0), (images, 1), (["y.jpg", "x.jpg"], 2)])
    assert images == ["c.jpg", "a.jpg", "b.jpg", "a.jpg"]
    assert result.done and not result.passed
    assert capsys.readouterr().out == (
        "✗ Exercise 11.2 split: case 1 of 3: your function changed its input in place "
        "(argument 1, ['c.jpg', 'a.jpg', 'b.jpg', 'a.jpg']); work on a copy instead "
        "(sorted(x), not x.sort(); x + [y], not x.append(y)), then run this cell again\n")


def test_the_expected_value_comes_from_the_input_as_given(capsys):
    def count(refs):                           # appends first: len would then agree with it
        refs.append("one more")
        return len(refs)
    refs = ["a dog", "a cat"]
    result = check("0.9 count", count, len, [(refs,)])
    out = capsys.readouterr().out
    assert refs == ["a dog", "a cat"] and not result.passed
    assert "your function changed its input in place (argument 1, ['a dog', 'a cat'])" in out


def test_a_change_found_before_a_differing_case_is_named_first(capsys):
    def add_key(d, key):
        d[key] = 1.0
        return sorted(d)
    table = {"a": 0.5}
    result = check("0.9 keys", add_key, lambda d, key: sorted(d), [(table, "b"), (table, "c")])
    assert table == {"a": 0.5} and not result.passed
    assert "case 1 of 2: your function changed its input in place (argument 1, {'a': 0.5})" \
        in capsys.readouterr().out


@pytest.mark.parametrize("change", ["array", "frozen dataclass field", "plain dataclass field",
                                    "nested list", "tensor"])
def test_changes_inside_arrays_dataclasses_and_nested_containers_are_seen(change, capsys):
    import dataclasses

    import numpy as np

    @dataclasses.dataclass(frozen=True)
    class Table:
        counts: dict
        n: int

    @dataclasses.dataclass
    class Point:                               # every field immutable, yet it can be changed
        x: int
    if change == "array":
        value, edit = np.array([3.0, 1.0, 2.0]), lambda x: x.sort()
    elif change == "frozen dataclass field":
        value, edit = Table({("a",): 2.0}, 5), lambda x: x.counts.update({("b",): 1.0})
    elif change == "plain dataclass field":
        value, edit = Point(2), lambda p: setattr(p, "x", p.x + 1)
    elif change == "nested list":
        value, edit = [["a", "dog"], ["a", "cat"]], lambda x: x[1].reverse()
    else:
        import torch                          # a required package: never skipped
        value, edit = torch.tensor([[1.0, float("nan")]]), lambda x: x.mul_(2)
    before = repr(value)
    result = check("0.9 edit", lambda x: (edit(x), 1)[1], lambda x: 1, [(value,)])
    assert repr(value) == before and not result.passed
    assert "changed its input in place (argument 1," in capsys.readouterr().out


def test_a_tuple_subclass_is_copied_as_itself_not_reported_as_changed(capsys):
    class Pair(tuple):                         # not a namedtuple: built from an iterable
        pass
    pair = Pair([["a", "dog"], ["a", "cat"]])
    assert check("0.9 pair", lambda p: len(p[0]), lambda p: 2, [(pair,)])
    assert not check("0.9 pair", lambda p: (p[0].append("x"), 2)[1], lambda p: 2, [(pair,)])
    assert pair == (["a", "dog"], ["a", "cat"])
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("✓") and "your function changed its input in place" in out[1]


def test_an_image_read_from_a_file_is_copied_and_compared(tmp_path, capsys):
    from PIL import Image
    Image.new("RGB", (4, 3), "red").save(tmp_path / "red.png")
    image = Image.open(tmp_path / "red.png")   # a PngImageFile: its copy is a plain Image
    assert check("0.9 size", lambda im: im.size, lambda im: (4, 3), [(image,)])
    def paint(im):
        im.putpixel((0, 0), (0, 0, 255))
        return im.size
    assert not check("0.9 size", paint, lambda im: (4, 3), [(image,)])
    assert image.getpixel((0, 0)) == (255, 0, 0)
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("✓") and "changed its input in place (argument 1," in out[1]


def test_a_read_only_array_is_shared_and_writing_to_it_is_reported(capsys):
    import numpy as np
    frozen = np.arange(3.0)
    frozen.setflags(write=False)               # as a Scores's arrays: nobody may write to them
    def double(x):
        x *= 2
        return x
    result = check("0.9 double", double, lambda x: x * 2, [(frozen,)])
    assert not result.passed and np.array_equal(frozen, [0.0, 1.0, 2.0])
    assert "case 1 of 1 raised ValueError: output array is read-only" in capsys.readouterr().out


def test_the_expected_side_changing_its_input_is_said_to_be_the_check_cells(capsys):
    def library(refs):
        refs.clear()
        return 0
    refs = ["a dog"]
    result = check("0.9 lib", lambda refs: 0, library, [(refs,)], against="the library")
    assert refs == ["a dog"] and not result.passed
    assert "computing the expected value (the library) changed argument 1 of case 1 in place" \
        in capsys.readouterr().out


def test_correct_functions_get_equal_copies_aliases_kept_and_models_shared(capsys):
    class Model:                               # not a container: shared, never copied
        pass
    model, refs = Model(), [["a dog"], ["a cat"]]
    seen = []
    def answer(m, a, b):
        seen.append((m, a, b))
        return [m is model, a is b, a == refs, a is refs]
    assert check("0.9 copies", answer, lambda m, a, b: [True, True, True, False],
                 [(model, refs, refs), (model, refs, refs)])
    assert seen[0][1] is seen[1][1]            # one copy per object for the whole check
    assert capsys.readouterr().out.startswith("✓ Exercise 0.9 copies: correct on 2 cases")


def test_one_copy_per_object_and_a_container_of_values_copied_flat():
    from capkit.course.copies import Copies
    table = {("a", "b"): 2.0, ("c",): 1.0}
    copies = Copies()
    mine = copies.copy(table)
    assert mine == table and mine is not table and copies.copy(table) is mine
    assert all(a is b for a, b in zip(mine, table))       # keys and values shared: immutable
    assert copies.first_changed([(table,), (table,)]) is None
    mine[("d",)] = 3.0
    assert copies.first_changed([(1, table), (table,)]) == (0, 2)


# --- the student version and the answer key ----------------------------------------------------

def _toy_notebook(folder: Path) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("# toy"),
        nbformat.v4.new_code_cell("# Exercise 9.1: add\ndef add(a, b):\n    \"\"\"a + b\"\"\"\n"
                                  "    ### BEGIN SOLUTION\n    return a + b\n    ### END SOLUTION"),
        nbformat.v4.new_code_cell("# NBVAL_CHECK_OUTPUT\nfrom capkit.course import check\n"
                                  "check('9.1 add', add, lambda a, b: a + b, [(1, 2)])"),
    ]
    nb.cells[2].outputs = [nbformat.v4.new_output("stream", text="✓ correct\n")]
    nb.cells[2].execution_count = 2
    path = folder / "99_toy.ipynb"
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))
    return path


def test_student_version_stubs_the_solution_and_clears_outputs(tmp_path):
    _toy_notebook(tmp_path / "src")
    [out] = build_student(tmp_path / "src", tmp_path / "student")
    nb = nbformat.read(out, as_version=4)
    src = nb.cells[1].source
    assert "return a + b" not in src and "BEGIN SOLUTION" not in src
    assert "    # YOUR CODE HERE\n    raise NotImplementedError()" in src
    assert src.startswith("# Exercise 9.1: add\ndef add(a, b):")
    assert all(not c.get("outputs") and c.get("execution_count") is None
               for c in nb.cells if c.cell_type == "code")


def test_student_version_drops_the_saved_widget_outputs(tmp_path):
    path = _toy_notebook(tmp_path / "src")
    nb = nbformat.read(path, as_version=4)
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {
        "state": {"m1": {"model_name": "OutputModel", "state": {"outputs": [
            {"output_type": "stream", "name": "stdout", "text": "a stored table\n"}]}}},
        "version_major": 2, "version_minor": 0}}
    nbformat.write(nb, str(path))
    [out] = build_student(tmp_path / "src", tmp_path / "student")
    assert "a stored table" not in out.read_text()
    assert "widgets" not in nbformat.read(out, as_version=4).metadata


def test_student_version_runs_and_the_check_says_not_done(tmp_path):
    from nbclient import NotebookClient
    _toy_notebook(tmp_path / "src")
    [out] = build_student(tmp_path / "src", tmp_path / "student")
    nb = nbformat.read(out, as_version=4)
    NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    assert "not done yet" in nb.cells[2].outputs[0]["text"]


def test_student_build_refuses_to_overwrite_the_source(tmp_path):
    _toy_notebook(tmp_path)
    with pytest.raises(ValueError, match="overwrite the instructors' notebooks"):
        build_student(tmp_path, tmp_path)
    with pytest.raises(FileNotFoundError, match="no numbered notebooks"):
        build_student(tmp_path / "empty", tmp_path / "out")


def test_student_build_keeps_a_students_work_unless_forced(tmp_path):
    _toy_notebook(tmp_path / "src")
    [out] = build_student(tmp_path / "src", tmp_path / "student")
    assert build_student(tmp_path / "src", tmp_path / "student") == [out]   # same: rewritten
    answered = out.read_text().replace("raise NotImplementedError()", "return a + b")
    out.write_text(answered)
    with pytest.raises(ValueError, match=r"1 notebook\(s\) in .* would be overwritten "
                       r"\(99_toy.ipynb\): a student's work there would be lost.*--force"):
        build_student(tmp_path / "src", tmp_path / "student")
    assert out.read_text() == answered
    build_student(tmp_path / "src", tmp_path / "student", force=True)
    assert "raise NotImplementedError()" in out.read_text()


@pytest.mark.parametrize("region", ["    ### BEGIN SOLUTION\n    return a + b",
                                    "    return a + b\n    ### END SOLUTION",
                                    "    ### END SOLUTION\n    return a + b\n    ### BEGIN SOLUTION"])
def test_an_unclosed_solution_region_names_its_notebook_and_cell(tmp_path, region):
    path = _toy_notebook(tmp_path / "src")
    nb = nbformat.read(path, as_version=4)
    nb.cells[1].source = "# Exercise 9.1: add\ndef add(a, b):\n" + region
    nbformat.write(nb, str(path))
    with pytest.raises(ValueError, match=r"99_toy.ipynb, cell 1 \('# Exercise 9.1: add'\): .* "
                       "do not pair up; close each solution region"):
        build_student(tmp_path / "src", tmp_path / "student")
    assert not (tmp_path / "student").exists()


def test_capkit_student_force_and_notebooks_without_exercises(tmp_path, capsys):
    from capkit.cli import main
    src = tmp_path / "src"
    _toy_notebook(src)
    plain = nbformat.v4.new_notebook()
    plain.cells = [nbformat.v4.new_code_cell("x = 1")]
    nbformat.write(plain, str(src / "98_plain.ipynb"))
    argv = ["student", "--notebooks", str(src), "--out", str(tmp_path / "student"),
            "--solutions", str(tmp_path / "keys")]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "no solution region (### BEGIN SOLUTION) in 98_plain: copied" in text
    assert sorted(p.name for p in (tmp_path / "keys").iterdir()) == ["99_toy.py"]
    (tmp_path / "student" / "98_plain.ipynb").write_text(nbformat.writes(plain))  # with notes
    assert main(argv) == 2
    assert "(98_plain.ipynb)" in capsys.readouterr().err
    assert main([*argv, "--force"]) == 0


def test_the_guides_nbgrader_command_releases_the_committed_notebooks(tmp_path):
    """INSTRUCTORS.md's `nbgrader generate_assignment` line, run as written on a notebook with
    the markers and no nbgrader cell metadata (as committed): the release holds the stub."""
    import os
    import shlex
    import subprocess
    import sys
    [line] = [x for x in (ROOT / "INSTRUCTORS.md").read_text().splitlines()
              if x.startswith("nbgrader generate_assignment ") and "enforce_metadata=False" in x]
    _toy_notebook(tmp_path / "source" / "lab1")
    bin_dir = str(Path(sys.executable).parent)            # nbgrader runs `alembic` from PATH
    env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", "")}
    run = subprocess.run([str(Path(bin_dir) / "nbgrader"), *shlex.split(line)[1:]], cwd=tmp_path,
                         env=env, capture_output=True, text=True, timeout=300)
    released = tmp_path / "release" / "lab1" / "99_toy.ipynb"
    assert run.returncode == 0 and released.exists(), run.stderr[-2000:]
    src = nbformat.read(released, as_version=4).cells[1].source
    assert "raise NotImplementedError()" in src and "return a + b" not in src


def test_answer_key_holds_the_solutions_without_markers(tmp_path):
    key = answer_key(_toy_notebook(tmp_path))
    assert "# -------------------- Exercise 9.1 --------------------" in key
    assert "return a + b" in key and "BEGIN SOLUTION" not in key
    ast.parse(key)


def test_a_check_shows_nothing_more_in_a_notebook():
    """A check cell ends in ``check(...)``: the kernel must not add the record's repr to the
    line it printed (nbval does not honour a trailing semicolon, so the output would differ)."""
    from nbclient import NotebookClient
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(
        "from capkit.course import check\ncheck('0.1 add', lambda a: a, lambda a: a, [(1,)])")]
    NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    assert [o["output_type"] for o in nb.cells[0].outputs] == ["stream"]
    assert nb.cells[0].outputs[0]["text"] == \
        "✓ Exercise 0.1 add: correct on 1 cases, equal to the library\n"


def test_stored_figures_become_smaller_palette_pngs(tmp_path):
    import base64
    import io

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from PIL import Image

    from capkit.course.figures import compress_figures
    fig, ax = plt.subplots(figsize=(4, 3), dpi=72)
    for k in range(8):
        ax.plot(range(50), [((i * (k + 1)) % 17) for i in range(50)], label=f"line {k}")
    ax.legend()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    png = base64.b64encode(buf.getvalue()).decode() + "\n"
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("plot()")
    cell.outputs = [nbformat.v4.new_output("display_data", data={"image/png": png,
                                                                  "text/plain": "<Figure>"})]
    nb.cells = [cell]
    path = tmp_path / "01_x.ipynb"
    nbformat.write(nb, str(path))
    assert compress_figures(path) == 1
    out = nbformat.read(path, as_version=4).cells[0].outputs[0]
    new = base64.b64decode(out.data["image/png"])
    assert len(new) < 0.8 * len(buf.getvalue()) and out.data["text/plain"] == "<Figure>"
    small = Image.open(io.BytesIO(new))
    assert small.mode == "P" and small.size == Image.open(buf).size
    assert compress_figures(path) == 0            # already a palette: left as it is
