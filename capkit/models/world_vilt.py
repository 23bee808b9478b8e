"""world-ViLT: a small single-stream image-text transformer (Hugging Face ``ViltModel`` with
``ViltForImageAndTextRetrieval``'s matching head) pre-trained on capkit's captioned-image world.

UMIC (Lee et al. 2021) fine-tunes UNITER, and ViLBERTScore (Lee et al. 2020) reads ViLBERT's
image-conditioned token states; both need detector features. ViLT reads raw pixel patches and
the caption in *one* transformer, like UNITER without a detector, and its retrieval head
``rank_output = Linear(hidden, 1)`` on the pooled [CLS] has exactly UMIC's shape::

    text   <bos> w_1 .. w_n <eos> [PAD]..      -> word + position + type-0 embeddings   (B, T, D)
    image  (B, 3, 64, 64) -> 8 x 8 patches + [CLS] -> patch + position + type-1       (B, 65, D)
    [text ; image] -> L transformer layers -> pooler (dense + tanh on <bos>) -> rank_output (B, 1)

The shipped (``small``) model has D = 96, L = 3, and starts its pre-training from world-CLIP's
vision tower, as ViLT starts from an ImageNet ViT (``capkit.training.world_vilt``).

``VisionTextEncoder`` holds model, tokenizer and preprocessing (made by one loader, so they
cannot mismatch) and gives the two things the metrics need: the matching logit
(``matching_logits``: UMIC-C, and UMIC after fine-tuning) and the token states of a chosen layer
with or without the image (``token_states``: ViLBERTScore and its text-only control). Without the
image, every image position is masked out of attention, so no text state can depend on it.

Image patches are embedded here, not by ``ViltEmbeddings.visual_embed``: that function draws
the order of the patches with ``torch.multinomial`` (global RNG) even when it keeps them all;
ours keeps them in raster order (the outputs are the same up to float rounding, since
attention does not see order beyond the position embeddings) and touches no RNG.

World texts are read in ``capkit.transforms``' normal form (PTB words, lower case, no
punctuation), the form UMIC's negatives take, so punctuation cannot tell a negative from a
positive. The folder is a Hugging Face folder (``config.json``, ``model.safetensors``, tokenizer
files, ``preprocessor_config.json``) plus ``world_vilt.json`` (the recipe); its identity is
``checkpoint_sha256(folder)``, printed in every signature (``world-vilt@<sha12>~world``).

Online users name a real checkpoint instead (``load_vilt("dandelin/vilt-b32-finetuned-coco")``:
384-px ViLT-B/32 fine-tuned for COCO retrieval; ``dandelin/vilt-b32-mlm`` has no matching head,
so its ``rank_output`` starts random). WORLD numbers only for the shipped model. Training lives in
``capkit.training.world_vilt`` (``capkit train world-vilt``) and is never imported from here.
Explained in notebooks/07_umic.ipynb and notebooks/08_vilbertscore.ipynb.
"""
from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from capkit.models.configs import preset_config
from capkit.models.images import ImagePreprocess

WEIGHTS_DIR = Path(__file__).resolve().parent / "weights"
SHIPPED = WEIGHTS_DIR / "world_vilt"
NAME = "world-vilt"
META = "world_vilt.json"
MASK = "[MASK]"
PREPROCESS = ImagePreprocess(64, 64, mean=(0.5, 0.5, 0.5), std=(0.5, 0.5, 0.5),
                             resize="square")                    # ViLT's mean / std
FILES = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
         "preprocessor_config.json", META)


@dataclass(frozen=True)
class WorldViltConfig:
    image_size: int = 64
    patch: int = 8
    hidden: int = 96              # small: world-CLIP's vision tower's sizes and activation, so
    layers: int = 3               # pre-training can start from it (as ViLT starts from ViT)
    heads: int = 4
    context: int = 40             # text positions (<bos> + words + <eos>), ViLT's 40
    act: str = "quick_gelu"
    layer_norm_eps: float = 1e-5
    stem_channels: int = 16       # world-CLIP's convolutional stem (capkit.models.world_clip):
    stem_layers: int = 1          # 3 x 3 convolutions in front of the patchify step (0: none)
    stem_overlap: int = 4         # pixels each patch reads beyond its border on every side


