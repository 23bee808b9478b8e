"""The I2CE sentence auto-encoder (Zeng & Kwong, "Intrinsic Image Captioning Evaluation", 2020).

A caption is read by a GRU over frozen GloVe vectors; the encoder's last hidden state is the
caption's *intrinsic vector*. A GRU decoder with Bahdanau (additive) attention over the encoder's
states must rebuild the caption from it, so the vector is trained to hold what the caption says.
The decoder exists only for training; ``capkit.metrics.i2ce`` scores a candidate by the cosine of
its intrinsic vector with each reference's.

    encoder   h_j = GRU(e(w_j), h_{j-1});           I(x) = h_n                      (B, H)
    attention a_tj = softmax_j(v . tanh(W_k h_j + W_q s_{t-1}))  over non-padding j (B, S)
              c_t = sum_j a_tj h_j                                                    (B, H)
    decoder   s_t = GRUCell([e(y_{t-1}); c_t], s_{t-1}),  s_0 = I(x)
              p(y_t) = softmax(W_o s_t)                                               (B, V)

What the paper states, followed here: GloVe initialisation of the embedding, frozen; GRU encoder;
GRU decoder with Bahdanau attention; the last encoder hidden state as the intrinsic vector;
cosine similarity. What it leaves open, chosen here (and recorded in every checkpoint):

* sizes: the paper gives none. Its recipe (English half of the Spanish-English Anki corpus, GRU,
  Bahdanau attention) is TensorFlow's "NMT with attention" tutorial, whose sizes (1024 units,
  batch 64, Adam) are the ``paper`` preset; ``small`` (256 units) is the shipped checkpoint,
  ``tiny`` (64 units) is for tests and the notebook's small mode;
* GloVe: the offline 6B 50-d bundle by default; any GloVe text file (e.g. 300-d) via ``glove=``;
* one layer, unidirectional, no dropout; the decoder reads the same frozen embedding table
  (the paper only says the encoder's is GloVe) and predicts from its state alone;
* tokens: ``capkit.text.ptb_tokenize`` (lower-case PTB tokens without punctuation, as the
  caption metrics use); a caption with no token reads as ``<unk>``;
* vocabulary: words of the training captions seen at least ``min_count`` times AND present in
  GloVe keep their GloVe row; every other word is ``<unk>``, whose vector is the mean of the
  vocabulary's GloVe rows. ``<bos>``/``<eos>`` get fixed random vectors (seeded), ``<pad>`` zeros.
  At scoring time ``oov="glove"`` lets the encoder read any GloVe word (its input is frozen GloVe,
  so a word never seen in training is still a meaningful input); ``oov="unk"`` is the paper's
  closed vocabulary.

Checkpoints are safetensors files: weights plus metadata (config, vocabulary, training recipe).
Training lives in ``capkit.training.i2ce`` and is never imported from here.
Explained in notebooks/06_intrinsic_i2ce.ipynb, sections "The auto-encoder" and "Training".
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from capkit.cache_files import write_atomic
from capkit.caption_files import unique_keys
from capkit.models.configs import preset_config
from capkit.models.i2ce_vocab import BOS, EOS, PAD, SPECIALS, UNK, Vocabulary, tokenize
from capkit.models.runtime import float32_kernels

WEIGHTS_DIR = Path(__file__).resolve().parent / "weights"
SHIPPED = "small"                   # the preset whose checkpoint ships with capkit
OOV = ("unk", "glove")


@dataclass(frozen=True)
class I2CEConfig:
    hidden: int = 256          # GRU units of encoder and decoder = size of the intrinsic vector
    attention: int = 128       # Bahdanau attention units; 0: no attention, the decoder reads
                               # the intrinsic vector at every step (Cho et al. 2014), an ablation
    embed_dim: int = 50        # GloVe dimension (set from the GloVe used)
    vocab_size: int = 0        # encoder vocabulary (set from the training captions)
    out_vocab: int = 5000      # the decoder predicts the most frequent words; the rest as <unk>
    max_len: int = 24          # training captions are cut to this many tokens (+ <eos>)

    @property
    def n_out(self) -> int:
        return min(self.out_vocab, self.vocab_size)


PRESETS = {
    "tiny": I2CEConfig(hidden=64, attention=32, out_vocab=2000),
    "small": I2CEConfig(hidden=256, attention=128, out_vocab=5000),
    "paper": I2CEConfig(hidden=1024, attention=1024, out_vocab=50_000),
}


def get_config(preset: str | I2CEConfig, **changes) -> I2CEConfig:
    """A preset by name (``tiny``, ``small``, ``paper``) or a config, with fields changed."""
    return preset_config(PRESETS, preset, "I2CE", changes)


# ----------------------------------------------------------------------------- the model

class Encoder(nn.Module):
    def __init__(self, cfg: I2CEConfig):
        super().__init__()
        self.gru = nn.GRU(cfg.embed_dim, cfg.hidden, batch_first=True)

    def forward(self, x: torch.Tensor, lengths: torch.Tensor):
        """x (B, S, E) embedded words, lengths (B,) -> states (B, S, H), intrinsic (B, H)."""
        packed = pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
        out, h = self.gru(packed)                                          # h (1, B, H)
        out, _ = pad_packed_sequence(out, batch_first=True, total_length=x.size(1))
        return out, h[0]                                                   # (B, S, H), (B, H)


class BahdanauAttention(nn.Module):
    def __init__(self, cfg: I2CEConfig):
        super().__init__()
        self.keys = nn.Linear(cfg.hidden, cfg.attention, bias=False)        # W_k
        self.query = nn.Linear(cfg.hidden, cfg.attention)                   # W_q
        self.v = nn.Linear(cfg.attention, 1, bias=False)

    def forward(self, query, states, projected, mask):
        """query (B, H), states (B, S, H), projected = keys(states) (B, S, A), mask (B, S)."""
        scores = self.v(torch.tanh(projected + self.query(query)[:, None])).squeeze(-1)  # (B, S)
        weights = scores.masked_fill(~mask, float("-inf")).softmax(dim=-1)  # (B, S)
        context = torch.bmm(weights[:, None], states).squeeze(1)           # (B, H)
        return context, weights


class Decoder(nn.Module):
    def __init__(self, cfg: I2CEConfig):
        super().__init__()
        self.attention = BahdanauAttention(cfg) if cfg.attention > 0 else None
        self.cell = nn.GRUCell(cfg.embed_dim + cfg.hidden, cfg.hidden)
        self.out = nn.Linear(cfg.hidden, cfg.n_out)

    def memory(self, states, mask, intrinsic):
        """What every step reads: states (B, S, H), their keys (B, S, A), mask, I(x) (B, H)."""
        projected = None if self.attention is None else self.attention.keys(states)
        return states, projected, mask, intrinsic

    def step(self, y_emb, s, memory):
        """One step: y_emb (B, E), s (B, H) -> new s (B, H), attention weights (B, S)."""
        states, projected, mask, intrinsic = memory
        if self.attention is None:                      # ablation: the context is always I(x)
            context, weights = intrinsic, torch.zeros(mask.shape, device=mask.device)
        else:
            context, weights = self.attention(s, states, projected, mask)  # (B, H), (B, S)
        return self.cell(torch.cat([y_emb, context], dim=-1), s), weights

    def forward(self, y_emb, s, memory):
        """Teacher forcing: y_emb (B, T, E) embedded <bos> w_1..w_n -> decoder states (B, T, H),
        attention (B, T, S). ``self.out`` of a state gives the next word's logits."""
        outs, attn = [], []
        for t in range(y_emb.size(1)):
            s, w = self.step(y_emb[:, t], s, memory)
            outs.append(s)
            attn.append(w)
        return torch.stack(outs, 1), torch.stack(attn, 1)                 # (B, T, H), (B, T, S)


