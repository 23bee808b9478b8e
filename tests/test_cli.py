"""The command line as a user runs it: files in, JSON / CSV / table out, clear errors."""
import json
import sys

import pytest

from capkit.cli import main
from capkit.metrics import score


@pytest.fixture()
def files(tmp_path):
    cands = [{"image_id": 1, "caption": "A dog runs on the grass."},
             {"image_id": 2, "caption": "Two cats sleep on a sofa."},
             {"image_id": 3, "caption": "A man rides a red bike."}]
    refs = {"annotations": [
        {"image_id": 1, "caption": "A dog is running across the grass."},
        {"image_id": 1, "caption": "A brown dog runs outside."},
        {"image_id": 2, "caption": "Two cats are sleeping on a couch."},
        {"image_id": 3, "caption": "A man riding a bicycle."},
        {"image_id": 3, "caption": "Someone on a red bike."}]}
    c, r = tmp_path / "cands.json", tmp_path / "refs.json"
    c.write_text(json.dumps(cands))
    r.write_text(json.dumps(refs))
    return c, r


def test_score_json_matches_the_library(files, capsys):
    c, r = files
    assert main(["score", "--candidates", str(c), "--references", str(r),
                 "--metrics", "bleu_4,rouge_l,cider_d", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"metrics", "signature"}
    lib = score({"1": "A dog runs on the grass.", "2": "Two cats sleep on a sofa.",
                 "3": "A man rides a red bike."},
                {"1": ["A dog is running across the grass.", "A brown dog runs outside."],
                 "2": ["Two cats are sleeping on a couch."],
                 "3": ["A man riding a bicycle.", "Someone on a red bike."]},
                ["bleu_4", "rouge_l", "cider_d"])
    for name, s in lib.items():
        assert out["metrics"][name]["corpus"] == pytest.approx(s.corpus, abs=1e-12)
        assert out["metrics"][name]["per_caption"] == pytest.approx(s.by_id(), abs=1e-12)
        assert out["signature"][name] == s.signature


def test_score_csv_has_a_row_per_caption_and_the_corpus(files, capsys):
    c, r = files
    main(["score", "--candidates", str(c), "--references", str(r), "--metrics", "rouge_l",
          "--format", "csv"])
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0] == "id,rouge_l" and [l.split(",")[0] for l in lines[1:]] == \
        ["1", "2", "3", "<corpus>", "<signature>"]


def test_score_csv_is_exact_and_carries_the_signatures(files, capsys):
    import csv
    import io
    c, r = files
    assert main(["score", "--candidates", str(c), "--references", str(r), "--metrics",
                 "bleu_4,cider_d", "--format", "csv"]) == 0
    rows = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    lib = score({"1": "A dog runs on the grass.", "2": "Two cats sleep on a sofa.",
                 "3": "A man rides a red bike."},
                {"1": ["A dog is running across the grass.", "A brown dog runs outside."],
                 "2": ["Two cats are sleeping on a couch."],
                 "3": ["A man riding a bicycle.", "Someone on a red bike."]}, ["bleu_4", "cider_d"])
    assert rows[-1] == ["<signature>", lib["bleu_4"].signature, lib["cider_d"].signature]
    assert rows[-2] == ["<corpus>", repr(lib["bleu_4"].corpus), repr(lib["cider_d"].corpus)]
    per = {row[0]: float(row[1]) for row in rows[1:-2]}
    assert per == lib["bleu_4"].by_id()               # the text reads back as the same floats


def test_markdown_keeps_the_signature_in_its_cell(files, capsys):
    c, r = files
    assert main(["score", "--candidates", str(c), "--references", str(r), "--metrics",
                 "bleu_4", "--format", "markdown"]) == 0
    row = capsys.readouterr().out.strip().splitlines()[-1]
    cells = [cell.strip() for cell in row.replace("\\|", "\0").strip("|").split("|")]
    assert len(cells) == 3 and cells[2].replace("\0", "|").startswith("bleu_4|")


