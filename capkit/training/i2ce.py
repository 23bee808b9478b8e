"""Training the I2CE auto-encoder: two stages, held-out reconstruction, checkpoints, resume.

    result = train_i2ce("small", out="capkit/models/weights/i2ce_small.safetensors", seed=0)

is what ``capkit train i2ce --preset small`` runs, and how the shipped checkpoint was made.

Schedule (the paper's, with the corpora capkit has; ``capkit.training.corpus``):

* stage 1, a broad corpus: Flickr8k train-split captions (the paper: ~100k general English
  sentences of the Anki Spanish-English corpus); stage 2, adaptation: COCO captions of the
  Karpathy-test images no benchmark uses (the paper: MSCOCO-C5 references);
* the vocabulary (``capkit.models.i2ce_vocab.build_vocabulary``) comes from both stages' training
  captions before stage 1, so the decoder's output layer is the same in both stages;
* loss: cross-entropy of teacher-forced next-token prediction of ``w_1 .. w_n <eos>`` (padding
  ignored); Adam (a fresh optimiser per stage), gradient norm clipped at 1; length-bucketed
  batches in a seeded order that depends only on (seed, stage, epoch), so a resumed run sees
  the same batches as an uninterrupted one;
* after every epoch: held-out reconstruction (greedy decoding from the intrinsic vector) as
  token accuracy (position by position, up to and including ``<eos>``) and exact-match rate,
  then the training state is written atomically to ``workdir`` (``resume=True`` continues
  from it): ``state.pt`` holds tensors only (the model's and the optimiser's state dicts) and is
  read with ``torch.load(weights_only=True)``, so a crafted file in a shared workdir cannot run
  code; ``state.json`` holds the rest (recipe, history, epochs done, ``state.pt``'s sha256).
  Nothing else needs saving: batch orders come from generators seeded by (seed, stage, epoch)
  and training draws no other random numbers.

Reproducible: the same seed, preset, schedule and thread count give the same checkpoint bytes
on a CPU (deterministic algorithms, fixed thread count, no dropout, metadata without times).
Explained in notebooks/06_intrinsic_i2ce.ipynb, section "3. Training".
"""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import io
import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from capkit.cache_files import write_atomic
from capkit.caption_files import unique_keys
from capkit.models.i2ce import I2CE, AutoEncoder, get_config, pad_batch
from capkit.models.i2ce_vocab import BOS, EOS, PAD, build_vocabulary, embedding_matrix, tokenize
from capkit.training.corpus import STAGES, TrainingCorpus, training_corpus


@dataclass(frozen=True)
class Schedule:
    epochs: tuple[int, int]                    # stage 1, stage 2
    batch_size: int = 64
    lr: float = 1e-3
    clip: float = 1.0
    min_count: int = 1                         # vocabulary: words seen at least this often
    max_train: tuple[int | None, int | None] = (None, None)   # first N captions per stage
    max_val: int = 1000                        # held-out captions evaluated per stage


# tiny: ~20 s on one CPU thread, for notebook 06's Exercise 6.3 in small mode, which trains it
# twice: 16,000 stage-1 captions (held-out token accuracy 0.56 with attention, seed 0; 24,000 gave
# 0.58 at 1.4x the time, 12,000 gave 0.38) and held-out sets of 200 captions (the per-epoch
# evaluation's cost; no weight depends on it); small: the shipped checkpoint, ~15 minutes; paper:
# the TF tutorial's Adam default and epoch count, hours on a CPU
SCHEDULES = {
    "tiny": Schedule(epochs=(2, 2), lr=5e-3, max_train=(16000, 4000), max_val=200),
    "small": Schedule(epochs=(4, 3), lr=3e-3),
    "paper": Schedule(epochs=(10, 10), lr=1e-3),
}


@dataclass
class TrainResult:
    model: I2CE
    history: list[dict]          # one row per epoch: stage, epoch, train_loss, val_* ...
    path: Path | None            # the safetensors checkpoint, if ``out`` was given
    sha256: str | None

    @property
    def final(self) -> dict:
        return self.history[-1]