class AutoEncoder(nn.Module):
    """Frozen GloVe embedding + encoder + attention decoder."""

    def __init__(self, cfg: I2CEConfig, embedding: np.ndarray | None = None):
        super().__init__()
        if cfg.vocab_size < len(SPECIALS):
            raise ValueError("the config has no vocabulary; build one with build_vocabulary() "
                             "and pass get_config(preset, vocab_size=len(vocab), embed_dim=...)")
        self.cfg = cfg
        weight = torch.zeros(cfg.vocab_size, cfg.embed_dim) if embedding is None \
            else torch.as_tensor(embedding, dtype=torch.float32)
        self.embedding = nn.Embedding.from_pretrained(weight, freeze=True, padding_idx=PAD)
        self.encoder = Encoder(cfg)
        self.decoder = Decoder(cfg)

    def encode(self, src, lengths, table: torch.Tensor | None = None):
        """src (B, S) ids -> states (B, S, H), intrinsic vectors (B, H), mask (B, S).
        ``table``: an embedding table to read the ids from instead (open-vocabulary scoring)."""
        x = self.embedding(src) if table is None else nn.functional.embedding(src, table)
        mask = torch.arange(src.size(1), device=src.device)[None] < lengths[:, None]
        states, intrinsic = self.encoder(x, lengths)
        return states, intrinsic, mask

    def forward(self, src, lengths, tgt_in):
        """Teacher-forced decoder states (B, T, H) and attention (B, T, S) for inputs tgt_in
        (B, T) = <bos> w_1..w_n; ``self.decoder.out(states)`` gives logits (B, T, n_out)."""
        states, intrinsic, mask = self.encode(src, lengths)
        memory = self.decoder.memory(states, mask, intrinsic)
        return self.decoder(self.embedding(tgt_in), intrinsic, memory)

    def targets(self, ids: torch.Tensor) -> torch.Tensor:
        """Word ids as the decoder predicts them: words beyond ``n_out`` become <unk>."""
        return ids.masked_fill(ids >= self.cfg.n_out, UNK)

    @torch.no_grad()
    def greedy(self, src, lengths, max_len: int):
        """Greedy reconstruction: ids (B, max_len + 1), attention (B, max_len + 1, S)."""
        states, s, mask = self.encode(src, lengths)
        memory = self.decoder.memory(states, mask, s)
        y = torch.full((src.size(0),), BOS, dtype=torch.long, device=src.device)
        ids, attn = [], []
        for _ in range(max_len + 1):
            s, w = self.decoder.step(self.embedding(y), s, memory)
            y = self.decoder.out(s).argmax(-1)                              # (B,)
            ids.append(y)
            attn.append(w)
        return torch.stack(ids, 1), torch.stack(attn, 1)


