"""ViLBERTScore (#14): P/R/F against a from-scratch greedy match, the mean over references,
padding never matched, the image matters and the masked control ignores it, idf and layers."""
import dataclasses

import numpy as np
import pytest

from capkit.metrics.vilbertscore import greedy_prf, idf_weights, vilbertscore
from capkit.world import describe
from capkit.world.splits import split_scenes


def _scratch(a, b, wa, wb):
    """The authors' loops, one token at a time."""
    cos = lambda x, y: float(x @ y / np.linalg.norm(x) / np.linalg.norm(y))   # noqa: E731
    p = sum(wa[i] * max(cos(a[i], b[j]) for j in range(len(b))) for i in range(len(a)))
    r = sum(wb[j] * max(cos(a[i], b[j]) for i in range(len(a))) for j in range(len(b)))
    p, r = p / sum(wa), r / sum(wb)
    return p, r, 2 * p * r / (p + r)


def test_greedy_prf_matches_a_from_scratch_greedy_match():
    rng = np.random.default_rng(0)
    for tc, tr in ((1, 1), (3, 5), (6, 2)):
        a, b = rng.normal(size=(tc, 8)), rng.normal(size=(tr, 8))
        wa, wb = rng.random(tc) + 0.1, rng.random(tr) + 0.1
        assert np.allclose(greedy_prf(a, b, wa, wb), _scratch(a, b, wa, wb))
        assert np.allclose(greedy_prf(a, b), _scratch(a, b, np.ones(tc), np.ones(tr)))
    x = rng.normal(size=(4, 8))
    assert np.allclose(greedy_prf(x, x), (1.0, 1.0, 1.0))


def test_idf_weights_use_bert_scores_formula():
    docs = [np.array([1, 2, 2]), np.array([2, 3])]
    w = idf_weights(docs)
    assert w[2] == pytest.approx(np.log(3 / 3)) and w[1] == pytest.approx(np.log(3 / 2))


@pytest.fixture(scope="module")
def encoder(tmp_path_factory):
    from capkit.models.world_vilt import load_world_vilt
    from capkit.training.world_vilt import SCHEDULES, train_world_vilt
    s = dataclasses.replace(SCHEDULES["tiny"], n_scenes=64, epochs=1, n_val=8)
    r = train_world_vilt("tiny", out=tmp_path_factory.mktemp("wv"), seed=0, schedule=s,
                         model_config={"layers": 2})
    return load_world_vilt(r.path)


@pytest.fixture(scope="module")
def items():
    scenes = split_scenes("val", 3, seed=11)
    cands = [describe(s, 1, seed=1)[0] for s in scenes]
    refs = [describe(s, 3, seed=2) for s in scenes]
    return cands, refs, [s.render(64) for s in scenes]


def test_scores_are_the_mean_over_references_of_per_pair_matches(encoder, items):
    cands, refs, imgs = items
    got = vilbertscore(cands, refs, imgs, model=encoder)
    for i in range(len(cands)):
        texts = [cands[i], *refs[i]]
        states = encoder.token_states(texts, [imgs[i]] * len(texts), encoder.num_layers)
        pairs = [_scratch(states[0][1], s, np.ones(len(states[0][1])), np.ones(len(s)))
                 for _, s in states[1:]]
        want = np.mean(pairs, axis=0)
        assert np.allclose([got.parts["P"][i], got.parts["R"][i], got.parts["F"][i]], want)
    assert np.allclose(got.per_caption, got.parts["F"])
    assert "layer:2" in got.signature and "image:with" in got.signature


def test_padding_is_never_matched(encoder, items):
    """A short caption scored beside long ones equals the same caption scored alone."""
    cands, refs, imgs = items
    short = ["a circle"]
    alone = vilbertscore(short, [refs[0]], [imgs[0]], model=encoder)
    mixed = vilbertscore(short + cands[1:], [refs[0]] + refs[1:], [imgs[0]] + imgs[1:],
                         model=encoder, batch_size=2)
    assert mixed.per_caption[0] == pytest.approx(alone.per_caption[0], abs=1e-6)


def test_the_image_changes_scores_and_the_control_does_not_depend_on_it(encoder, items):
    cands, refs, imgs = items
    swapped = imgs[1:] + imgs[:1]
    a = vilbertscore(cands, refs, imgs, model=encoder)
    b = vilbertscore(cands, refs, swapped, model=encoder)
    assert not np.allclose(a.per_caption, b.per_caption, atol=1e-6)
    c = vilbertscore(cands, refs, imgs, model=encoder, with_image=False)
    d = vilbertscore(cands, refs, swapped, model=encoder, with_image=False)
    e = vilbertscore(cands, refs, model=encoder, with_image=False)
    assert np.array_equal(c.per_caption, d.per_caption)
    assert np.array_equal(c.per_caption, e.per_caption)
    assert "image:masked" in c.signature


