"""Training world-CLIP in two stages on the world's ``train`` split, every choice read on ``val``
scenes.

    result = train_world_clip("small", out="capkit/models/weights/world_clip", seed=0)

is what ``capkit train world-clip`` runs, and how the shipped checkpoint was made (about 13
minutes on one CPU thread).

Data (``capkit.world``; ``train`` split only, never a benchmark's scenes):

* ``n_scenes`` scenes of ``split_scenes("train", n, seed)``, rendered at 64 x 64; per scene 5
  ``describe()`` references and one ``foil_pair`` (true caption, one-word foil) of each foil type
  the scene allows (colour, shape, count, relation), and its object annotations;
* every text carries CLIPScore's prompt ("A photo depicts "), as the metric reads them;
* vocabulary: the words of all training texts plus the grammar's lexicon (so every grammatical
  caption tokenises without ``[UNK]``).

Stage 1, the world's "ImageNet": the vision tower alone learns the scenes' object annotations,
which the world has for free (the real towers start from ImageNet-supervised ones). Each of the
8 x 8 patch tokens of the last layer goes through a linear head (``AnnotationHead``, training
only) that says what is centred in that patch: whether an object is (this carries number and
position) and, where one is, its shape (5), colour (6) and size (2)::

    aux = CE(object | all 64 patches) + CE(shape | object patches) + CE(colour | object
          patches) + CE(size | object patches)

Stage 2, CLIP: the text tower joins. Scene i gets one positive text (its foil pair's true
caption with probability 1/2, else a reference) and one hard negative (the foil). With
s = exp(logit_scale) (CLIP's learnable temperature, clamped at 100) and unit vectors v_i
(images), t_j (positives), f_j (foils)::

    image -> text  CE over [s v_i . t_j (B) ; s v_i . f_j (B)]     target j = i     (B, 2B)
    text -> image  CE over  s t_j . v_i (B)                         target i = j     (B, B)
    loss = (image->text + text->image) / 2 + aux_weight * aux

which is ``CLIPModel(return_loss=True)``'s symmetric InfoNCE plus B foils in the image's softmax
(bag-of-words is not enough: the foil shares every word but one with a true caption), with the
stage-1 loss kept so the layers do not drop what stage 1 put in them.

Held-out numbers after every epoch, on the first ``n_val`` scenes of ``split_scenes("val")``:
each object's shape / colour / size read at its patch and, in stage 2, recall@1 and foil
accuracy by type (``evaluate``). AdamW, warm-up then cosine per stage, gradient norm clipped at
1, batch order from ``np.random.default_rng([seed, stage, epoch])``; no dropout; one thread and
deterministic kernels: the same command gives the same checkpoint bytes on a CPU. The choices
(stem, annotations, epochs) and their validation numbers: docs/learned_metrics.md, "world-CLIP".
Explained in notebooks/10_captioned_world.ipynb, section "World-CLIP".
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from capkit.models.world_clip import (PREPROCESS, build_model, build_tokenizer, get_config,
                                      save_folder, words_of)
from capkit.training.i2ce import deterministic
from capkit.world import describe
from capkit.world.foils import FOIL_TYPES, foil_pair
from capkit.world.grammar import PHRASES
from capkit.world.scene import COLORS, SHAPES, SIZES
from capkit.world.splits import split_scenes

PROMPT = "A photo depicts "           # capkit.metrics.clipscore.PROMPT (metrics is not imported)


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
    foil_weight: float = 0.5           # chance that the positive is the foil's own true caption
    aux_weight: float = 0.5            # stage-1 loss kept in stage 2
    n_val: int = 500                   # val scenes for the per-epoch numbers


SCHEDULES = {
    "tiny": Schedule(n_scenes=256, stage1_epochs=1, stage2_epochs=1, batch_size=32, warmup=2,
                     n_val=64),
    "small": Schedule(),
}


@dataclass
class TrainResult:
    model: object                # WorldCLIPModel
    tokenizer: object
    history: list[dict]
    path: Path | None
    sha256: str | None

    @property
    def final(self) -> dict:
        return self.history[-1]


def grammar_words() -> list[str]:
    """Every word the world grammar can say (as the tokenizer splits them), and the prompt's."""
    return words_of([*PHRASES, ", .", PROMPT])


def scene_texts(scenes, seed: int, offset: int = 0) -> list[dict]:
    """Per scene: 5 references and the (true, foil) pairs of each foil type it allows."""
    out = []
    for i, scene in enumerate(scenes):
        rng = np.random.default_rng([seed, offset + i, 7])
        found = [(t, p) for t in FOIL_TYPES if (p := foil_pair(scene, t, rng)) is not None]
        out.append({"refs": describe(scene, n=5, seed=seed * 1_000_003 + offset + i),
                    "pairs": [p for _, p in found], "types": [t for t, _ in found]})
    return out


def pixels(images) -> torch.Tensor:
    return torch.from_numpy(PREPROCESS.batch(images)[0])                   # (B, 3, 64, 64)


