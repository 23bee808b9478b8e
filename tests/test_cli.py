"""The command line as a user runs it: files in, JSON / CSV / table out, clear errors."""
import json

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
        ["1", "2", "3", "<corpus>"]


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
