"""Training world-CLIP: CLIP's contrastive loss on world training scenes, one-word foils as hard
negatives, held-out retrieval and foil accuracy on ``val`` scenes.

    result = train_world_clip("small", out="capkit/models/weights/world_clip", seed=0)

is what ``capkit train world-clip`` runs, and how the shipped checkpoint was made (~4-5 minutes
on one CPU thread).

Data (``capkit.world``; ``train`` split only, never a benchmark's scenes):

* ``n_scenes`` scenes of ``split_scenes("train", n, seed)``, rendered at 64 x 64; per scene 5
  ``describe()`` references and one ``foil_pair`` (true caption, one-word foil) of each foil type
  the scene allows (colour, shape, count, relation);
* every text carries CLIPScore's prompt ("A photo depicts "), as the metric reads them;
* vocabulary: the words of all training texts plus the grammar's lexicon (so every grammatical
  caption tokenises without ``[UNK]``).

Loss per batch of B scenes: scene i gets one positive text (its foil pair's true caption with
probability 1/2, else a reference) and one hard negative (the foil). With s = exp(logit_scale)
(CLIP's learnable temperature, clamped at 100) and unit vectors v_i (images), t_j (positives),
f_j (foils)::

    image -> text  CE over [s v_i . t_j (B) ; s v_i . f_j (B)]     target j = i     (B, 2B)
    text -> image  CE over  s t_j . v_i (B)                         target i = j     (B, B)
    loss = (image->text + text->image) / 2

which is ``CLIPModel(return_loss=True)``'s symmetric InfoNCE plus B foils in the image's softmax,
so bag-of-words is not enough: the foil shares every word but one with a true caption.
AdamW, linear warm-up then cosine decay, gradient norm clipped at 1. Batch order and text
choices come from ``np.random.default_rng([seed, epoch])``; no dropout; one thread and
deterministic kernels: the same command gives the same checkpoint bytes on a CPU.
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
from capkit.world.splits import split_scenes

PROMPT = "A photo depicts "           # capkit.metrics.clipscore.PROMPT (metrics is not imported)


@dataclass(frozen=True)
class Schedule:
    n_scenes: int = 7680
    epochs: int = 6
    batch_size: int = 128
    lr: float = 1e-3
    weight_decay: float = 0.05
    warmup: int = 30                   # steps
    clip: float = 1.0
    foil_weight: float = 0.5           # chance that the positive is the foil's own true caption
    n_val: int = 500                   # val scenes for held-out retrieval / foil accuracy


SCHEDULES = {
    "tiny": Schedule(n_scenes=256, epochs=2, batch_size=32, warmup=2, n_val=64),
    "small": Schedule(),
}


@dataclass
class TrainResult:
    model: object                # CLIPModel
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


def _lr(step: int, total: int, s: Schedule) -> float:
    if step < s.warmup:
        return s.lr * (step + 1) / s.warmup
    return s.lr * 0.5 * (1 + math.cos(math.pi * (step - s.warmup) / max(1, total - s.warmup)))


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
    from capkit.progress import bar
    s = schedule or SCHEDULES.get(preset, SCHEDULES["small"])
    if threads < 1:
        raise ValueError(f"threads must be at least 1, got {threads!r}")
    cfg = get_config(preset, **(model_config or {}))
    with deterministic(threads):
        scenes = split_scenes("train", s.n_scenes, seed)
        texts = scene_texts(scenes, seed)
        keep = [i for i, t in enumerate(texts) if t["pairs"]]     # every scene has colour foils
        images = np.stack([np.asarray(scenes[i].render(cfg.image_size)) for i in keep])
        texts = [texts[i] for i in keep]
        val_scenes = split_scenes("val", s.n_val, seed)
        val_images = [sc.render(cfg.image_size) for sc in val_scenes]
        val_texts = scene_texts(val_scenes, seed, offset=10_000_000)
        all_texts = [x for t in texts for x in t["refs"] + [w for p in t["pairs"] for w in p]]
        tokenizer = build_tokenizer(grammar_words() + sorted(set(words_of(all_texts))
                                                             - set(grammar_words())),
                                    cfg.context)
        model = build_model(cfg, len(tokenizer), seed)
        decay = [p for n, p in model.named_parameters() if p.ndim >= 2]
        rest = [p for n, p in model.named_parameters() if p.ndim < 2]
        optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": s.weight_decay},
                                       {"params": rest, "weight_decay": 0.0}], lr=s.lr)
        per_epoch = len(texts) // s.batch_size
        total, step, history = per_epoch * s.epochs, 0, []
        for epoch in range(s.epochs):
            rng = np.random.default_rng([seed, epoch])
            order = rng.permutation(len(texts))[:per_epoch * s.batch_size]
            model.train()
            losses = []
            for b in bar(range(per_epoch), progress=progress, desc=f"epoch {epoch + 1}",
                         unit="batch"):
                rows = order[b * s.batch_size:(b + 1) * s.batch_size]
                pos, neg = _choose(texts, rows, rng, s)
                for group in optimizer.param_groups:
                    group["lr"] = _lr(step, total, s)
                loss = contrastive_loss(model, pixels(list(images[rows])),
                                        tokens(tokenizer, pos), tokens(tokenizer, neg))
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                nn.utils.clip_grad_norm_(model.parameters(), s.clip)
                optimizer.step()
                losses.append(float(loss.detach()))
                step += 1
            row = {"epoch": epoch + 1, "train_loss": float(np.mean(losses)),
                   "temperature": float(1 / model.logit_scale.detach().exp())}
            row.update(evaluate(model, tokenizer, val_images, val_texts))
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
