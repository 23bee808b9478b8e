"""The learned critic of Cui et al. 2018, "Learning to Evaluate Image Captioning" (LEIC).

A critic reads a *context* (a human reference caption, an image feature, or both) and a
*candidate* caption, and outputs P(human): the probability that the candidate was written by a
person about what the context shows. One LSTM, shared by context and candidate, reads each
caption over trainable word vectors (GloVe initialised); a caption's vector is the LSTM output at
its ``<eos>`` position.

    sentence  s(x) = LSTM(e(x_1) .. e(x_n), e(<eos>))[n + 1]                       (B, H)
    context   c = s(ref)  |  W_i f(image)  |  [W_i f(image); s(ref)]              (B, C)
    combine   v = [c; s(cand)] ("concat", "mlp")  or  CBP(c, s(cand)) ("cbp")     (B, D)
    head      y = W_2 ReLU(W_1 v) ("mlp")  or  W v;   P(human) = softmax(y)[0]     (B, 2)

What the authors' code does (richardaecn/cvpr18-caption-eval, ``discriminator.py``), followed
here: one shared 1-layer LSTM (forget bias 1, dropout 0.5 on its input and output), the image
feature through a linear layer without activation, the three context kinds, concatenation or
compact bilinear pooling (Count Sketch with the code's fixed numpy seeds 1/3/5/7, no signed
square root, no normalisation), an optional hidden layer of 512 + ReLU + dropout, a 2-way softmax
whose class 0 is "human". Chosen here (recorded in every checkpoint):

* GloVe: the offline 6B 50-d bundle by default (the paper: 300-d); any GloVe text file via the
  training recipe; the embedding stays trainable, as in the paper;
* tokens: ``capkit.text.ptb_tokenize`` (the code: NLTK, punctuation dropped); vocabulary: the
  ``max_vocab`` most frequent training words known to GloVe (the code: top 10k of the Karpathy
  train split); every other word is ``<unk>`` (``capkit.models.i2ce_vocab``);
* length: a caption keeps its first ``max_len - 1`` words and gets ``<eos>``, so every caption
  has a vector. ``truncation_quirk=True`` reproduces the code instead: a caption of ``max_len``
  (15) or more tokens gets no ``<eos>`` and its vector is all zeros;
* sizes: ``paper`` is the code's (512 units, CBP 8192); the shipped ``small`` preset is smaller
  so it trains in minutes on one CPU thread.

The trained object (vocabulary, checkpoints, batched scoring) is ``capkit.models.leic_critic``;
training is ``capkit.training.leic``. Explained in notebooks/05_learned_critic.ipynb, section
"The critic".
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from capkit.models.configs import preset_config
from capkit.models.i2ce_vocab import EOS, PAD, SPECIALS

CONTEXTS = ("caption", "image", "both")
COMBINES = ("concat", "cbp", "mlp")
HUMAN = 0                      # class index of "human" in the 2-way softmax (the code's)
CBP_SEEDS = (1, 3, 5, 7)       # numpy seeds of h1, s1, h2, s2 in the authors' CBP


@dataclass(frozen=True)
class LEICConfig:
    hidden: int = 512            # LSTM units = size of a sentence vector (and of W_i f)
    context: str = "caption"     # "caption" (a reference), "image", or "both"
    combine: str = "mlp"         # "concat", "cbp" (compact bilinear pooling) or "mlp"
    cbp_dim: int = 8192          # output size of compact bilinear pooling
    mlp_hidden: int = 512        # the hidden layer of the "mlp" head
    dropout: float = 0.5         # dropout probability (the code's keep prob 0.5)
    embed_dim: int = 50          # word vector size (set from the GloVe used)
    vocab_size: int = 0          # set from the training captions
    image_dim: int = 0           # raw image feature size (needed when context uses the image)
    max_len: int = 15            # the code's num_steps: tokens read, <eos> included
    truncation_quirk: bool = False   # True: the code's zero vector for captions of max_len+ tokens

    def __post_init__(self) -> None:
        if self.context not in CONTEXTS:
            raise ValueError(f"context must be one of {CONTEXTS}, got {self.context!r}")
        if self.combine not in COMBINES:
            raise ValueError(f"combine must be one of {COMBINES}, got {self.combine!r}")
        if self.context != "caption" and self.image_dim < 1:
            raise ValueError(f"context={self.context!r} reads an image feature: give "
                             "image_dim= (the size of the image encoder's feature)")
        if self.max_len < 2:
            raise ValueError(f"max_len counts <eos> too and must be at least 2, got {self.max_len}")

    @property
    def context_dim(self) -> int:
        return 2 * self.hidden if self.context == "both" else self.hidden


PRESETS = {
    "tiny": LEICConfig(hidden=32, cbp_dim=256, mlp_hidden=32),
    "small": LEICConfig(hidden=128, cbp_dim=2048, mlp_hidden=128),
    "paper": LEICConfig(hidden=512, cbp_dim=8192, mlp_hidden=512),
}


def get_config(preset: str | LEICConfig, **changes) -> LEICConfig:
    """A preset by name (``tiny``, ``small``, ``paper``) or a config, with fields changed."""
    return preset_config(PRESETS, preset, "LEIC", changes)


# ----------------------------------------------------------------------------- compact bilinear

def count_sketch_hashes(in_dim: int, out_dim: int, seed_h: int, seed_s: int):
    """The authors' fixed hashes: h (in_dim,) bins in [0, out_dim), s (in_dim,) signs +-1."""
    h = np.random.RandomState(seed_h).randint(out_dim, size=in_dim)
    s = 2 * np.random.RandomState(seed_s).randint(2, size=in_dim) - 1
    return torch.as_tensor(h, dtype=torch.long), torch.as_tensor(s, dtype=torch.float32)


