"""CLIPScore / RefCLIPScore against an independent implementation of the paper's formulas, on the
14 real images capkit has (12 COCO + CLIPScore's 2), with the untrained tiny CLIP."""
from __future__ import annotations

import json

import numpy as np
import pytest

from capkit.metrics import get_spec
from capkit.metrics.clipscore import PROMPT, clipscore, refclipscore
from capkit.models.presets import load_model
from capkit.models.protocol import UNTRAINED


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CAPKIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("CAPKIT_CLIP_MODEL", raising=False)


@pytest.fixture(scope="module")
def real_images(shared_data):
    """{id: (image path, candidate, references)} for the 14 images: COCO ids with one system's
    caption, and image1/image2 with CLIPScore's good captions."""
    from capkit.data import load
    from capkit.models.images import find_image_files
    coco = load("coco_karpathy_test")
    names = sorted(p.name for p in coco.images_dir.iterdir())
    ids = [str(int(n[len("COCO_val2014_"):-4])) for n in names]
    system = sorted(coco.systems)[0]
    out = {i: (p, coco.systems[system][i], coco.references[i])
           for i, p in zip(ids, find_image_files(ids, coco.images_dir))}
    ex = load("clipscore_example")
    for key in ex.references:
        out[key] = (ex.images_dir / f"{key}.jpg", ex.systems["good"][key], ex.references[key])
    assert len(out) == 14
    return out


def independent_clip_features(model, tokenizer, texts, paths):
    """The paper's pipeline written out with transformers + PIL: CLIP preprocessing
    (shorter side 224 bicubic, centre crop, CLIP mean/std), 77-token truncation."""
    import torch
    from PIL import Image
    mean = np.array([0.48145466, 0.4578275, 0.40821073], np.float32)
    std = np.array([0.26862954, 0.26130258, 0.27577711], np.float32)
    size = model.config.vision_config.image_size
    pixels = []
    for path in paths:
        img = Image.open(path).convert("RGB")
        w, h = img.size
        long = int(size * max(w, h) / min(w, h))
        img = img.resize((size, long) if w <= h else (long, size), Image.Resampling.BICUBIC)
        w, h = img.size
        left, top = int(round((w - size) / 2)), int(round((h - size) / 2))
        x = np.asarray(img.crop((left, top, left + size, top + size)), np.float32) / 255
        pixels.append(((x - mean) / std).transpose(2, 0, 1))
    enc = tokenizer(texts, padding=True, truncation=True, max_length=77, return_tensors="pt")
    with torch.no_grad():
        t = model.get_text_features(input_ids=enc["input_ids"],
                                    attention_mask=enc["attention_mask"])
        v = model.get_image_features(pixel_values=torch.tensor(np.stack(pixels)))
    t, v = (getattr(x, "pooler_output", x).numpy().astype(np.float64) for x in (t, v))
    return t / np.linalg.norm(t, axis=1, keepdims=True), v / np.linalg.norm(v, axis=1,
                                                                                keepdims=True)


def test_parity_with_the_papers_formulas_on_14_real_images(real_images):
    clip = load_model("tiny-clip")
    ids = list(real_images)
    paths = [real_images[i][0] for i in ids]
    cands = {i: real_images[i][1] for i in ids}
    refs = {i: real_images[i][2] for i in ids}
    t, v = independent_clip_features(clip.model, clip.tokenizer,
                                     [PROMPT + cands[i] for i in ids], paths)
    expected = 2.5 * np.maximum((t * v).sum(1), 0)
    got = clipscore(cands, images={i: p for i, p in zip(ids, paths)}, model="tiny-clip")
    np.testing.assert_allclose(got.per_caption, expected, atol=1e-5)
    assert got.corpus == pytest.approx(expected.mean(), abs=1e-5) and got.ids == tuple(ids)
    ref_sims = []
    for k, i in enumerate(ids):
        r, _ = independent_clip_features(clip.model, clip.tokenizer,
                                         [PROMPT + x for x in refs[i]], paths[:1])
        ref_sims.append(max((r @ t[k]).max(), 0.0))
    ref_sims = np.array(ref_sims)
    expected_ref = 2 * expected * ref_sims / (expected + ref_sims)
    got_ref = refclipscore(cands, refs, images={i: p for i, p in zip(ids, paths)},
                           model="tiny-clip")
    np.testing.assert_allclose(got_ref.parts["ref_cos"], ref_sims, atol=1e-5)
    np.testing.assert_allclose(got_ref.per_caption, np.nan_to_num(expected_ref), atol=1e-5)


