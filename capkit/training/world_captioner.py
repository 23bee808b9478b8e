"""Training the world captioner: teacher-forced cross-entropy on ``train``-split scenes and their
``describe()`` references, saved at several steps so the world has systems from weak to good.

    result = train_world_captioner("small", out="capkit/models/weights", seed=0)

is what ``capkit train world-captioner`` runs, and how the shipped checkpoints were made (one CPU
thread, seed 0; the same command gives the same bytes on the same machine).

Data (``capkit.world``; ``train`` split only, never a benchmark's scenes): ``n_scenes`` scenes of
``split_scenes("train", n, seed)`` rendered at 64 x 64, 5 references each (``describe``), read as
the grammar's tokens. Vocabulary: the grammar's whole lexicon (``grammar_words``), so the model
can say any word a reference can. Each step draws ``batch_size`` scenes and one of each scene's
references with ``np.random.default_rng([seed, step])``. Adam, linear warm-up then cosine decay
over ``steps``, gradient norm clipped at 1, no dropout. After each step in ``save_at`` the model
captions ``n_val`` held-out ``val`` scenes greedily and ``check`` measures its captions:
grammatical rate, truth rate (true / all), mean coverage and mean rubric rating (1-4).
Explained in notebooks/10_captioned_world.ipynb, section "The captioning systems and their errors".
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from capkit.models.world_captioner import (
    BOS, EOS, PAD, SHIPPED_STEPS, SPECIALS, CaptionNet, WorldCaptioner, get_config, pixels,
    shipped_path,
)
from capkit.training.i2ce import deterministic
from capkit.world import check, describe
from capkit.world.grammar import PHRASES, tokens
from capkit.world.splits import split_scenes


@dataclass(frozen=True)
class Schedule:
    n_scenes: int = 4000
    steps: int = SHIPPED_STEPS[-1]
    save_at: tuple[int, ...] = SHIPPED_STEPS
    batch_size: int = 64
    lr: float = 2e-3
    warmup: int = 50
    clip: float = 1.0
    n_val: int = 300


SCHEDULES = {
    "tiny": Schedule(n_scenes=200, steps=60, save_at=(10, 60), batch_size=16, warmup=5,
                     n_val=40),
    "small": Schedule(),
}


@dataclass
class TrainResult:
    captioners: dict[int, WorldCaptioner]       # step -> model as it was after that step
    history: list[dict]                         # one row per saved step
    paths: dict[int, Path]
    losses: list[float]                         # training loss of every step

    @property
    def final(self) -> dict:
        return self.history[-1]


def grammar_words() -> list[str]:
    """Every token the world grammar can say, in a fixed order."""
    return list(dict.fromkeys(w for p in PHRASES for w in tokens(p)))


def measure(model: WorldCaptioner, scenes, images) -> dict:
    """Greedy captions of held-out scenes, checked: rates and means over the scenes."""
    records = [check(s, c) for s, c in zip(scenes, model.caption(images))]
    return {"grammatical": float(np.mean([r.grammatical for r in records])),
            "true": float(np.mean([r.true is True for r in records])),
            "coverage": float(np.mean([r.coverage for r in records])),
            "rating": float(np.mean([r.rating for r in records]))}


def _lr(step: int, s: Schedule) -> float:
    if step < s.warmup:
        return s.lr * (step + 1) / s.warmup
    return s.lr * 0.5 * (1 + math.cos(math.pi * (step - s.warmup) / max(1, s.steps - s.warmup)))


def _batch(ids: list[list[list[int]]], rows, rng) -> tuple[torch.Tensor, torch.Tensor]:
    """Decoder input <bos> w (B, T) and target w <eos> (B, T), one reference per scene."""
    seqs = [ids[i][int(rng.integers(len(ids[i])))] for i in rows]
    width = max(len(x) for x in seqs) + 1
    inp = torch.full((len(seqs), width), PAD, dtype=torch.long)
    out = torch.full((len(seqs), width), PAD, dtype=torch.long)
    for k, x in enumerate(seqs):
        inp[k, :len(x) + 1] = torch.tensor([BOS, *x])
        out[k, :len(x) + 1] = torch.tensor([*x, EOS])
    return inp, out


def train_world_captioner(preset: str = "small", *, out: str | Path | None = None, seed: int = 0,
                          threads: int = 1, schedule: Schedule | None = None,
                          progress: bool | str = "auto") -> TrainResult:
    """Train the captioner (see the module docstring). ``out``: a folder that receives one
    checkpoint per step of ``save_at`` (``world_captioner_stepNNNN.safetensors``)."""
    from capkit.progress import bar
    s = schedule or SCHEDULES[preset]
    if threads < 1:
        raise ValueError(f"threads must be at least 1, got {threads!r}")
    if not s.save_at or max(s.save_at) > s.steps or min(s.save_at) < 1:
        raise ValueError(f"save_at={s.save_at}: give steps between 1 and steps={s.steps}")
    cfg = get_config(preset)
    words = SPECIALS + tuple(grammar_words())
    # the seed below is for this run only: the caller's torch RNG comes back as it was
    with deterministic(threads), torch.random.fork_rng(devices=[]):
        scenes = split_scenes("train", s.n_scenes, seed)
        images = pixels(np.stack([np.asarray(sc.render(cfg.image_size)) for sc in scenes]),
                        cfg.image_size)
        val_scenes = split_scenes("val", s.n_val, seed)
        val_images = np.stack([np.asarray(sc.render(cfg.image_size)) for sc in val_scenes])
        index = {w: i for i, w in enumerate(words)}
        ids = [[[index[w] for w in tokens(r)][:cfg.max_len]
                for r in describe(sc, n=5, seed=seed * 1_000_003 + i)]
               for i, sc in enumerate(scenes)]
        torch.manual_seed(seed)
        net = CaptionNet(cfg, len(words))
        optimizer = torch.optim.Adam(net.parameters(), lr=s.lr)
        model = WorldCaptioner(net, words)
        captioners, history, paths, losses = {}, [], {}, []
        for step in bar(range(s.steps), progress=progress, desc="steps"):
            rng = np.random.default_rng([seed, step])
            rows = rng.choice(len(scenes), size=s.batch_size, replace=False)
            inp, target = _batch(ids, rows, rng)
            net.train()
            logits = net(images[rows], inp)
            loss = nn.functional.cross_entropy(logits.reshape(-1, len(words)),
                                               target.reshape(-1), ignore_index=PAD)
            for group in optimizer.param_groups:
                group["lr"] = _lr(step, s)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(net.parameters(), s.clip)
            optimizer.step()
            losses.append(float(loss.detach()))
            if step + 1 in s.save_at:
                net.eval()
                row = {"step": step + 1, "train_loss": float(np.mean(losses[-50:])),
                       **measure(model, val_scenes, val_images)}
                history.append(row)
                snapshot = _snapshot(model, row, preset, seed, threads, s)
                captioners[step + 1] = snapshot
                if out is not None:
                    path = Path(out) / shipped_path(step + 1).name
                    snapshot.save(path)
                    paths[step + 1] = path
    return TrainResult(captioners, history, paths, losses)


def _snapshot(model: WorldCaptioner, row: dict, preset: str, seed: int, threads: int,
              s: Schedule) -> WorldCaptioner:
    """A copy of the model as it is now, with the recipe and its held-out numbers."""
    net = CaptionNet(model.cfg, len(model.words))
    net.load_state_dict(model.net.state_dict())
    meta = {"preset": preset, "seed": seed, "threads": threads, "step": row["step"],
            "schedule": dataclasses.asdict(s), "val": row, "torch": torch.__version__,
            "data": "capkit.world split_scenes('train') + describe(); val: split_scenes('val')",
            "command": f"capkit train world-captioner --preset {preset} --seed {seed} "
                       f"--threads {threads}"}
    return WorldCaptioner(net, model.words, meta)
