"""Training the world backbone (``capkit.models.world_backbone``) in two stages, on the world's
``train`` split, every choice read on ``val`` scenes.

    result = train_world_backbone("small", out="world_backbone_small", seed=0)

is what ``capkit train world-backbone`` runs.

Stage 1, the world's "ImageNet": the vision tower alone learns the scenes' object annotations,
which the world has for free. Each of the 8 x 8 patch tokens of the last layer goes through a
linear head that says what is centred in that patch: whether an object is (this carries number
and position), and, where one is, its shape (5), colour (6) and size (2)::

    loss = CE(object | all 64 patches) + CE(shape | object patches) + CE(colour | object
           patches) + CE(size | object patches)

Stage 2, CLIP: the text tower joins, and the whole model learns world-CLIP's loss
(``capkit.training.world_clip.contrastive_loss``: symmetric InfoNCE, each scene's one-word foil
as an extra image -> text negative), with the stage-1 loss kept on the same images
(weight ``aux_weight``) so the layers do not drop what stage 1 put in them.

Held-out numbers after every epoch, on the first ``n_val`` scenes of ``split_scenes("val")``
(never a benchmark's scenes: ``capkit.world.splits`` gives every split its own random stream):
stage 1, each object's shape / colour / size read at its patch; stage 2, world-CLIP's recall@1
and foil accuracy by type (``capkit.training.world_clip.evaluate``). AdamW, warm-up then cosine
per stage, gradients clipped at 1, batch order from ``np.random.default_rng([seed, stage,
epoch])``, one thread and deterministic kernels: the same command gives the same bytes.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from capkit.models.world_backbone import build_model, get_config, save_folder
from capkit.models.world_clip import build_tokenizer, words_of
from capkit.training.i2ce import deterministic
from capkit.training.world_clip import (_choose, contrastive_loss, evaluate, grammar_words,
                                        pixels, scene_texts, tokens)
from capkit.world.scene import COLORS, SHAPES, SIZES
from capkit.world.splits import split_scenes


@dataclass(frozen=True)
class Schedule:
    n_scenes: int = 7680
    stage1_epochs: int = 3
    stage2_epochs: int = 6
    batch_size: int = 128
    lr: float = 1e-3
    weight_decay: float = 0.05
    warmup: int = 30                   # steps, each stage
    clip: float = 1.0
    foil_weight: float = 0.5           # as world-CLIP: chance the positive is the true caption
    aux_weight: float = 0.5            # stage-1 loss kept in stage 2
    n_val: int = 500                   # val scenes 0..n_val-1 for the per-epoch numbers


SCHEDULES = {
    "tiny": Schedule(n_scenes=128, stage1_epochs=1, stage2_epochs=1, batch_size=32, warmup=2,
                     n_val=32),
    "small": Schedule(),
}


@dataclass
class TrainResult:
    model: object                # WorldBackboneCLIP
    tokenizer: object
    history: list[dict]
    path: Path | None
    sha256: str | None

    @property
    def final(self) -> dict:
        return self.history[-1]


def patch_labels(scenes, grid: int = 8) -> np.ndarray:
    """(N, 4, grid * grid) int64: per patch whether an object is centred in it (0 / 1), and that
    object's shape, colour and size (indices into SHAPES, COLORS, SIZES; -100 where none)."""
    out = np.full((len(scenes), 4, grid * grid), -100, dtype=np.int64)
    out[:, 0] = 0
    for n, scene in enumerate(scenes):
        for obj in scene.objects:
            k = min(int(obj.y * grid), grid - 1) * grid + min(int(obj.x * grid), grid - 1)
            out[n, :, k] = (1, SHAPES.index(obj.shape), COLORS.index(obj.color),
                            SIZES.index(obj.size))
    return out


class AnnotationHead(nn.Module):
    """Linear heads on the vision tower's last-layer patch tokens (training only)."""

    def __init__(self, hidden: int):
        super().__init__()
        self.sizes = (2, len(SHAPES), len(COLORS), len(SIZES))
        self.proj = nn.Linear(hidden, sum(self.sizes))

    def forward(self, model, px):                                      # (B, 3, H, W)
        states = model.vision_model(pixel_values=px).last_hidden_state[:, 1:]   # (B, P, D)
        return self.proj(states).split(self.sizes, dim=-1)             # 4 x (B, P, k)

    def loss(self, model, px, labels: torch.Tensor) -> torch.Tensor:   # labels (B, 4, P)
        logits = self(model, px)
        return sum(nn.functional.cross_entropy(z.flatten(0, 1), labels[:, j].flatten(),
                                               ignore_index=-100)
                   for j, z in enumerate(logits))


@torch.no_grad()
def annotation_accuracy(model, head, images, labels, batch_size: int = 250) -> dict:
    """Each object's shape / colour / size read at its patch (val scenes)."""
    model.eval()
    preds = [[], [], [], []]
    for a in range(0, len(images), batch_size):
        for j, z in enumerate(head(model, pixels(list(images[a:a + batch_size])))):
            preds[j].append(z.argmax(-1))
    lab = torch.from_numpy(labels)
    obj = lab[:, 0] > 0
    return {f"probe_{name}": float((torch.cat(preds[j])[obj] == lab[:, j][obj]).float().mean())
            for j, name in enumerate(("object", "shape", "colour", "size")) if j}


