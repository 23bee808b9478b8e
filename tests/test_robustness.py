"""capkit.robustness: the leave-one-out protocol, normalisation, AUC, bootstrap, CLI."""
import argparse
import json

import numpy as np
import pytest

from capkit.metrics import cider_d, document_frequencies
from capkit.robustness import (
    area_under_curve,
    dataset_references,
    fix_references,
    leave_one_out,
    normalised_curve,
    robustness,
    score_against,
    subset,
    transform_example,
)
from capkit.transforms import GAMMAS, TransformContext, apply_transform, normalise

N_IMAGES = 400


@pytest.fixture(scope="module")
def coco(shared_data):
    return dataset_references("coco_karpathy_test", n_images=N_IMAGES, seed=0)


@pytest.fixture(scope="module")
def study(coco):
    return robustness(coco, ["bleu_1", "bleu_4", "rouge_l", "cider_d"], ["RC", "WP", "RW"],
                      n_boot=200, seed=0)


def test_bleu_1_cannot_see_a_permutation(study):
    curve = study.curves["bleu_1"]["WP"]
    np.testing.assert_allclose(curve.score, 1.0, atol=1e-12)
    assert curve.auc == pytest.approx(1.0, abs=1e-12)


def test_every_curve_starts_at_one_and_the_auc_is_its_area(study):
    for by_t in study.curves.values():
        for c in by_t.values():
            assert c.score[0] == pytest.approx(1.0) and list(c.gamma) == list(GAMMAS)
            assert c.auc == pytest.approx(np.trapezoid(c.score, c.gamma))
            assert np.all(c.low <= c.score + 1e-9) and np.all(c.score <= c.high + 1e-9)
            assert c.auc_low <= c.auc <= c.auc_high


def test_paper_finding_cider_is_robust_to_rc_but_not_to_wp(study):
    auc = study.auc()
    assert auc["cider_d"]["RC"] < 0.3 < auc["cider_d"]["WP"]
    assert auc["bleu_4"]["WP"] < auc["rouge_l"]["WP"] < auc["bleu_1"]["WP"]


def test_normalisation_is_a_ratio_of_means(study):
    c = study.curves["rouge_l"]["RW"]
    np.testing.assert_allclose(c.score, c.per_image.mean(1) / c.per_image[0].mean())
    np.testing.assert_allclose(normalised_curve(c.per_image), c.score)
    for t in ("WP", "RW"):      # the untransformed captions are scored once, shared by all
        np.testing.assert_array_equal(study.curves["rouge_l"][t].per_image[0], c.per_image[0])


def test_cider_document_frequencies_do_not_move_with_gamma(coco, study):
    loo = leave_one_out(coco, seed=0)
    df = document_frequencies(loo.references)            # the untransformed loo references
    cands = study.captions["RW"][5]
    explicit = cider_d(cands, [list(r) for r in loo.references], document_frequency=df)
    np.testing.assert_allclose(study.curves["cider_d"]["RW"].per_image[5], explicit.per_caption,
                               atol=1e-12)


def test_seeded_and_reproducible(coco, study):
    again = robustness(coco, ["bleu_4"], ["WP"], n_boot=200, seed=0)
    np.testing.assert_array_equal(again.curves["bleu_4"]["WP"].per_image,
                                  study.curves["bleu_4"]["WP"].per_image)
    np.testing.assert_array_equal(again.curves["bleu_4"]["WP"].low,
                                  study.curves["bleu_4"]["WP"].low)
    other = robustness(coco, ["bleu_4"], ["WP"], n_boot=0, seed=1)
    assert other.held_out != study.held_out


def test_leave_one_out_holds_out_one_reference(coco):
    loo = leave_one_out(coco, seed=3)
    for image, held, rest in zip(loo.images, loo.held_out, loo.references):
        assert held in coco[image] and len(rest) == len(coco[image]) - 1


def _length_metric(candidates, references):
    return np.array([len(c.split()) for c in candidates], dtype=float)


