"""A small image captioner of the captioned-image world: a CNN encoder and a GRU decoder (#12, 2a).

The world's captioning *systems of known quality* include a learned one, as real benchmarks hold
real captioners: this model, trained here on ``train``-split scenes and their ``describe()``
references, and shipped at three points of one training run (after few, more and all steps), so
the systems range from weak to good. Its captions are checked for truth like every other world
caption (``capkit.world.check``); the world benchmarks caption their own scenes with it.

    image (B, 3, 64, 64) -> 3 conv blocks (conv, batch norm, ReLU; stride / max-pool)
          -> an 8 x 8 grid of features g_n (+ a learned vector per cell: where it is)
    attention a_tn = softmax_n(v . tanh(K g_n + Q h_{t-1})),  c_t = sum_n a_tn g_n
    decoder   h_0 = tanh(W mean_n g_n);  h_t = GRUCell([e(w_{t-1}); c_t], h_{t-1})
              p(w_t) = softmax(W_o [h_t; c_t])                  (Show, Attend and Tell, 2015)

Attention lets the decoder look at one object at a time as it names them; the cells' position
vectors tell it where each is, which relations ("left of", "above") need. Words are the world grammar's tokens (``capkit.world.grammar.
tokens``: lower case, punctuation dropped), stored in the checkpoint; decoding is greedy (argmax,
ties to the lower id), so the same image gives the same caption every time.

Checkpoints are safetensors files: weights plus one metadata entry (config, vocabulary, training
step, recipe, held-out numbers), so a file's bytes depend only on weights and recipe.
WORLD numbers only. Training lives in ``capkit.training.world_captioner`` (``capkit train
world-captioner``) and is never imported from here. Explained in
notebooks/10_captioned_world.ipynb, section "Captioning systems".
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from capkit.cache_files import write_atomic
from capkit.models.configs import preset_config

WEIGHTS_DIR = Path(__file__).resolve().parent / "weights"
SPECIALS = ("<pad>", "<bos>", "<eos>", "<unk>")        # ids 0..3
PAD, BOS, EOS, UNK = range(4)
META_KEY = "world_captioner"
# the shipped checkpoints: one training run (`capkit train world-captioner`) saved at these steps
SHIPPED_STEPS = (150, 600, 2400)


@dataclass(frozen=True)
class CaptionerConfig:
    image_size: int = 64
    channels: tuple[int, ...] = (32, 48, 64)       # conv blocks: 64 -> 32 -> 16 -> 8 (the grid)
    embed: int = 48
    hidden: int = 192
    attention: int = 96
    max_len: int = 20                              # decoded words at most (+ <eos>)


PRESETS = {
    "tiny": CaptionerConfig(channels=(8, 16, 16), embed=16, hidden=32, attention=16),
    "small": CaptionerConfig(),                     # the shipped checkpoints
}


def get_config(preset: str | CaptionerConfig, **changes) -> CaptionerConfig:
    """A preset by name (``tiny``, ``small``) or a config, with fields changed."""
    return preset_config(PRESETS, preset, "world-captioner", changes)


class CaptionNet(nn.Module):
    """The CNN encoder and the attending GRU decoder (see the module docstring)."""

    def __init__(self, cfg: CaptionerConfig, vocab_size: int):
        super().__init__()
        self.cfg = cfg
        blocks, c_in = [], 3
        for k, c in enumerate(cfg.channels):        # first block strides, the others max-pool
            conv = nn.Conv2d(c_in, c, 5, stride=2, padding=2) if k == 0 else \
                nn.Conv2d(c_in, c, 3, padding=1)
            blocks += [conv, nn.BatchNorm2d(c), nn.ReLU()] + ([nn.MaxPool2d(2)] if k else [])
            c_in = c
        self.cnn = nn.Sequential(*blocks)
        cells = (cfg.image_size // 2 ** len(cfg.channels)) ** 2
        self.where = nn.Parameter(torch.zeros(cells, c_in))        # learned position of a cell
        self.init = nn.Linear(c_in, cfg.hidden)
        self.keys = nn.Linear(c_in, cfg.attention)
        self.query = nn.Linear(cfg.hidden, cfg.attention, bias=False)
        self.score = nn.Linear(cfg.attention, 1, bias=False)
        self.embed = nn.Embedding(vocab_size, cfg.embed, padding_idx=PAD)
        self.cell = nn.GRUCell(cfg.embed + c_in, cfg.hidden)
        self.out = nn.Linear(cfg.hidden + c_in, vocab_size)

    def encode(self, pixels: torch.Tensor):
        """(B, 3, S, S) floats -> grid features (B, N, C), their keys (B, N, A), h_0 (B, H)."""
        grid = self.cnn(pixels).flatten(2).transpose(1, 2) + self.where
        return grid, self.keys(grid), torch.tanh(self.init(grid.mean(1)))

    def step(self, word, h, grid, keys):
        """One decoder step: next-word logits (B, V) and the new state."""
        a = self.score(torch.tanh(keys + self.query(h)[:, None])).softmax(1)     # (B, N, 1)
        context = (a * grid).sum(1)                                              # (B, C)
        h = self.cell(torch.cat([self.embed(word), context], -1), h)
        return self.out(torch.cat([h, context], -1)), h

    def forward(self, pixels: torch.Tensor, inputs: torch.Tensor) -> torch.Tensor:
        """Teacher forcing: ``inputs`` (B, T) = <bos> w_1 .. w_{T-1} -> logits (B, T, V)."""
        grid, keys, h = self.encode(pixels)
        out = []
        for t in range(inputs.shape[1]):
            logits, h = self.step(inputs[:, t], h, grid, keys)
            out.append(logits)
        return torch.stack(out, 1)

    @torch.no_grad()
    def greedy(self, pixels: torch.Tensor, max_len: int) -> torch.Tensor:
        """Argmax decoding: (B, max_len) word ids, <pad> after each caption's <eos>."""
        grid, keys, h = self.encode(pixels)
        word = torch.full((len(grid),), BOS, dtype=torch.long)
        done = torch.zeros(len(grid), dtype=torch.bool)
        out = []
        for _ in range(max_len):
            logits, h = self.step(word, h, grid, keys)
            word = torch.where(done, torch.full_like(word, PAD), logits.argmax(-1))
            out.append(word)
            done |= word == EOS
            if bool(done.all()):
                break
        return torch.stack(out, 1)