def count_sketch(x: torch.Tensor, h: torch.Tensor, s: torch.Tensor, out_dim: int) -> torch.Tensor:
    """psi(x)_j = sum_{i: h_i = j} s_i x_i: x (B, d) -> (B, out_dim)."""
    out = x.new_zeros(x.size(0), out_dim)
    return out.index_add_(1, h, x * s)


class CompactBilinearPooling(nn.Module):
    """Gao et al. 2016: the Count Sketch of the outer product x y^T, computed as
    IFFT(FFT(psi_1(x)) * FFT(psi_2(y))) = sketch of x (x) y with bin (h1_i + h2_k) mod D and sign
    s1_i s2_k. No signed square root and no normalisation, as in the authors' code."""

    def __init__(self, dim_x: int, dim_y: int, out_dim: int, seeds=CBP_SEEDS):
        super().__init__()
        self.out_dim = out_dim
        h1, s1 = count_sketch_hashes(dim_x, out_dim, seeds[0], seeds[1])
        h2, s2 = count_sketch_hashes(dim_y, out_dim, seeds[2], seeds[3])
        for name, t in (("h1", h1), ("s1", s1), ("h2", h2), ("s2", s2)):
            self.register_buffer(name, t, persistent=False)     # rebuilt from the seeds

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """x (B, dx), y (B, dy) -> (B, out_dim)."""
        fx = torch.fft.rfft(count_sketch(x, self.h1, self.s1, self.out_dim))
        fy = torch.fft.rfft(count_sketch(y, self.h2, self.s2, self.out_dim))
        return torch.fft.irfft(fx * fy, n=self.out_dim)


# ----------------------------------------------------------------------------- the critic

