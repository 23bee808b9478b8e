"""BridgeTower (Xu et al., AAAI 2023) as a token-state encoder for ViLBERTScore, online only.

ViLBERT (the encoder of Lee et al. 2020) is not in transformers; its closest relative there is
``BridgeTowerModel`` (``BridgeTower/bridgetower-base``): a text stream (RoBERTa) and an image
stream (CLIP ViT) joined by cross-modal layers in which each stream attends to the other, as
ViLBERT's co-attention layers do. ViLBERTScore reads the text stream after the last co-attention
layer; here that is the text side of the last cross-modal layer (``text_features``), and
``layer=k`` picks the k-th cross-modal layer (1..``num_hidden_layers``, 6 in the base model).

Images go through the checkpoint's own ``BridgeTowerImageProcessor`` (shorter side 288, centre
crop, CLIP mean / std), texts through its tokenizer; the first and last tokens (``<s>``,
``</s>``) and padding are dropped, as ViLBERTScore's code drops [CLS] / [SEP].

No text-only control: BridgeTower's cross-attention to the image takes no mask (the image
stream is never padded), so the image cannot be masked out as ``with_image=False`` does for
ViLT; that control needs a ViLT model. Tested on a small config of the same classes (no
download); ``BridgeTower/bridgetower-base`` needs the internet once. Used by
``capkit.metrics.vilbertscore`` (notebooks/08_vilbertscore.ipynb, "Where to go next").
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from capkit.models.protocol import source_signature

MODEL_TYPE = "bridgetower"


class BridgeTowerEncoder:
    """A loaded ``BridgeTowerModel`` with its tokenizer and image processor."""

    def __init__(self, model, tokenizer, processor, signature: str, *, device: str | None = None):
        from capkit.models.runtime import resolve_device
        self.device = resolve_device(device)
        self.model = model.to(self.device).eval()
        self.tokenizer, self.processor, self.signature = tokenizer, processor, signature
        self.num_layers = model.config.num_hidden_layers                   # cross-modal layers
        self.context = model.config.text_config.max_position_embeddings - 2   # RoBERTa offset

    def pixels(self, images):
        from capkit.models.images import open_image
        out = self.processor(images=[open_image(im) for im in images], return_tensors="pt")
        return out["pixel_values"].to(self.device), out["pixel_mask"].to(self.device)

    def token_states(self, texts: list[str], images, layer: int, *, with_image: bool = True,
                     batch_size: int = 128) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per text, its (T_i,) token ids and (T_i, D) text states after cross-modal layer
        ``layer`` (1..num_layers), the first and last positions and padding dropped."""
        import torch
        if not with_image:
            raise ValueError("BridgeTower cannot mask the image out (its cross-attention takes "
                             "no image mask); run the text-only control with a ViLT model, e.g. "
                             "model='world-vilt' or 'dandelin/vilt-b32-mlm'")
        from capkit.models.runtime import float32_kernels
        layer = self.check_layer(layer)
        out = []
        with torch.no_grad(), float32_kernels(self.device):
            for i in range(0, len(texts), batch_size):
                text = self.tokenizer(list(texts[i:i + batch_size]), padding=True,
                                      truncation=True, max_length=self.context,
                                      return_tensors="pt")
                ids, mask = text["input_ids"].to(self.device), text["attention_mask"].to(self.device)
                pixels, pixel_mask = self.pixels(images[i:i + batch_size])
                res = self.model(input_ids=ids, attention_mask=mask, pixel_values=pixels,
                                 pixel_mask=pixel_mask, output_hidden_states=True)
                states = res.hidden_states[2][layer - 1][0]                # (B, T, D) text side
                for row_ids, row, m in zip(ids, states, mask):
                    n = int(m.sum())
                    out.append((row_ids[1:n - 1].cpu().numpy(),
                                row[1:n - 1].double().cpu().numpy()))
        return out

    def check_layer(self, layer: int) -> int:
        from capkit.models.world_vilt import check_layer
        return check_layer(layer, self.num_layers, "the cross-modal layers")


def is_bridgetower(name_or_path: str | Path) -> bool:
    """Whether a folder's ``config.json`` (or, for a hub name, its name) is BridgeTower's."""
    path = Path(str(name_or_path)).expanduser()
    if (path / "config.json").is_file():
        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
        return config.get("model_type") == MODEL_TYPE
    return not path.exists() and MODEL_TYPE in str(name_or_path).lower()


def load_bridgetower(name_or_path: str | Path, *, device: str | None = None) -> BridgeTowerEncoder:
    """``BridgeTowerModel`` by hub name (downloads; ``BridgeTower/bridgetower-base``) or folder
    (``save_pretrained``'s; without a ``preprocessor_config.json`` the default processor)."""
    from transformers import AutoTokenizer, BridgeTowerModel

    from capkit.models.hub import hub_loading
    path = Path(str(name_or_path)).expanduser()
    name = str(path) if path.exists() else str(name_or_path)
    with hub_loading(name, "BridgeTower model", tiny="tiny-vilt",
                     offline="the shipped model='world-vilt'") as opts:
        model = BridgeTowerModel.from_pretrained(name, **opts)
        tokenizer = AutoTokenizer.from_pretrained(name, **opts)
        processor = (_processor_class()() if path.is_dir() and not
                     (path / "preprocessor_config.json").is_file()
                     else _processor_class().from_pretrained(name, **opts))
    return BridgeTowerEncoder(model, tokenizer, processor,
                              source_signature(name, model.config), device=device)


def _processor_class():
    """transformers 5's PIL image processor (its default one needs torchvision, not installed
    beside the pinned torch), or the one class of older versions."""
    try:
        from transformers import BridgeTowerImageProcessorPil
        return BridgeTowerImageProcessorPil
    except ImportError:
        from transformers import BridgeTowerImageProcessor
        return BridgeTowerImageProcessor