def pad_batch(id_lists: list[list[int]], device: str = "cpu"):
    """Ragged ids -> padded (B, S) long tensor and (B,) lengths."""
    lengths = torch.tensor([len(x) for x in id_lists], dtype=torch.long)
    out = torch.full((len(id_lists), int(lengths.max())), PAD, dtype=torch.long)
    for i, x in enumerate(id_lists):
        out[i, :len(x)] = torch.tensor(x, dtype=torch.long)
    return out.to(device), lengths.to(device)


# ----------------------------------------------------------------------------- the trained object

class I2CE:
    """A trained auto-encoder with its vocabulary: intrinsic vectors and reconstructions."""

    def __init__(self, model: AutoEncoder, vocab: Vocabulary, meta: dict | None = None,
                 device: str = "cpu"):
        self.model = model.eval().to(device)
        self.vocab, self.meta, self.device = vocab, dict(meta or {}), device
        self.sha256 = self.meta.get("sha256", "unsaved")
        self._open: dict[str, int] = {}                 # words read from GloVe (oov="glove")
        self._open_rows: list[np.ndarray] = []

    def __repr__(self) -> str:
        c = self.model.cfg
        return (f"I2CE({self.meta.get('preset', '?')}: hidden={c.hidden}, vocab={c.vocab_size:,}, "
                f"glove {c.embed_dim}-d, sha256 {self.sha256[:12]})")

    @property
    def dim(self) -> int:
        return self.model.cfg.hidden

    def ids(self, texts: list[str], oov: str = "unk") -> list[list[int]]:
        """Word ids of each text; ``oov="glove"`` gives unknown GloVe words rows of their own."""
        if oov not in OOV:
            raise ValueError(f"oov must be one of {OOV} ('unk': the trained vocabulary only; "
                             f"'glove': also read other GloVe words), got {oov!r}")
        tokens = tokenize(list(texts))
        if oov == "unk":
            return [self.vocab.ids(t) for t in tokens]
        glove = self._glove()
        base, out = self.vocab.index, []
        for toks in tokens:
            row = []
            for w in toks:
                if w in base:
                    row.append(base[w])
                elif w in glove.index:
                    if w not in self._open:
                        self._open[w] = len(self.vocab) + len(self._open)
                        self._open_rows.append(glove.vectors[glove.index[w]])
                    row.append(self._open[w])
                else:
                    row.append(UNK)
            out.append(row or [UNK])
        return out

    def _glove(self):
        from capkit.models.glove import load_glove
        glove = load_glove(self.meta.get("glove_path") or None)
        if glove.dim != self.model.cfg.embed_dim:
            raise ValueError(f"oov='glove' needs the GloVe this model was trained with "
                             f"({self.model.cfg.embed_dim}-d, {self.meta.get('glove')}); put that "
                             "file at the checkpoint's glove_path, or use oov='unk'")
        return glove

    def _table(self) -> torch.Tensor | None:
        if not self._open_rows:
            return None
        extra = torch.as_tensor(np.stack(self._open_rows), dtype=torch.float32)
        return torch.cat([self.model.embedding.weight, extra.to(self.device)])

    @torch.no_grad()
    def encode(self, texts: list[str], *, oov: str = "unk", batch_size: int = 256,
               threads: int | None = 1, progress: bool | str = "auto") -> np.ndarray:
        """(N, H) float64 intrinsic vectors (the encoder's last hidden state) of ``texts``.

        ``threads``: torch CPU threads while encoding (restored afterwards); a GRU's small matrix
        products gain little from more, and on a shared CPU two threads ran 5x slower than one
        here. ``None`` keeps torch's setting."""
        with _threads(threads):
            return self._encode(list(texts), oov, batch_size, progress)

    def _encode(self, texts: list[str], oov: str, batch_size: int,
                progress: bool | str) -> np.ndarray:
        # texts that read as the same word ids ("A dog." and "a dog") are encoded once: in one
        # batch, a row's last bits can depend on its place (matrix kernels of CPUs without
        # AVX-512), and equal captions must score equal, a tie on every machine
        read = [tuple(x) for x in self.ids(texts, oov)]
        slot = {x: i for i, x in enumerate(dict.fromkeys(read))}
        inverse = np.array([slot[x] for x in read], np.int64)
        ids = [list(x) for x in slot]
        order = np.argsort([len(x) for x in ids], kind="stable")          # similar lengths batch
        out = np.zeros((len(ids), self.dim), np.float64)
        table = self._table()
        from capkit.progress import bar
        starts = bar(range(0, len(ids), batch_size), desc="i2ce encode", unit="batch",
                     progress=progress)
        with float32_kernels(self.device):                   # cuDNN's GRU: no TF32
            for start in starts:
                rows = order[start:start + batch_size]
                src, lengths = pad_batch([ids[i] for i in rows], self.device)
                _, intrinsic, _ = self.model.encode(src, lengths, table)
                out[rows] = intrinsic.double().cpu().numpy()
        return out[inverse]

    @torch.no_grad()
    def reconstruct(self, texts: list[str], max_len: int | None = None):
        """Greedy decoding of each text from its intrinsic vector: (token lists, attention
        (N, T, S) arrays, the input tokens as the model reads them)."""
        ids = self.ids(list(texts))
        src, lengths = pad_batch(ids, self.device)
        with float32_kernels(self.device):
            out, attn = self.model.greedy(src, lengths, max_len or self.model.cfg.max_len)
        words, read = self.vocab.words, [[self.vocab.words[i] for i in x] for x in ids]
        decoded = []
        for row in out.tolist():
            row = row[:row.index(EOS)] if EOS in row else row
            decoded.append([words[i] for i in row])
        return decoded, attn.cpu().numpy(), read

    def save(self, path: str | Path, extra_meta: dict | None = None) -> str:
        """Write a safetensors checkpoint atomically; returns its sha256."""
        from safetensors.torch import save
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        meta = {k: v for k, v in {**self.meta, **(extra_meta or {})}.items()
                if k not in ("sha256", "path")}
        meta.update(config=dataclasses.asdict(self.model.cfg), vocabulary=list(self.vocab.words))
        tensors = {k: v.detach().cpu().contiguous() for k, v in self.model.state_dict().items()}
        # one metadata entry, keys sorted: the file's bytes depend only on weights and recipe
        data = save(tensors, metadata={"i2ce": json.dumps(meta, sort_keys=True)})
        write_atomic(path, lambda f: f.write(data))      # unique temporary name, fsync
        self.sha256 = self.meta["sha256"] = hashlib.sha256(data).hexdigest()
        return self.sha256