def test_torchmetrics_variant_has_no_prompt_no_w_and_clamps_after_the_mean(real_images):
    clip = load_model("tiny-clip")
    ids = list(real_images)[:6]
    paths = [real_images[i][0] for i in ids]
    texts = [real_images[i][1] for i in ids]
    t, v = independent_clip_features(clip.model, clip.tokenizer, texts, paths)
    cos = (t * v).sum(1)
    tm = clipscore(texts, images=paths, model="tiny-clip", variant="torchmetrics")
    np.testing.assert_allclose(tm.per_caption, 100 * cos, atol=1e-3)
    assert tm.corpus == pytest.approx(max(100 * cos.mean(), 0.0), abs=1e-3)
    paper = clipscore(texts, images=paths, model="tiny-clip")
    assert "variant:paper" in paper.signature and "variant:torchmetrics" in tm.signature
    assert not np.allclose(paper.parts["cos"], tm.parts["cos"])     # the prompt matters


def test_long_captions_are_truncated_at_the_context_length(real_images):
    path = next(iter(real_images.values()))[0]
    long = "a dog " * 60
    s = clipscore([long, long + "and a cat " * 20], images=[path, path], model="tiny-clip")
    assert s.parts["n_truncated"] == 2
    assert s.per_caption[0] == pytest.approx(s.per_caption[1], abs=1e-6)


def test_untrained_label_images_from_a_folder_and_the_cache(real_images, tmp_path):
    from capkit.data import load
    coco = load("coco_karpathy_test")
    ids = [i for i in real_images if i.isdigit()][:3]
    cands = {i: real_images[i][1] for i in ids}
    a = clipscore(cands, images=coco.images_dir, model="tiny-clip", cache=tmp_path)
    b = clipscore(cands, images=coco.images_dir, model="tiny-clip", cache=tmp_path)
    assert UNTRAINED in a.signature
    np.testing.assert_array_equal(a.per_caption, b.per_caption)
    assert len(list((tmp_path / "features").rglob("*.npz"))) == 2     # texts and images


def test_the_model_comes_from_the_environment_and_defaults_to_the_papers(real_images,
                                                                         monkeypatch):
    path = next(iter(real_images.values()))[0]
    with pytest.raises(FileNotFoundError, match="tiny-clip"):
        clipscore(["a dog"], images=[path])                 # ViT-B/32 is not here offline
    monkeypatch.setenv("CAPKIT_CLIP_MODEL", "tiny-clip")
    assert UNTRAINED in clipscore(["a dog"], images=[path]).signature


def test_user_errors_say_what_to_do(real_images):
    path = next(iter(real_images.values()))[0]
    with pytest.raises(ValueError, match="pass images="):
        clipscore(["a dog"], model="tiny-clip")
    with pytest.raises(ValueError, match="variant must be one of"):
        clipscore(["a dog"], images=[path], model="tiny-clip", variant="open_clip")
    with pytest.raises(ValueError, match="has no w"):               # not ignored silently
        clipscore(["a dog"], images=[path], model="tiny-clip", variant="torchmetrics", w=1.0)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        clipscore(["a dog"], images=["/no/such.jpg"], model="tiny-clip")
    with pytest.raises(ValueError, match="empty or whitespace-only"):
        clipscore([" "], images=[path], model="tiny-clip")
    with pytest.raises(ValueError, match="no references"):
        refclipscore(["a dog"], [[]], images=[path], model="tiny-clip")
    with pytest.raises(ValueError, match="is a text model"):
        clipscore(["a dog"], images=[path], model="minilm")
    assert get_spec("clipscore").images and get_spec("refclipscore").images
    assert not get_spec("clipscore").references and get_spec("refclipscore").references
    assert not get_spec(load_model).images


def test_cli_scores_with_images(real_images, tmp_path, monkeypatch, capsys):
    from capkit.cli import main
    from capkit.data import load
    coco = load("coco_karpathy_test")
    ids = [i for i in real_images if i.isdigit()][:4]
    (tmp_path / "c.json").write_text(json.dumps({i: real_images[i][1] for i in ids}))
    (tmp_path / "r.json").write_text(json.dumps({i: real_images[i][2] for i in ids}))
    monkeypatch.setenv("CAPKIT_CLIP_MODEL", "tiny-clip")
    args = ["score", "--candidates", str(tmp_path / "c.json"), "--references",
            str(tmp_path / "r.json"), "--metrics",
            "bleu_4,capkit.metrics.clipscore:clipscore", "--format", "json"]
    assert main(args) == 2
    assert "--images DIR" in capsys.readouterr().err
    assert main(args + ["--images", str(coco.images_dir)]) == 0
    out = json.loads(capsys.readouterr().out)
    per = out["metrics"]["capkit.metrics.clipscore:clipscore"]["per_caption"]
    lib = clipscore({i: real_images[i][1] for i in ids}, images=coco.images_dir,
                    model="tiny-clip")
    assert per == pytest.approx(lib.by_id()) and "bleu_4" in out["metrics"]