def test_layer_and_idf_options(encoder, items):
    cands, refs, imgs = items
    l1 = vilbertscore(cands, refs, imgs, model=encoder, layer=1)
    l2 = vilbertscore(cands, refs, imgs, model=encoder, layer=2)
    assert not np.allclose(l1.per_caption, l2.per_caption)
    idf = vilbertscore(cands, refs, imgs, model=encoder, idf=True)
    assert "idf:True" in idf.signature and not np.allclose(idf.per_caption, l2.per_caption)
    with pytest.raises(ValueError, match="layer must be an integer from 1 to 2"):
        vilbertscore(cands, refs, imgs, model=encoder, layer=0)
    with pytest.raises(ValueError, match="pass images="):
        vilbertscore(cands, refs, model=encoder)


def test_registered_world_variants_run_on_the_shipped_checkpoint(items):
    from capkit.metrics import resolve
    cands, refs, imgs = items
    fns = resolve(["vilbertscore_world", "vilbertscore_world_noimage"])
    a = fns["vilbertscore_world"].function(cands, refs, images=imgs)
    b = fns["vilbertscore_world_noimage"].function(cands, refs, images=imgs)
    assert "image:with" in a.signature and "image:masked" in b.signature
    assert "world-vilt@" in a.signature and np.isfinite(a.per_caption).all()
    assert not np.allclose(a.per_caption, b.per_caption)


def _small_bridgetower_folder(folder):
    """A folder as `save_pretrained` writes a hub BridgeTower: the online path, no download."""
    import torch
    from transformers import BridgeTowerConfig, BridgeTowerModel

    from capkit.models.bridgetower import _processor_class
    from capkit.models.world_vilt import build_tokenizer
    from capkit.training.world_clip import grammar_words
    tok = build_tokenizer(grammar_words())
    config = BridgeTowerConfig(
        text_config={"vocab_size": len(tok), "hidden_size": 32, "num_hidden_layers": 2,
                     "num_attention_heads": 2, "intermediate_size": 64,
                     "max_position_embeddings": 44, "pad_token_id": tok.pad_token_id},
        vision_config={"hidden_size": 64, "num_hidden_layers": 2, "patch_size": 16,
                       "image_size": 32},
        hidden_size=32, num_hidden_layers=2, num_attention_heads=2)
    torch.manual_seed(0)
    BridgeTowerModel(config).save_pretrained(folder)
    tok.save_pretrained(folder)
    _processor_class()(size={"shortest_edge": 32},
                       crop_size={"shortest_edge": 32}).save_pretrained(folder)
    return folder


def test_bridgetower_loading_path_on_a_small_config(tmp_path, items):
    """BridgeTowerModel by folder: the text states after the last cross-modal layer are the
    model's own text_features; scores depend on the image; no masked control."""
    import torch

    from capkit.models.bridgetower import is_bridgetower, load_bridgetower
    cands, refs, imgs = items
    folder = _small_bridgetower_folder(tmp_path / "bt")
    assert is_bridgetower(folder) and is_bridgetower("BridgeTower/bridgetower-base")
    assert not is_bridgetower("world-vilt") and not is_bridgetower("dandelin/vilt-b32-mlm")
    enc = load_bridgetower(folder)
    (ids, last), = enc.token_states([cands[0]], [imgs[0]], 2)
    text = enc.tokenizer([cands[0]], return_tensors="pt")
    pix, pix_mask = enc.pixels([imgs[0]])
    with torch.no_grad():
        own = enc.model(**text, pixel_values=pix, pixel_mask=pix_mask).text_features[0]
    assert np.allclose(last, own[1:-1].double().numpy(), atol=1e-6)
    assert np.array_equal(ids, text["input_ids"][0, 1:-1].numpy())

    a = vilbertscore(cands, refs, imgs, model=str(folder))
    b = vilbertscore(cands, refs, imgs[1:] + imgs[:1], model=str(folder))
    assert a.signature.count("local=bt#") == 1 and np.isfinite(a.per_caption).all()
    assert not np.allclose(a.per_caption, b.per_caption, atol=1e-7)
    same = vilbertscore([refs[0][0]], [[refs[0][0]]], [imgs[0]], model=str(folder), layer=1)
    assert same.per_caption[0] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="cannot mask the image out"):
        vilbertscore(cands, refs, imgs, model=str(folder), with_image=False)
    with pytest.raises(ValueError, match="from 1 to 2 \\(the cross-modal layers\\)"):
        vilbertscore(cands, refs, imgs, model=str(folder), layer=3)