PRESETS = {
    "tiny": WorldViltConfig(hidden=32, layers=1, heads=2, act="gelu", layer_norm_eps=1e-12,
                            stem_channels=8),
    "small": WorldViltConfig(),                 # the shipped checkpoint
}


def get_config(preset: str | WorldViltConfig, **changes) -> WorldViltConfig:
    """A preset by name (``tiny``, ``small``) or a config, with fields changed."""
    return preset_config(PRESETS, preset, "world-ViLT", changes)


def build_tokenizer(words, context: int = 40):
    """world-CLIP's word-level tokenizer over ``words``, plus a ``[MASK]`` token for MLM."""
    from capkit.models.world_clip import build_tokenizer as word_level
    tok = word_level(words, context)
    tok.add_special_tokens({"mask_token": MASK})
    return tok


def model_class():
    """``WorldViltModel``: ``ViltForImageAndTextRetrieval`` whose patch projection is world-CLIP's
    convolutional stem (``capkit.models.world_clip.conv_stem``) when the config has
    ``stem_channels`` / ``stem_layers`` / ``stem_overlap`` (with none, a plain ViLT). Everything
    else, ``from_pretrained`` and ``save_pretrained`` included, is Hugging Face's own code."""
    global WorldViltModel
    if "WorldViltModel" in globals():
        return WorldViltModel
    from transformers import ViltForImageAndTextRetrieval

    from capkit.models.world_clip import conv_stem

    class WorldViltModel(ViltForImageAndTextRetrieval):
        """``ViltForImageAndTextRetrieval`` with world-CLIP's stem as the patch projection."""

        def __init__(self, config):
            super().__init__(config)
            if getattr(config, "stem_layers", 0) or getattr(config, "stem_overlap", 0):
                self.vilt.embeddings.patch_embeddings.projection = conv_stem(
                    config.hidden_size, config.patch_size, config.stem_channels,
                    config.stem_layers, config.stem_overlap, bias=True)

    globals()["WorldViltModel"] = WorldViltModel
    return WorldViltModel


def build_model(cfg: WorldViltConfig, vocab_size: int, seed: int = 0):
    """A randomly initialised ``WorldViltModel`` of ``cfg`` (no dropout; seeded; the caller's
    RNG untouched)."""
    from transformers import ViltConfig

    from capkit.models.runtime import seeded
    config = ViltConfig(vocab_size=vocab_size, hidden_size=cfg.hidden,
                        num_hidden_layers=cfg.layers, num_attention_heads=cfg.heads,
                        intermediate_size=4 * cfg.hidden, hidden_act=cfg.act,
                        layer_norm_eps=cfg.layer_norm_eps, hidden_dropout_prob=0.0,
                        attention_probs_dropout_prob=0.0, image_size=cfg.image_size,
                        patch_size=cfg.patch, max_position_embeddings=cfg.context,
                        max_image_length=-1, pad_token_id=0, stem_channels=cfg.stem_channels,
                        stem_layers=cfg.stem_layers, stem_overlap=cfg.stem_overlap)
    with seeded(seed):
        return model_class()(config)


def save_folder(model, tokenizer, folder: str | Path, meta: dict | None = None,
                preprocess: ImagePreprocess = PREPROCESS) -> str:
    """Write the Hugging Face folder as a whole (``capkit.cache_files.write_folder``: a kill
    leaves the old checkpoint or the new one; bytes fixed by weights + ``meta``); returns
    ``checkpoint_sha256(folder)``. ``meta`` goes to ``world_vilt.json`` (see
    ``capkit.models.world_clip.save_folder`` for why not the safetensors header)."""
    import tempfile

    from safetensors.torch import save

    from capkit.cache_files import write_folder
    tensors = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    pre = {"size": {"shortest_edge": preprocess.size}, "resample": 3, "do_normalize": True,
           "image_mean": list(preprocess.mean), "image_std": list(preprocess.std)}
    files = {"model.safetensors": save(tensors, metadata={"format": "pt"}),
             META: json.dumps(meta or {}, indent=1, sort_keys=True).encode(),
             "config.json": model.config.to_json_string(use_diff=True).encode("utf-8"),
             "preprocessor_config.json": json.dumps(pre, indent=1, sort_keys=True).encode()}
    with tempfile.TemporaryDirectory() as tmp:
        tokenizer.save_pretrained(tmp)
        for name in ("tokenizer.json", "tokenizer_config.json"):
            files[name] = Path(tmp, name).read_bytes()
    return checkpoint_sha256(write_folder(folder, dict(sorted(files.items()))))


