"""world-ViLT (#14): deterministic pre-training, the HF folder round trip, the image / masked-image
paths, and the online loading path for a named ViLT checkpoint on a small config (no download)."""
import dataclasses
import hashlib
from pathlib import Path

import numpy as np
import pytest
import torch

from capkit.models import world_vilt as W
from capkit.world import describe
from capkit.world.splits import split_scenes

QUICK = dict(n_scenes=96, epochs=2, batch_size=32, warmup=2, n_val=24)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    from capkit.training.world_vilt import SCHEDULES, train_world_vilt
    schedule = dataclasses.replace(SCHEDULES["tiny"], **QUICK)
    return [train_world_vilt("tiny", out=tmp_path_factory.mktemp(f"run{k}"), seed=0,
                             schedule=schedule) for k in range(2)]


@pytest.fixture(scope="module")
def scenes():
    return split_scenes("val", 4, seed=3)


def _files(folder):
    return {n: hashlib.sha256((folder / n).read_bytes()).hexdigest() for n in W.FILES}


def test_short_pretraining_is_deterministic_byte_for_byte(trained):
    a, b = trained
    assert a.sha256 == b.sha256 == W.checkpoint_sha256(a.path)
    assert _files(a.path) == _files(b.path)
    meta = W.read_meta(a.path)
    assert meta["command"].startswith("capkit train world-vilt")
    # a CPU run's recipe is written as before --device existed (the shipped bytes stay)
    assert "device" not in meta and "--device" not in meta["command"]


def test_pretraining_reports_finite_losses_and_accuracies(trained):
    for h in trained[0].history:
        assert np.isfinite(h["itm_loss"]) and np.isfinite(h["mlm_loss"])
        assert 0.0 <= h["foil_all"] <= 1.0


def test_pretraining_does_not_touch_the_global_rng(tmp_path):
    from capkit.training.world_vilt import SCHEDULES, train_world_vilt
    torch.manual_seed(123)
    want = torch.rand(3)
    torch.manual_seed(123)
    train_world_vilt("tiny", seed=0, schedule=dataclasses.replace(SCHEDULES["tiny"],
                                                                  n_scenes=32, n_val=8))
    assert torch.equal(torch.rand(3), want)


def test_round_trip_gives_identical_logits(trained, scenes):
    from capkit.training.world_vilt import pixels, run, tokens
    r = trained[0]
    enc = W.load_world_vilt(r.path)
    texts = [describe(s, n=1, seed=0)[0] for s in scenes]
    images = [s.render(64) for s in scenes]
    with torch.no_grad():
        want = run(r.model, tokens(r.tokenizer, enc.texts(texts)), pixels(images)).logits[:, 0]
    assert np.allclose(enc.matching_logits(texts, images), want.double().numpy(), atol=1e-6)
    assert enc.signature == f"world-vilt@{r.sha256[:12]}~world"


def test_patch_embedding_matches_vilts_own_up_to_patch_order(trained, scenes):
    """ViLT's visual_embed permutes the patches at random; sorted rows must agree with ours."""
    vilt = trained[0].model.vilt
    px = W.PREPROCESS.batch([s.render(64) for s in scenes])[0]
    px = torch.from_numpy(px)
    with torch.no_grad(), torch.random.fork_rng():
        full = torch.ones(len(px), 64, 64, dtype=torch.long)
        theirs, _, _ = vilt.embeddings.visual_embed(px, full, max_image_length=-1)
        ours = W.image_embeddings(vilt, px)
    assert theirs.shape == ours.shape
    for a, b in zip(theirs, ours):
        assert torch.allclose(a[0], b[0])
        assert torch.allclose(a[1:].sort(dim=0).values, b[1:].sort(dim=0).values, atol=1e-6)


