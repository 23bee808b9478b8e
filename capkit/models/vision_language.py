"""Vision-language models: CLIP (texts and images in one space), BLIP ITM and ViLT (match scores).

* ``CLIPEncoder``: ``embed_texts`` (projected text features, truncated at the model's context
  length, 77 tokens for CLIP) and ``embed_images`` (projected image features); CLIPScore reads
  them. ``load_clip`` takes a hub name such as ``openai/clip-vit-base-patch32`` (the CLIPScore
  paper's ViT-B/32; downloads when online) or a local folder.
* ``ImageTextMatcher``: ``match(images, texts)`` = the probability that each caption matches its
  image: BLIP's ITM head (softmax, class 1) or ViLT's retrieval score (sigmoid of its logit).
  ``load_image_text_matcher`` takes ``Salesforce/blip-itm-base-coco``,
  ``dandelin/vilt-b32-finetuned-coco`` or a local folder.

Image preprocessing is capkit's own (``capkit.models.images``, PIL + numpy), read from the
folder's ``preprocessor_config.json`` when there is one. ``encode_texts`` / ``encode_images`` add
de-duplication and the on-disk feature cache. Explained in notebooks/03_embedding_metrics.ipynb,
section 4 "CLIPScore".
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from capkit.models.feature_cache import FeatureCache, model_revision, text_key
from capkit.models.images import ImagePreprocess, image_checksum
from capkit.models.protocol import UNTRAINED_FLAG, labelled, source_signature
from capkit.models.hub import hub_loading
from capkit.models.runtime import float32_kernels, length_batches, progress_bar, resolve_device


def _features(out):
    """transformers < 5 returns a tensor from get_*_features, 5.x an output with pooler_output."""
    return out if hasattr(out, "ndim") else out.pooler_output


class _HFVision:
    """Shared by CLIP and the matchers: a model, its tokenizer and preprocessing, on a device."""

    def __init__(self, model, tokenizer, preprocess: ImagePreprocess, *, signature: str,
                 untrained: bool = False, device: str | None = None):
        self.device = resolve_device(device)
        self.model = model.eval().to(self.device)
        self.tokenizer, self.preprocess = tokenizer, preprocess
        self.untrained = untrained or bool(getattr(model.config, UNTRAINED_FLAG, False))
        self.signature = labelled(f"{signature}~img={preprocess.signature}", self.untrained)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.signature}, device={self.device})"

    def _pixels(self, images: Sequence):
        import torch
        pixels, mask = self.preprocess.batch(images)
        return torch.from_numpy(pixels).to(self.device), torch.from_numpy(mask).to(self.device)

    def _tokens(self, texts: Sequence[str], max_length: int):
        enc = self.tokenizer(list(texts), padding=True, truncation=True, max_length=max_length,
                             return_tensors="pt")
        return {k: v.to(self.device) for k, v in enc.items() if k != "token_type_ids"}


class CLIPEncoder(_HFVision):
    """A CLIP model (the protocol's ``VisionLanguageEncoder``)."""

    @property
    def context_length(self) -> int:
        return int(self.model.config.text_config.max_position_embeddings)

    @property
    def dim(self) -> int:
        return int(self.model.config.projection_dim)

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Tokens of each text before truncation (start and end tokens included)."""
        return [len(ids) for ids in self.tokenizer(list(texts))["input_ids"]]

    def embed_texts(self, texts: Sequence[str], *, batch_size: int = 64,
                    progress: bool | str = "auto") -> np.ndarray:
        """(N, D) projected text features, not normalised; texts truncated at context_length."""
        import torch
        out = np.zeros((len(texts), self.dim), np.float32)
        with progress_bar(len(texts), "CLIP texts", progress) as bar:
            for batch in length_batches([len(t) for t in texts], batch_size):
                enc = self._tokens([texts[i] for i in batch], self.context_length)
                with torch.inference_mode(), float32_kernels(self.device):
                    out[batch] = _features(self.model.get_text_features(**enc)).float().cpu()
                bar.update(len(batch))
        return out

    def embed_images(self, images: Sequence, *, batch_size: int = 16,
                     progress: bool | str = "auto") -> np.ndarray:
        """(N, D) projected image features, not normalised."""
        import torch
        out = np.zeros((len(images), self.dim), np.float32)
        with progress_bar(len(images), "CLIP images", progress) as bar:
            for start in range(0, len(images), batch_size):
                pixels, _ = self._pixels(images[start:start + batch_size])
                with torch.inference_mode(), float32_kernels(self.device):
                    feats = self.model.get_image_features(pixel_values=pixels)
                out[start:start + len(pixels)] = _features(feats).float().cpu()
                bar.update(len(pixels))
        return out


class HFImageTextMatcher(_HFVision):
    """BLIP ITM or ViLT retrieval (the protocol's ``ImageTextMatcher``)."""

    def match(self, images: Sequence, texts: Sequence[str], *, batch_size: int = 8,
              progress: bool | str = "auto") -> np.ndarray:
        """(N,) probability that texts[i] describes images[i]."""
        import torch
        if len(images) != len(texts):
            raise ValueError(f"got {len(images)} images but {len(texts)} texts; match scores "
                             "pairs, so give one image per text")
        kind = self.model.config.model_type
        max_length = min(self.tokenizer.model_max_length, 512)
        out = np.zeros(len(texts), np.float64)
        with progress_bar(len(texts), f"{kind} match", progress) as bar:
            for start in range(0, len(texts), batch_size):
                stop = min(start + batch_size, len(texts))
                pixels, mask = self._pixels(images[start:stop])
                enc = self._tokens(texts[start:stop], max_length)
                with torch.inference_mode(), float32_kernels(self.device):
                    if kind == "blip":
                        logits = self.model(pixel_values=pixels, use_itm_head=True, **enc)
                        prob = logits.itm_score.float().softmax(-1)[:, 1]
                    else:
                        logits = self.model(pixel_values=pixels, pixel_mask=mask, **enc).logits
                        prob = logits.float()[:, 0].sigmoid()
                out[start:stop] = prob.cpu().numpy()
                bar.update(stop - start)
        return out


def read_preprocess(name_or_path: str, image_size: int, kind: str, *,
                    local_files_only: bool = False) -> ImagePreprocess:
    """The model's image preprocessing from its ``preprocessor_config.json`` (defaults if none;
    ``local_files_only``: from the cache only, as ``hub_loading`` says)."""
    defaults = {"clip": ImagePreprocess(image_size, image_size),
                "blip": ImagePreprocess(image_size, None, resize="square"),
                "vilt": ImagePreprocess(image_size, None, (0.5,) * 3, (0.5,) * 3, resize="vilt",
                                        max_size=int(1333 / 800 * image_size))}
    base = defaults[kind]
    try:
        from transformers.utils import cached_file
        path = cached_file(name_or_path, "preprocessor_config.json",
                           local_files_only=local_files_only,
                           _raise_exceptions_for_missing_entries=False)
    except OSError:
        path = None
    if not path:
        return base
    cfg = json.loads(Path(path).read_text())
    size, crop = cfg.get("size", base.size), cfg.get("crop_size")      # ints in old configs
    short = size if isinstance(size, int) else size.get("shortest_edge") or size.get("height")
    crop = crop.get("height") if isinstance(crop, dict) else crop
    if not cfg.get("do_center_crop", kind == "clip"):
        crop = None
    return ImagePreprocess(int(short or base.size), int(crop) if crop else None,
                           tuple(cfg.get("image_mean", base.mean)),
                           tuple(cfg.get("image_std", base.std)), resize=base.resize,
                           max_size=int(cfg.get("max_size", base.max_size)),
                           divisor=int(cfg.get("size_divisor", base.divisor)))


def _name(name_or_path: str | Path) -> str:
    """A folder's expanded path, or the hub name as given."""
    path = Path(name_or_path).expanduser()
    return str(path) if path.exists() else str(name_or_path)


def load_clip(name_or_path: str | Path, *, device: str | None = None) -> CLIPEncoder:
    """A CLIP model by hub name (e.g. ``openai/clip-vit-base-patch32``) or local folder."""
    from transformers import AutoTokenizer, CLIPModel
    name = _name(name_or_path)
    with hub_loading(name, "CLIP model", tiny="tiny-clip") as opts:
        model = CLIPModel.from_pretrained(name, **opts)
        tokenizer = AutoTokenizer.from_pretrained(name, **opts)
        pre = read_preprocess(name, model.config.vision_config.image_size, "clip", **opts)
    return CLIPEncoder(model, tokenizer, pre, device=device,
                       signature=source_signature(name, model.config))


def load_image_text_matcher(name_or_path: str | Path, *,
                            device: str | None = None) -> HFImageTextMatcher:
    """BLIP ITM (``Salesforce/blip-itm-base-coco``) or ViLT retrieval
    (``dandelin/vilt-b32-finetuned-coco``) by hub name or local folder."""
    from transformers import (AutoConfig, AutoTokenizer, BlipForImageTextRetrieval,
                              ViltForImageAndTextRetrieval)
    classes = {"blip": BlipForImageTextRetrieval, "vilt": ViltForImageAndTextRetrieval}
    name = _name(name_or_path)
    with hub_loading(name, "image-text matcher", tiny="tiny-blip-itm") as opts:
        kind = AutoConfig.from_pretrained(name, **opts).model_type
        if kind not in classes:
            raise ValueError(f"{name_or_path!r} is a {kind!r} model; image-text matching "
                             "supports BLIP (blip-itm-*) and ViLT (vilt-*-finetuned-coco) "
                             "checkpoints")
        model = classes[kind].from_pretrained(name, **opts)
        tokenizer = AutoTokenizer.from_pretrained(name, **opts)
        size = model.config.vision_config.image_size if kind == "blip" else 384
        pre = read_preprocess(name, size, kind, **opts)
    return HFImageTextMatcher(model, tokenizer, pre, device=device,
                              signature=source_signature(name, model.config))


def _cached_vectors(encoder, kind: str, keys: list[str], embed, cache: FeatureCache | None):
    """(N, D) ``embed(rows)`` of each distinct key, through ``cache`` (one entry per key)."""
    if cache is None or not keys:
        return embed(list(range(len(keys))))
    items = cache.get_or_compute_items(encoder.signature, kind, keys,
                                       lambda rows: [{"x": v} for v in embed(rows)],
                                       revision=model_revision(encoder))
    return np.stack([item["x"] for item in items])


def encode_texts(encoder: CLIPEncoder, texts: Sequence[str], *,
                 cache: FeatureCache | None = None, batch_size: int = 64,
                 progress: bool | str = "auto") -> np.ndarray:
    """``encoder.embed_texts``, each distinct text once, through ``cache`` when given."""
    unique = list(dict.fromkeys(texts))

    def embed(rows: list[int]) -> np.ndarray:
        return encoder.embed_texts([unique[i] for i in rows], batch_size=batch_size,
                                   progress=progress)

    x = _cached_vectors(encoder, f"text_features|ctx={encoder.context_length}",
                       list(map(text_key, unique)), embed, cache)
    where = {t: i for i, t in enumerate(unique)}
    return x[[where[t] for t in texts]]


def encode_images(encoder, images: Sequence, *, cache: FeatureCache | None = None,
                  batch_size: int = 16, progress: bool | str = "auto") -> np.ndarray:
    """``encoder.embed_images``, each distinct image (by content checksum) once, cached."""
    sums = [image_checksum(im) for im in images]
    first = {s: i for i, s in reversed(list(enumerate(sums)))}
    unique = list(dict.fromkeys(sums))

    def embed(rows: list[int]) -> np.ndarray:
        picked = [images[first[unique[i]]] for i in rows]
        return encoder.embed_images(picked, batch_size=batch_size, progress=progress)

    x = _cached_vectors(encoder, "image_features", unique, embed, cache)
    where = {s: i for i, s in enumerate(unique)}
    return x[[where[s] for s in sums]]
