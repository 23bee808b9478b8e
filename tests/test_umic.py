"""UMIC (#14): the hinge loss, the seeded negatives of each type and their invariants, a short
deterministic fine-tuning run, and the umic / umic_c metrics."""
import dataclasses
import json
from collections import Counter

import numpy as np
import pytest
import torch

from capkit.training import umic as U
from capkit.transforms import TransformContext
from capkit.transforms.words import caption_words
from capkit.world import describe
from capkit.world.splits import split_scenes


def test_hinge_loss_moves_a_cpu_validity_mask_to_the_scores_device():
    """`capkit train umic --device cuda` multiplied CUDA scores by the CPU mask of valid
    negatives, which raises (found reading the code for the H200 run; fixed before it). The
    meta device stands in for CUDA here: without the fix this raises likewise."""
    pos, neg = torch.rand(4, device="meta"), torch.rand(4, 5, device="meta")
    valid = torch.ones(4, 5, dtype=torch.bool)
    assert U.hinge_loss(pos, neg, 0.2, valid).device.type == "meta"


def test_hinge_loss_matches_the_formula_from_scratch():
    rng = np.random.default_rng(0)
    pos, neg = rng.random(4), rng.random((4, 5))
    valid = rng.random((4, 5)) < 0.7
    want = [max(0.0, 0.2 + neg[i, k] - pos[i]) for i in range(4) for k in range(5) if valid[i, k]]
    got = U.hinge_loss(torch.tensor(pos), torch.tensor(neg), 0.2, torch.tensor(valid))
    assert float(got) == pytest.approx(np.mean(want))
    assert float(U.hinge_loss(torch.tensor(pos), torch.tensor(neg), 0.5)) == pytest.approx(
        np.mean(np.maximum(0, 0.5 + neg - pos[:, None])))
    assert float(U.hinge_loss(torch.ones(2), torch.zeros(2, 3))) == 0.0   # margin met


@pytest.fixture(scope="module")
def world():
    data = U.world_data(40, seed=1, split="val")
    kw = dict(tagger=U.world_keyword_tags, dictionary=U.world_keyword_dictionary())
    return data, kw


def _negs(world, seed):
    data, kw = world
    return U.umic_negatives(data.positives, data.image_ids, data.context, seed=seed, **kw)


def test_negatives_are_seeded(world):
    assert _negs(world, 3) == _negs(world, 3)
    a, b = _negs(world, 3), _negs(world, 4)
    assert any(a[t] != b[t] for t in U.NEGATIVE_TYPES)
    assert set(a) == set(U.NEGATIVE_TYPES)


def test_other_image_negatives_come_from_other_images(world):
    data, _ = world
    negs = _negs(world, 0)
    owners: dict[str, set] = {}                  # one text can describe several scenes
    for i, cs in enumerate(data.context.captions):
        for c in cs:
            owners.setdefault(c, set()).add(i)
    for kind in ("random", "hard"):
        for i, n in enumerate(negs[kind]):
            assert n != data.positives[i] and owners[n] - {i}
    top3 = data.context.neighbours()[:, :3]
    for i, n in enumerate(negs["hard"]):
        assert owners[n] & set(top3[i].tolist())


def test_keyword_negatives_swap_keywords_for_same_tag_words(world):
    data, _ = world
    tags = U.world_keyword_tags(caption_words(data.positives))
    for pos, neg, ts in zip(data.positives, _negs(world, 0)["keyword"], tags):
        p, n = pos.split(), neg.split()
        assert len(p) == len(n) and p != n
        for a, b, t in zip(p, n, ts):
            if a != b:
                assert t and U.world_keyword_tags([[b]])[0][0] == t


def test_order_and_repeat_remove_negatives(world):
    data, _ = world
    negs = _negs(world, 0)
    for pos, neg in zip(data.positives, negs["order"]):
        p, n = pos.split(), neg.split()
        shuffled = Counter(p) == Counter(n)
        it = iter(p)
        dropped = len(n) < len(p) and all(w in it for w in n)          # a subsequence
        assert shuffled or dropped
        assert n != p or len(set(p)) == 1
    for pos, neg in zip(data.positives, negs["repeat_remove"]):
        assert neg != pos and set(neg.split()) <= set(pos.split())