def test_the_image_changes_token_states_and_masking_removes_it(trained, scenes):
    enc = W.load_world_vilt(trained[0].path)
    text = [describe(scenes[0], n=1, seed=0)[0]] * 2
    images = [scenes[0].render(64), scenes[1].render(64)]
    (ids_a, a), (ids_b, b) = enc.token_states(text, images, enc.num_layers)
    assert np.array_equal(ids_a, ids_b) and not np.allclose(a, b, atol=1e-4)
    (_, c), (_, d) = enc.token_states(text, images, enc.num_layers, with_image=False)
    assert np.array_equal(c, d)


def test_token_states_drop_bos_eos_and_padding(trained, scenes):
    enc = W.load_world_vilt(trained[0].path)
    short, long = "a red circle", describe(scenes[0], n=1, seed=0)[0] + " and a blue square"
    img = scenes[0].render(64)
    (ids_alone, alone), = enc.token_states([short], [img], 1)
    (ids_batch, batched), _ = enc.token_states([short, long], [img, img], 1)
    assert len(ids_alone) == 3 and np.array_equal(ids_alone, ids_batch)
    assert np.allclose(alone, batched, atol=1e-5)
    with pytest.raises(ValueError, match="layer must be an integer from 1"):
        enc.token_states([short], [img], enc.num_layers + 1)


def _small_vilt_folder(tmp_path, trained):
    """A folder as `save_pretrained` writes a hub ViLT (no capkit recipe): the online path."""
    from transformers import ViltConfig, ViltForImageAndTextRetrieval
    config = ViltConfig(vocab_size=len(trained[0].tokenizer), hidden_size=32,
                        num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                        image_size=32, patch_size=16, max_position_embeddings=40)
    torch.manual_seed(0)
    ViltForImageAndTextRetrieval(config).save_pretrained(tmp_path)
    trained[0].tokenizer.save_pretrained(tmp_path)
    return tmp_path


def test_online_loading_path_on_a_small_config(tmp_path, trained, scenes):
    folder = _small_vilt_folder(tmp_path, trained)
    enc = W.load_vilt(folder)
    assert not enc.normal_form and enc.preprocess.size == 32 and enc.preprocess.resize == "square"
    assert enc.signature.startswith(f"{folder.name}@")
    logits = enc.matching_logits(["a red circle ."], [scenes[0].render(100)])
    assert logits.shape == (1,) and np.isfinite(logits).all()
    (_, states), = enc.token_states(["a red circle"], [scenes[0].render(100)], 2)
    assert states.shape == (3, 32)


@pytest.mark.parametrize("kind", ["world_clip", "world_vilt"])
def test_a_save_killed_midway_leaves_the_previous_checkpoint_whole(kind, tmp_path, monkeypatch):
    """world-CLIP's, world-ViLT's and UMIC's folders: retraining into an existing --out and being
    killed leaves the old folder whole, not new weights beside old metadata."""
    import importlib

    from capkit import cache_files
    M = importlib.import_module(f"capkit.models.{kind}")
    load = getattr(M, f"load_{kind}")
    cfg, tok = M.get_config("tiny"), M.build_tokenizer(["a", "red", "circle"])
    models = [M.build_model(cfg, len(tok), seed=k) for k in range(2)]
    out = tmp_path / "out"
    sha0 = M.save_folder(models[0], tok, out, {"seed": 0})
    real = cache_files.write_atomic

    def killed_at_preprocessor(path, write):
        if Path(path).name == "preprocessor_config.json":
            raise KeyboardInterrupt
        return real(path, write)
    with monkeypatch.context() as m:
        m.setattr(cache_files, "write_atomic", killed_at_preprocessor)
        with pytest.raises(KeyboardInterrupt):
            M.save_folder(models[1], tok, out, {"seed": 1})
    assert M.checkpoint_sha256(out) == sha0 and M.read_meta(out) == {"seed": 0}
    loaded = load(out).model.state_dict()
    assert all(torch.equal(v, loaded[k]) for k, v in models[0].state_dict().items())
    assert [p.name for p in tmp_path.iterdir()] == ["out"]
    assert M.save_folder(models[1], tok, out, {"seed": 1}) != sha0
    assert M.read_meta(out) == {"seed": 1}


