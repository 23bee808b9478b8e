"""world-CLIP: a small CLIP trained on capkit's captioned-image world, whose vision tower sees
through a convolutional stem.

The image-text model of the world (#12, #40): it makes CLIPScore a trained metric here
(``clipscore_world``, ``refclipscore_world``) and is the vision tower world-ViLT starts from. It
is a Hugging Face ``CLIPModel`` with a word-level ``PreTrainedTokenizerFast`` over the world
grammar's closed vocabulary, saved as a Hugging Face folder::

    folder/  config.json  model.safetensors  tokenizer.json  tokenizer_config.json
             preprocessor_config.json  world_clip.json (the recipe that made it)

    image (B, 3, 64, 64) -> stem: 3x3 conv (C = 16), GELU                (B, C, 64, 64)
                         -> patchify: 16x16 conv, stride 8, padding 4    (B, D, 8, 8)
                         -> + position, [CLS]; CLIP encoder layers       (B, 65, D)
                         -> [CLS] -> proj                                (B, 64)
    text   <bos> w_1 .. w_n <eos> -> causal transformer, state at <eos> -> proj -> (B, 64)

A plain ViT cuts a render into 8 x 8 patches with one linear map each, so a shape that
straddles a patch border reaches the transformer in pieces, and a plain world-CLIP's layers drop
it (``benchmarks/world_probe.py``). Here the patch embedding is a convolutional stem, so every
patch token also reads 4 pixels beyond its border, and training first teaches the tower each
object's shape, colour and size at its place (``capkit.training.world_clip``, stage 1).

``WorldCLIPModel`` is a documented subclass of Hugging Face's ``CLIPModel``: its config is a
plain ``CLIPConfig`` whose ``vision_config`` carries three more fields, ``stem_channels`` (C),
``stem_layers`` and ``stem_overlap`` (pixels each patch reads beyond its border on every side;
with ``stem_layers = 0`` and ``stem_overlap = 0`` the model is a plain ``CLIPModel``). The stem
replaces ``vision_model.embeddings.patch_embedding`` and is itself a ``Conv2d`` (the patchify
step) with the 3 x 3 layers in front (``.pre``), so everything else (the encoder, pooling,
projections, ``get_image_features``, ``from_pretrained``, ``save_pretrained``) is Hugging Face's
own code. ``WorldCLIPModel.from_pretrained(folder)`` loads a folder (a plain ``CLIPModel``
cannot: its patch embedding has another shape).

Images are the world's 64 x 64 renders with CLIP's mean / std (``ImagePreprocess(64, 64)``);
texts are lower-cased and split into words and punctuation (any word outside the grammar reads
as ``[UNK]``). ``<eos>`` is id 3, never 2: ``CLIPTextTransformer`` treats ``eos_token_id == 2``
as the legacy "argmax id" rule. The checkpoint's identity is ``checkpoint_sha256(folder)``: one
digest over every file's name and bytes, printed in every signature (``world-clip@<sha12>``).

WORLD numbers only: the model has seen nothing but rendered shapes and grammar captions.
Training lives in ``capkit.training.world_clip`` (``capkit train world-clip``) and is never
imported from here. Explained in notebooks/10_captioned_world.ipynb, section "World-CLIP: an
image metric trained in this world".
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from capkit.models.configs import preset_config
from capkit.models.images import ImagePreprocess

WEIGHTS_DIR = Path(__file__).resolve().parent / "weights"
SHIPPED = WEIGHTS_DIR / "world_clip"
NAME = "world-clip"
SPECIALS = ("[PAD]", "[UNK]", "<|startoftext|>", "<|endoftext|>")   # ids 0..3
PREPROCESS = ImagePreprocess(64, 64)                                # renders are 64 x 64
FILES = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
         "preprocessor_config.json", "world_clip.json")


@dataclass(frozen=True)
class WorldCLIPConfig:
    image_size: int = 64
    patch: int = 8
    vision_hidden: int = 96
    vision_layers: int = 3
    text_hidden: int = 64
    text_layers: int = 3
    heads: int = 4
    context: int = 40             # text positions (<bos> + words + <eos>)
    projection: int = 64
    stem_channels: int = 16       # C: channels of the 3 x 3 convolutions
    stem_layers: int = 1          # 3 x 3 convolutions in front of the patchify step (0: none)
    stem_overlap: int = 4         # pixels each patch reads beyond its border on every side


PRESETS = {
    "tiny": WorldCLIPConfig(vision_hidden=32, vision_layers=1, text_hidden=32, text_layers=1,
                            heads=2, projection=16, stem_channels=8),
    "small": WorldCLIPConfig(),               # the shipped checkpoint
}


def get_config(preset: str | WorldCLIPConfig, **changes) -> WorldCLIPConfig:
    """A preset by name (``tiny``, ``small``) or a config, with fields changed."""
    return preset_config(PRESETS, preset, "world-CLIP", changes)


def build_tokenizer(words, context: int = 40):
    """A word-level ``PreTrainedTokenizerFast``: lower case, words and punctuation apart,
    ``<bos> ... <eos>`` around every text; ``words`` in order after the four specials."""
    from tokenizers import Tokenizer, normalizers, pre_tokenizers, processors
    from tokenizers.models import WordLevel
    from transformers import PreTrainedTokenizerFast
    vocab = {w: i for i, w in enumerate(dict.fromkeys([*SPECIALS, *words]))}
    tok = Tokenizer(WordLevel(vocab, unk_token="[UNK]"))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    bos, eos = SPECIALS[2], SPECIALS[3]
    tok.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A {eos}", special_tokens=[(bos, vocab[bos]), (eos, vocab[eos])])
    return PreTrainedTokenizerFast(tokenizer_object=tok, model_max_length=context,
                                   pad_token=SPECIALS[0], unk_token=SPECIALS[1],
                                   bos_token=bos, eos_token=eos)


def words_of(texts) -> list[str]:
    """The word-level tokens of ``texts`` as ``build_tokenizer``'s pre-tokenizer splits them,
    in order of first appearance (the vocabulary of a tokenizer that reads them all)."""
    from tokenizers import normalizers, pre_tokenizers
    norm, split = normalizers.Lowercase(), pre_tokenizers.Whitespace()
    seen: dict[str, None] = {}
    for text in texts:
        for word, _ in split.pre_tokenize_str(norm.normalize_str(text)):
            seen.setdefault(word)
    return list(seen)


def _classes():
    """The torch / transformers classes, built on first use (importing capkit loads neither)."""
    global ConvStem, WorldCLIPModel
    if "WorldCLIPModel" in globals():
        return ConvStem, WorldCLIPModel
    from torch import nn
    from transformers import CLIPModel

    class ConvStem(nn.Conv2d):
        """The patch embedding with 3 x 3 convolutions in front and patches that overlap by
        ``overlap`` pixels on each side: ``weight`` is the patchify convolution's (where CLIP's
        initialisation and checkpoints expect it); ``pre`` holds the 3 x 3 layers."""

        def __init__(self, hidden: int, patch: int, channels: int, layers: int, overlap: int,
                     bias: bool = False):
            super().__init__(channels if layers else 3, hidden, kernel_size=patch + 2 * overlap,
                             stride=patch, padding=overlap, bias=bias)
            convs = []
            for k in range(layers):
                convs += [nn.Conv2d(3 if k == 0 else channels, channels, 3, padding=1),
                          nn.GELU()]
            self.pre = nn.Sequential(*convs)

        def forward(self, x):                                  # (B, 3, H, W)
            return super().forward(self.pre(x))                # (B, D, H / patch, W / patch)

    class WorldCLIPModel(CLIPModel):
        """``CLIPModel`` with ``ConvStem`` as the vision patch embedding (module docstring)."""

        def __init__(self, config):
            super().__init__(config)
            v = config.vision_config
            self.vision_model.embeddings.patch_embedding = ConvStem(
                v.hidden_size, v.patch_size, getattr(v, "stem_channels", 0),
                getattr(v, "stem_layers", 0), getattr(v, "stem_overlap", 0))

    globals().update(ConvStem=ConvStem, WorldCLIPModel=WorldCLIPModel)
    return ConvStem, WorldCLIPModel


def model_class():
    """``WorldCLIPModel`` (a ``CLIPModel`` subclass)."""
    return _classes()[1]


def conv_stem(hidden: int, patch: int, channels: int, layers: int, overlap: int,
              bias: bool = False):
    """A ``ConvStem``: world-CLIP's patch embedding, also world-ViLT's."""
    return _classes()[0](hidden, patch, channels, layers, overlap, bias)


def build_model(cfg: WorldCLIPConfig, vocab_size: int, seed: int = 0):
    """A randomly initialised ``WorldCLIPModel`` of ``cfg`` (seeded; the caller's RNG untouched)."""
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
    """Write the Hugging Face folder as a whole (``capkit.cache_files.write_folder``: built
    beside it and swapped in, so a kill leaves the old checkpoint or the new one, never a mix;
    bytes fixed by weights + ``meta``); returns ``checkpoint_sha256(folder)``. ``meta`` (the
    recipe) goes to ``world_clip.json``: the safetensors header keeps one entry, because
    safetensors writes metadata from a Rust HashMap whose key order changes from one call to
    the next."""
    import tempfile

    from safetensors.torch import save

    from capkit.cache_files import write_folder
    tensors = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    files = {"model.safetensors": save(tensors, metadata={"format": "pt"}),
             "world_clip.json": json.dumps(meta or {}, indent=1, sort_keys=True).encode(),
             "config.json": model.config.to_json_string(use_diff=True).encode("utf-8"),
             "preprocessor_config.json": _preprocessor_json(PREPROCESS)}
    with tempfile.TemporaryDirectory() as tmp:       # the tokenizer's own files, then copied
        tokenizer.save_pretrained(tmp)
        for name in ("tokenizer.json", "tokenizer_config.json"):
            files[name] = Path(tmp, name).read_bytes()
    return checkpoint_sha256(write_folder(folder, dict(sorted(files.items()))))


def _preprocessor_json(pre: ImagePreprocess) -> bytes:
    cfg = {"size": {"shortest_edge": pre.size}, "do_center_crop": True,
           "crop_size": {"height": pre.crop, "width": pre.crop}, "image_mean": list(pre.mean),
           "image_std": list(pre.std)}
    return json.dumps(cfg, indent=1, sort_keys=True).encode("utf-8")


def checkpoint_sha256(folder: str | Path, files=FILES, *, model: str = "world-CLIP") -> str:
    """One digest of a checkpoint folder: sha256 over each file's name and sha256 (``files``,
    default world-CLIP's FILES); world-ViLT's and UMIC's folders use it too (``model``, in
    the error for a missing file: ``capkit train <model> --out FOLDER`` makes one)."""
    folder = Path(folder)
    missing = [n for n in files if not (folder / n).is_file()]
    if missing:
        raise FileNotFoundError(f"{folder} is not a {model} folder (missing {missing}); make "
                                f"one with `capkit train {model.lower()} --out FOLDER`")
    digest = hashlib.sha256()
    for name in files:
        digest.update(f"{name}\0{hashlib.sha256((folder / name).read_bytes()).hexdigest()}\n"
                      .encode())
    return digest.hexdigest()


def read_meta(folder: str | Path) -> dict:
    """The recipe that made the checkpoint (``world_clip.json``)."""
    return json.loads((Path(folder) / "world_clip.json").read_text(encoding="utf-8"))


def load_world_clip(folder: str | Path | None = None, *, device: str | None = None):
    """The shipped world-CLIP (or a folder written by ``capkit train world-clip``) as a
    ``CLIPEncoder``, through ``WorldCLIPModel.from_pretrained``; signature
    ``world-clip@<sha12>~world``."""
    from transformers import PreTrainedTokenizerFast

    from capkit.models.vision_language import CLIPEncoder
    folder = Path(folder).expanduser() if folder is not None else SHIPPED
    sha = checkpoint_sha256(folder)
    model = model_class().from_pretrained(str(folder), local_files_only=True)
    tokenizer = PreTrainedTokenizerFast.from_pretrained(str(folder), local_files_only=True)
    return CLIPEncoder(model, tokenizer, PREPROCESS, device=device,
                       signature=f"{NAME}@{sha[:12]}~world")
