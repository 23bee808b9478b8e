"""Training the caption language model of LEIC's Monte Carlo negatives (``capkit.models.caption_lm``).

Teacher forcing on the critic's training captions (``<bos>`` w1 .. wn -> w1 .. wn ``<eos>``, at
most ``max_words`` words), cross-entropy over the vocabulary, Adam, a seeded order. It runs inside
``train_leic`` (same seed, same deterministic kernels), so a critic trained with Monte Carlo
negatives is reproduced byte for byte by its one command; the model is not saved on its own.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from capkit.models.caption_lm import CaptionLM
from capkit.models.i2ce_vocab import BOS, EOS, PAD

SALT_LM = 21


@dataclass(frozen=True)
class LMSchedule:
    epochs: int = 2
    batch_size: int = 128
    lr: float = 3e-3
    hidden: int = 256
    clip: float = 1.0
    max_captions: int | None = None   # train on the first N of a seeded order (None: all)
    pool: int = 10_000                # Monte Carlo samples the training fakes are drawn from
    val_pool: int = 2_000             # and the held-out fakes (disjoint draws)
    temperature: float = 1.0


# by the critic's preset: tiny for tests (seconds); small and paper ~1 minute on one thread
LM_SCHEDULES = {"tiny": LMSchedule(epochs=1, max_captions=3000, pool=1000, val_pool=200),
                "small": LMSchedule(), "paper": LMSchedule()}


def lm_batch(captions: list[list[int]], max_words: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs ``<bos> w..`` and targets ``w.. <eos>`` (B, T), padded with ``<pad>``."""
    rows = [c[:max_words] for c in captions]
    width = max(len(r) for r in rows) + 1
    inp = torch.full((len(rows), width), PAD, dtype=torch.long)
    tgt = torch.full((len(rows), width), PAD, dtype=torch.long)
    for i, r in enumerate(rows):
        inp[i, :len(r) + 1] = torch.tensor([BOS] + r)
        tgt[i, :len(r) + 1] = torch.tensor(r + [EOS])
    return inp, tgt


def train_caption_lm(captions: list[list[int]], vocab_size: int, embeddings: np.ndarray, *,
                     max_words: int, seed: int = 0,
                     schedule: LMSchedule = LMSchedule()) -> tuple[CaptionLM, list[float]]:
    """A CaptionLM fitted to ``captions`` (word-id lists) and its mean loss per epoch."""
    if not captions:
        raise ValueError("the caption language model needs at least one training caption")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed * 1_000_003 + SALT_LM)
        model = CaptionLM(vocab_size, embeddings.shape[1], schedule.hidden, embeddings)
    optimizer = torch.optim.Adam(model.parameters(), lr=schedule.lr)
    rng = np.random.default_rng([seed, SALT_LM])
    losses = []
    model.train()
    if schedule.max_captions is not None:
        captions = [captions[i] for i in rng.permutation(len(captions))[:schedule.max_captions]]
    for _ in range(schedule.epochs):
        order = rng.permutation(len(captions))
        total = n = 0
        for s in range(0, len(order), schedule.batch_size):
            inp, tgt = lm_batch([captions[i] for i in order[s:s + schedule.batch_size]], max_words)
            loss = model.loss(inp, tgt)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), schedule.clip)
            optimizer.step()
            total += float(loss.detach()) * len(inp)
            n += len(inp)
        losses.append(total / n)
    return model.eval(), losses


def monte_carlo_pool(model: CaptionLM, n: int, max_words: int, seed: int,
                     temperature: float = 1.0) -> list[list[int]]:
    """``n`` seeded samples of ``model``: the Monte Carlo negatives a critic draws from."""
    generator = torch.Generator().manual_seed(seed * 1_000_003 + SALT_LM + 1)
    return model.sample(n, max_words, generator, temperature=temperature)