def test_order_removal_and_repeat_remove_draw_their_words_apart():
    """With p_drop == p_repeat, order's removal half once removed exactly repeat_remove's words
    (one seed for both): the same negative twice for ~1 positive in 10. The code draws apart."""
    data = U.world_data(300, seed=0)
    kw = dict(tagger=U.world_keyword_tags, dictionary=U.world_keyword_dictionary())
    negs = U.umic_negatives(data.positives, data.image_ids, data.context, seed=1001, **kw)
    same = sum(o == r for o, r in zip(negs["order"], negs["repeat_remove"]))
    assert same / len(data.positives) < 0.03, same


def test_world_negatives_that_are_still_true_are_masked(world):
    data, _ = world
    table, valid = U.epoch_negatives(data, data.positives, 0, U.SCHEDULES["tiny"], True)
    from capkit.world.check import check
    for i, row in enumerate(table):
        for n, ok in zip(row, valid[i]):
            assert ok == (n != data.positives[i] and not check(data.scenes[i], n).true)


@pytest.fixture(scope="module")
def backbone(tmp_path_factory):
    from capkit.training.world_vilt import SCHEDULES, train_world_vilt
    s = dataclasses.replace(SCHEDULES["tiny"], n_scenes=96, epochs=2, n_val=16)
    return train_world_vilt("tiny", out=tmp_path_factory.mktemp("wv"), seed=0, schedule=s)


@pytest.fixture(scope="module")
def finetuned(backbone, tmp_path_factory):
    s = dataclasses.replace(U.SCHEDULES["tiny"], n_scenes=64, epochs=2, n_val=16)
    return [U.train_umic(backbone.path, out=tmp_path_factory.mktemp(f"u{k}"), seed=0,
                         schedule=s) for k in range(2)]


def test_fine_tuning_is_deterministic_and_starts_from_the_matching_head(finetuned, backbone):
    from capkit.models.world_vilt import load_world_vilt, read_meta
    a, b = finetuned
    assert a.sha256 == b.sha256 and str(a.history) == str(b.history)     # nan at epoch 0
    assert [h["epoch"] for h in a.history] == [0, 1, 2]
    best = a.history[a.best_epoch]["val_loss"]
    assert best == min(h["val_loss"] for h in a.history)
    meta = read_meta(a.path)
    assert meta["name"] == "umic-world" and meta["best_epoch"] == a.best_epoch
    scenes = split_scenes("val", 2, seed=5)
    texts, imgs = [describe(s, 1, 0)[0] for s in scenes], [s.render(64) for s in scenes]
    start = load_world_vilt(backbone.path).matching_logits(texts, imgs)
    from capkit.training.umic import world_data
    val = world_data(16, 0, "val")
    enc0 = load_world_vilt(backbone.path)
    enc1 = load_world_vilt(a.path)
    changed = not np.allclose(enc0.matching_logits(texts, imgs), enc1.matching_logits(texts, imgs))
    assert changed == (a.best_epoch > 0) and len(val.positives) == 16 and np.isfinite(start).all()


def test_umic_and_umic_c_metrics(finetuned, backbone):
    from capkit.metrics.umic import umic, umic_c
    from capkit.models.world_vilt import load_world_vilt
    scenes = split_scenes("val", 3, seed=7)
    cands = [describe(s, 1, 0)[0] for s in scenes]
    imgs = [s.render(64) for s in scenes]
    u = umic(cands, images=imgs, model=load_world_vilt(finetuned[0].path))
    c = umic_c(cands, images=imgs, model=load_world_vilt(backbone.path))
    assert u.metric == "umic" and c.metric == "umic_c"
    assert np.allclose(u.per_caption, 1 / (1 + np.exp(-u.parts["logit"])))
    assert ((0 < u.per_caption) & (u.per_caption < 1)).all()
    assert "umic-world@" in u.signature and "world-vilt@" in c.signature
    with pytest.raises(ValueError, match="pass images="):
        umic(cands, model=load_world_vilt(backbone.path))


def test_user_data_needs_every_image():
    with pytest.raises(ValueError, match="have no image"):
        U.user_data({"a": ["x y"], "b": ["z w"]}, {"a": None})
    ctx = U.user_data({"a": ["A dog runs."], "b": ["a cat"]}, {"a": 1, "b": 2})
    assert ctx.positives == ["a dog runs", "a cat"] and isinstance(ctx.context, TransformContext)