def test_user_metrics_by_callable_and_module_path(coco, tmp_path, monkeypatch):
    (tmp_path / "my_metrics.py").write_text(
        "import numpy as np\n"
        "def words(candidates, references):\n"
        "    return np.array([len(c.split()) for c in candidates], dtype=float)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    small = subset(coco, 50)
    out = robustness(small, {"length": _length_metric, "mod": "my_metrics:words"},
                     ["WP", "RW"], n_boot=0)
    for name in ("length", "mod"):          # permutation and replacement keep the length
        assert out.auc()[name] == {"WP": pytest.approx(1.0), "RW": pytest.approx(1.0)}
    assert "source:user" in out.metric_signatures["length"]


def test_errors_say_what_to_do(coco):
    small = subset(coco, 20)
    with pytest.raises(ValueError, match="gammas must increase from 0"):
        robustness(small, ["bleu_1"], ["WP"], gammas=[0.1, 0.5])
    with pytest.raises(ValueError, match="fewer than 2 references"):
        robustness({"a": ["x y"], "b": ["y z", "z w"]}, ["bleu_1"], ["WP"])
    with pytest.raises(ValueError, match="normalising needs a positive number"):
        robustness(small, {"zero": lambda c, r: np.zeros(len(c))}, ["WP"], n_boot=0)
    with pytest.raises(ValueError, match="one score per candidate"):
        robustness(small, {"short": lambda c, r: np.zeros(1)}, ["WP"], n_boot=0)
    with pytest.raises(ValueError, match="unknown metric"):
        robustness(small, ["bleu_9"], ["WP"])
    with pytest.raises(ValueError, match="unknown transform"):
        robustness(small, ["bleu_1"], ["XX"])
    with pytest.raises(ValueError, match="unknown robustness dataset"):
        dataset_references("coco")
    # an image metric without images: said before any work, with where its images come from
    # (was: a hint to a --images flag that the robustness command uses for an image count)
    for name in ("umic_world", "clipscore", "vilbertscore_world"):
        with pytest.raises(ValueError, match=f"{name} score captions against images: pass "
                           "images=.*--dataset world.*--images-dir"):
            robustness(small, ["bleu_1", name], ["WP"])
    with pytest.raises(ValueError, match="1 image id\\(s\\) of the references have no images"):
        robustness(small, ["umic_world"], ["WP"], images=dict(list(small.items())[1:]))


def test_image_metrics_on_the_world_see_each_row_s_image():
    """--dataset world: rendered scenes are the images; the image stays while its caption is
    transformed, so gamma = 0 is the metric on the held-out captions with their own images."""
    from capkit.metrics import score
    from capkit.robustness import dataset_pictures, leave_one_out
    refs = dataset_references("world", n_images=24, seed=0)
    images, scenes = dataset_pictures("world", refs)
    assert len(images) == len(scenes) == 24 and set(images) == set(refs)
    out = robustness(refs, ["umic_world", "vilbertscore_world", "bleu_4"], ["RC", "WP"],
                     images=images, scenes=scenes, n_boot=0, progress=False)
    loo = leave_one_out(refs, seed=0)
    pics = [images[i] for i in loo.images]
    direct = score(list(out.captions["RC"][0]), loo.references, ["umic_world"], images=pics)
    assert np.allclose(out.curves["umic_world"]["RC"].per_image[0], direct["umic_world"].per_caption)
    shuffled = score(list(out.captions["RC"][0]), loo.references, ["umic_world"],
                     images=pics[1:] + pics[:1])
    assert not np.allclose(shuffled["umic_world"].per_caption, direct["umic_world"].per_caption)
    for m in ("umic_world", "vilbertscore_world"):
        assert all(np.isfinite(out.curves[m][t].auc) for t in ("RC", "WP"))
    with pytest.raises(ValueError, match="renders its own images"):
        dataset_pictures("world", refs, "some/folder")
    assert dataset_pictures("coco_karpathy_test", {"1": ["a"]}) == (None, None)


def test_area_under_curve_of_a_line():
    g = np.asarray(GAMMAS)
    assert area_under_curve(g, 1 - g) == pytest.approx(0.5)


def test_flickr8k_test_split(shared_data):
    refs = dataset_references("flickr8k")
    assert len(refs) == 1000 and all(len(r) == 5 for r in refs.values())


def test_transform_example_scores_both_versions(coco):
    loo = leave_one_out(coco, seed=0)
    df = document_frequencies(loo.references)
    ex = transform_example("WP", 0.5, loo.held_out[0], loo.references[0],
                           document_frequency=df)
    assert ex.original == normalise([loo.held_out[0]])[0]
    assert ex.transformed == apply_transform("WP", [loo.held_out[0]], 0.5)[0]
    assert ex.original_scores["bleu_1"] == pytest.approx(ex.transformed_scores["bleu_1"])
    assert "cider_d" in repr(ex) and "transformed:" in repr(ex)
    ctx = TransformContext.from_references(coco)
    rc = transform_example("RC", 0.1, loo.held_out[0], loo.references[0], image=loo.images[0],
                           context=ctx, document_frequency=df)
    assert rc.transformed != rc.original
    with pytest.raises(ValueError, match="document_frequency"):
        transform_example("WP", 0.5, loo.held_out[0], loo.references[0])


def test_transform_example_prints_tiny_scores_so_they_can_be_seen():
    from capkit.robustness.example import TransformExample
    ex = TransformExample("RW", 1.0, "a dog", "a cat", {"bleu_4": 2.4e-6, "cider_d": 0.5},
                          {"bleu_4": 1.8e-6, "cider_d": 0.0})
    lines = repr(ex).splitlines()
    assert lines[-2].split() == ["bleu_4", "2.4e-06", "1.8e-06", "0.750"]
    assert lines[-1].split() == ["cider_d", "0.500", "0.000", "0.000"]


def test_score_against_checks_alignment(coco):
    fixed = fix_references(["bleu_1"], [["a dog"], ["a cat"]])
    with pytest.raises(ValueError, match="aligned one to one"):
        score_against(fixed, ["a dog"])


def _cli(argv):
    from capkit.commands import robustness as command
    parser = argparse.ArgumentParser(prog="capkit")
    command.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args)