def test_references_of_other_images_are_left_out_with_a_note(files, tmp_path, capsys):
    c, _ = files
    r = tmp_path / "captions_val.json"               # a references file for more images
    refs = {"1": ["A dog is running across the grass."], "2": ["Two cats on a couch."],
            "3": ["A man riding a bicycle."], "4": ["A bowl of fruit."], "5": ["A red bus."]}
    r.write_text(json.dumps(refs))
    assert main(["score", "--candidates", str(c), "--references", str(r), "--metrics",
                 "cider_d", "--format", "json"]) == 0
    out, err = capsys.readouterr()
    assert "note: 2 of the 5 reference ids have no candidate" in err
    lib = score({"1": "A dog runs on the grass.", "2": "Two cats sleep on a sofa.",
                 "3": "A man rides a red bike."}, {k: refs[k] for k in "123"}, ["cider_d"])
    assert json.loads(out)["metrics"]["cider_d"]["per_caption"] == lib["cider_d"].by_id()


def test_a_strict_score_refuses_an_empty_candidate(tmp_path, capsys):
    c, r = tmp_path / "c.json", tmp_path / "r.json"
    c.write_text(json.dumps({"1": "", "2": "a cat"}))
    r.write_text(json.dumps({"1": ["a dog"], "2": ["a cat sits"]}))
    assert main(["score", "--candidates", str(c), "--references", str(r), "--metrics",
                 "bleu_4"]) == 0
    err = capsys.readouterr().err
    assert err.count("capkit score: warning: 1 candidate(s) are empty") == 1, err
    assert "UserWarning" not in err and ".py:" not in err
    assert main(["score", "--candidates", str(c), "--references", str(r), "--metrics",
                 "bleu_4", "--strict"]) == 2


@pytest.mark.parametrize("name, hint", [("cider", "did you mean 'cider_d'"),
                                        ("BLEU_4", "did you mean 'bleu_4'"),
                                        ("bleu_4,bleu_4", "'bleu_4' is given twice")])
def test_a_misnamed_metric_gets_a_suggestion(files, capsys, name, hint):
    c, r = files
    assert main(["score", "--candidates", str(c), "--references", str(r), "--metrics",
                 name]) == 2
    assert hint in capsys.readouterr().err


USER_METRICS = '''
import warnings

def refuses(candidates, references):
    raise ValueError("needs at least 10 captions")

def divides(candidates, references):
    return [1 / 0 for _ in candidates]

def warns(candidates, references):
    warnings.warn("this metric is experimental")
    warnings.warn("this metric is experimental")
    return [1.0 for _ in candidates]
'''


