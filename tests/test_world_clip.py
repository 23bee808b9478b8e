"""world-CLIP (#12.4, #40): the convolutional stem under a Hugging Face CLIPModel, the folder round
trip through that class, the patch annotations of stage 1, a short deterministic two-stage
training run, the CLI, and the registered clipscore_world / refclipscore_world on world images."""
import dataclasses
import hashlib
import json

import numpy as np
import pytest
import torch

from capkit.models import world_clip as W
from capkit.world import describe
from capkit.world.splits import split_scenes

QUICK = dict(n_scenes=160, stage1_epochs=1, stage2_epochs=2, batch_size=32, warmup=2, n_val=32)


@pytest.fixture(scope="module")
def scenes():
    return split_scenes("val", 6, seed=3)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    from capkit.training.world_clip import SCHEDULES, train_world_clip
    schedule = dataclasses.replace(SCHEDULES["tiny"], **QUICK)
    runs = [train_world_clip("tiny", out=tmp_path_factory.mktemp(f"run{k}"), seed=0,
                             schedule=schedule) for k in range(2)]
    return runs


def _files(folder):
    return {n: hashlib.sha256((folder / n).read_bytes()).hexdigest() for n in W.FILES}


def test_short_training_is_deterministic_byte_for_byte(trained):
    a, b = trained
    assert a.sha256 == b.sha256 == W.checkpoint_sha256(a.path)
    assert _files(a.path) == _files(b.path)


def test_short_training_lowers_the_loss(trained):
    history = trained[0].history
    assert [h["stage"] for h in history] == [1, 2, 2]
    assert history[-1]["train_loss"] < history[1]["train_loss"]       # stage 2's CLIP loss
    assert all(np.isfinite(h["train_loss"]) for h in history)
    for key in ("i2t_r1", "t2i_r1", "foil_all", "probe_shape", "probe_colour", "probe_size"):
        assert 0.0 <= history[-1][key] <= 1.0


def test_shapes_and_config():
    cfg = W.get_config("tiny")
    model = W.build_model(cfg, vocab_size=30)
    assert isinstance(model, W.model_class())
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


@pytest.mark.parametrize("overlap,layers,sees", [(0, 0, False), (4, 0, True), (0, 1, True)])
def test_the_stem_sees_across_patch_borders(overlap, layers, sees):
    model = W.build_model(W.get_config("tiny", stem_overlap=overlap, stem_layers=layers), 30)
    stem = model.vision_model.embeddings.patch_embedding
    x = torch.zeros(1, 3, 64, 64)
    y = x.clone()
    y[0, :, 3, 8] = 1.0                       # one pixel just right of patch (0, 0)'s border
    with torch.no_grad():
        changed = not torch.equal(stem(x)[0, :, 0, 0], stem(y)[0, :, 0, 0])
    assert changed == sees


def test_without_a_stem_the_model_is_a_plain_clip():
    from transformers import CLIPModel
    cfg = W.get_config("tiny", stem_overlap=0, stem_layers=0)
    ours = W.build_model(cfg, 30, seed=1)
    plain = CLIPModel(ours.config)
    plain.load_state_dict(ours.state_dict())             # same names and shapes, no extra weight
    px = torch.rand(2, 3, 64, 64)
    with torch.no_grad():
        assert torch.equal(ours.vision_model(pixel_values=px).pooler_output,
                           plain.vision_model(pixel_values=px).pooler_output)


def test_patch_labels_put_each_object_at_its_patch():
    from capkit.training.world_clip import patch_labels
    from capkit.world.scene import Obj, Scene
    scene = Scene((Obj("star", "blue", "big", 0.3, 0.8), Obj("circle", "red", "small", 0.9, 0.1)))
    lab = patch_labels([scene])[0]                                        # (4, 64)
    assert lab[0].sum() == 2
    assert list(lab[:, 6 * 8 + 2]) == [1, 3, 2, 1]                         # star, blue, big
    assert list(lab[:, 0 * 8 + 7]) == [1, 0, 0, 0]                         # circle, red, small
    assert (lab[1:, lab[0] == 0] == -100).all()