def tokens(tokenizer, texts: list[str]) -> dict:
    enc = tokenizer([PROMPT + t for t in texts], padding=True, truncation=True,
                    return_tensors="pt")
    return {"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"]}


def _features(out):
    return out if hasattr(out, "ndim") else out.pooler_output


def embed(model, px: torch.Tensor | None = None, enc: dict | None = None):
    """Unit image (B, D) and / or text (N, D) features."""
    img = None if px is None else nn.functional.normalize(
        _features(model.get_image_features(pixel_values=px)), dim=-1)
    txt = None if enc is None else nn.functional.normalize(
        _features(model.get_text_features(**enc)), dim=-1)
    return img, txt


def contrastive_loss(model, px, pos: dict, neg: dict) -> torch.Tensor:
    """CLIP's symmetric InfoNCE with the foils as extra image -> text negatives."""
    img, txt = embed(model, px, pos)                                       # (B, D), (B, D)
    _, foil = embed(model, None, neg)                                      # (B, D)
    scale = model.logit_scale.clamp(max=math.log(100)).exp()
    i2t = scale * img @ torch.cat([txt, foil]).T                           # (B, 2B)
    t2i = scale * txt @ img.T                                              # (B, B)
    target = torch.arange(len(img))
    return (nn.functional.cross_entropy(i2t, target)
            + nn.functional.cross_entropy(t2i, target)) / 2


@torch.no_grad()
def evaluate(model, tokenizer, images, texts: list[dict], batch_size: int = 250) -> dict:
    """Held-out recall@1 (image -> text, text -> image; the first reference of each scene
    against all scenes') and foil accuracy per type (true caption closer to the image)."""
    model.eval()
    img = torch.cat([embed(model, pixels(images[i:i + batch_size]))[0]
                     for i in range(0, len(images), batch_size)])
    refs = [t["refs"][0] for t in texts]
    txt = torch.cat([embed(model, None, tokens(tokenizer, refs[i:i + batch_size]))[1]
                     for i in range(0, len(refs), batch_size)])
    sims = img @ txt.T                                                     # (N, N)
    target = torch.arange(len(img))
    row = {"i2t_r1": float((sims.argmax(1) == target).float().mean()),
           "t2i_r1": float((sims.argmax(0) == target).float().mean())}
    hits: dict[str, list[bool]] = {t: [] for t in FOIL_TYPES}
    for k, t in enumerate(texts):
        if not t["pairs"]:
            continue
        _, e = embed(model, None, tokens(tokenizer, [x for p in t["pairs"] for x in p]))
        s = (e @ img[k]).view(-1, 2)                                       # (pairs, 2)
        for kind, (good, bad) in zip(t["types"], s.tolist()):
            hits[kind].append(good > bad)
    for kind, h in hits.items():
        row[f"foil_{kind}"] = float(np.mean(h)) if h else float("nan")
    row["foil_all"] = float(np.mean([x for h in hits.values() for x in h]))
    return row


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


def _choose(texts: list[dict], rows, rng, s: Schedule) -> tuple[list[str], list[str]]:
    pos, neg = [], []
    for i in rows:
        t = texts[i]
        true, foil = t["pairs"][int(rng.integers(len(t["pairs"])))]
        pos.append(true if rng.random() < s.foil_weight else
                   t["refs"][int(rng.integers(len(t["refs"])))])
        neg.append(foil)
    return pos, neg


def train_world_clip(preset: str = "small", *, out: str | Path | None = None, seed: int = 0,
                     threads: int = 1, schedule: Schedule | None = None,
                     model_config: dict | None = None, progress: bool | str = "auto") -> TrainResult:
    """Train world-CLIP (see the module docstring); ``out``: the folder to write.
    ``model_config``: fields of the preset's ``WorldCLIPConfig`` to change."""
    from capkit.models.runtime import seeded
    from capkit.progress import bar
    s = schedule or SCHEDULES.get(preset, SCHEDULES["small"])
    if threads < 1:
        raise ValueError(f"threads must be at least 1, got {threads!r}")
    cfg = get_config(preset, **(model_config or {}))
    grid = cfg.image_size // cfg.patch
    with deterministic(threads):
        scenes = split_scenes("train", s.n_scenes, seed)
        texts = scene_texts(scenes, seed)
        keep = [i for i, t in enumerate(texts) if t["pairs"]]     # every scene has colour foils
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
                    row["temperature"] = float(1 / model.logit_scale.detach().exp())
                    row.update(evaluate(model, tokenizer, list(val_images), val_texts))
                history.append(row)
        recipe = {"preset": preset, "config": dataclasses.asdict(cfg), "seed": seed,
                  "threads": threads, "schedule": dataclasses.asdict(s),
                  "data": "capkit.world split_scenes('train'); val: split_scenes('val')",
                  "history": history, "torch": torch.__version__,
                  "command": f"capkit train world-clip --preset {preset} --seed {seed} "
                             f"--threads {threads}"}
        model.eval()
        sha = save_folder(model, tokenizer, out, recipe) if out is not None else None
    return TrainResult(model, tokenizer, history, None if out is None else Path(out), sha)