def test_world_folders_and_bad_names_give_clear_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="capkit train world-vilt"):
        W.load_world_vilt(tmp_path)
    with pytest.raises(ValueError, match="unknown world-ViLT preset"):
        W.get_config("huge")
    with pytest.raises(TypeError, match="model must be a name"):
        W.load_named(3)


def test_small_preset_starts_from_world_clip_vision_tower(scenes):
    """Pre-training starts from world-CLIP's vision tower: the stem's first convolution,
    rewritten for ViLT's pixels, gives CLIP's patch embeddings on CLIP's pixels (at every patch
    that the stem's zero padding does not reach: the padded border reads 0 in each model's own
    normalisation), and every layer is copied."""
    from capkit.models import world_clip
    from capkit.training.world_vilt import start_from_world_clip
    model = W.build_model(W.get_config("small"), vocab_size=50)
    assert type(model.vilt.embeddings.patch_embeddings.projection).__name__ == "ConvStem"
    sha = start_from_world_clip(model)
    assert sha == world_clip.checkpoint_sha256(world_clip.SHIPPED)
    clip = world_clip.model_class().from_pretrained(str(world_clip.SHIPPED)).vision_model
    images = [s.render(64) for s in scenes]
    with torch.no_grad():
        theirs = clip.embeddings(torch.from_numpy(world_clip.PREPROCESS.batch(images)[0]))
        ours = W.image_embeddings(model.vilt, torch.from_numpy(W.PREPROCESS.batch(images)[0]))
    inner = (torch.arange(64) // 8 % 7 != 0).view(8, 8).logical_and(
        (torch.arange(64) % 8 % 7 != 0).view(8, 8)).flatten()             # not on the border
    keep = torch.cat([torch.tensor([True]), inner])
    torch.testing.assert_close(ours[:, keep], theirs[:, keep], rtol=0, atol=1e-4)
    assert not torch.allclose(ours[:, ~keep], theirs[:, ~keep], atol=1e-4)
    layer, vilt = clip.encoder.layers[2], model.vilt.encoder.layer[2]
    assert torch.equal(layer.mlp.fc2.weight, vilt.output.dense.weight)
    assert torch.equal(layer.self_attn.k_proj.bias, vilt.attention.attention.key.bias)
    fresh = W.build_model(W.get_config("small"), vocab_size=50)           # same seed
    for name in ("vilt.pooler.dense.weight", "rank_output.weight",
                 "vilt.embeddings.text_embeddings.word_embeddings.weight"):
        assert torch.equal(model.state_dict()[name], fresh.state_dict()[name])  # left random


def test_world_clip_start_refuses_a_model_of_another_width():
    from capkit.training.world_vilt import start_from_world_clip
    with pytest.raises(ValueError, match="same preset"):
        start_from_world_clip(W.build_model(W.get_config("tiny"), vocab_size=50))


def test_replaced_word_detection_targets_and_invariants():
    from capkit.training.world_vilt import mask_words, replace_words
    ids = torch.tensor([[1, 10, 11, 12, 13, 14, 15, 2], [1, 20, 21, 2, 0, 0, 0, 0]])
    text = {"input_ids": ids, "attention_mask": (ids > 0).long()}
    words = np.arange(10, 30)
    masked, labels = mask_words(text, 99, 0.25, np.random.default_rng(0))
    out, target = replace_words(masked, labels, words, 0.5, np.random.default_rng(1))
    again, target2 = replace_words(masked, labels, words, 0.5, np.random.default_rng(1))
    assert torch.equal(out["input_ids"], again["input_ids"]) and torch.equal(target, target2)
    changed = out["input_ids"] != masked["input_ids"]
    assert torch.equal(changed, target == 1)                  # a replaced word is never kept
    assert changed.any() and (target == 0).any()
    assert (target[labels >= 0] == -1).all()                  # masked words are MLM's, not RTD's
    assert (target[:, 0] == -1).all() and target[0, 7] == -1 and target[1, 3] == -1  # bos / eos
    assert (target[1, 4:] == -1).all() and (out["input_ids"][1, 4:] == 0).all()        # padding
    assert set(out["input_ids"][changed].tolist()) <= set(words.tolist())
    assert torch.equal(out["attention_mask"], text["attention_mask"])