@contextlib.contextmanager
def _threads(n: int | None):
    old = torch.get_num_threads()
    if n is not None and n != old:
        torch.set_num_threads(int(n))
    try:
        yield
    finally:
        if torch.get_num_threads() != old:
            torch.set_num_threads(old)


def untrained_like(model: I2CE, seed: int = 0) -> I2CE:
    """The same architecture, vocabulary and frozen GloVe table with freshly initialised GRUs: the
    baseline that shows what training adds (its signature says UNTRAINED)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        fresh = AutoEncoder(model.model.cfg, model.model.embedding.weight.detach().cpu().numpy())
    meta = {"preset": f"UNTRAINED-{model.meta.get('preset', 'given')}", "seed": seed}
    return I2CE(fresh, model.vocab, meta, model.device)


def file_sha256(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def shipped_path(preset: str = SHIPPED) -> Path:
    return WEIGHTS_DIR / f"i2ce_{preset}.safetensors"


def read_checkpoint(path: str | Path, device: str = "cpu") -> I2CE:
    """An ``I2CE`` from a safetensors checkpoint written by ``I2CE.save``."""
    from safetensors import safe_open
    path = Path(path).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"no I2CE checkpoint at {str(path)!r}; train one with "
                                "`capkit train i2ce --preset small --out PATH` or give the "
                                "path of a .safetensors file written by it")
    what_to_do = ("write it again with `capkit train i2ce --out PATH`, or give the path of a "
                  ".safetensors file written by it")
    try:
        with safe_open(str(path), framework="pt") as f:
            meta = json.loads((f.metadata() or {}).get("i2ce", "{}"),
                              object_pairs_hook=unique_keys)
            tensors = {k: f.get_tensor(k) for k in f.keys()}
    except Exception as err:      # safetensors raises its own error type for a damaged file
        raise ValueError(f"I2CE checkpoint {path} cannot be read ({_first_line(err)}); "
                         f"{what_to_do}") from None
    if not isinstance(meta, dict) or "config" not in meta or "vocabulary" not in meta:
        raise ValueError(f"{path} is not an I2CE checkpoint (no config/vocabulary metadata); "
                         f"{what_to_do}")
    try:
        cfg = I2CEConfig(**meta.pop("config"))
        vocab = Vocabulary(tuple(meta.pop("vocabulary")))
        model = AutoEncoder(cfg)
        model.load_state_dict(tensors)
    except (TypeError, ValueError, RuntimeError) as err:
        raise ValueError(f"I2CE checkpoint {path} does not fit the model it describes "
                         f"({_first_line(err)}); {what_to_do}") from None
    meta["sha256"] = file_sha256(path)
    meta["path"] = str(path)
    return I2CE(model, vocab, meta, device)


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0][:200]}" if text else type(err).__name__


@functools.lru_cache(maxsize=4)
def _cached(key: str, device: str) -> I2CE:
    return read_checkpoint(key, device)


def load_i2ce(model: str | Path | I2CE | None = None, *, device: str | None = None) -> I2CE:
    """The shipped checkpoint (``None`` or a preset name with a file in capkit/models/weights),
    a checkpoint path, or an ``I2CE`` (returned unchanged). Cached per process."""
    if isinstance(model, I2CE):
        return model
    from capkit.models.runtime import resolve_device
    name = SHIPPED if model is None else str(model)
    if name in PRESETS:
        path = shipped_path(name)
        if not path.is_file():
            raise FileNotFoundError(
                f"capkit ships no I2CE checkpoint for preset {name!r} ({path} is missing); "
                f"train it with `capkit train i2ce --preset {name} --out {path}`, or use "
                f"model={SHIPPED!r}")
    else:
        path = Path(name).expanduser()
    return _cached(str(path.resolve()), resolve_device(device))
