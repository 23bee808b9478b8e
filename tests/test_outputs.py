"""Output paths: every command checks where it will write BEFORE any work, and writes nothing
into the current folder unless told to (#17.7)."""
import argparse
import importlib
import time

import pytest

from capkit.cli import main
from capkit.commands import COMMANDS
from capkit.commands.args import output_dir, output_file

NOPE = "/proc/nope"          # cannot be created, not even by root

# every option through which a command writes files; each has a fail-fast test below
OUTPUT_OPTIONS = {"bench": {"out"}, "robustness": {"out", "figure"}, "train": {"out", "workdir"},
                  "student": {"out"}}
WRITING_NAMES = {"out", "figure", "workdir", "save", "write"}


def _options(command: str) -> set[str]:
    parser = argparse.ArgumentParser(prog="capkit")
    sub = parser.add_subparsers(dest="command")
    importlib.import_module(f"capkit.commands.{COMMANDS[command][0]}").register(sub)
    found, stack = set(), [parser]
    while stack:
        p = stack.pop()
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                stack += list(action.choices.values())
            elif any(name in action.dest for name in WRITING_NAMES):
                found.add(action.dest)
    return found


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_writing_option_is_known(command):
    """A new --out-like option must join OUTPUT_OPTIONS (and get a fail-fast test)."""
    assert _options(command) == OUTPUT_OPTIONS.get(command, set())


def _fails_fast(capsys, argv, path=NOPE, seconds=10.0):
    start = time.perf_counter()
    assert main(argv) == 2
    assert time.perf_counter() - start < seconds
    err = capsys.readouterr().err
    assert path in err and "error" in err
    return err


def test_student_out_is_checked_before_any_notebook_is_written(monkeypatch, capsys):
    import capkit.course.student
    monkeypatch.setattr(capkit.course.student, "build_student",
                        lambda *a, **k: pytest.fail("notebooks were written before --out was checked"))
    assert "--out" in _fails_fast(capsys, ["student", "--out", NOPE])
    assert "--solutions" in _fails_fast(capsys, ["student", "--out", "/tmp",
                                                 "--solutions", NOPE])


def test_student_refuses_answer_keys_inside_the_student_folder(tmp_path, monkeypatch, capsys):
    import capkit.course.student
    monkeypatch.setattr(capkit.course.student, "build_student",
                        lambda *a, **k: pytest.fail("notebooks were written before the check"))
    out = tmp_path / "student"
    for solutions in (out, out / "keys"):
        assert main(["student", "--out", str(out), "--solutions", str(solutions)]) == 2
        assert capsys.readouterr().err.strip() == (
            f"capkit student: error: --solutions {solutions} is inside --out {out}: the answer "
            "keys would ship with the student notebooks; give --solutions a folder outside --out")
    notebooks = tmp_path / "notebooks"          # the default answer keys: NOTEBOOKS/solutions
    assert main(["student", "--notebooks", str(notebooks), "--out", str(tmp_path)]) == 2
    assert f"the answer keys' folder {notebooks / 'solutions'} (NOTEBOOKS/solutions, the " \
        f"default) is inside --out {tmp_path}" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_bench_out_is_checked_before_the_benchmark(monkeypatch, capsys):
    import capkit.meta_eval
    monkeypatch.setattr(capkit.meta_eval, "benchmark",
                        lambda *a, **k: pytest.fail("the benchmark ran before --out was checked"))
    err = _fails_fast(capsys, ["bench", "--metrics", "bleu_4", "--benchmarks", "flickr8k_expert",
                               "--out", NOPE])
    assert "--out" in err


def test_bench_out_must_not_be_a_file(tmp_path, monkeypatch, capsys):
    import capkit.meta_eval
    monkeypatch.setattr(capkit.meta_eval, "benchmark", lambda *a, **k: pytest.fail("ran"))
    (tmp_path / "results").write_text("x")
    _fails_fast(capsys, ["bench", "--out", str(tmp_path / "results")],
                path=str(tmp_path / "results"))
    _fails_fast(capsys, ["bench", "--out", str(tmp_path / "results" / "sub")],
                path=str(tmp_path / "results" / "sub"))


@pytest.mark.parametrize("option, path", [("--out", NOPE), ("--figure", NOPE + "/curves.png")])
def test_robustness_outputs_are_checked_before_any_work(monkeypatch, capsys, option, path):
    import capkit.robustness
    monkeypatch.setattr(capkit.robustness, "dataset_references",
                        lambda *a, **k: pytest.fail("work started before the outputs' check"))
    assert option in _fails_fast(capsys, ["robustness", option, path], path=path)