def test_pretraining_with_replaced_word_detection_reports_its_loss():
    from capkit.training.world_vilt import SCHEDULES, train_world_vilt
    s = dataclasses.replace(SCHEDULES["tiny"], n_scenes=64, n_val=8, replace_rate=0.2)
    h = train_world_vilt("tiny", seed=0, schedule=s).history
    assert 0.0 < h[-1]["rtd_loss"] < 5.0
    assert "rtd_loss" not in train_world_vilt(
        "tiny", seed=0, schedule=dataclasses.replace(s, replace_rate=0.0)).history[-1]



def test_same_tag_replacements_stay_in_their_keyword_pool():
    from capkit.training.world_vilt import replace_words
    ids = torch.tensor([[1, 10, 11, 12, 13, 14, 15, 16, 17, 2]])
    text = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
    colours, shapes = np.array([10, 11, 12]), np.array([13, 14])
    pools = {**{int(i): colours for i in colours}, **{int(i): shapes for i in shapes}}
    for seed in range(20):
        out, target = replace_words(text, torch.full_like(ids, -100), np.arange(10, 40), 1.0,
                                    np.random.default_rng(seed), pools)
        new = out["input_ids"][0]
        assert (target[0, 1:-1] == 1).all()
        assert set(new[1:4].tolist()) <= set(colours.tolist())
        assert set(new[4:6].tolist()) <= set(shapes.tolist())
        assert (new[1:-1] != ids[0, 1:-1]).all()


def test_keyword_pools_follow_umics_keyword_dictionary():
    from capkit.models.world_vilt import load_named
    from capkit.training.umic import world_keyword_dictionary
    from capkit.training.world_vilt import keyword_pools
    tok = load_named("world-vilt").tokenizer
    pools = keyword_pools(tok)
    name = lambda ids: set(tok.convert_ids_to_tokens([int(i) for i in ids]))  # noqa: E731
    dictionary = world_keyword_dictionary()
    assert name(pools[tok.convert_tokens_to_ids("red")]) == set(dictionary["JJ"])
    assert name(pools[tok.convert_tokens_to_ids("circle")]) == set(dictionary["NN"])
    assert tok.convert_tokens_to_ids("left") not in pools          # only N / J keywords
    relations = keyword_pools(tok, relations=True)
    assert name(relations[tok.convert_tokens_to_ids("left")]) == {"right"}
    assert name(relations[tok.convert_tokens_to_ids("above")]) == {"below", "under"}
    assert name(relations[tok.convert_tokens_to_ids("red")]) == set(dictionary["JJ"])


def test_an_unknown_replacement_pool_is_refused():
    from capkit.training.world_vilt import SCHEDULES, train_world_vilt
    with pytest.raises(ValueError, match="replace_pool"):
        train_world_vilt("tiny", schedule=dataclasses.replace(SCHEDULES["tiny"],
                                                              replace_pool="same_tag"))


def test_a_keyword_alone_in_its_pool_gets_none():
    """A pool of one word would have no other word to swap in (replace_words would draw forever):
    such a word falls back to the whole vocabulary."""
    from capkit.training.umic import world_keyword_dictionary
    from capkit.training.world_vilt import keyword_pools
    dictionary = world_keyword_dictionary()
    lone, pair = dictionary["JJ"][0], dictionary["NN"][:2]

    class Vocab:
        def get_vocab(self):
            return {w: i for i, w in enumerate([lone, *pair])}
    pools = keyword_pools(Vocab())
    assert 0 not in pools and sorted(pools) == [1, 2]