def test_shipped_checkpoints_load_and_the_registered_metrics_run():
    from capkit.data.world import load_world_foil
    from capkit.metrics import resolve
    from capkit.models.world_vilt import SHIPPED, WEIGHTS_DIR, checkpoint_sha256, read_meta
    fine = WEIGHTS_DIR / "umic_world"
    want = f"world-vilt@{checkpoint_sha256(SHIPPED)[:12]}~world"
    assert read_meta(fine)["backbone_signature"] == want
    foil = load_world_foil(n_scenes=4)
    images = [foil.image_loader(k) for k in foil.images]
    fns = resolve(["umic_world", "umic_c_world"])
    u = fns["umic_world"].function(foil.caption_a, images=images)
    c = fns["umic_c_world"].function(foil.caption_a, images=images)
    assert f"umic-world@{checkpoint_sha256(fine)[:12]}" in u.signature
    assert "world-vilt@" in c.signature and not np.allclose(u.per_caption, c.per_caption)


def test_compare_passes_the_world_images_to_image_metrics():
    from capkit.meta_eval import compare
    res = compare("umic_world", "umic_c_world", "world_foil", n_boot=20, seed=0)
    assert np.isfinite(res.difference) and res.low <= res.difference <= res.high


def _small_vilt_folder(folder):
    """A hub-style ViLT retrieval folder (no capkit recipe): the real-backbone path, offline."""
    from transformers import ViltConfig, ViltForImageAndTextRetrieval

    from capkit.models.world_vilt import build_tokenizer
    from capkit.training.world_clip import grammar_words
    tok = build_tokenizer(grammar_words())
    config = ViltConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=64, image_size=32,
                        patch_size=16, max_position_embeddings=40)
    torch.manual_seed(0)
    ViltForImageAndTextRetrieval(config).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def test_user_data_training_validates_on_held_out_images(tmp_path):
    """A user's captions on a hub-style backbone: a seeded share of the images is held out for
    validation (never trained on), or the user's own validation set; overlaps are refused."""
    scenes = split_scenes("val", 20, seed=3)
    refs = {f"s{i}": describe(s, 3, seed=i) for i, s in enumerate(scenes)}
    images = {f"s{i}": s.render(32) for i, s in enumerate(scenes)}
    train, val = U.split_references(refs, 0.2, seed=0)
    assert len(val) == 4 and len(train) == 16 and not set(train) & set(val)
    assert {**train, **val} == refs
    assert U.split_references(refs, 0.2, seed=0) == (train, val)
    assert U.split_references(refs, 0.2, seed=1)[1] != val
    for bad, match in ((0.0, "between 0 and 1"), (1.0, "between 0 and 1")):
        with pytest.raises(ValueError, match=match):
            U.split_references(refs, bad, seed=0)
    with pytest.raises(ValueError, match="each side needs at least 2 .*give more references"):
        U.split_references({"a": ["x"]}, 0.5, seed=0)

    folder = _small_vilt_folder(tmp_path / "vilt")
    s = dataclasses.replace(U.SCHEDULES["tiny"], batch_size=4, epochs=1, warmup=1)
    r = U.train_umic(str(folder), schedule=s, references=refs, images=images, seed=0,
                     val_fraction=0.2, out=tmp_path / "umic")
    assert [h["epoch"] for h in r.history] == [0, 1]
    assert all(np.isfinite(h["val_loss"]) for h in r.history)
    assert (tmp_path / "umic" / "model.safetensors").is_file()
    own = U.train_umic(str(folder), schedule=s, references=train, images=images, seed=0,
                       val_references=val)
    assert own.history[0]["val_loss"] == pytest.approx(r.history[0]["val_loss"])
    with pytest.raises(ValueError, match="in both references and val_references"):
        U.train_umic(str(folder), schedule=s, references=refs, images=images,
                     val_references={"s0": refs["s0"]})
    with pytest.raises(ValueError, match=r"--val-references \(val_references\) holds 1 image"):
        U.train_umic(str(folder), schedule=s, references=train, images=images,
                     val_references=dict(list(val.items())[:1]))
    # the data are checked before the backbone loads (a missing one would be reported first)
    with pytest.raises(ValueError, match="in both references and val_references"):
        U.train_umic(str(tmp_path / "no-such-backbone"), schedule=s, references=refs,
                     images=images, val_references={"s0": refs["s0"]})