def checkpoint_sha256(folder: str | Path, files=FILES) -> str:
    """One digest of a folder: sha256 over each file's name and sha256 (``files``)."""
    from capkit.models.world_clip import checkpoint_sha256 as folder_sha256
    return folder_sha256(folder, files, model="world-ViLT")


def read_meta(folder: str | Path) -> dict:
    """The recipe that made a world checkpoint (``world_vilt.json``)."""
    return json.loads((Path(folder) / META).read_text(encoding="utf-8"))


class VisionTextEncoder:
    """A loaded ViLT-style model with its tokenizer and preprocessing (see the module docstring).

    ``normal_form``: read texts as ``capkit.transforms`` words (world models); ``signature``:
    printed in every score made with it."""

    def __init__(self, model, tokenizer, preprocess: ImagePreprocess, signature: str, *,
                 normal_form: bool = False, device: str | None = None):
        from capkit.models.runtime import resolve_device
        self.device = resolve_device(device)
        self.model = model.to(self.device).eval()
        self.tokenizer, self.preprocess, self.signature = tokenizer, preprocess, signature
        self.normal_form = normal_form
        self.num_layers = model.config.num_hidden_layers
        self.context = model.config.max_position_embeddings

    def texts(self, texts: list[str]) -> list[str]:
        if not self.normal_form:
            return list(texts)
        from capkit.text import ptb_tokenize          # = capkit.transforms.normalise
        out = ptb_tokenize(list(texts))
        empty = [i for i, t in enumerate(out) if not t.strip()]
        if empty:
            raise ValueError(f"{len(empty)} caption(s) have no words after tokenisation (empty "
                             f"or punctuation only; first at positions {empty[:5]}); remove them")
        return [" ".join(t.split()) for t in out]

    def encode_text(self, texts: list[str]) -> dict:
        enc = self.tokenizer(self.texts(texts), padding=True, truncation=True,
                             max_length=self.context, return_tensors="pt")
        return {k: enc[k].to(self.device) for k in ("input_ids", "attention_mask")}

    def pixels(self, images):                                               # (B, 3, H, W)
        import torch
        return torch.from_numpy(self.preprocess.batch(list(images))[0]).to(self.device)

    def forward(self, text: dict, pixels, *, with_image: bool = True, hidden: bool = False):
        """``forward_pass`` of this encoder's model."""
        return forward_pass(self.model, text, pixels, with_image=with_image, hidden=hidden)

    def matching_logits(self, texts: list[str], images, batch_size: int = 128) -> np.ndarray:
        """(N,) ``rank_output`` logit of each (text, image) pair."""
        import torch
        out = []
        with torch.no_grad():
            for i in range(0, len(texts), batch_size):
                res = self.forward(self.encode_text(texts[i:i + batch_size]),
                                   self.pixels(images[i:i + batch_size]))
                out.append(res.logits[:, 0].double().cpu().numpy())
        return np.concatenate(out) if out else np.zeros(0)

    def token_states(self, texts: list[str], images, layer: int, *, with_image: bool = True,
                     batch_size: int = 128) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per text, its (T_i,) token ids and (T_i, D) states at ``layer`` (1..num_layers),
        the first and last positions and padding dropped (as ViLBERTScore's code does)."""
        import torch
        layer = self.check_layer(layer)
        out = []
        with torch.no_grad():
            for i in range(0, len(texts), batch_size):
                text = self.encode_text(texts[i:i + batch_size])
                res = self.forward(text, self.pixels(images[i:i + batch_size]),
                                   with_image=with_image, hidden=True)
                states = res.hidden_states[layer][:, :text["input_ids"].shape[1]]  # (B, T, D)
                for ids, row, m in zip(text["input_ids"], states, text["attention_mask"]):
                    n = int(m.sum())
                    out.append((ids[1:n - 1].cpu().numpy(), row[1:n - 1].double().cpu().numpy()))
        return out

    def check_layer(self, layer: int) -> int:
        return check_layer(layer, self.num_layers, "the encoder's layers")


def check_layer(layer: int, num_layers: int, what: str) -> int:
    """``layer`` as an int in 1..``num_layers``, else a ValueError naming ``what`` they are."""
    if not isinstance(layer, (int, np.integer)) or not 1 <= layer <= num_layers:
        raise ValueError(f"layer must be an integer from 1 to {num_layers} ({what}), "
                         f"got {layer!r}")
    return int(layer)


def forward_pass(model, text: dict, pixels, *, with_image: bool = True, hidden: bool = False):
    """One pass of a ViLT retrieval ``model`` over aligned texts (``input_ids``,
    ``attention_mask``) and images (pixels: (B, 3, H, W)), moved to the model's device, patches
    embedded by ``image_embeddings``; ``with_image=False`` masks every image position out of
    attention. Scoring and training (``capkit.training.world_vilt``) both run it. float32
    kernels on CUDA too (``float32_kernels``: cuDNN's TF32 patch convolution moved UMIC's scores
    by 3e-4 from the CPU's)."""
    import torch

    from capkit.models.runtime import float32_kernels
    device = model.device
    with float32_kernels(device):
        emb = image_embeddings(model.vilt, pixels.to(device))              # (B, 1 + P, D)
        mask = torch.full(emb.shape[:2], int(with_image), dtype=torch.long, device=device)
        return model(**{k: v.to(device) for k, v in text.items()}, image_embeds=emb,
                     pixel_mask=mask, output_hidden_states=hidden)


def image_embeddings(vilt, pixels):
    """(B, 1 + P, D) [CLS] + patch embeddings with (interpolated) position embeddings, patches
    in raster order: ``ViltEmbeddings.visual_embed`` for unpadded images, without its RNG."""
    import torch
    from torch import nn
    emb = vilt.embeddings
    x = emb.patch_embeddings(pixels)                                        # (B, D, h, w)
    b, d, h, w = x.shape
    grid = emb.config.image_size // emb.config.patch_size
    pos = emb.position_embeddings[:, 1:, :].transpose(1, 2).reshape(1, d, grid, grid)
    if (h, w) != (grid, grid):
        pos = nn.functional.interpolate(pos, size=(h, w), mode="bilinear", align_corners=True)
    x = (x + pos).flatten(2).transpose(1, 2)                                # (B, P, D)
    cls = (emb.cls_token + emb.position_embeddings[:, :1, :]).expand(b, -1, -1)
    return emb.dropout(torch.cat([cls, x], dim=1))


def load_world_vilt(folder: str | Path | None = None, *, device: str | None = None
                    ) -> VisionTextEncoder:
    """The shipped world-ViLT (or a folder written by ``capkit train world-vilt`` or
    ``capkit train umic``); signature ``<name>@<sha12>~world``."""
    folder = Path(folder).expanduser() if folder is not None else SHIPPED
    sha = checkpoint_sha256(folder)
    model, tokenizer = _from_pretrained(str(folder), world=True)
    name = read_meta(folder).get("name", NAME)
    return VisionTextEncoder(model, tokenizer, PREPROCESS, f"{name}@{sha[:12]}~world",
                             normal_form=True, device=device)


def load_vilt(name_or_path: str | Path, *, device: str | None = None) -> VisionTextEncoder:
    """A ViLT checkpoint by hub name (downloads; e.g. ``dandelin/vilt-b32-finetuned-coco``) or
    folder; a capkit world folder (with ``world_vilt.json``) loads as ``load_world_vilt``.
    Images are resized to a square of the model's ``image_size`` (``ViltImageProcessor`` keeps
    the aspect ratio and pads a batch; a square needs no pixel mask), with the folder's mean /
    std (ViLT's 0.5 by default)."""
    path = Path(str(name_or_path)).expanduser()
    if (path / META).is_file():
        return load_world_vilt(path, device=device)
    model, tokenizer = _from_pretrained(str(path) if path.is_dir() else str(name_or_path))
    pre = _vilt_preprocess(path if path.is_dir() else None, model.config.image_size)
    tag = (f"{path.name}@{_folder_sha(path)[:12]}" if path.is_dir() else
           f"{name_or_path}@{getattr(model.config, '_commit_hash', None) or 'hub'}")
    return VisionTextEncoder(model, tokenizer, pre, tag, device=device)


NAMED = {"world-vilt": "world_vilt", "umic-world": "umic_world"}     # shipped folders


def load_named(model: object = "world-vilt", *, device: str | None = None) -> VisionTextEncoder:
    """A loaded encoder (returned unchanged), a shipped world checkpoint by name (``world-vilt``,
    ``umic-world``), ``tiny-vilt`` (UNTRAINED stand-in), or a ViLT hub name / folder
    (``load_vilt``); loaded once per process."""
    if isinstance(model, VisionTextEncoder):
        return model
    if not isinstance(model, (str, Path)):
        raise TypeError("model must be a name (world-vilt, umic-world, tiny-vilt, a ViLT hub "
                        f"name), a folder, or a VisionTextEncoder; got {type(model).__name__}")
    return _load_cached(str(model), device)


@functools.lru_cache(maxsize=4)
def _load_cached(name: str, device: str | None) -> VisionTextEncoder:
    if name in NAMED:
        return load_world_vilt(WEIGHTS_DIR / NAMED[name], device=device)
    if name == TINY:
        return tiny_vilt_encoder(device=device)
    return load_vilt(name, device=device)


TINY = "tiny-vilt"


def tiny_vilt_encoder(seed: int = 0, *, device: str | None = None) -> VisionTextEncoder:
    """``tiny-vilt``: a randomly initialised ViLT retrieval model (``capkit.models.tiny``) on
    32 x 32 squares, so the same code runs on any real image offline; its signature says
    UNTRAINED, and its scores measure nothing."""
    from capkit.models.presets import tiny_signature
    from capkit.models.tiny import IMAGE_SIZE, tiny_vilt
    model, tokenizer = tiny_vilt(seed)
    pre = ImagePreprocess(IMAGE_SIZE, None, (0.5,) * 3, (0.5,) * 3, resize="square")
    return VisionTextEncoder(model, tokenizer, pre, tiny_signature(TINY, seed), device=device)


def _from_pretrained(name: str, world: bool = False):
    """(model, tokenizer); a world folder loads as ``WorldViltModel`` (its stem), any other
    checkpoint as Hugging Face's ``ViltForImageAndTextRetrieval``."""
    from transformers import AutoTokenizer, ViltForImageAndTextRetrieval

    from capkit.models.hub import hub_loading
    cls = model_class() if world else ViltForImageAndTextRetrieval
    with hub_loading(name, "ViLT checkpoint", tiny=TINY,
                     example="dandelin/vilt-b32-finetuned-coco",
                     offline="the shipped model='world-vilt'") as opts:
        model = cls.from_pretrained(name, **opts)
        tokenizer = AutoTokenizer.from_pretrained(name, **opts)
    return model, tokenizer


def _vilt_preprocess(folder: Path | None, image_size: int) -> ImagePreprocess:
    cfg = {}
    if folder is not None and (folder / "preprocessor_config.json").is_file():
        cfg = json.loads((folder / "preprocessor_config.json").read_text(encoding="utf-8"))
    return ImagePreprocess(image_size, mean=tuple(cfg.get("image_mean", (0.5,) * 3)),
                           std=tuple(cfg.get("image_std", (0.5,) * 3)), resize="square")


def _folder_sha(folder: Path) -> str:
    return checkpoint_sha256(folder, tuple(sorted(p.name for p in folder.iterdir()
                                                  if p.is_file())))