def pixels(images, size: int) -> torch.Tensor:
    """PIL images or (N, S, S, 3) uint8 arrays -> (N, 3, S, S) floats in [-0.5, 0.5]; a float
    array (pixels in [0, 1]?) is a ValueError saying how to convert it, never read as 0..255."""
    from capkit.models.images import uint8_pixels
    if isinstance(images, np.ndarray) and images.ndim != 4:
        raise ValueError(f"the world captioner reads a batch of {size} x {size} RGB renders, "
                         f"(N, {size}, {size}, 3), got an array of shape {images.shape}")
    arrays = np.stack([uint8_pixels(np.asarray(im)) for im in images])
    if arrays.ndim != 4 or arrays.shape[1:] != (size, size, 3):
        raise ValueError(f"the world captioner reads {size} x {size} RGB renders, got arrays of "
                         f"shape {arrays.shape[1:]}; render scenes with scene.render({size})")
    return torch.from_numpy(arrays).permute(0, 3, 1, 2).float() / 255.0 - 0.5


class WorldCaptioner:
    """A trained (or fresh) ``CaptionNet`` with its vocabulary; ``caption(images)`` -> strings."""

    def __init__(self, net: CaptionNet, words: tuple[str, ...], meta: dict | None = None):
        if tuple(words[:len(SPECIALS)]) != SPECIALS:
            raise ValueError(f"a world-captioner vocabulary starts with {SPECIALS}")
        self.net, self.words, self.meta = net.eval(), tuple(words), dict(meta or {})
        self.index = {w: i for i, w in enumerate(self.words)}

    @property
    def cfg(self) -> CaptionerConfig:
        return self.net.cfg

    @property
    def signature(self) -> str:
        sha = self.meta.get("sha256", "unsaved")[:12]
        return f"world-captioner@step{self.meta.get('step', '?')}~{sha}~world"

    def ids(self, words: list[str]) -> list[int]:
        return [self.index.get(w, UNK) for w in words]

    def caption(self, images, batch_size: int = 256) -> list[str]:
        """Greedy captions of 64 x 64 world renders (PIL images or an (N, 64, 64, 3) array)."""
        out = []
        with torch.no_grad():
            for start in range(0, len(images), batch_size):
                px = pixels(images[start:start + batch_size], self.cfg.image_size)
                for row in self.net.greedy(px, self.cfg.max_len).tolist():
                    row = row[:row.index(EOS)] if EOS in row else row
                    out.append(" ".join(self.words[i] for i in row if i != PAD))
        return out

    def save(self, path: str | Path, extra_meta: dict | None = None) -> str:
        """Write a safetensors checkpoint atomically; returns its sha256."""
        from safetensors.torch import save
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        meta = {k: v for k, v in {**self.meta, **(extra_meta or {})}.items()
                if k not in ("sha256", "path")}
        meta.update(config=dataclasses.asdict(self.cfg), vocabulary=list(self.words))
        tensors = {k: v.detach().cpu().contiguous() for k, v in self.net.state_dict().items()}
        # one metadata entry, keys sorted: the file's bytes depend only on weights and recipe
        data = save(tensors, metadata={META_KEY: json.dumps(meta, sort_keys=True)})
        write_atomic(path, lambda f: f.write(data))
        self.meta["sha256"] = hashlib.sha256(data).hexdigest()
        return self.meta["sha256"]