@contextlib.contextmanager
def deterministic(threads: int):
    """Fixed thread count and deterministic kernels, restored afterwards.

    On CUDA, cuBLAS is deterministic only with a fixed workspace (``CUBLAS_WORKSPACE_CONFIG``,
    read when the process first uses cuBLAS); without it ``use_deterministic_algorithms``
    makes the first matrix product raise. It is set here to ``:4096:8`` (PyTorch's
    reproducibility notes) unless the user set it, and removed afterwards if it was not set.
    TF32 is off (``float32_kernels``), so a CUDA run computes in float32 as the CPU does."""
    from capkit.models.runtime import float32_kernels
    old_threads, old_det = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    had_cublas = CUBLAS_WORKSPACE in os.environ
    os.environ.setdefault(CUBLAS_WORKSPACE, ":4096:8")
    torch.set_num_threads(int(threads))
    torch.use_deterministic_algorithms(True)
    try:
        with float32_kernels("cuda"):    # sets only CUDA's flags, whatever the device
            yield
    finally:
        torch.set_num_threads(old_threads)
        torch.use_deterministic_algorithms(old_det)
        if not had_cublas:
            os.environ.pop(CUBLAS_WORKSPACE, None)


CUBLAS_WORKSPACE = "CUBLAS_WORKSPACE_CONFIG"


