"""The world backbone: a ``CLIPModel`` whose vision tower sees through a small convolutional stem.

world-CLIP's vision tower cuts a 64 x 64 render into 8 x 8 patches with one linear map each, so
a shape that straddles a patch border reaches the transformer in pieces, and its three layers
drop it (``benchmarks/world_probe.py``: shape 70.0 in the patch embedding, 42.6 after the last
layer). Here the patch embedding is a convolutional stem, so every patch token is computed from
pixels across its borders, and the tower is pre-trained to say, at each object's place, the
object's shape, colour and size (``capkit.training.world_backbone``)::

    image (B, 3, 64, 64) -> stem: 3x3 conv (C = 16), GELU            (B, C, 64, 64)
                         -> patchify: 16x16 conv, stride 8, padding 4    (B, D, 8, 8)
                         -> + position, [CLS]; CLIP encoder layers      (B, 65, D)
                         -> [CLS] -> proj                               (B, P)
    text   <bos> w_1 .. w_n <eos> -> causal transformer (CLIP's)  -> proj -> (B, P)

``WorldBackboneCLIP`` is a documented subclass of Hugging Face's ``CLIPModel``: its config is a
plain ``CLIPConfig`` whose ``vision_config`` carries three more fields, ``stem_channels`` (C),
``stem_layers`` and ``stem_overlap`` (each patch reads that many pixels beyond its border on
every side). The stem replaces ``vision_model.embeddings.patch_embedding`` and is itself a
``Conv2d`` (the patchify step) with the 3 x 3 layers in front (``.pre``), so everything else in
``CLIPModel`` (the encoder, pooling, projections, ``get_image_features``, ``from_pretrained``,
``save_pretrained``) is Hugging Face's own code. Load a folder with
``WorldBackboneCLIP.from_pretrained(folder)`` or ``load_world_backbone`` (a plain ``CLIPModel``
cannot: its patch embedding has another shape); the tokenizer and the preprocessing are
world-CLIP's (``capkit.models.world_clip``), and so is the folder layout, with the recipe in
``world_backbone.json``.

Not yet a shipped metric: the backbone and its measurement on validation scenes are in
docs/learned_metrics.md, "A world backbone that keeps shapes: measured on validation".
Training lives in ``capkit.training.world_backbone`` (``capkit train world-backbone``).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from capkit.models.configs import preset_config

NAME = "world-backbone"
FILES = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
         "preprocessor_config.json", "world_backbone.json")


@dataclass(frozen=True)
class WorldBackboneConfig:
    image_size: int = 64
    patch: int = 8
    stem_channels: int = 16       # C: channels of the 3 x 3 convolutions
    stem_layers: int = 1          # 3 x 3 convolutions in front (0: none)
    stem_overlap: int = 4         # pixels each patch reads beyond its border on every side
    vision_hidden: int = 96
    vision_layers: int = 3
    text_hidden: int = 64
    text_layers: int = 3
    heads: int = 4
    context: int = 40
    projection: int = 64


PRESETS = {
    "tiny": WorldBackboneConfig(stem_channels=8, stem_layers=1, vision_hidden=32,
                                vision_layers=1, text_hidden=32, text_layers=1, heads=2,
                                projection=16),
    "small": WorldBackboneConfig(),
}


def get_config(preset: str | WorldBackboneConfig, **changes) -> WorldBackboneConfig:
    """A preset by name (``tiny``, ``small``) or a config, with fields changed."""
    return preset_config(PRESETS, preset, "world-backbone", changes)


def _classes():
    """The torch / transformers classes, built on first use (importing capkit loads neither)."""
    global ConvStem, WorldBackboneCLIP
    if "WorldBackboneCLIP" in globals():
        return ConvStem, WorldBackboneCLIP
    from torch import nn
    from transformers import CLIPModel

    class ConvStem(nn.Conv2d):
        """The patch embedding with 3 x 3 convolutions in front and patches that overlap by
        ``overlap`` pixels on each side: ``weight`` / ``bias`` are the patchify convolution's
        (where CLIP's initialisation and checkpoints expect them)."""

        def __init__(self, hidden: int, patch: int, channels: int, layers: int, overlap: int):
            super().__init__(channels if layers else 3, hidden, kernel_size=patch + 2 * overlap,
                             stride=patch, padding=overlap, bias=False)
            convs = []
            for k in range(layers):
                convs += [nn.Conv2d(3 if k == 0 else channels, channels, 3, padding=1),
                          nn.GELU()]
            self.pre = nn.Sequential(*convs)

        def forward(self, x):                                  # (B, 3, H, W)
            return super().forward(self.pre(x))                # (B, D, H / patch, W / patch)

    class WorldBackboneCLIP(CLIPModel):
        """``CLIPModel`` with ``ConvStem`` as the vision patch embedding (module docstring)."""

        def __init__(self, config):
            super().__init__(config)
            v = config.vision_config
            self.vision_model.embeddings.patch_embedding = ConvStem(
                v.hidden_size, v.patch_size, getattr(v, "stem_channels", 0),
                getattr(v, "stem_layers", 0), getattr(v, "stem_overlap", 0))

    globals().update(ConvStem=ConvStem, WorldBackboneCLIP=WorldBackboneCLIP)
    return ConvStem, WorldBackboneCLIP


def model_class():
    """``WorldBackboneCLIP`` (a ``CLIPModel`` subclass)."""
    return _classes()[1]


def build_model(cfg: WorldBackboneConfig, vocab_size: int, seed: int = 0):
    """A randomly initialised ``WorldBackboneCLIP`` of ``cfg`` (seeded; caller's RNG untouched)."""
    from transformers import CLIPConfig

    from capkit.models.runtime import seeded
    text = dict(vocab_size=vocab_size, hidden_size=cfg.text_hidden,
                num_hidden_layers=cfg.text_layers, num_attention_heads=cfg.heads,
                intermediate_size=4 * cfg.text_hidden, max_position_embeddings=cfg.context,
                pad_token_id=0, bos_token_id=2, eos_token_id=3)
    vision = dict(hidden_size=cfg.vision_hidden, num_hidden_layers=cfg.vision_layers,
                  num_attention_heads=cfg.heads, intermediate_size=4 * cfg.vision_hidden,
                  image_size=cfg.image_size, patch_size=cfg.patch,
                  stem_channels=cfg.stem_channels, stem_layers=cfg.stem_layers,
                  stem_overlap=cfg.stem_overlap)
    config = CLIPConfig(text_config=text, vision_config=vision, projection_dim=cfg.projection)
    with seeded(seed):
        return model_class()(config)


def save_folder(model, tokenizer, folder: str | Path, meta: dict | None = None) -> str:
    """Write the Hugging Face folder (world-CLIP's writer; the recipe goes to
    ``world_backbone.json``); returns its ``checkpoint_sha256``."""
    import json
    import tempfile

    from safetensors.torch import save

    from capkit.cache_files import write_folder
    from capkit.models.world_clip import PREPROCESS, _preprocessor_json, checkpoint_sha256
    tensors = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    files = {"model.safetensors": save(tensors, metadata={"format": "pt"}),
             "world_backbone.json": json.dumps(meta or {}, indent=1, sort_keys=True).encode(),
             "config.json": model.config.to_json_string(use_diff=True).encode("utf-8"),
             "preprocessor_config.json": _preprocessor_json(PREPROCESS)}
    with tempfile.TemporaryDirectory() as tmp:
        tokenizer.save_pretrained(tmp)
        for name in ("tokenizer.json", "tokenizer_config.json"):
            files[name] = Path(tmp, name).read_bytes()
    folder = write_folder(folder, dict(sorted(files.items())))
    return checkpoint_sha256(folder, FILES, model="world-backbone")


def load_world_backbone(folder: str | Path):
    """(model, tokenizer) of a folder written by ``capkit train world-backbone``, through
    ``WorldBackboneCLIP.from_pretrained`` and ``PreTrainedTokenizerFast.from_pretrained``."""
    from transformers import PreTrainedTokenizerFast

    from capkit.models.world_clip import checkpoint_sha256
    folder = Path(folder).expanduser()
    checkpoint_sha256(folder, FILES, model="world-backbone")      # names a missing file
    model = model_class().from_pretrained(folder).eval()
    return model, PreTrainedTokenizerFast.from_pretrained(folder)