def shipped_path(step: int) -> Path:
    return WEIGHTS_DIR / f"world_captioner_step{step:04d}.safetensors"


def read_checkpoint(path: str | Path) -> WorldCaptioner:
    """A ``WorldCaptioner`` from a file written by ``WorldCaptioner.save``."""
    from safetensors import safe_open
    path = Path(path).expanduser()
    todo = ("write one with `capkit train world-captioner --out FOLDER`, or give the path of a "
            ".safetensors file written by it")
    if not path.is_file():
        raise FileNotFoundError(f"no world-captioner checkpoint at {str(path)!r}; {todo}")
    try:
        with safe_open(str(path), framework="pt") as f:
            meta = json.loads((f.metadata() or {}).get(META_KEY, "{}"))
            tensors = {k: f.get_tensor(k) for k in f.keys()}
    except Exception as err:          # safetensors raises its own error type for a damaged file
        raise ValueError(f"world-captioner checkpoint {path} cannot be read "
                         f"({type(err).__name__}); {todo}") from None
    if "config" not in meta or "vocabulary" not in meta:
        raise ValueError(f"{path} is not a world-captioner checkpoint (no config/vocabulary "
                         f"metadata); {todo}")
    config = meta.pop("config")
    cfg = CaptionerConfig(**{**config, "channels": tuple(config["channels"])})
    words = tuple(meta.pop("vocabulary"))
    net = CaptionNet(cfg, len(words))
    net.load_state_dict(tensors)
    meta["sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
    meta["path"] = str(path)
    return WorldCaptioner(net, words, meta)


@functools.lru_cache(maxsize=8)
def load_world_captioner(model: str | int | None = None) -> WorldCaptioner:
    """A shipped checkpoint by training step (one of ``SHIPPED_STEPS``; default the last), or a
    checkpoint path. Cached per process (greedy decoding does not change the model)."""
    if model is None or isinstance(model, int) or str(model).isdigit():
        step = SHIPPED_STEPS[-1] if model is None else int(model)
        if step not in SHIPPED_STEPS:
            raise ValueError(f"capkit ships world-captioner checkpoints after steps "
                             f"{SHIPPED_STEPS}, not {step}; give one of them or a path")
        return read_checkpoint(shipped_path(step))
    return read_checkpoint(model)