def batches(lengths: np.ndarray, batch_size: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Shuffle, sort chunks of 50 batches by length (less padding), shuffle the batches."""
    order = rng.permutation(len(lengths))
    chunk = 50 * batch_size
    out = []
    for start in range(0, len(order), chunk):
        part = order[start:start + chunk]
        part = part[np.argsort(lengths[part], kind="stable")]
        out += [part[i:i + batch_size] for i in range(0, len(part), batch_size)]
    return [out[i] for i in rng.permutation(len(out))]


def make_batch(ids: list[list[int]], rows, device: str = "cpu"):
    """Source (B, S), lengths (B,), decoder input <bos> w (B, T), target w <eos> (B, T)."""
    src, lengths = pad_batch([ids[i] for i in rows], device)
    tgt = torch.cat([src, torch.full((len(rows), 1), PAD, dtype=torch.long, device=device)], 1)
    tgt[torch.arange(len(rows)), lengths] = EOS                            # (B, S + 1)
    tgt_in = torch.cat([torch.full((len(rows), 1), BOS, dtype=torch.long, device=device),
                        src], 1)                                           # (B, S + 1)
    return src, lengths, tgt_in, tgt


def loss_fn(model: AutoEncoder, src, lengths, tgt_in, tgt) -> tuple[torch.Tensor, int]:
    """Mean cross-entropy over the non-padding target tokens, and their number."""
    states, _ = model(src, lengths, tgt_in)                                # (B, T, H)
    mask = tgt != PAD                                                      # (B, T)
    logits = model.decoder.out(states[mask])                               # (N, n_out)
    return nn.functional.cross_entropy(logits, model.targets(tgt[mask])), int(mask.sum())


@torch.no_grad()
def reconstruction(model: AutoEncoder, ids: list[list[int]], batch_size: int = 256) -> dict:
    """Held-out loss (teacher forcing), token accuracy and exact-match rate (greedy)."""
    model.eval()
    loss_sum = n_tok = correct = exact = 0.0
    for start in range(0, len(ids), batch_size):
        rows = np.arange(start, min(start + batch_size, len(ids)))
        src, lengths, tgt_in, tgt = make_batch(ids, rows)
        loss, n = loss_fn(model, src, lengths, tgt_in, tgt)
        loss_sum += float(loss) * n
        mask = tgt != PAD                                                  # (B, T)
        pred, _ = model.greedy(src, lengths, tgt.size(1) - 1)              # (B, T)
        hit = (pred == model.targets(tgt)) & mask
        n_tok += int(mask.sum())
        correct += int(hit.sum())
        exact += int((hit.sum(1) == mask.sum(1)).sum())
    return {"val_loss": loss_sum / n_tok, "token_accuracy": correct / n_tok,
            "exact_match": exact / len(ids)}


def _encode_stage(vocab, texts: list[str], max_len: int, limit: int | None) -> list[list[int]]:
    texts = texts if limit is None else texts[:limit]
    return [vocab.ids(t)[:max_len] for t in tokenize(texts)]


STATE_TENSORS, STATE_INFO = "state.pt", "state.json"


def save_state(workdir: Path, tensors: dict, info: dict) -> None:
    """``state.pt`` (state dicts, tensors only), then ``state.json`` (``info`` and the sha256 of
    ``state.pt``), each written atomically; the JSON is written last, so it names a whole file."""
    workdir.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    torch.save(tensors, buffer)
    data = buffer.getvalue()
    write_atomic(workdir / STATE_TENSORS, lambda f: f.write(data))
    info = {**info, "state_sha256": hashlib.sha256(data).hexdigest()}
    text = json.dumps(info, indent=1).encode("utf-8")
    write_atomic(workdir / STATE_INFO, lambda f: f.write(text))


def load_state(workdir: Path) -> tuple[dict, dict] | None:
    """The ``(tensors, info)`` that ``save_state`` wrote, or None if ``workdir`` holds neither.

    ``state.pt`` is unpickled with ``weights_only=True`` only: tensors, dicts, lists and numbers
    load; anything else (a crafted file that would run code) is refused before it runs. Every
    failure is a ValueError that names the file and says what to do.
    """
    pt, js = workdir / STATE_TENSORS, workdir / STATE_INFO
    if not pt.exists() and not js.exists():
        return None
    fix = (f"delete {pt} and {js} to start over, or point --workdir (workdir=) at another "
           "folder")

    def broken(path: Path, why: str) -> ValueError:
        return ValueError(f"cannot resume from the training state {path}: {why}; {fix}")
    if not pt.is_file():
        raise broken(js, f"{pt.name} is missing beside it")
    data = pt.read_bytes()
    try:
        tensors = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    except Exception as err:        # UnpicklingError for a crafted file, others for damage
        first = (str(err).strip().splitlines() or [""])[0][:200]
        raise broken(pt, f"it is not a tensors-only state file ({type(err).__name__}: "
                     f"{first})") from None
    if not isinstance(tensors, dict) or set(tensors) != {"model", "optimizer"}:
        raise broken(pt, "it does not hold the model and optimizer states")
    try:
        info = json.loads(js.read_text(encoding="utf-8"), object_pairs_hook=unique_keys)
    except (OSError, ValueError) as err:      # unreadable, not UTF-8, not JSON, a key twice
        raise broken(js, f"it cannot be read ({type(err).__name__}: {err})") from None
    if not isinstance(info, dict) or not {"recipe", "history", "done",
                                          "state_sha256"} <= set(info):
        raise broken(js, "it lacks recipe, history, done or state_sha256")
    if info["state_sha256"] != hashlib.sha256(data).hexdigest():
        raise broken(pt, f"it is not the file {js.name} describes (two runs wrote into one "
                     "workdir, or one was stopped between the two files)")
    return tensors, info


def train_i2ce(preset: str = "small", *, out: str | Path | None = None,
               workdir: str | Path | None = None, seed: int = 0, threads: int = 1,
               schedule: Schedule | None = None, glove: str | Path | None = None,
               corpus: TrainingCorpus | None = None, resume: bool = False,
               model_config: dict | None = None, progress: bool | str = "auto") -> TrainResult:
    """Train an I2CE auto-encoder (see the module docstring); returns the model and history.

    ``preset``: ``tiny`` / ``small`` / ``paper`` (sizes: ``capkit.models.i2ce.PRESETS``; default
    schedule: ``SCHEDULES[preset]``). ``out``: where to write the safetensors checkpoint.
    ``workdir``: where the per-epoch training state goes (needed for ``resume``).
    ``glove``: a GloVe text file (default: the offline 50-d bundle). ``model_config``: fields of
    the preset's ``I2CEConfig`` to change, e.g. ``{"attention": 0}`` (the no-attention ablation).
    """
    from capkit.models.glove import load_glove
    from capkit.progress import bar
    schedule = schedule or SCHEDULES.get(preset, SCHEDULES["small"])
    if resume and workdir is None:
        raise ValueError("resume=True needs the workdir= of the interrupted run")
    if threads < 1:
        raise ValueError(f"threads must be at least 1, got {threads!r}")
    workdir = None if workdir is None else Path(workdir)
    saved = load_state(workdir) if resume else None       # fails before any work is done
    with deterministic(threads):
        corpus = corpus or training_corpus(seed)
        vectors = load_glove(glove)
        train_tok = [tokenize(corpus.texts[s]["train"][:n])
                     for s, n in zip(STAGES, schedule.max_train)]
        vocab = build_vocabulary(train_tok[0] + train_tok[1], vectors, schedule.min_count)
        cfg = get_config(preset, **(model_config or {}), vocab_size=len(vocab),
                         embed_dim=vectors.dim)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            model = AutoEncoder(cfg, embedding_matrix(vocab, vectors, seed))
        data = {s: (_encode_stage(vocab, corpus.texts[s]["train"], cfg.max_len, n),
                    _encode_stage(vocab, corpus.texts[s]["val"], cfg.max_len, schedule.max_val))
                for s, n in zip(STAGES, schedule.max_train)}
        recipe = {"preset": preset, "seed": seed, "threads": threads,
                  "schedule": dataclasses.asdict(schedule), "glove": vectors.source,
                  "vocab_size": len(vocab), **({"model_config": model_config} if model_config
                                               else {})}
        history: list[dict] = []
        done, state, optimizer = 0, None, None        # done: epochs finished over both stages
        if saved is not None:
            state, info = saved
            if info["recipe"] != json.loads(json.dumps(recipe)):     # as JSON wrote it
                raise ValueError(f"{workdir / STATE_INFO} was written by another recipe "
                                 f"({info['recipe']}); use a new workdir or the same options")
            model.load_state_dict(state["model"])
            history, done = info["history"], info["done"]
        plan = [(s, e) for s, n in zip(STAGES, schedule.epochs) for e in range(n)]
        for k, (stage, epoch) in enumerate(plan):
            if k < done:
                continue
            if optimizer is None or epoch == 0:          # a fresh Adam for each stage
                optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad],
                                             lr=schedule.lr)
                if state is not None and epoch > 0:      # resumed in the middle of a stage
                    optimizer.load_state_dict(state["optimizer"])
                state = None
            train_ids, val_ids = data[stage]
            lengths = np.array([len(x) for x in train_ids])
            rng = np.random.default_rng([seed, STAGES.index(stage), epoch])
            model.train()
            total = n_tok = 0.0
            for rows in bar(batches(lengths, schedule.batch_size, rng), progress=progress,
                            desc=f"{stage} epoch {epoch + 1}", unit="batch"):
                loss, n = loss_fn(model, *make_batch(train_ids, rows))
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                nn.utils.clip_grad_norm_(model.parameters(), schedule.clip)
                optimizer.step()
                total += float(loss.detach()) * n
                n_tok += n
            row = {"stage": stage, "epoch": epoch + 1, "train_loss": total / n_tok}
            row.update(reconstruction(model, val_ids))
            for other in STAGES:                     # both held-out sets, to watch forgetting
                if other != stage:
                    row.update({f"{other}_{k}": v for k, v in
                                reconstruction(model, data[other][1]).items()})
            history.append(row)
            if workdir is not None:
                save_state(workdir, {"model": model.state_dict(),
                                     "optimizer": optimizer.state_dict()},
                           {"recipe": recipe, "history": history, "done": k + 1})
        meta = {**recipe, "glove_path": None if glove is None else str(glove),
                "history": history, "corpus": corpus.protocol,
                "command": (f"capkit train i2ce --preset {preset} --seed {seed} "
                            f"--threads {threads}")}
        result = I2CE(model.eval(), vocab, meta)
        sha = result.save(out) if out is not None else None
    return TrainResult(result, history, None if out is None else Path(out), sha)