def test_a_failing_user_metric_is_named(files, tmp_path, monkeypatch, capsys):
    (tmp_path / "capkit_test_user_metrics.py").write_text(USER_METRICS)
    broken = tmp_path / "capkit_test_broken_module.py"
    broken.write_text("raise RuntimeError('no config file')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    c, r = files
    args = ["score", "--candidates", str(c), "--references", str(r), "--metrics"]
    assert main([*args, "bleu_4,capkit_test_user_metrics:refuses"]) == 2
    assert "needs at least 10 captions (raised by the metric " \
        "'capkit_test_user_metrics:refuses')" in capsys.readouterr().err
    with pytest.raises(ZeroDivisionError) as err:      # a bug: its traceback, and the name
        main([*args, "capkit_test_user_metrics:divides"])
    assert err.value.__notes__ == \
        ["(raised by the metric 'capkit_test_user_metrics:divides')"]
    assert main([*args, "capkit_test_broken_module:f"]) == 2
    assert "importing 'capkit_test_broken_module' for the metric " \
        "'capkit_test_broken_module:f' failed: RuntimeError: no config file" \
        in capsys.readouterr().err
    assert main([*args, "capkit_test_user_metrics:warns"]) == 0
    assert capsys.readouterr().err.count("warning: this metric is experimental") == 1


def test_systems_refuses_image_metrics_saying_what_to_do(capsys):
    assert main(["systems", "--metrics", "bleu_4,clipscore"]) == 2
    assert "capkit score --images DIR" in capsys.readouterr().err


def test_mismatched_ids_are_listed(files, tmp_path, capsys):
    c, _ = files
    r = tmp_path / "refs2.json"
    r.write_text(json.dumps({"1": ["a dog"], "2": ["two cats"], "9": ["a cow"]}))
    assert main(["score", "--candidates", str(c), "--references", str(r)]) == 2
    err = capsys.readouterr().err
    assert "ids must match exactly" in err and "['3']" in err and "['9']" in err


def test_user_metric_by_module_path(files, tmp_path, monkeypatch, capsys):
    (tmp_path / "my_metric.py").write_text(
        "def length_ratio(candidates, references):\n"
        "    return [len(c) / max(len(r) for r in refs) for c, refs in zip(candidates, references)]\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    c, r = files
    assert main(["score", "--candidates", str(c), "--references", str(r),
                 "--metrics", "my_metric:length_ratio", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["metrics"]["my_metric:length_ratio"]["per_caption"]["2"] == \
        pytest.approx(len("Two cats sleep on a sofa.") / len("Two cats are sleeping on a couch."))


@pytest.mark.parametrize("content, match", [
    ("not json", "not valid JSON"),
    ('[{"image_id": 1, "caption": "a"}, {"image_id": 1, "caption": "b"}]', "two captions"),
    ('[{"caption": "a"}]', "image_id"),
])
def test_bad_candidate_files(files, tmp_path, capsys, content, match):
    _, r = files
    c = tmp_path / "bad.json"
    c.write_text(content)
    assert main(["score", "--candidates", str(c), "--references", str(r)]) == 2
    assert match in capsys.readouterr().err


@pytest.mark.parametrize("which, content, key", [
    ("candidates", '{"1": "a dog", "1": "a cat"}', "1"),
    ("candidates", '[{"image_id": 1, "caption": "a dog", "caption": "a cat"}]', "caption"),
    ("references", '{"1": ["a dog"], "2": ["a cat"], "1": ["a bird"]}', "1"),
    ("references", '{"annotations": [{"image_id": 1, "caption": "a dog"}], '
                   '"annotations": [{"image_id": 1, "caption": "a cat"}]}', "annotations"),
])
def test_an_id_given_twice_is_an_error_naming_it_and_the_file(tmp_path, which, content, key,
                                                               capsys):
    from capkit.caption_files import read_candidates, read_references
    path = tmp_path / f"{which}.json"
    path.write_text(content)
    reader = read_candidates if which == "candidates" else read_references
    with pytest.raises(ValueError, match=f"{which} file '{path}' gives the id \\(or key\\) "
                       f"'{key}' twice"):
        reader(path)
    good = tmp_path / "good.json"
    good.write_text('{"1": "a dog"}' if which == "references" else '{"1": ["a dog"]}')
    c, r = (path, good) if which == "candidates" else (good, path)
    assert main(["score", "--candidates", str(c), "--references", str(r)]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and f"'{key}' twice" in err


def test_missing_file_is_named(capsys):
    assert main(["score", "--candidates", "nope.json", "--references", "nope2.json"]) == 2
    assert "nope.json" in capsys.readouterr().err


@pytest.mark.parametrize("kind, match", [("folder", "is a folder; give the JSON file itself"),
                                         ("latin-1", "is not UTF-8 text"),
                                         ("unreadable", "cannot be read (Permission denied)")])
def test_a_file_that_cannot_be_read_is_named_with_what_to_do(files, tmp_path, capsys,
                                                              monkeypatch, kind, match):
    import errno
    import pathlib
    _, r = files
    c = tmp_path / "given.json"
    if kind == "folder":
        c.mkdir()
    else:
        c.write_bytes('{"1": "un caf\u00e9"}'.encode("latin-1"))
    if kind == "unreadable":            # (chmod would not stop root, who runs CI: simulated)
        def denied(self, *args, **kwargs):
            raise PermissionError(errno.EACCES, "Permission denied", str(self))
        monkeypatch.setattr(pathlib.Path, "read_bytes", denied)
    assert main(["score", "--candidates", str(c), "--references", str(r)]) == 2
    err = capsys.readouterr().err
    assert str(c) in err and match in err


@pytest.mark.slow
def test_bench_runs_a_user_metric_from_a_file_next_to_builtins(shared_data, tmp_path, monkeypatch,
                                                                capsys):
    (tmp_path / "user_metrics.py").write_text(
        "def word_count(candidates, references):\n"
        "    return [float(len(c.split())) for c in candidates]\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    out_dir = tmp_path / "bench"
    assert main(["bench", "--metrics", "bleu_4,user_metrics:word_count", "--benchmarks",
                 "flickr8k_expert,pascal50s", "--n-boot", "20", "--format", "json",
                 "--out", str(out_dir)]) == 0
    res = json.loads(capsys.readouterr().out)["results"]
    for bench in ("flickr8k_expert", "pascal50s"):
        cell = res[bench]["user_metrics:word_count"]
        assert set(cell) >= {"value", "statistic", "n", "ci95", "categories"}
        lo, hi = cell["ci95"]
        assert lo <= cell["value"] <= hi
    assert res["flickr8k_expert"]["bleu_4"]["value"] == pytest.approx(30.8, abs=0.1)
    assert res["flickr8k_expert"]["bleu_4"]["n"] == 16992
    assert set(res["pascal50s"]["bleu_4"]["categories"]) >= {"HC", "HI", "HM", "MM"}
    assert (out_dir / "results.json").is_file() and list(out_dir.glob("*.png"))


def test_bench_rejects_unknown_benchmark(capsys):
    assert main(["bench", "--metrics", "bleu_4", "--benchmarks", "flickr9k"]) == 2
    assert "unknown benchmark 'flickr9k'" in capsys.readouterr().err


# ---- `capkit score` as a process (capkit.cli.entry) -----------------------------------------
# A user's metric module that leaves two traces at exit: an atexit handler and a module-level
# object's finalizer (run by the interpreter's teardown): a normal exit runs both.
EXIT_TRACES = '''
import atexit, os
TRACES = os.environ["CAPKIT_TEST_TRACES"]

def _trace(name, _open=open, _path=os.path.join(TRACES, "{}")):   # (usable at teardown)
    with _open(_path.format(name), "w") as f:
        f.write("ran")

atexit.register(_trace, "atexit")

class _Finalized:
    def __del__(self):
        _trace("teardown")

_FINALIZED = _Finalized()

def length(candidates, references):
    return [float(len(c)) for c in candidates]
'''


def _run_capkit(tmp_path, *args, prefix=(), **kwargs):
    import os
    import subprocess
    import sys
    from pathlib import Path
    (tmp_path / "capkit_test_exit_traces.py").write_text(EXIT_TRACES)
    traces = tmp_path / "traces"
    traces.mkdir(exist_ok=True)
    repo = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(repo)]),
           "CAPKIT_TEST_TRACES": str(traces)}
    return traces, subprocess.run([sys.executable, *prefix, "-m", "capkit", *args], env=env,
                                  cwd=tmp_path, timeout=120, **kwargs)


def _many_captions(tmp_path, n=4000):
    cands = {str(i): f"a dog number {i} runs on the grass" for i in range(n)}
    refs = {str(i): [f"a dog runs across the grass {i}", "a brown dog outside"] for i in range(n)}
    c, r = tmp_path / "many_cands.json", tmp_path / "many_refs.json"
    c.write_text(json.dumps(cands))
    r.write_text(json.dumps(refs))
    return c, r, cands, refs


def test_score_process_flushes_all_output_and_exits_normally(tmp_path):
    c, r, cands, refs = _many_captions(tmp_path)       # ~300 KB of JSON: more than a pipe holds
    traces, done = _run_capkit(tmp_path, "score", "--candidates", str(c), "--references", str(r),
                               "--metrics", "bleu_4,cider_d,capkit_test_exit_traces:length",
                               "--format", "json", capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)                       # complete: every caption, every metric
    lib = score(cands, refs, ["bleu_4", "cider_d"])
    for name, s in lib.items():
        assert out["metrics"][name]["per_caption"] == pytest.approx(s.by_id(), abs=1e-12)
    assert len(out["metrics"]["capkit_test_exit_traces:length"]["per_caption"]) == len(cands)
    assert (traces / "atexit").read_text() == "ran"
    assert (traces / "teardown").read_text() == "ran"  # the interpreter's normal teardown


def test_other_commands_and_failing_scores_keep_their_exit(tmp_path):
    # a failing score run exits with code 2 and a one-line message; other commands exit 0
    traces, done = _run_capkit(tmp_path, "score", "--candidates", str(tmp_path / "missing.json"),
                               "--references", str(tmp_path / "missing.json"),
                               "--metrics", "capkit_test_exit_traces:length",
                               capture_output=True, text=True)
    assert done.returncode == 2
    assert "missing.json" in done.stderr and "Traceback" not in done.stderr
    traces, done = _run_capkit(tmp_path, "metrics", "--format", "csv", capture_output=True,
                               text=True)
    assert done.returncode == 0 and done.stdout.startswith("metric,")


def test_score_into_a_closed_pipe_exits_quietly(tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path
    c, r, _, _ = _many_captions(tmp_path)
    repo = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(repo)}
    proc = subprocess.Popen([sys.executable, "-m", "capkit", "score", "--candidates", str(c),
                             "--references", str(r), "--metrics", "bleu_4", "--format", "json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=tmp_path)
    assert proc.stdout.read(100).startswith(b"{")     # `capkit score ... | head -c 100`
    proc.stdout.close()
    stderr = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 1
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr, stderr


def test_score_reads_standard_input_a_pipe_and_a_byte_order_mark(files, tmp_path):
    c, r = files
    bom = tmp_path / "bom.json"
    bom.write_bytes(b"\xef\xbb\xbf" + c.read_bytes())       # as Windows Notepad saves it
    args = ["score", "--references", str(r), "--metrics", "bleu_4", "--format", "json"]
    outs = []
    for candidates, stdin in (("-", c.read_text()), ("/dev/stdin", c.read_text()),
                              (str(bom), None), (str(c), None)):
        _, done = _run_capkit(tmp_path, *args, "--candidates", candidates, input=stdin,
                              capture_output=True, text=True)
        assert done.returncode == 0, (candidates, done.stderr)
        outs.append(json.loads(done.stdout))
    assert outs[0] == outs[1] == outs[2] == outs[3]


def test_an_output_that_cannot_be_written_is_a_one_line_error(files, tmp_path):
    """A full disk, as the process sees it: a file-size limit of 100 bytes on its output file
    (writes past it fail with EFBIG, once SIGXFSZ is ignored), which works on any POSIX system."""
    import resource
    import signal
    import subprocess
    c, r = files

    def limited():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (100, 100))
    with open(tmp_path / "out.json", "w") as out:
        _, done = _run_capkit(tmp_path, "score", "--candidates", str(c), "--references", str(r),
                              "--format", "json", stdout=out, stderr=subprocess.PIPE, text=True,
                              preexec_fn=limited)
    assert done.returncode == 2, done.stderr
    assert "capkit score: error: [Errno 27] File too large" in done.stderr
    assert "Traceback" not in done.stderr


def test_systems_csv_is_one_table_with_its_signatures(shared_data, capsys):
    import csv
    import io
    assert main(["systems", "--metrics", "bleu_4", "--format", "csv"]) == 0
    out = capsys.readouterr()
    rows = list(csv.reader(io.StringIO(out.out)))
    assert rows[0] == ["system", "n", "bleu_4"] and {len(row) for row in rows} == {3}
    assert len(rows) == 11 and rows[-1][0] == "<signature>" and rows[-1][2].startswith("bleu_4|")
    assert "corpus scores of 9 systems" in out.err          # the title, off the CSV


# ---- integer options: checked as parsed, the error names the option ------------------------
@pytest.mark.parametrize("argv, option, wanted", [
    (["bench", "--seed", "-1"], "--seed", "must be a non-negative integer, got -1"),
    (["train", "leic", "--seed", "-1"], "--seed", "must be a non-negative integer, got -1"),
    (["train", "world-vilt", "--seed", "x"], "--seed", "must be a non-negative integer, got x"),
    (["train", "umic", "--threads", "0"], "--threads", "must be an integer >= 1, got 0"),
    (["bench-speed", "--repeat", "0"], "--repeat", "must be an integer >= 1, got 0"),
    (["train", "leic", "--epochs", "0"], "--epochs", "must be an integer >= 1, got 0"),
    (["robustness", "--images", "1"], "--images", "must be an integer >= 2, got 1"),
    (["train", "umic", "--margin", "1.5"], "--margin",
     "must be a number between 0 and 1 (exclusive), got 1.5")])
def test_integer_options_are_checked_before_any_work(capsys, argv, option, wanted):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.endswith(f"error: argument {option}: {wanted}")


def test_bench_json_and_results_json_record_the_bootstrap_and_the_protocols(shared_data,
                                                                             tmp_path, capsys):
    """A 20-resample interval must be told apart from a 1000-resample one, in both outputs."""
    from capkit.meta_eval import get_protocol
    out = tmp_path / "bench"
    assert main(["bench", "--metrics", "bleu_4", "--benchmarks", "thumb", "--n-boot", "20",
                 "--seed", "3", "--format", "json", "--out", str(out)]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert json.loads((out / "results.json").read_text()) == printed
    assert (printed["n_boot"], printed["seed"], printed["tokenizer"]) == (20, 3, "ptb")
    rules = printed["protocols"]["thumb"]
    thumb = get_protocol("thumb")
    assert rules["options"] == thumb.options and rules["statistic"] == thumb.statistic
    assert rules["rows"] == thumb.rows and rules["references"] == thumb.references
    assert main(["bench", "--metrics", "bleu_4", "--benchmarks", "thumb", "--n-boot", "20",
                 "--seed", "3"]) == 0
    table = capsys.readouterr().out
    assert "(20 resamples, seed 3)" in table and f"thumb: {thumb.statistic}; rows:" in table


def test_bench_record_holds_the_run_and_renders_its_tables(shared_data, tmp_path, capsys,
                                                          monkeypatch):
    """`capkit bench --record FILE`: the command, machine, versions, date and wall time beside
    the results the run printed, and the tables docs/benchmarks.md shows come from it."""
    from capkit.meta_eval.results import record_tables
    record_file = tmp_path / "m" / "bench.json"
    argv = ["bench", "--metrics", "bleu_4", "--benchmarks", "thumb,pascal50s", "--n-boot", "20",
            "--format", "json", "--record", str(record_file)]
    monkeypatch.setattr(sys, "argv", ["capkit", *argv])
    assert main(argv) == 0
    printed = json.loads(capsys.readouterr().out)
    record = json.loads(record_file.read_text())
    assert record["results"] == printed
    assert record["command"] == "capkit " + " ".join(argv)
    assert record["options"]["benchmarks"] == ["thumb", "pascal50s"]
    assert {"date", "machine", "versions", "wall_seconds"} <= record.keys()
    assert record["versions"]["capkit"] and record["wall_seconds"] > 0
    tables = record_tables(record)
    value = printed["results"]["thumb"]["bleu_4"]["value"]
    hc = printed["results"]["pascal50s"]["bleu_4"]["categories"]["HC"]
    assert f"| bleu_4 | {value:.1f} [" in tables and f"| bleu_4 | {hc:.1f} |" in tables


def test_bench_refuses_a_record_it_could_not_write(tmp_path, capsys):
    assert main(["bench", "--metrics", "bleu_4", "--benchmarks", "thumb",
                 "--record", str(tmp_path)]) == 2
    assert "--record" in capsys.readouterr().err


def test_bench_with_every_metric_skipped_says_why(shared_data, capsys):
    assert main(["bench", "--metrics", "clipscore", "--benchmarks", "thumb", "--n-boot", "10"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("capkit bench: error: no metric could run on these benchmarks: "
                          "clipscore on thumb: needs the images of thumb")
    assert "--images thumb=DIR" in err and "no metric given" not in err


@pytest.mark.parametrize("argv, message", [
    (["--benchmarks", "thumb", "--images", "thumb=/no/such/folder"],
     "the images folder of thumb, /no/such/folder, does not exist"),
    (["--benchmarks", "thumb", "--images", "flickr8k_expert=."],
     "images are given for flickr8k_expert, which is not among the benchmarks run (thumb)"),
    (["--benchmarks", "thumb", "--metrics", "bleu_4", "--against", "bleu_4"],
     "--against bleu_4 is the only metric: there is nothing to compare it with")])
def test_bench_refuses_options_that_would_be_ignored(monkeypatch, capsys, argv, message):
    import capkit.meta_eval.harness
    monkeypatch.setattr(capkit.meta_eval.harness, "load_benchmark",
                        lambda *a: pytest.fail("the data were loaded before the check"))
    assert main(["bench", "--metrics", "clipscore", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"capkit bench: error: {message}") and "\n" not in err


@pytest.mark.parametrize("argv, message", [
    (["--benchmarks", ""], "argument --benchmarks: give at least one benchmark name, or 'all'"),
    (["--benchmarks", " , "], "argument --benchmarks: give at least one benchmark name, or 'all'"),
    (["--n-boot", "1"], "argument --n-boot: must be an integer >= 2 (an interval needs several "
                        "resamples; e.g. 1000, or 20 for a quick look), got 1")])
def test_bench_refuses_an_empty_run_and_a_one_resample_interval(capsys, argv, message):
    with pytest.raises(SystemExit) as exit_:
        main(["bench", "--metrics", "bleu_4", *argv])
    assert exit_.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == f"capkit bench: error: {message}"


# ---- train: errors about an option name the option, not the library's keyword -------------
@pytest.mark.parametrize("model", ["i2ce", "leic"])
def test_train_resume_without_workdir_names_the_options(tmp_path, monkeypatch, capsys, model):
    monkeypatch.chdir(tmp_path)
    assert main(["train", model, "--preset", "tiny", "--resume"]) == 2
    assert capsys.readouterr().err.strip() == \
        "capkit train: error: --resume needs --workdir, the folder of the interrupted run's " \
        "training state"
    assert list(tmp_path.iterdir()) == []


def test_train_glove_that_does_not_exist_says_to_leave_it_out(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["train", "leic", "--glove", str(tmp_path / "glove.txt")])
    assert exit_.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"capkit train leic: error: argument --glove: no file {tmp_path / 'glove.txt'}; give a "
        "GloVe .txt (or .txt.gz) file, or leave out --glove for the offline bundle")


@pytest.mark.parametrize("model", ["world-vilt", "umic"])
def test_train_device_without_cuda_says_device_cpu(tmp_path, monkeypatch, capsys, model):
    import torch
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.chdir(tmp_path)
    assert main(["train", model, "--preset", "tiny", "--device", "cuda"]) == 2
    assert capsys.readouterr().err.strip() == (
        "capkit train: error: --device cuda asks for CUDA, which is not available here; use "
        "--device cpu")
    monkeypatch.setenv("CAPKIT_DEVICE", "cuda:1")
    assert main(["train", model, "--preset", "tiny"]) == 2
    assert "CAPKIT_DEVICE=cuda:1 asks for CUDA" in capsys.readouterr().err


def test_train_umic_backbone_folder_that_does_not_exist(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    missing = tmp_path / "vilt"
    assert main(["train", "umic", "--preset", "tiny", "--backbone", str(missing)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"capkit train: error: no ViLT checkpoint folder {missing} (it does not "
                   f"exist), and '{missing}' is not a hub name; give an existing folder or a "
                   "hub name such as dandelin/vilt-b32-finetuned-coco")


@pytest.mark.parametrize("env, fmt, drawn", [("1", "table", True), ("0", "table", False),
                                             ("1", "json", False), ("", "table", False)])
def test_train_bars_follow_capkit_progress_not_a_pipe(monkeypatch, tmp_path, env, fmt, drawn):
    """`capkit train leic` drew tqdm bars into pipes and log files (progress=True for every
    non-json format); it now asks capkit.progress, as every other long loop does ("" under
    pytest: standard error is captured, so no bar)."""
    import argparse

    import capkit.training.leic as leic
    from capkit.commands.args import training_bars
    monkeypatch.setenv("CAPKIT_PROGRESS", env)
    assert training_bars(argparse.Namespace(format=fmt)) is drawn
    seen = {}

    def fake_train(*args, progress, **kwargs):
        seen["progress"] = progress
        raise SystemExit(0)
    monkeypatch.setattr(leic, "train_leic", fake_train)
    with pytest.raises(SystemExit):
        main(["train", "leic", "--preset", "tiny", "--format", fmt,
              "--out", str(tmp_path / "c.safetensors")])
    assert seen["progress"] is drawn


@pytest.mark.parametrize("model", ["world-clip", "world-vilt", "umic"])
def test_train_refuses_an_out_folder_holding_other_files_before_training(tmp_path, capsys,
                                                                         monkeypatch, model):
    """The checkpoint folder is replaced as a whole, so a folder holding other files would be
    refused at the save, after the whole training: it is refused before any."""
    import capkit.training.umic
    import capkit.training.world_clip
    import capkit.training.world_vilt
    for module in (capkit.training.world_clip, capkit.training.world_vilt, capkit.training.umic):
        for name in dir(module):
            if name.startswith("train_"):
                monkeypatch.setattr(module, name, lambda *a, **k: pytest.fail("trained"))
    out = tmp_path / "runs"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    assert main(["train", model, "--preset", "tiny", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "--out" in err and "already holds notes.txt, which would be lost" in err
    assert (out / "notes.txt").read_text() == "mine"
