"""The one protocol every encoder in capkit follows, whatever its weights.

Three kinds of object, each carrying its own tokenizer and image preprocessing (they come from
one factory call, ``capkit.models.load_model``, so they cannot mismatch):

* ``TextEncoder`` (BERT, RoBERTa, MiniLM): token ids, per-layer token states, pooled embeddings;
  read by BERTScore.
* ``ImageEncoder`` (EfficientNet-Lite0, a CLIP vision tower): one vector per image.
* ``VisionLanguageEncoder`` (CLIP): texts and images in one space; read by CLIPScore.
  ``ImageTextMatcher`` (BLIP ITM, ViLT): the probability that a caption matches an image.

Every object has a ``signature`` (where the weights came from, precisely enough to key a cache)
and ``untrained``; an untrained model's signature contains ``UNTRAINED`` so that every score made
with it says so. Used in notebooks/03_embedding_metrics.ipynb, sections 3 (BERTScore) and 4
(CLIPScore).
"""
from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

UNTRAINED = "UNTRAINED"     # appears in the signature of every randomly initialised model
UNTRAINED_FLAG = "capkit_untrained"    # config attribute that save_model writes for tiny models


@dataclass(frozen=True)
class TokenStates:
    """Token-level states of N texts stored flat: text i owns rows ``offsets[i]:offsets[i+1]``."""
    ids: np.ndarray          # (T,) int64 token ids, special tokens included
    states: np.ndarray       # (T, D) float32 hidden states of one layer
    offsets: np.ndarray      # (N + 1,) int64

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        lo, hi = self.offsets[i], self.offsets[i + 1]
        return self.ids[lo:hi], self.states[lo:hi]

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    @classmethod
    def from_lists(cls, ids: Sequence[np.ndarray], states: Sequence[np.ndarray]) -> TokenStates:
        offsets = np.concatenate([[0], np.cumsum([len(x) for x in ids])]).astype(np.int64)
        dim = states[0].shape[1] if len(states) else 0
        flat_ids = np.concatenate(ids).astype(np.int64) if len(ids) else np.zeros(0, np.int64)
        flat = np.concatenate(states).astype(np.float32) if len(states) \
            else np.zeros((0, dim), np.float32)
        return cls(flat_ids, flat, offsets)

    def select(self, rows: Sequence[int]) -> TokenStates:
        """The states of texts ``rows``, in that order."""
        return TokenStates.from_lists(*zip(*(self[int(i)] for i in rows))) if len(rows) \
            else TokenStates(self.ids[:0], self.states[:0], np.zeros(1, np.int64))


@runtime_checkable
class TextEncoder(Protocol):
    signature: str
    untrained: bool
    num_layers: int          # hidden layers; layer 0 is the embedding output
    dim: int
    max_length: int          # tokens kept per text, special tokens included

    def tokenize(self, texts: Sequence[str]) -> list[list[int]]: ...
    def special_ids(self) -> frozenset[int]: ...     # tokens without content ([CLS], [SEP])
    def token_states(self, texts: Sequence[str], layer: int | None = None, *,
                     batch_size: int = 64, progress: bool | str = "auto") -> TokenStates: ...
    def embed(self, texts: Sequence[str], *, batch_size: int = 64,
              progress: bool | str = "auto") -> np.ndarray: ...


@runtime_checkable
class ImageEncoder(Protocol):
    signature: str
    untrained: bool
    dim: int

    def embed_images(self, images: Sequence, *, batch_size: int = 16,
                     progress: bool | str = "auto") -> np.ndarray: ...


@runtime_checkable
class VisionLanguageEncoder(ImageEncoder, Protocol):
    context_length: int      # text tokens the model reads; longer texts are truncated

    def count_tokens(self, texts: Sequence[str]) -> list[int]: ...
    def embed_texts(self, texts: Sequence[str], *, batch_size: int = 64,
                    progress: bool | str = "auto") -> np.ndarray: ...


@runtime_checkable
class ImageTextMatcher(Protocol):
    signature: str
    untrained: bool

    def match(self, images: Sequence, texts: Sequence[str], *, batch_size: int = 8,
              progress: bool | str = "auto") -> np.ndarray: ...


def clean_signature(text: str) -> str:
    """Signatures are joined with ``|`` and ``key:value``; keep those characters out of values."""
    return text.replace("|", "/").replace(":", "_")


def source_signature(name_or_path: str | Path, config=None) -> str:
    """Where weights came from: a hub name (with its commit when known) or a local folder.

    A local folder (or file) is identified by its name plus a short digest of its files' names,
    sizes and modification times, so a cache entry made with other weights at the same path is
    not reused, and the folders above it are not shown.
    """
    path = Path(name_or_path).expanduser()
    if path.is_dir() or path.is_file():
        digest = hashlib.sha256()
        files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        for f in files:
            stat = f.stat()
            digest.update(f"{f.relative_to(path) if f != path else f.name}:{stat.st_size}:"
                          f"{stat.st_mtime_ns};".encode())
        return clean_signature(f"local={path.name}#{digest.hexdigest()[:10]}")
    commit = getattr(config, "_commit_hash", None) if config is not None else None
    return clean_signature(f"{name_or_path}@{commit[:10]}" if commit else str(name_or_path))


def labelled(signature: str, untrained: bool) -> str:
    """``signature`` with the UNTRAINED label added when the weights are random."""
    if untrained and UNTRAINED not in signature:
        signature = f"{signature}~{UNTRAINED}"
    return clean_signature(signature)
