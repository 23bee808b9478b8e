"""A small caption language model: the source of LEIC's Monte Carlo negatives (Cui et al. 2018).

The paper adds to its fake candidates "captions generated using Monte Carlo Sampling, which
contains a much higher variety of words" than a captioning model's (section 3.2): without them a
critic learns that rare words mean "human". The authors sampled them from their captioner and
never released how (``dumped_*.npy``); here they come from an LSTM language model of the
critic's training captions, sampled word by word from its full softmax (temperature 1: Monte
Carlo, not greedy or beam search), so they read like captions locally but are not about any
image. Trained by ``capkit.training.caption_lm``; used by ``capkit.training.leic_data``.
"""
from __future__ import annotations

import numpy as np
import torch
from torch import nn

from capkit.models.i2ce_vocab import BOS, EOS, PAD, UNK


class CaptionLM(nn.Module):
    """Word embedding -> one LSTM layer -> an adaptive softmax over the vocabulary (frequent
    words in the head, rare ones in smaller tail clusters: the vocabulary is sorted by
    frequency, so training and sampling cost a fraction of a full 10k-way softmax)."""

    def __init__(self, vocab_size: int, embed_dim: int, hidden: int = 256,
                 embeddings: np.ndarray | None = None):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, embed_dim, padding_idx=PAD)
        if embeddings is not None:
            self.embed.weight.data.copy_(torch.as_tensor(embeddings, dtype=torch.float32))
        self.lstm = nn.LSTM(embed_dim, hidden, batch_first=True)
        cutoffs = [c for c in CUTOFFS if c < vocab_size - 1] or [max(1, vocab_size // 2)]
        self.out = nn.AdaptiveLogSoftmaxWithLoss(hidden, vocab_size, cutoffs, div_value=4.0)

    def forward(self, tokens: torch.Tensor, state=None):
        """(B, T) ids -> (B, T, H) LSTM outputs (read by ``self.out``) and the LSTM state."""
        hidden, state = self.lstm(self.embed(tokens), state)
        return hidden, state

    def loss(self, tokens: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """Mean next-word negative log-likelihood over the non-padding targets."""
        hidden, _ = self(tokens)
        keep = targets != PAD
        return self.out(hidden[keep], targets[keep]).loss

    @torch.no_grad()
    def sample(self, n: int, max_words: int, generator: torch.Generator, *,
               temperature: float = 1.0, batch_size: int = 1024) -> list[list[int]]:
        """``n`` captions as word-id lists (1..``max_words`` words, no specials), each word drawn
        from the model's distribution given the words before it (``temperature`` 1: as
        learned; inverse-CDF sampling), until ``<eos>``."""
        if temperature <= 0:
            raise ValueError(f"temperature must be positive, got {temperature!r}")
        self.eval()
        out: list[list[int]] = []
        for start in range(0, n, batch_size):
            b = min(batch_size, n - start)
            token = torch.full((b, 1), BOS, dtype=torch.long)
            state, words = None, torch.zeros((b, max_words), dtype=torch.long)
            done = torch.zeros(b, dtype=torch.bool)
            length = torch.full((b,), max_words, dtype=torch.long)
            for t in range(max_words):
                hidden, state = self(token, state)
                prob = (self.out.log_prob(hidden[:, -1]) / temperature).softmax(-1)
                prob[:, [PAD, UNK, BOS] + ([EOS] if t == 0 else [])] = 0.0   # never drawn
                cdf = prob.cumsum(-1)
                u = torch.rand((b, 1), generator=generator) * cdf[:, -1:]
                nxt = torch.searchsorted(cdf, u)[:, 0].clamp_(max=prob.shape[1] - 1)
                ended = (nxt == EOS) & ~done
                length[ended] = t
                done |= ended
                words[:, t] = nxt
                token = nxt[:, None]
                if bool(done.all()):
                    break
            out += [row[:k].tolist() for row, k in zip(words, length.tolist())]
        return out


CUTOFFS = (500, 2000)
