"""world-CLIP (#12.4): the HF folder round trip, the load_clip path, a short deterministic training
run, the CLI, and the registered clipscore_world / refclipscore_world on world images."""
import dataclasses
import hashlib
import json

import numpy as np
import pytest
import torch

from capkit.models import world_clip as W
from capkit.world import describe
from capkit.world.splits import split_scenes

QUICK = dict(n_scenes=160, epochs=2, batch_size=32, warmup=2, n_val=32)


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
    assert history[-1]["train_loss"] < history[0]["train_loss"]
    assert all(np.isfinite(h["train_loss"]) for h in history)
    for key in ("i2t_r1", "t2i_r1", "foil_all"):
        assert 0.0 <= history[-1][key] <= 1.0


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


def test_loads_through_load_clip(trained):
    from transformers import CLIPModel

    from capkit.models.vision_language import CLIPEncoder, load_clip
    enc = load_clip(trained[0].path)
    assert isinstance(enc, CLIPEncoder) and isinstance(enc.model, CLIPModel)
    assert enc.preprocess == W.PREPROCESS and enc.context_length == W.PRESETS["tiny"].context
    assert enc.model.config.text_config.eos_token_id == enc.tokenizer.eos_token_id == 3


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
    assert W.read_meta(W.SHIPPED)["command"].startswith("capkit train world-clip --preset small")