def test_cli_json_and_figure(shared_data, tmp_path, capsys):
    fig = tmp_path / "curves.png"
    assert _cli(["robustness", "--metrics", "bleu_1,cider_d", "--transforms", "rc,WP",
                 "--images", "60", "--bootstrap", "20", "--format", "json",
                 "--figure", str(fig)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"auc", "curves", "signature"}
    assert set(out["auc"]) == {"bleu_1", "cider_d"} and set(out["auc"]["bleu_1"]) == {"RC", "WP"}
    curve = out["curves"]["cider_d"]["RC"]
    assert curve["gamma"] == list(GAMMAS) and curve["score"][0] == pytest.approx(1.0)
    assert out["auc"]["bleu_1"]["WP"] == pytest.approx(1.0)
    assert out["signature"]["robustness"].startswith("robustness|protocol:leave-one-out")
    assert "|dataset:coco_karpathy_test|images:60|" in out["signature"]["robustness"]
    assert fig.stat().st_size > 1000


def test_cli_table(shared_data, capsys):
    assert _cli(["robustness", "--metrics", "bleu_1", "--transforms", "WP", "--images", "30",
                 "--bootstrap", "2", "--figure", "", "--dataset", "flickr8k"]) == 0
    out = capsys.readouterr().out
    assert "bleu_1" in out and "1.000" in out and "30 images of flickr8k" in out


def test_cli_notes_metrics_trained_on_part_of_the_dataset(shared_data, capsys):
    # the shipped I2CE saw the references of Karpathy-test images outside the benchmarks
    assert _cli(["robustness", "--metrics", "bleu_1,i2ce", "--transforms", "WP", "--images",
                 "20", "--bootstrap", "2"]) == 0
    err = capsys.readouterr().err
    assert "capkit robustness: note: i2ce: the shipped checkpoint was trained on the captions " \
        "of part of coco_karpathy_test's images" in err and "bleu_1" not in err
    assert _cli(["robustness", "--metrics", "bleu_1,i2ce", "--transforms", "WP", "--images",
                 "20", "--bootstrap", "2", "--dataset", "flickr8k"]) == 0
    assert "note:" not in capsys.readouterr().err      # Flickr8k test was kept out of training


def _flat(references):
    return [c for cs in references.values() for c in cs]


def test_rw_draws_from_the_dataset_vocabulary_whatever_subset_is_scored(shared_data):
    """Was: the pool came from the scored subset (>= 5 occurrences), 71 common words for 40
    COCO images and 335 for 200, so RW's AUC fell as more images were scored."""
    from capkit.transforms import build_vocabulary
    full = dataset_references("coco_karpathy_test")
    pool = build_vocabulary(_flat(full))
    runs = {n: robustness(subset(full, n), ["bleu_1"], ["RW"], n_boot=0, progress=False,
                          vocabulary_captions=full, vocabulary_source="coco_karpathy_test",
                          dataset="coco_karpathy_test") for n in (40, 200)}
    tail = (f"rw_vocab:coco_karpathy_test|rw_vocab_captions:{len(_flat(full))}|"
            f"rw_vocab_words:{len(pool)}|")
    for n, run in runs.items():
        assert tail in run.signature and f"dataset:coco_karpathy_test|images:{n}|" in run.signature
        drawn = {w for c in run.captions["RW"][-1] for w in c.split()}   # gamma 1: all replaced
        assert drawn <= set(pool) and len(drawn) > 100
    own = robustness(subset(full, 40), ["bleu_1"], ["RW"], n_boot=0, progress=False)
    assert "dataset:user" in own.signature and "rw_vocab:evaluated|rw_vocab_captions:200|" \
        "rw_vocab_words:71|" in own.signature
    assert len({w for c in own.captions["RW"][-1] for w in c.split()}) <= 71
    # the subset's own pool of common words leaves RW weaker (BLEU-1 0.590 against 0.503)
    assert own.auc()["bleu_1"]["RW"] > runs[40].auc()["bleu_1"]["RW"] + 0.05
    assert abs(runs[40].auc()["bleu_1"]["RW"] - runs[200].auc()["bleu_1"]["RW"]) < 0.02
    no_rw = robustness(subset(full, 40), ["bleu_1"], ["WP"], n_boot=0, progress=False)
    assert "rw_vocab" not in no_rw.signature               # said only where RW ran
    ctx = TransformContext.from_references(subset(full, 40))
    with pytest.raises(ValueError, match="either context= or"):
        robustness(subset(full, 40), ["bleu_1"], ["RW"], context=ctx, vocabulary_captions=full)


def test_cli_draws_rw_from_every_reference_of_the_dataset(shared_data, capsys):
    from capkit.transforms import build_vocabulary
    full = dataset_references("flickr8k")
    argv = ["robustness", "--metrics", "bleu_1,cider_d", "--transforms", "RW", "--images",
            "30", "--bootstrap", "5", "--format", "json"]
    assert _cli(argv + ["--dataset", "flickr8k"]) == 0
    out = json.loads(capsys.readouterr().out)
    sig = out["signature"]["robustness"]
    assert (f"dataset:flickr8k|images:30|neighbours:tfidf-references|words:ptb|"
            f"rw_vocab:flickr8k|rw_vocab_captions:5000|"
            f"rw_vocab_words:{len(build_vocabulary(_flat(full)))}|") in sig
    same = robustness(subset(full, 30), ["bleu_1", "cider_d"], ["RW"], n_boot=5,
                      vocabulary_captions=full, progress=False)
    assert out["auc"] == same.auc()
    own = robustness(subset(full, 30), ["bleu_1"], ["RW"], n_boot=0, progress=False)
    assert own.auc()["bleu_1"]["RW"] != out["auc"]["bleu_1"]["RW"]


def test_cli_signature_names_the_dataset(shared_data, capsys):
    """Was: --dataset coco_karpathy_test and --dataset flickr8k printed the same signature."""
    sigs = {}
    for name in ("coco_karpathy_test", "flickr8k"):
        assert _cli(["robustness", "--metrics", "bleu_1", "--transforms", "WP", "--images", "20",
                     "--bootstrap", "2", "--format", "json", "--dataset", name]) == 0
        sigs[name] = json.loads(capsys.readouterr().out)["signature"]["robustness"]
        assert f"|dataset:{name}|images:20|" in sigs[name]
    assert sigs["coco_karpathy_test"].replace("coco_karpathy_test", "flickr8k") == sigs["flickr8k"]


@pytest.mark.parametrize("argv", [["robustness", "--bootstrap", "0"],
                                  ["robustness", "--bootstrap", "1"],
                                  ["robustness", "--bootstrap", "-3"],
                                  ["bench", "--n-boot", "0"]])
def test_cli_refuses_zero_resamples_before_any_work(argv, capsys, monkeypatch):
    """bench refused --n-boot 0 only after scoring (capkit.meta_eval), robustness ran with no
    bands; both now refuse fewer than 2 resamples as they parse the command line."""
    import capkit.robustness
    monkeypatch.setattr(capkit.robustness, "dataset_references",
                        lambda *a, **k: pytest.fail("work started"))
    from capkit.cli import main
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    assert "must be an integer >= 2 (an interval needs several resamples" in capsys.readouterr().err


def test_cli_rejects_unknown_transforms():
    with pytest.raises(SystemExit):
        _cli(["robustness", "--transforms", "RC,XX"])


def test_robustness_command_runs_image_metrics_on_the_world(capsys):
    from capkit.cli import main
    argv = ["robustness", "--dataset", "world", "--images", "12", "--metrics",
            "umic_world,vilbertscore_world_noimage,bleu_1", "--transforms", "WP",
            "--bootstrap", "2", "--format", "json"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out["auc"]) == {"umic_world", "vilbertscore_world_noimage", "bleu_1"}
    assert "umic-world@" in out["signature"]["umic_world"]
    assert "images:12" in out["signature"]["robustness"]


def test_cli_refuses_a_figure_format_matplotlib_cannot_write_before_any_work(tmp_path, capsys,
                                                                             monkeypatch):
    """An unknown suffix failed at the save, after the old robustness.json was removed and
    before the new one was written: the whole run was lost. It is refused as parsed now."""
    import capkit.robustness
    from capkit.cli import main
    monkeypatch.setattr(capkit.robustness, "dataset_references",
                        lambda *a, **k: pytest.fail("work started"))
    out = tmp_path / "res"
    out.mkdir()
    (out / "robustness.json").write_text("{}")
    assert main(["robustness", "--out", str(out), "--figure", str(tmp_path / "fig.pngg")]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "--figure" in err and "matplotlib cannot write .pngg" in err and ".png" in err
    assert (out / "robustness.json").read_text() == "{}"


def test_dataset_name_gives_rw_the_whole_dataset_vocabulary(shared_data):
    """Was: ``robustness(subset, ..., dataset="coco_karpathy_test")`` named the dataset in the
    signature but drew RW's words from the subset (71 words for 40 images), unlike the command
    line; the library now loads the dataset's vocabulary itself, after checking the subset."""
    full = dataset_references("coco_karpathy_test")
    part = subset(full, 40)
    named = robustness(part, ["bleu_1"], ["RW"], n_boot=0, progress=False,
                       dataset="coco_karpathy_test")
    given = robustness(part, ["bleu_1"], ["RW"], n_boot=0, progress=False,
                       vocabulary_captions=full, vocabulary_source="coco_karpathy_test",
                       dataset="coco_karpathy_test")
    assert named.signature == given.signature and named.auc() == given.auc()
    assert "rw_vocab:coco_karpathy_test|rw_vocab_captions:25010|" in named.signature
    # a name that is not a robustness dataset only labels the signature
    mine = robustness(part, ["bleu_1"], ["RW"], n_boot=0, progress=False, dataset="my_set")
    assert "dataset:my_set" in mine.signature and "rw_vocab:evaluated|" in mine.signature
    # references that were not drawn from the named dataset are refused, saying what to do
    other = dict(part)
    first = next(iter(other))
    other[first] = [c.upper() for c in other[first]]
    with pytest.raises(ValueError, match="captions of 1 image.*dataset=None"):
        robustness(other, ["bleu_1"], ["RW"], n_boot=0, progress=False,
                   dataset="coco_karpathy_test")
    with pytest.raises(ValueError, match="2 image id.*are not flickr8k images"):
        robustness(dict(list(part.items())[:2]), ["bleu_1"], ["RW"], n_boot=0,
                   progress=False, dataset="flickr8k")


def test_world_vocabulary_follows_the_seed_of_its_scenes():
    refs = dataset_references("world", n_images=12, seed=1)
    with pytest.raises(ValueError, match="depend on the seed.*seed=0.*vocabulary_captions="):
        robustness(refs, ["bleu_1"], ["RW"], n_boot=0, progress=False, dataset="world", seed=0)
    whole = dataset_references("world", seed=1)       # the sample's own seed, as the error says
    other_seed = robustness(refs, ["bleu_1"], ["RW"], n_boot=0, progress=False, dataset="world",
                            seed=0, vocabulary_captions=whole, vocabulary_source="world")
    assert f"rw_vocab:world|rw_vocab_captions:{5 * 500}|" in other_seed.signature
    # a name given for the vocabulary names the evaluated captions, as before: nothing loaded
    named = robustness(refs, ["bleu_1"], ["RW"], n_boot=0, progress=False, dataset="world",
                       seed=0, vocabulary_source="mine")
    assert "rw_vocab:mine|rw_vocab_captions:60|" in named.signature
    out = robustness(refs, ["bleu_1"], ["RW"], n_boot=0, progress=False, dataset="world", seed=1)
    assert f"rw_vocab:world|rw_vocab_captions:{5 * 500}|" in out.signature
    # without RW nothing is checked or loaded: WP needs no vocabulary
    assert "rw_vocab" not in robustness(refs, ["bleu_1"], ["WP"], n_boot=0, progress=False,
                                        dataset="world", seed=0).signature
