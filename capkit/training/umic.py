"""UMIC (Lee et al., ACL 2021): contrastive fine-tuning of a pre-trained image-text matcher.

    result = train_umic("world-vilt", out="capkit/models/weights/umic_world", seed=0)

is what ``capkit train umic`` runs (``--backbone NAME_OR_PATH``), and how the shipped
``umic_world`` checkpoint was made from the shipped world-ViLT (one CPU thread).

Per positive (a reference caption with its own image), five negatives with the *same* image,
one of each type of UMIC's released negative code (``data/ce.py``; its training script was never
released), all from ``capkit.transforms``. The paper (section 3.3) trains with four negatives per
positive, drawing the random or the hard one with probability 1/2 each; the code makes all five,
and capkit follows the code:

=================  =================================================  ==========================
type               UMIC                                               here
=================  =================================================  ==========================
``random``         a caption of another image                         ``random_captions``, 1.0
``hard``           a caption of one of the top-3 similar images       ``hard_negatives``, top 3
``keyword``        each N/V/J word -> same-tag word with p = 0.29     ``keyword_substitution``
``order``          shuffle all words, or drop each with p = 0.3 (1:1)  ``word_permutation`` 1.0 /
                                                                       ``repeat_remove`` remove
``repeat_remove``  each N/V/J word repeated or removed, p = 0.3        ``repeat_remove`` both 0.3
=================  =================================================  ==========================

Differences, said once: similar images are ranked by the tf-idf of their references (the CIDEr
proxy of ``TransformContext``; UMIC used VSE++ or CIDEr lists it did not release); keyword
substitution replaces 29% of the keywords (at least one) uniformly from the same-tag pool,
where UMIC flips a coin per keyword and weights words by frequency; repeat / remove samples any
word, not only N/V/J; ``order``'s full-strength ``word_permutation`` moves every word along one
cycle (no word stays in place), where the code's ``shuffle`` is uniform; ``order``'s removal
half and ``repeat_remove`` draw their word positions independently, as the code does. In the
world the truth is known: a negative that is still true of the scene
(a hard negative that happens to fit, a colour swapped for another present colour) is dropped
from the loss instead of being taught as false.

Score s = sigmoid(rank_output logit); loss per positive, over its valid negatives::

    L = mean_k max(0, margin + s_neg_k - s_pos),    margin = 0.2   (UMIC eq. 3)

The head starts as the backbone's matching head (world-ViLT's ITM logit; ViLT-COCO's retrieval
head), which is UMIC's ``init_output``: so UMIC-C, the head before fine-tuning, is epoch 0 of the
history. AdamW with warm-up and cosine decay; the epoch with the lowest validation loss is kept
(UMIC keeps the minimum-validation-loss checkpoint). Explained in notebooks/07_umic.ipynb,
section "Fine-tuning curves".

A real backbone (``--backbone dandelin/vilt-b32-finetuned-coco``, a GPU) trains on a user's
captions: ``references={image_id: [captions]}`` and ``images={image_id: image}`` (for COCO: the
Karpathy train split's five captions per image, and the ``train2014`` folder). Keyword tags then
come from spaCy, and no truth check is possible.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from capkit.training.i2ce import deterministic
from capkit.training.world_vilt import _lr, make_optimizer
from capkit.transforms import (TransformContext, hard_negatives, keyword_substitution,
                               random_captions, repeat_remove, word_permutation)

NEGATIVE_TYPES = ("random", "hard", "keyword", "order", "repeat_remove")
MARGIN = 0.2


@dataclass(frozen=True)
class Schedule:
    n_scenes: int = 2048               # world data only
    epochs: int = 16
    batch_size: int = 32               # positives per step (each with 5 negatives)
    lr: float = 3e-4
    weight_decay: float = 0.01
    warmup: int = 10
    clip: float = 1.0
    margin: float = MARGIN
    p_keyword: float = 0.29
    p_drop: float = 0.3
    p_repeat: float = 0.3
    n_val: int = 300


SCHEDULES = {"tiny": Schedule(n_scenes=96, epochs=1, batch_size=16, warmup=1, n_val=24),
             "small": Schedule()}


def world_keyword_tags(words: list[list[str]]) -> list[list[str]]:
    """Penn tags of the world grammar's keywords (colours and sizes JJ, shapes NN, plural
    shapes NNS), "" for every other word: the world's stand-in for spaCy's tags."""
    from capkit.world.grammar import GENERIC, PLURAL, SIZE_WORDS
    from capkit.world.scene import COLORS, SHAPES
    table = {**{w: "JJ" for w in (*COLORS, *SIZE_WORDS)}, **{w: "NN" for w in (*SHAPES, *GENERIC)},
             **{w: "NNS" for w in (*PLURAL.values(), *(g + "s" for g in GENERIC))}}
    return [[table.get(w, "") for w in ws] for ws in words]


def world_keyword_dictionary() -> dict[str, tuple[str, ...]]:
    from capkit.world.grammar import PLURAL, SIZE_WORDS
    from capkit.world.scene import COLORS, SHAPES
    return {"JJ": tuple(COLORS) + tuple(dict.fromkeys(SIZE_WORDS.values())),
            "NN": tuple(SHAPES), "NNS": tuple(PLURAL.values())}


def umic_negatives(captions: list[str], images: list[str], context: TransformContext, *,
                   seed: int = 0, tagger=None, dictionary=None, p_keyword: float = 0.29,
                   p_drop: float = 0.3, p_repeat: float = 0.3) -> dict[str, list[str]]:
    """One negative of each type per caption (see the module docstring), in the transforms'
    normal form; ``images[i]``: the id (in ``context``) of caption i's image. ``tagger``:
    word lists -> keyword tags (default spaCy's); ``dictionary``: {tag: words} (default the
    context's keyword dictionary)."""
    from capkit.transforms.words import caption_words
    tags = tagger(caption_words(captions)) if tagger is not None else None
    dictionary = dictionary if dictionary is not None else context.keyword_dictionary()
    shuffled = word_permutation(captions, 1.0, seed=seed)
    # order's removal half draws its own word positions: with repeat_remove's seed and an equal
    # rate it would remove the same words as repeat_remove (the authors' code draws both apart)
    drop_seed = int(np.random.default_rng([seed, 6]).integers(2**31))
    dropped = repeat_remove(captions, p_drop, mode="remove", seed=drop_seed)
    coin = np.random.default_rng([seed, 5]).random(len(captions)) < 0.5
    return {"random": random_captions(captions, images, 1.0, context=context, seed=seed),
            "hard": hard_negatives(captions, images, 1.0, context=context, top=3, seed=seed),
            "keyword": keyword_substitution(captions, p_keyword, dictionary=dictionary,
                                            tags=tags, seed=seed),
            "order": [s if c else d for s, d, c in zip(shuffled, dropped, coin)],
            "repeat_remove": repeat_remove(captions, p_repeat, mode="both", seed=seed)}


def hinge_loss(pos: torch.Tensor, neg: torch.Tensor, margin: float = MARGIN,
               valid: torch.Tensor | None = None) -> torch.Tensor:
    """mean over valid (positive, negative) pairs of max(0, margin + s_neg - s_pos);
    ``pos`` (B,), ``neg`` (B, K) scores; ``valid`` (B, K) bool (default all)."""
    terms = (margin + neg - pos[:, None]).clamp(min=0)                      # (B, K)
    if valid is None:
        return terms.mean()
    valid = valid.to(terms.device)
    return (terms * valid).sum() / valid.sum().clamp(min=1)


@dataclass
class UmicData:
    """Positives with their image, the context for RC / HN, and optional world scenes."""
    positives: list[str]               # normal form
    images: list                       # the image of each positive
    image_ids: list[str]
    context: TransformContext
    scenes: list | None = None         # world only: truth check of negatives


def world_data(n_scenes: int, seed: int, split: str = "train", image_size: int = 64) -> UmicData:
    """One reference per scene (the first of five) of ``split_scenes(split, n, seed)``."""
    from capkit.world import describe
    from capkit.world.splits import split_scenes
    scenes = split_scenes(split, n_scenes, seed)
    refs = {str(i): describe(s, n=5, seed=seed * 1_000_003 + i) for i, s in enumerate(scenes)}
    context = TransformContext.from_references(refs)
    return UmicData([cs[0] for cs in context.captions], [s.render(image_size) for s in scenes],
                    list(refs), context, scenes)


def split_references(references: dict, val_fraction: float, seed: int) -> tuple[dict, dict]:
    """``references`` split by image into (train, validation): a seeded ``val_fraction`` of the
    images (at least one) is held out, so the kept epoch is chosen on images never trained on."""
    if not 0 < val_fraction < 1:
        raise ValueError(f"val_fraction must be between 0 and 1 (exclusive), got {val_fraction!r}; "
                         "or give val_references")
    ids = list(references)
    n_val = max(1, int(round(val_fraction * len(ids))))
    if n_val < 2 or len(ids) - n_val < 2:
        if len(ids) < 4:
            what = "give more references"
        elif n_val < 2:
            what = f"raise --val-fraction (val_fraction) to {math.ceil(200 / len(ids)) / 100:g}"
        else:
            what = "lower --val-fraction (val_fraction)"
        raise ValueError(f"a validation fraction of {val_fraction:g} holds out {n_val} of the "
                         f"{len(ids)} images and trains on {len(ids) - n_val}; each side needs "
                         f"at least 2 (the negatives are other images' captions): {what}, or "
                         "pass --val-references (val_references)")
    held = set(np.random.default_rng(seed).permutation(len(ids))[:n_val].tolist())
    return ({k: references[k] for i, k in enumerate(ids) if i not in held},
            {k: references[k] for i, k in enumerate(ids) if i in held})


def user_data(references, images) -> UmicData:
    """From ``{image_id: [captions]}`` and ``{image_id: image}`` (the first caption of each
    image is its positive)."""
    missing = [k for k in references if k not in images]
    if missing:
        raise ValueError(f"{len(missing)} image id(s) have no image (first: {missing[:5]}); "
                         "give images={image_id: image} for every id of references")
    context = TransformContext.from_references(references)
    ids = list(context.images)
    return UmicData([cs[0] for cs in context.captions], [images[i] for i in ids], ids, context)


@dataclass
class TrainResult:
    encoder: object              # VisionTextEncoder with the fine-tuned model
    history: list[dict]          # epoch 0 = the backbone's matching head (UMIC-C)
    best_epoch: int
    path: Path | None
    sha256: str | None


def epoch_negatives(data: UmicData, positives: list[str], seed: int, s: Schedule, world: bool):
    """(N, 5) negatives of ``positives`` and (N, 5) validity (not the positive; in the world,
    not true of the scene)."""
    from capkit.world.check import check
    kw = dict(tagger=world_keyword_tags, dictionary=world_keyword_dictionary()) if world else {}
    negs = umic_negatives(positives, data.image_ids, data.context, seed=seed, p_keyword=s.p_keyword,
                          p_drop=s.p_drop, p_repeat=s.p_repeat, **kw)
    table = [list(row) for row in zip(*(negs[t] for t in NEGATIVE_TYPES))]
    valid = np.array([[n != p and not (world and check(data.scenes[i], n).true) for n in row]
                      for i, (p, row) in enumerate(zip(positives, table))])
    return table, valid


def batch_scores(encoder, positives, negatives, images) -> tuple[torch.Tensor, torch.Tensor]:
    """sigmoid scores (B,) of the positives and (B, K) of their negatives, one pass."""
    k = len(negatives[0])
    texts = list(positives) + [n for row in negatives for n in row]
    px = encoder.pixels(images)
    px = torch.cat([px, px.repeat_interleave(k, dim=0)])
    logits = encoder.forward(encoder.encode_text(texts), px).logits[:, 0].sigmoid()
    return logits[:len(positives)], logits[len(positives):].view(-1, k)


@torch.no_grad()
def validate(encoder, data: UmicData, negatives, valid, s: Schedule) -> dict:
    """Validation hinge loss and, per negative type, how often the positive scores higher."""
    encoder.model.eval()
    pos, neg = [], []
    for a in range(0, len(data.positives), 64):
        p, n = batch_scores(encoder, data.positives[a:a + 64], negatives[a:a + 64],
                            data.images[a:a + 64])
        pos.append(p), neg.append(n)
    pos, neg = torch.cat(pos), torch.cat(neg)
    ok = torch.from_numpy(valid).to(pos.device)
    row = {"val_loss": float(hinge_loss(pos, neg, s.margin, ok))}
    for k, name in enumerate(NEGATIVE_TYPES):
        wins = (pos > neg[:, k])[ok[:, k]]
        row[f"acc_{name}"] = float(wins.float().mean()) if len(wins) else float("nan")
    return row


def resolve_backbone(backbone: str | Path, device: str | None = None):
    """``world-vilt`` (the shipped checkpoint), a world folder, or a ViLT name / folder."""
    from capkit.models.world_vilt import SHIPPED, load_vilt, load_world_vilt
    if str(backbone) == "world-vilt":
        return load_world_vilt(SHIPPED, device=device)
    return load_vilt(backbone, device=device)


def train_umic(backbone: str | Path = "world-vilt", *, out: str | Path | None = None,
               preset: str = "small", seed: int = 0, threads: int = 1,
               schedule: Schedule | None = None, references=None, images=None,
               val_references=None, val_fraction: float = 0.1,
               device: str | None = None, progress: bool = False) -> TrainResult:
    """Fine-tune ``backbone``'s matching head and encoder with UMIC's loss (module docstring).
    World data unless ``references`` / ``images`` (a user's captions) are given.

    A user's validation set (the kept epoch has the lowest loss there) is ``val_references``
    (``{image_id: [captions]}``, their images in ``images`` too), or else a seeded
    ``val_fraction`` of the images of ``references``, held out from training."""
    import copy

    from tqdm.auto import tqdm
    s = schedule or SCHEDULES.get(preset, SCHEDULES["small"])
    if threads < 1:
        raise ValueError(f"threads must be at least 1, got {threads!r}")
    world = references is None
    with deterministic(threads):
        if world:       # (the backbone first, in the order the shipped umic_world was made in)
            enc = resolve_backbone(backbone, device)
            train, val = world_data(s.n_scenes, seed), world_data(s.n_val, seed, "val")
        else:           # the user's data is checked before the backbone (maybe a hub ViLT) loads
            if val_references is None:
                references, val_references = split_references(references, val_fraction, seed)
            overlap = set(references) & set(val_references)
            if overlap:
                raise ValueError(f"{len(overlap)} image id(s) are in both references and "
                                 f"val_references (first: {sorted(overlap)[:5]}); validation "
                                 "images must not be trained on")
            for name, refs in (("--references (references)", references),
                               ("--val-references (val_references)", val_references)):
                if isinstance(refs, dict) and len(refs) < 2:
                    raise ValueError(f"{name} holds {len(refs)} image(s); each of the training "
                                     "and validation sets needs at least 2 (the negatives are "
                                     "other images' captions): give more images")
            train, val = user_data(references, images), user_data(val_references, images)
            enc = resolve_backbone(backbone, device)
        val_negs, val_valid = epoch_negatives(val, val.positives, seed + 999, s, world)
        history = [{"epoch": 0, "train_loss": float("nan"),
                    **validate(enc, val, val_negs, val_valid, s)}]
        best, best_state = 0, copy.deepcopy(enc.model.state_dict())
        optimizer = make_optimizer(enc.model.named_parameters(), s)
        per_epoch = len(train.positives) // s.batch_size
        total, step = per_epoch * s.epochs, 0
        for epoch in range(1, s.epochs + 1):
            rng = np.random.default_rng([seed, epoch])
            pick = [cs[int(rng.integers(len(cs)))] for cs in train.context.captions]
            negs, valid = epoch_negatives(train, pick, seed * 1000 + epoch, s, world)
            order = rng.permutation(len(pick))[:per_epoch * s.batch_size]
            enc.model.train()
            losses = []
            for b in tqdm(range(per_epoch), disable=not progress, desc=f"epoch {epoch}",
                          unit="batch", leave=False):
                rows = order[b * s.batch_size:(b + 1) * s.batch_size]
                for group in optimizer.param_groups:
                    group["lr"] = _lr(step, total, s)
                pos, neg = batch_scores(enc, [pick[i] for i in rows], [negs[i] for i in rows],
                                        [train.images[i] for i in rows])
                loss = hinge_loss(pos, neg, s.margin, torch.from_numpy(valid[rows]))
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                nn.utils.clip_grad_norm_(enc.model.parameters(), s.clip)
                optimizer.step()
                losses.append(float(loss.detach()))
                step += 1
            history.append({"epoch": epoch, "train_loss": float(np.mean(losses)),
                            **validate(enc, val, val_negs, val_valid, s)})
            if history[-1]["val_loss"] < history[best]["val_loss"]:
                best, best_state = epoch, copy.deepcopy(enc.model.state_dict())
        enc.model.load_state_dict(best_state)
        enc.model.eval()
        sha = None
        if out is not None:
            from capkit.models.world_vilt import save_folder
            recipe = {"name": "umic-world" if world else "umic", "backbone": str(backbone),
                      "backbone_signature": enc.signature, "preset": preset, "seed": seed,
                      "threads": threads, "schedule": dataclasses.asdict(s),
                      "negatives": list(NEGATIVE_TYPES), "loss": "hinge on sigmoid scores",
                      "best_epoch": best, "history": history, "torch": torch.__version__,
                      "text": "transforms normal form" if enc.normal_form else "as given",
                      "command": f"capkit train umic --backbone {backbone} --preset {preset} "
                                 f"--seed {seed} --threads {threads}"
                                 + ("" if s.margin == MARGIN else f" --margin {s.margin:g}")}
            if enc.device != "cpu":    # (a CPU recipe stays as the shipped one was written)
                recipe["device"] = enc.device
                recipe["command"] += f" --device {enc.device}"
            sha = save_folder(enc.model, enc.tokenizer, out, recipe, enc.preprocess)
    return TrainResult(enc, history, best, None if out is None else Path(out), sha)
