"""world-CLIP: a small CLIP (Hugging Face ``CLIPModel``) trained on capkit's captioned-image world.

The first image-text model trained in the world (#12): it shows that the world is learnable and
makes CLIPScore a trained metric here (``clipscore_world``, ``refclipscore_world``). It is a real
``CLIPModel`` with a word-level ``PreTrainedTokenizerFast`` over the world grammar's closed
vocabulary, saved as a Hugging Face folder, so it loads through the same code path as OpenAI's
CLIP (``capkit.models.vision_language.load_clip``) and CLIPScore runs on it unchanged::

    folder/  config.json  model.safetensors  tokenizer.json  tokenizer_config.json
             preprocessor_config.json  world_clip.json (the recipe that made it)

    image  (B, 3, 64, 64) -> ViT, 8 x 8 patches (64 + [CLS] tokens)  -> proj -> (B, 64)
    text   <bos> w_1 .. w_n <eos> -> causal transformer, state at <eos> -> proj -> (B, 64)

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


PRESETS = {
    "tiny": WorldCLIPConfig(vision_hidden=32, vision_layers=1, text_hidden=32, text_layers=1,
                            heads=2, projection=16),
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


def build_model(cfg: WorldCLIPConfig, vocab_size: int, seed: int = 0):
    """A randomly initialised ``CLIPModel`` of ``cfg`` (seeded; the caller's RNG untouched)."""
    from transformers import CLIPConfig, CLIPModel

    from capkit.models.runtime import seeded
    text = dict(vocab_size=vocab_size, hidden_size=cfg.text_hidden,
                num_hidden_layers=cfg.text_layers, num_attention_heads=cfg.heads,
                intermediate_size=4 * cfg.text_hidden, max_position_embeddings=cfg.context,
                pad_token_id=0, bos_token_id=2, eos_token_id=3)
    vision = dict(hidden_size=cfg.vision_hidden, num_hidden_layers=cfg.vision_layers,
                  num_attention_heads=cfg.heads, intermediate_size=4 * cfg.vision_hidden,
                  image_size=cfg.image_size, patch_size=cfg.patch)
    config = CLIPConfig(text_config=text, vision_config=vision, projection_dim=cfg.projection)
    with seeded(seed):
        return CLIPModel(config)


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
    ``CLIPEncoder``, loaded by ``load_clip``; signature ``world-clip@<sha12>~world``."""
    from capkit.models.vision_language import CLIPEncoder, load_clip
    folder = Path(folder).expanduser() if folder is not None else SHIPPED
    sha = checkpoint_sha256(folder)
    enc = load_clip(folder, device=device)
    return CLIPEncoder(enc.model, enc.tokenizer, enc.preprocess, device=device,
                       signature=f"{NAME}@{sha[:12]}~world")