def _lr(step: int, total: int, s: Schedule) -> float:
    if step < s.warmup:
        return s.lr * (step + 1) / s.warmup
    return s.lr * 0.5 * (1 + math.cos(math.pi * (step - s.warmup) / max(1, total - s.warmup)))


def _optimizer(params, s: Schedule):
    params = list(params)
    return torch.optim.AdamW([{"params": [p for p in params if p.ndim >= 2],
                               "weight_decay": s.weight_decay},
                              {"params": [p for p in params if p.ndim < 2],
                               "weight_decay": 0.0}], lr=s.lr)


def _step(optimizer, params, loss, s: Schedule, lr: float) -> float:
    for group in optimizer.param_groups:
        group["lr"] = lr
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    nn.utils.clip_grad_norm_(params, s.clip)
    optimizer.step()
    return float(loss.detach())


def train_world_backbone(preset: str = "small", *, out: str | Path | None = None, seed: int = 0,
                         threads: int = 1, schedule: Schedule | None = None,
                         model_config: dict | None = None,
                         progress: bool | str = "auto") -> TrainResult:
    """Train the world backbone (module docstring); ``out``: the folder to write.
    ``model_config``: fields of the preset's ``WorldBackboneConfig`` to change."""
    from capkit.progress import bar
    s = schedule or SCHEDULES.get(preset, SCHEDULES["small"])
    if threads < 1:
        raise ValueError(f"threads must be at least 1, got {threads!r}")
    cfg = get_config(preset, **(model_config or {}))
    grid = cfg.image_size // cfg.patch
    with deterministic(threads):
        scenes = split_scenes("train", s.n_scenes, seed)
        texts = scene_texts(scenes, seed)
        keep = [i for i, t in enumerate(texts) if t["pairs"]]
        images = np.stack([np.asarray(scenes[i].render(cfg.image_size)) for i in keep])
        labels = torch.from_numpy(patch_labels([scenes[i] for i in keep], grid))
        texts = [texts[i] for i in keep]
        val_scenes = split_scenes("val", s.n_val, seed)
        val_images = np.stack([np.asarray(sc.render(cfg.image_size)) for sc in val_scenes])
        val_labels = patch_labels(val_scenes, grid)
        val_texts = scene_texts(val_scenes, seed, offset=10_000_000)
        all_texts = [x for t in texts for x in t["refs"] + [w for p in t["pairs"] for w in p]]
        tokenizer = build_tokenizer(grammar_words() + sorted(set(words_of(all_texts))
                                                             - set(grammar_words())),
                                    cfg.context)
        model = build_model(cfg, len(tokenizer), seed)
        from capkit.models.runtime import seeded
        with seeded(seed + 1):
            head = AnnotationHead(cfg.vision_hidden)
        per_epoch = len(texts) // s.batch_size
        history = []
        for stage, epochs in ((1, s.stage1_epochs), (2, s.stage2_epochs)):
            params = (list(model.vision_model.parameters()) if stage == 1 else
                      list(model.parameters())) + list(head.parameters())
            optimizer, total, step = _optimizer(params, s), per_epoch * epochs, 0
            for epoch in range(epochs):
                rng = np.random.default_rng([seed, stage, epoch])
                order = rng.permutation(len(texts))[:per_epoch * s.batch_size]
                model.train()
                losses = []
                for b in bar(range(per_epoch), progress=progress,
                             desc=f"stage {stage} epoch {epoch + 1}", unit="batch"):
                    rows = order[b * s.batch_size:(b + 1) * s.batch_size]
                    px = pixels(list(images[rows]))
                    loss = head.loss(model, px, labels[rows])
                    if stage == 2:
                        pos, neg = _choose(texts, rows, rng, s)
                        loss = (contrastive_loss(model, px, tokens(tokenizer, pos),
                                                 tokens(tokenizer, neg)) + s.aux_weight * loss)
                    losses.append(_step(optimizer, params, loss, s, _lr(step, total, s)))
                    step += 1
                row = {"stage": stage, "epoch": epoch + 1, "train_loss": float(np.mean(losses))}
                row.update(annotation_accuracy(model, head, val_images, val_labels))
                if stage == 2:
                    row.update(evaluate(model, tokenizer, list(val_images), val_texts))
                history.append(row)
        recipe = {"preset": preset, "config": dataclasses.asdict(cfg), "seed": seed,
                  "threads": threads, "schedule": dataclasses.asdict(s),
                  "data": "capkit.world split_scenes('train'); val: split_scenes('val')",
                  "history": history, "torch": torch.__version__,
                  "command": f"capkit train world-backbone --preset {preset} --seed {seed} "
                             f"--threads {threads}"}
        model.eval()
        sha = save_folder(model, tokenizer, out, recipe) if out is not None else None
    return TrainResult(model, tokenizer, history, None if out is None else Path(out), sha)
