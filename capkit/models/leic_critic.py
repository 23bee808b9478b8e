"""A trained LEIC critic: its vocabulary, batched P(human) scoring, safetensors checkpoints.

    critic = load_leic()                           # the shipped caption-context checkpoint
    p = critic.score_pairs(["a dog runs"], ["a dog is running on grass"])   # (1,) P(human)

Scoring encodes every distinct caption once (the LSTM in eval mode, no dropout), then runs the
head on each (context, candidate) pair, so averaging over five references costs five head calls,
not five LSTM passes. The model is ``capkit.models.leic``; training ``capkit.training.leic``.
Explained in notebooks/05_learned_critic.ipynb, section "Scoring".
"""
from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path

import numpy as np
import torch

from capkit.cache_files import write_atomic
from capkit.caption_files import unique_keys
from capkit.models.i2ce_vocab import SPECIALS, Vocabulary, build_vocabulary, tokenize
from capkit.models.leic import HUMAN, Critic, LEICConfig, encode_ids
from capkit.models.runtime import float32_kernels

WEIGHTS_DIR = Path(__file__).resolve().parent / "weights"
SHIPPED = {"leic": "leic_small.safetensors", "leic_no_da": "leic_small_no_da.safetensors",
           "leic_rc": "leic_small_rc.safetensors", "leic_mc": "leic_small_mc.safetensors",
           "leic_world": "leic_world_small.safetensors",
           "leic_world_no_da": "leic_world_small_no_da.safetensors",
           "leic_world_caption": "leic_world_small_caption.safetensors",
           # the paper's other heads and the image-only world critic: notebook 05's Fig. 5 only
           "leic_cbp": "leic_small_cbp.safetensors", "leic_concat": "leic_small_concat.safetensors",
           "leic_world_image": "leic_world_small_image.safetensors"}
META_KEY = "leic"


def critic_vocabulary(sentences: list[list[str]], glove, max_size: int = 10_000,
                      min_count: int = 1) -> Vocabulary:
    """The ``max_size`` most frequent words known to GloVe (the code: top 10k words)."""
    full = build_vocabulary(sentences, glove, min_count)
    return Vocabulary(full.words[:len(SPECIALS) + max_size])


class LEIC:
    """A critic with its vocabulary and recipe (``meta``)."""

    def __init__(self, model: Critic, vocab: Vocabulary, meta: dict | None = None,
                 device: str = "cpu"):
        self.model = model.eval().to(device)
        self.vocab, self.meta, self.device = vocab, dict(meta or {}), device
        self.sha256 = self.meta.get("sha256", "unsaved")

    def __repr__(self) -> str:
        c = self.model.cfg
        return (f"LEIC({self.meta.get('name', '?')}: context={c.context}, combine={c.combine}, "
                f"hidden={c.hidden}, vocab={c.vocab_size:,}, sha256 {self.sha256[:12]})")

    @property
    def cfg(self) -> LEICConfig:
        return self.model.cfg

    def ids(self, texts: list[str]) -> list[list[int]]:
        return [self.vocab.ids(t) for t in tokenize(list(texts))]

    @torch.no_grad()
    def sentence_vectors(self, texts: list[str], batch_size: int = 512) -> torch.Tensor:
        """(N, H) float32 sentence vectors (LSTM output at <eos>) of ``texts``, eval mode."""
        self.model.eval()
        ids = self.ids(texts)
        order = np.argsort([len(x) for x in ids], kind="stable")          # similar lengths batch
        out = torch.zeros(len(ids), self.cfg.hidden)
        with float32_kernels(self.device):                   # cuDNN's LSTM: no TF32
            for start in range(0, len(ids), batch_size):
                rows = order[start:start + batch_size]
                batch = encode_ids([ids[i] for i in rows], self.cfg, self.device)
                out[torch.as_tensor(rows)] = self.model.sentence(batch).float().cpu()
        return out

    @torch.no_grad()
    def score_pairs(self, contexts: list[str] | None, candidates: list[str],
                    images: np.ndarray | torch.Tensor | None = None,
                    batch_size: int = 4096) -> np.ndarray:
        """P(human) (N,) float64 of each (context caption and/or image feature, candidate) pair.
        ``contexts``: one reference per pair (None for an image-only critic); ``images``: one
        feature row per pair (N, image_dim) for image-context critics."""
        candidates = list(candidates)
        if contexts is not None and len(contexts) != len(candidates):
            raise ValueError(f"got {len(contexts)} contexts for {len(candidates)} candidates; "
                             "give one reference per candidate (repeat them to pair up)")
        texts = list(dict.fromkeys(candidates + list(contexts or [])))
        where = {t: i for i, t in enumerate(texts)}
        vectors = self.sentence_vectors(texts)                             # (U, H)
        cand = vectors[[where[c] for c in candidates]]
        ref = None if contexts is None else vectors[[where[c] for c in contexts]]
        img = None if images is None else torch.as_tensor(np.asarray(images), dtype=torch.float32)
        if img is not None and len(img) != len(candidates):
            raise ValueError(f"got {len(img)} image features for {len(candidates)} candidates; "
                             "give one feature row per pair")
        out = np.zeros(len(candidates), np.float64)
        with float32_kernels(self.device):
            for s in range(0, len(candidates), batch_size):
                part = slice(s, s + batch_size)
                ctx = self.model.context(None if ref is None else ref[part].to(self.device),
                                         None if img is None else img[part].to(self.device))
                logits = self.model.head(ctx, cand[part].to(self.device))
                out[part] = logits.softmax(-1)[:, HUMAN].double().cpu().numpy()
        return out

    def save(self, path: str | Path, extra_meta: dict | None = None) -> str:
        """Write a safetensors checkpoint atomically; returns its sha256."""
        import dataclasses

        from safetensors.torch import save
        meta = {k: v for k, v in {**self.meta, **(extra_meta or {})}.items()
                if k not in ("sha256", "path")}
        meta.update(config=dataclasses.asdict(self.cfg), vocabulary=list(self.vocab.words))
        tensors = {k: v.detach().cpu().contiguous() for k, v in self.model.state_dict().items()}
        data = save(tensors, metadata={META_KEY: json.dumps(meta, sort_keys=True)})
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, lambda f: f.write(data))
        self.sha256 = self.meta["sha256"] = hashlib.sha256(data).hexdigest()
        return self.sha256