def test_robustness_writes_nothing_into_the_current_folder(shared_data, tmp_path, monkeypatch,
                                                           capsys):
    here = tmp_path / "cwd"
    here.mkdir()
    monkeypatch.chdir(here)
    argv = ["robustness", "--metrics", "bleu_1", "--transforms", "WP", "--images", "20",
            "--bootstrap", "2"]
    assert main(argv) == 0
    assert "add --out DIR" in capsys.readouterr().out
    assert list(here.iterdir()) == []
    out = tmp_path / "made" / "here"
    assert main(argv + ["--out", str(out), "--format", "json"]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["robustness.json", "robustness.png"]
    assert list(here.iterdir()) == []


@pytest.mark.parametrize("option, path", [("--out", NOPE + "/m.safetensors"),
                                          ("--workdir", NOPE)])
def test_train_outputs_are_checked_before_training(monkeypatch, capsys, option, path):
    from capkit.training import i2ce as training
    monkeypatch.setattr(training, "train_i2ce", lambda *a, **k: pytest.fail("trained"))
    assert option in _fails_fast(capsys, ["train", "i2ce", "--preset", "tiny", option, path],
                                 path=path)


def test_the_checks_create_nothing(tmp_path):
    assert output_dir(tmp_path / "a" / "b") == tmp_path / "a" / "b"
    assert output_file(tmp_path / "c" / "m.safetensors") == tmp_path / "c" / "m.safetensors"
    assert output_dir(tmp_path) == tmp_path
    assert list(tmp_path.iterdir()) == []                      # no folder, no probe left
    with pytest.raises(ValueError, match=f"--figure {tmp_path} is a folder"):
        output_file(tmp_path, "--figure")
    (tmp_path / "f").write_text("x")
    with pytest.raises(ValueError, match="is a file"):
        output_dir(tmp_path / "f")
    with pytest.raises(ValueError, match=f"{tmp_path / 'f'} is a file, not a folder"):
        output_file(tmp_path / "f" / "m.safetensors")
    with pytest.raises(ValueError, match="--out /proc/nope: cannot write"):
        output_dir(NOPE)


# ---- a full disk while the outputs are written: whole files or none, the marker last ---------
def _capkit_with_small_files(tmp_path, limit: int, *args: str):
    """``python -m capkit ARGS`` as a process whose files may not grow past ``limit`` bytes: a
    full disk as it sees it (writes past the limit fail with EFBIG once SIGXFSZ is ignored; the
    same device as test_cli's one-line-error test)."""
    import os
    import resource
    import signal
    import subprocess
    import sys
    from pathlib import Path

    def limited():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    repo = Path(__file__).resolve().parents[1]
    # matplotlib's font cache is larger than the limit: build it first, in a folder of this test,
    # so that the limited child finds it whatever ran before (else it warns it cannot save it)
    env = {**os.environ, "PYTHONPATH": str(repo), "MPLCONFIGDIR": str(tmp_path / "mplconfig")}
    subprocess.run([sys.executable, "-c", "import matplotlib.font_manager"], env=env, check=True,
                   timeout=300)
    return subprocess.run([sys.executable, "-m", "capkit", *args], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=300, preexec_fn=limited)


# Every PNG figure is over 2,000 bytes; results.json and robustness.json of these runs are not,
# so a command that wrote its marker first, or a figure straight to its name, fails these tests.
@pytest.mark.parametrize("argv, marker, figure", [
    (["bench", "--benchmarks", "thumb", "--metrics", "bleu_4", "--n-boot", "10"],
     "results.json", "heatmap.png"),
    (["robustness", "--metrics", "bleu_1", "--transforms", "WP", "--images", "20",
      "--bootstrap", "2"], "robustness.json", "robustness.png")])
def test_a_run_that_cannot_write_its_outputs_leaves_nothing_that_looks_complete(
        shared_data, tmp_path, argv, marker, figure):
    out = tmp_path / "out"
    out.mkdir()
    (out / marker).write_text('{"from": "an earlier run"}')   # must not sit beside new figures
    done = _capkit_with_small_files(tmp_path, 2000, *argv, "--out", str(out))
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert lines[0].startswith(f"capkit {argv[0]}: error: cannot write {out / figure} ")
    assert "File too large" in lines[0] and "give a folder you can write to" in lines[0]
    assert list(out.iterdir()) == []              # no marker, no half figure, no temporary file


def test_outputs_are_written_whole_with_the_marker_last(shared_data, tmp_path, monkeypatch):
    """In a run that succeeds, results.json is the last file to appear."""
    import capkit.cache_files
    order = []
    real = capkit.cache_files.write_atomic
    monkeypatch.setattr(capkit.cache_files, "write_atomic",
                        lambda path, write: order.append(path.name) or real(path, write))
    out = tmp_path / "out"
    assert main(["bench", "--benchmarks", "thumb", "--metrics", "bleu_4", "--n-boot", "10",
                 "--format", "json", "--out", str(out)]) == 0
    assert order == ["heatmap.png", "bars_thumb.png", "results.json"]
    assert sorted(p.name for p in out.iterdir()) == sorted(order)


def test_an_earlier_runs_figures_of_other_benchmarks_do_not_stay_beside_new_results(
        shared_data, tmp_path):
    out = tmp_path / "out"
    base = ["bench", "--metrics", "bleu_4", "--n-boot", "10", "--format", "json", "--out", str(out)]
    assert main([*base, "--benchmarks", "thumb"]) == 0
    (out / "notes.txt").write_text("mine")
    assert main([*base, "--benchmarks", "nebula"]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["bars_nebula.png", "heatmap.png",
                                                     "notes.txt", "results.json"]