def test_umic_and_vilbertscore_run_on_the_fourteen_real_images(shared_data):
    """The same code on the real photographs offline (12 COCO + 2 CLIPScore example images):
    the untrained tiny-vilt stand-in is labelled UNTRAINED, the world checkpoints ~world."""
    from capkit.data import real_photographs
    from capkit.metrics import score
    cands, refs, pics = real_photographs()
    assert len(cands) == len(refs) == len(pics) == 14 and all(p.is_file() for p in pics.values())
    assert list(cands)[-2:] == ["image1", "image2"] and "42" not in cands
    from capkit.metrics.umic import umic, umic_c
    from capkit.metrics.vilbertscore import vilbertscore
    for result in (umic(cands, refs, pics, model="tiny-vilt"),
                   umic_c(cands, refs, pics, model="tiny-vilt"),
                   vilbertscore(cands, refs, pics, model="tiny-vilt")):
        assert "UNTRAINED" in result.signature and np.isfinite(result.per_caption).all()
        assert len(result.per_caption) == 14
    world = score(cands, refs, ["umic_world", "vilbertscore_world"], images=pics)
    assert all("~world" in s.signature and np.isfinite(s.per_caption).all()
               for s in world.values())


def test_margin_is_an_option_recorded_in_the_command(tmp_path, capsys):
    from capkit.cli import main
    from capkit.models.world_vilt import read_meta
    out = tmp_path / "umic"
    assert main(["train", "umic", "--preset", "tiny", "--margin", "0.5", "--out", str(out),
                 "--format", "json"]) == 0
    meta = read_meta(out)
    assert meta["schedule"]["margin"] == 0.5 and meta["command"].endswith("--margin 0.5")
    with pytest.raises(SystemExit) as exit_:              # refused as parsed, before any work
        main(["train", "umic", "--margin", "2", "--out", str(tmp_path / "v")])
    assert exit_.value.code == 2 and "between 0 and 1" in capsys.readouterr().err


def test_a_validation_split_too_small_to_draw_negatives_says_what_to_change():
    """10 images at the default 0.1 held out 1 for validation, which then failed deep in the
    negatives' context with 'references must be a mapping ... with at least 2 images'."""
    refs = {f"i{k}": [f"caption {k}"] for k in range(10)}
    with pytest.raises(ValueError) as err:
        U.split_references(refs, 0.1, seed=0)
    assert str(err.value) == (
        "a validation fraction of 0.1 holds out 1 of the 10 images and trains on 9; each side "
        "needs at least 2 (the negatives are other images' captions): raise --val-fraction "
        "(val_fraction) to 0.2, or pass --val-references (val_references)")
    train, val = U.split_references(refs, 0.2, seed=0)
    assert (len(train), len(val)) == (8, 2)
    with pytest.raises(ValueError, match="holds out 9 of the 10 images and trains on 1; .*lower "
                                         "--val-fraction"):
        U.split_references(refs, 0.9, seed=0)
    with pytest.raises(ValueError, match="holds out 2 of the 3 images .*give more references"):
        U.split_references(dict(list(refs.items())[:3]), 0.5, seed=0)


def test_cli_user_data_with_a_one_image_validation_split_is_refused(tmp_path, capsys):
    from PIL import Image

    from capkit.cli import main
    refs = {f"i{k}": [f"a red circle number {k}", f"circle {k}"] for k in range(10)}
    (tmp_path / "refs.json").write_text(json.dumps(refs))
    for key in refs:
        Image.new("RGB", (8, 8)).save(tmp_path / f"{key}.jpg")
    assert main(["train", "umic", "--preset", "tiny", "--references", str(tmp_path / "refs.json"),
                 "--images", str(tmp_path), "--out", str(tmp_path / "umic")]) == 2
    err = capsys.readouterr().err
    assert "holds out 1 of the 10 images" in err and "raise --val-fraction" in err
    assert "--val-references" in err and not (tmp_path / "umic").exists()


@pytest.mark.parametrize("value", ["0", "1", "1.5", "nan", "-0.1", "x"])
def test_cli_val_fraction_outside_0_1_is_refused_in_world_mode_too(tmp_path, monkeypatch, capsys,
                                                                   value):
    from capkit.cli import main
    monkeypatch.chdir(tmp_path)                       # (a run that goes on writes umic_tiny/)
    with pytest.raises(SystemExit) as exit_:
        main(["train", "umic", "--preset", "tiny", "--val-fraction", value])
    assert exit_.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "capkit train umic: error: argument --val-fraction: must be a number between 0 and 1 "
        f"(exclusive), got {value}")