def read_checkpoint(path: str | Path, device: str = "cpu") -> LEIC:
    """A ``LEIC`` from a safetensors checkpoint written by ``LEIC.save``."""
    from safetensors import safe_open
    path = Path(path).expanduser()
    what_to_do = ("train one with `capkit train leic --out PATH`, or give the path of a "
                  ".safetensors file written by it")
    if not path.is_file():
        raise FileNotFoundError(f"no LEIC checkpoint at {str(path)!r}; {what_to_do}")
    try:
        with safe_open(str(path), framework="pt") as f:
            meta = json.loads((f.metadata() or {}).get(META_KEY, "{}"),
                              object_pairs_hook=unique_keys)
            tensors = {k: f.get_tensor(k) for k in f.keys()}
    except Exception as err:      # safetensors raises its own error type for a damaged file
        raise ValueError(f"LEIC checkpoint {path} cannot be read ({type(err).__name__}); "
                         f"{what_to_do}") from None
    if not isinstance(meta, dict) or "config" not in meta or "vocabulary" not in meta:
        raise ValueError(f"{path} is not a LEIC checkpoint (no config/vocabulary metadata); "
                         f"{what_to_do}")
    try:
        model = Critic(LEICConfig(**meta.pop("config")))
        vocab = Vocabulary(tuple(meta.pop("vocabulary")))
        model.load_state_dict(tensors)
    except (TypeError, ValueError, RuntimeError) as err:
        raise ValueError(f"LEIC checkpoint {path} does not fit the model it describes "
                         f"({type(err).__name__}); {what_to_do}") from None
    meta["sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
    meta["path"] = str(path)
    return LEIC(model, vocab, meta, device)


@functools.lru_cache(maxsize=8)
def _cached(key: str, device: str) -> LEIC:
    return read_checkpoint(key, device)


def shipped_path(name: str = "leic") -> Path:
    if name not in SHIPPED:
        raise ValueError(f"capkit ships LEIC checkpoints {', '.join(SHIPPED)}; got {name!r} "
                         "(or give a checkpoint path)")
    return WEIGHTS_DIR / SHIPPED[name]


def load_leic(model: str | Path | LEIC | None = None, *, device: str | None = None) -> LEIC:
    """A shipped checkpoint by name (``None`` = ``"leic"``, or ``"leic_no_da"``), a checkpoint
    path, or a ``LEIC`` (returned unchanged). Cached per process."""
    if isinstance(model, LEIC):
        return model
    from capkit.models.runtime import resolve_device
    name = "leic" if model is None else str(model)
    if name in SHIPPED:
        path = shipped_path(name)
        if not path.is_file():
            world = " --world" if name.startswith("leic_world") else ""
            options = {"_caption": " --context caption", "_image": " --context image",
                       "_cbp": " --combine cbp", "_concat": " --combine concat"}
            suffix = next((k for k in options if name.endswith(k)), "")
            world += options.get(suffix, "")
            variant = name.replace("_world", "").removesuffix(suffix)
            raise FileNotFoundError(f"capkit ships no LEIC checkpoint {path.name} here; make it "
                                    f"with `capkit train leic --variant {variant}{world} "
                                    f"--out {path}`")
    else:
        path = Path(name).expanduser()
    return _cached(str(path.resolve()), resolve_device(device))