class Critic(nn.Module):
    """Shared LSTM sentence encoder + context + combination head -> logits (B, 2)."""

    def __init__(self, cfg: LEICConfig, embedding: np.ndarray | None = None):
        super().__init__()
        if cfg.vocab_size < len(SPECIALS):
            raise ValueError("the config has no vocabulary; build one with "
                             "capkit.models.leic_critic.critic_vocabulary() and pass "
                             "get_config(preset, vocab_size=len(vocab), embed_dim=...)")
        self.cfg = cfg
        self.embedding = nn.Embedding(cfg.vocab_size, cfg.embed_dim, padding_idx=PAD)
        if embedding is not None:
            self.embedding.weight.data.copy_(torch.as_tensor(embedding, dtype=torch.float32))
        self.lstm = nn.LSTM(cfg.embed_dim, cfg.hidden, batch_first=True)
        with torch.no_grad():                      # forget-gate bias 1 (TF BasicLSTMCell)
            self.lstm.bias_ih_l0[cfg.hidden:2 * cfg.hidden].fill_(1.0)
            self.lstm.bias_hh_l0[cfg.hidden:2 * cfg.hidden].zero_()
        self.drop = nn.Dropout(cfg.dropout)
        self.image = nn.Linear(cfg.image_dim, cfg.hidden) if cfg.context != "caption" else None
        if cfg.combine == "cbp":
            self.cbp = CompactBilinearPooling(cfg.context_dim, cfg.hidden, cfg.cbp_dim)
            width = cfg.cbp_dim
        else:
            self.cbp, width = None, cfg.context_dim + cfg.hidden
        self.mlp = nn.Linear(width, cfg.mlp_hidden) if cfg.combine == "mlp" else None
        self.out = nn.Linear(cfg.mlp_hidden if self.mlp is not None else width, 2)

    def sentence(self, ids: torch.Tensor) -> torch.Tensor:
        """ids (B, S) padded rows (``encode_ids`` layout) -> the LSTM output at <eos> (B, H);
        a row without <eos> (the truncation quirk) gives zeros."""
        out, _ = self.lstm(self.drop(self.embedding(ids)))                  # (B, S, H)
        at_eos = (ids == EOS).float()                                       # (B, S)
        return self.drop((out * at_eos[..., None]).sum(1))                  # (B, H)

    def context(self, ref_vec: torch.Tensor | None, image: torch.Tensor | None) -> torch.Tensor:
        """The context vector (B, C) from a reference's sentence vector and/or image feature."""
        kind = self.cfg.context
        if kind != "caption" and image is None:
            raise ValueError(f"this critic's context is {kind!r}: give an image feature per pair")
        if kind != "image" and ref_vec is None:
            raise ValueError(f"this critic's context is {kind!r}: give a reference per pair")
        if kind == "caption":
            return ref_vec
        img = self.image(image)                                             # (B, H)
        return img if kind == "image" else torch.cat([img, ref_vec], dim=-1)

    def head(self, context: torch.Tensor, cand_vec: torch.Tensor) -> torch.Tensor:
        """context (B, C), candidate vectors (B, H) -> logits (B, 2)."""
        if self.cbp is not None:
            v = self.cbp(context, cand_vec)                                 # (B, D)
        else:
            v = torch.cat([context, cand_vec], dim=-1)                      # (B, C + H)
        if self.mlp is not None:
            v = self.drop(torch.relu(self.mlp(v)))
        return self.out(v)

    def forward(self, ref_ids: torch.Tensor | None, cand_ids: torch.Tensor,
                image: torch.Tensor | None = None) -> torch.Tensor:
        """Logits (B, 2) of (context, candidate) pairs; class 0 = human. References and
        candidates go through the LSTM in one batch, as in the authors' code."""
        if ref_ids is None:
            cand_vec, ref_vec = self.sentence(cand_ids), None
        else:
            width = max(ref_ids.size(1), cand_ids.size(1))
            both = torch.cat([nn.functional.pad(ref_ids, (0, width - ref_ids.size(1))),
                              nn.functional.pad(cand_ids, (0, width - cand_ids.size(1)))])
            ref_vec, cand_vec = self.sentence(both).chunk(2)
        return self.head(self.context(ref_vec, image), cand_vec)


def encode_ids(id_lists: list[list[int]], cfg: LEICConfig, device: str = "cpu") -> torch.Tensor:
    """Word ids of captions -> padded (B, S) rows as the critic reads them: the first
    ``max_len - 1`` words and <eos>; with ``truncation_quirk`` a caption of ``max_len`` or more
    words keeps ``max_len`` words and no <eos> (the authors' code: an all-zero vector)."""
    rows = []
    for ids in id_lists:
        ids = list(ids)
        if cfg.truncation_quirk and len(ids) >= cfg.max_len:
            rows.append(ids[:cfg.max_len])
        else:
            rows.append(ids[:cfg.max_len - 1] + [EOS])
    width = max(len(r) for r in rows) if rows else 1
    out = torch.full((len(rows), width), PAD, dtype=torch.long)
    for i, r in enumerate(rows):
        out[i, :len(r)] = torch.tensor(r, dtype=torch.long)
    return out.to(device)