def test_round_trip_gives_identical_outputs(trained, scenes):
    """The folder training wrote loads as the same model: every weight equal, and the loaded
    encoder's features equal, bit for bit, those of the trained model in memory through the
    same code path. Against Hugging Face's own calls, which take the texts in their given order
    where ``embed_texts`` batches them longest first, they agree to float32 rounding: on some
    CPUs (AVX2 without AVX-512, as on the course machines) a row's last bits depend on its place
    in the batch (~7e-7 here)."""
    from capkit.models.vision_language import CLIPEncoder
    run = trained[0]
    enc = W.load_world_clip(run.path)
    saved, loaded = run.model.state_dict(), enc.model.state_dict()
    assert saved.keys() == loaded.keys()
    assert all(torch.equal(saved[name], loaded[name]) for name in saved)
    in_memory = CLIPEncoder(run.model, run.tokenizer, enc.preprocess, signature="in-memory")
    images = [s.render(64) for s in scenes]
    texts = [describe(s, n=1, seed=0)[0] for s in scenes]
    np.testing.assert_array_equal(enc.embed_images(images), in_memory.embed_images(images))
    np.testing.assert_array_equal(enc.embed_texts(texts), in_memory.embed_texts(texts))
    with torch.no_grad():
        px = torch.from_numpy(W.PREPROCESS.batch(images)[0])
        want_img = run.model.get_image_features(pixel_values=px)
        ids = run.tokenizer(texts, padding=True, return_tensors="pt")
        want_txt = run.model.get_text_features(input_ids=ids["input_ids"],
                                               attention_mask=ids["attention_mask"])
    pooled = lambda o: (o if hasattr(o, "ndim") else o.pooler_output).numpy()  # noqa: E731
    np.testing.assert_allclose(enc.embed_images(images), pooled(want_img), rtol=0, atol=1e-5)
    np.testing.assert_allclose(enc.embed_texts(texts), pooled(want_txt), rtol=0, atol=1e-5)
    assert W.read_meta(run.path)["command"].startswith("capkit train world-clip")


def test_loads_through_its_hugging_face_class(trained):
    from transformers import CLIPModel

    from capkit.models.vision_language import CLIPEncoder
    enc = W.load_world_clip(trained[0].path)
    assert isinstance(enc, CLIPEncoder) and type(enc.model) is W.model_class()
    assert isinstance(enc.model, CLIPModel)
    assert enc.preprocess == W.PREPROCESS and enc.context_length == W.PRESETS["tiny"].context
    assert enc.model.config.text_config.eos_token_id == enc.tokenizer.eos_token_id == 3
    with pytest.raises(RuntimeError, match="ignore_mismatched_sizes"):
        CLIPModel.from_pretrained(trained[0].path)     # the stem's weights have another shape


def test_tokenizer_knows_every_grammar_word(trained, scenes):
    tok = trained[0].tokenizer
    texts = ["A photo depicts " + r for s in scenes for r in describe(s, n=5, seed=1)]
    ids = tok(texts)["input_ids"]
    assert all(tok.unk_token_id not in row for row in ids)
    assert all(row[0] == tok.bos_token_id and row[-1] == tok.eos_token_id for row in ids)


def test_signature_names_the_checkpoint(trained):
    enc = W.load_world_clip(trained[0].path)
    assert f"world-clip@{trained[0].sha256[:12]}" in enc.signature and "world" in enc.signature


def test_errors_say_what_to_do(tmp_path):
    with pytest.raises(ValueError, match="choose one of tiny, small"):
        W.get_config("huge")
    with pytest.raises(FileNotFoundError, match="capkit train world-clip"):
        W.load_world_clip(tmp_path)


def test_cli_trains_world_clip(tmp_path, capsys, monkeypatch):
    from capkit.cli import main
    from capkit.training import world_clip as T
    monkeypatch.setitem(T.SCHEDULES, "tiny", dataclasses.replace(T.SCHEDULES["tiny"], **QUICK))
    assert main(["train", "world-clip", "--preset", "tiny", "--out", str(tmp_path / "wc"),
                 "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["sha256"] == W.checkpoint_sha256(tmp_path / "wc")
    assert [h["stage"] for h in out["history"]] == [1, 2, 2]


@pytest.mark.parametrize("name", ["clipscore_world", "refclipscore_world"])
def test_registered_metrics_score_world_images(name, scenes):
    from capkit.metrics.registry import get_spec
    spec = get_spec(name)
    assert spec.images and spec.trained.startswith("capkit train world-clip")
    images = [s.render(64) for s in scenes]
    refs = [describe(s, n=5, seed=2) for s in scenes]
    cands = [describe(s, n=1, seed=9)[0] for s in scenes]
    scores = spec.function(cands, refs, images)
    low, high = spec.score_range
    assert np.all(np.isfinite(scores.per_caption))
    assert np.all((scores.per_caption >= low) & (scores.per_caption <= high))
    assert f"model:world-clip@{W.checkpoint_sha256(W.SHIPPED)[:12]}~world" in scores.signature


def test_shipped_checkpoint_is_small_and_records_its_command():
    size = sum((W.SHIPPED / n).stat().st_size for n in W.FILES)
    assert size < 20 * 2 ** 20
    meta = W.read_meta(W.SHIPPED)
    assert meta["command"].startswith("capkit train world-clip --preset small")
    assert meta["schedule"]["stage1_epochs"] > 0 and meta["config"]["stem_layers"] > 0
