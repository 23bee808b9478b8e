"""The world backbone: the convolutional stem under a Hugging Face CLIPModel, its folder's round
trip through that class, the patch annotations of stage 1, a short deterministic training run and
the CLI."""
import dataclasses
import json

import numpy as np
import pytest
import torch

from capkit.models import world_backbone as B
from capkit.world.scene import Obj, Scene
from capkit.world.splits import split_scenes

QUICK = dict(n_scenes=96, stage1_epochs=1, stage2_epochs=1, batch_size=32, warmup=1, n_val=16)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    from capkit.training.world_backbone import SCHEDULES, train_world_backbone
    schedule = dataclasses.replace(SCHEDULES["tiny"], **QUICK)
    return [train_world_backbone("tiny", out=tmp_path_factory.mktemp(f"run{k}"), seed=0,
                                 schedule=schedule, progress=False) for k in range(2)]


def test_shapes_and_config():
    cfg = B.get_config("tiny")
    model = B.build_model(cfg, vocab_size=30)
    assert isinstance(model, B.model_class())
    from transformers import CLIPModel
    assert isinstance(model, CLIPModel)
    px = torch.zeros(2, 3, 64, 64)
    hidden = model.vision_model(pixel_values=px).last_hidden_state
    assert hidden.shape == (2, 1 + 64, cfg.vision_hidden)                 # [CLS] + 8 x 8 patches
    feats = model.get_image_features(pixel_values=px)
    feats = feats if hasattr(feats, "ndim") else feats.pooler_output
    assert feats.shape == (2, cfg.projection)
    v = model.config.vision_config
    assert (v.stem_channels, v.stem_layers, v.stem_overlap) == (8, 1, 4)
    with pytest.raises(ValueError, match="world-backbone preset"):
        B.get_config("huge")


@pytest.mark.parametrize("overlap,layers,sees", [(0, 0, False), (4, 0, True), (0, 1, True)])
def test_the_stem_sees_across_patch_borders(overlap, layers, sees):
    model = B.build_model(B.get_config("tiny", stem_overlap=overlap, stem_layers=layers), 30)
    stem = model.vision_model.embeddings.patch_embedding
    x = torch.zeros(1, 3, 64, 64)
    y = x.clone()
    y[0, :, 3, 8] = 1.0                       # one pixel just right of patch (0, 0)'s border
    with torch.no_grad():
        changed = not torch.equal(stem(x)[0, :, 0, 0], stem(y)[0, :, 0, 0])
    assert changed == sees


def test_patch_labels_put_each_object_at_its_patch():
    from capkit.training.world_backbone import patch_labels
    scene = Scene((Obj("star", "blue", "big", 0.3, 0.8), Obj("circle", "red", "small", 0.9, 0.1)))
    lab = patch_labels([scene])[0]                                        # (4, 64)
    assert lab[0].sum() == 2
    assert list(lab[:, 6 * 8 + 2]) == [1, 3, 2, 1]                         # star, blue, big
    assert list(lab[:, 0 * 8 + 7]) == [1, 0, 0, 0]                         # circle, red, small
    assert (lab[1:, lab[0] == 0] == -100).all()


def test_short_training_is_deterministic(trained):
    a, b = trained
    assert a.sha256 == b.sha256
    assert [h["train_loss"] for h in a.history] == [h["train_loss"] for h in b.history]
    assert [h["stage"] for h in a.history] == [1, 2]
    for key in ("probe_shape", "probe_colour", "probe_size", "foil_all"):
        assert 0.0 <= a.final[key] <= 1.0
    recipe = json.loads((a.path / "world_backbone.json").read_text())
    assert recipe["command"].startswith("capkit train world-backbone")


def test_round_trip_through_the_hugging_face_class(trained):
    from capkit.training.world_clip import pixels, tokens
    result = trained[0]
    model, tok = B.load_world_backbone(result.path)
    assert type(model).__name__ == "WorldBackboneCLIP"
    images = [np.asarray(s.render(64)) for s in split_scenes("val", 3, seed=5)]
    enc = tokens(tok, ["a red circle .", "two blue stars ."])
    with torch.no_grad():
        before, after = (m(pixel_values=pixels(images), **enc).logits_per_image
                         for m in (result.model.eval(), model))
    assert torch.equal(before, after)
    from transformers import CLIPModel
    with pytest.raises(RuntimeError, match="ignore_mismatched_sizes"):
        CLIPModel.from_pretrained(result.path)             # the stem's weights have another shape


def test_missing_folder_says_how_to_make_one(tmp_path):
    with pytest.raises(FileNotFoundError, match="capkit train world-backbone"):
        B.load_world_backbone(tmp_path)


def test_cli_trains_the_tiny_preset(tmp_path, capsys):
    from capkit.cli import main
    assert main(["train", "world-backbone", "--preset", "tiny", "--out", str(tmp_path / "wb"),
                 "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert len(out["sha256"]) == 64 and (tmp_path / "wb" / "config.json").is_file()
    assert [h["stage"] for h in out["history"]] == [1, 2]
