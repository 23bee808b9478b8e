"""Pre-training world-ViLT with UNITER's two objectives, image-text matching (ITM) and masked
language modelling (MLM), plus replaced-word detection (RTD), on world training scenes;
held-out foil accuracy on ``val`` scenes.

    result = train_world_vilt("small", out="capkit/models/weights/world_vilt", seed=0)

is what ``capkit train world-vilt`` runs, and how the shipped checkpoint was made (one CPU
thread; 768 steps, about 19 minutes of CPU, measured beside other jobs on a 2-core machine).

The start, as ViLT starts from an ImageNet ViT: the ``small`` preset copies world-CLIP's vision
tower (its convolutional stem, image positions, all three layers, final layer norm;
``start_from_world_clip``) into world-ViLT, whose sizes, activation and patch embedding are that
tower's; text embeddings, pooler and heads start random. From scratch (64 wide, 2 deep), the
matching head never left chance: the ITM loss stayed at ln 2 = 0.693 for 4 and for 12 epochs
while MLM fell. Started from world-CLIP, the ITM loss falls to about 0.3 in 8 epochs and
held-out colour foils reach 0.93 (``foil_*`` in the history).

Data: world-CLIP's (``capkit.training.world_clip.scene_texts``): ``n_scenes`` scenes of
``split_scenes("train", n, seed)`` (never a benchmark's), 5 ``describe()`` references and one
(true caption, one-word foil) pair per foil type each; texts in the transforms' normal form.

Per batch of B scenes, scene i gets one positive (its foil pair's true caption with probability
``foil_weight``, else a reference) and one negative: a reference of the next scene in the batch
that is false of scene i (else the foil), UNITER's random negative. After ``easy_epochs`` the
negative is the one-word foil with probability ``foil_weight``; the small preset has no such
epoch (all 8 are easy), so the foils are left to UMIC's fine-tuning, as in the paper, where
UNITER's matching head has seen only random negatives::

    ITM  = BCE(rank_output logit, 1) on the B positives + BCE(logit, 0) on the B negatives
    MLM  = CE over the vocabulary at ``mask_rate`` of the positive's words (at least one),
           replaced by [MASK] and predicted with the image (a training-only ``ViltMLMHead``)
    RTD  = BCE, per word of the same masked positive that MLM does not predict, of "was this
           word replaced?": ``replace_rate`` of them are swapped for another word, a keyword
           (colour or size, shape, plural shape) for one of the same tag as in UMIC's keyword
           negatives, a relation word for one that makes the relation false (left for right,
           above for below or under; ``replace_pool="same-tag+relation"``, the shipped recipe;
           ``"same-tag"`` leaves relation words to the uniform draw), any other word for a
           uniformly drawn one (a training-only linear head on the same states)
    loss = ITM + MLM + ``replace_weight`` * RTD

RTD is ELECTRA's replaced-token detection, read with the image, as token-level image-text
matching: a swap that the text alone allows ("a red circle" for "a blue circle") can only be
found by looking at the image, so each word's state learns whether the image agrees with it. It
is not one of UNITER's objectives; it is what gives ViLBERTScore's image-conditioned token states
something the text-only control cannot have. The pools were chosen on validation foils
(``benchmarks/world_vilt_choice.py``, docs/measurements/world_vilt_choice.json: UMIC-C and
ViLBERTScore on ``world_foil_val``); the earlier recipes compared are in
``docs/learned_metrics.md``, "what was tried".
Foils (which also swap counts and prepositions) stay out of pre-training, as in the paper.

ITM is UNITER's with one logit, trained with binary cross-entropy, instead of a 2-way softmax.
That is not quite UNITER: its P(match) is sigmoid(l1 - l0), and UMIC's ``init_output`` copies
only the "match" row l1, so the paper's UMIC-C, sigmoid(l1), is neither calibrated nor monotone in
UNITER's P(match); here the one logit is trained as P(match), so world UMIC-C is that probability
and ``rank_output`` *is* the matching head UMIC-C reads and UMIC starts from.
AdamW, linear warm-up then cosine decay, gradient norm clipped at 1; batch order and choices from
``np.random.default_rng([seed, epoch])``; no dropout; one thread and deterministic kernels.
Explained in notebooks/07_umic.ipynb, section "Pre-training world-ViLT".
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from capkit.models.world_vilt import (PREPROCESS, build_model, build_tokenizer, forward_pass,
                                      get_config, save_folder)
from capkit.training.i2ce import deterministic
from capkit.training.world_clip import grammar_words, scene_texts
from capkit.transforms.words import caption_words
from capkit.world.check import check
from capkit.world.foils import FOIL_TYPES
from capkit.world.splits import split_scenes


@dataclass(frozen=True)
class Schedule:
    n_scenes: int = 6144
    epochs: int = 8
    batch_size: int = 64
    lr: float = 1e-3
    weight_decay: float = 0.01
    warmup: int = 30                   # steps
    clip: float = 1.0
    foil_weight: float = 0.5           # chance of the foil pair (positive) / the foil (negative)
    easy_epochs: int = 8               # first epochs: other scenes' captions as negatives only
    mask_rate: float = 0.15
    replace_rate: float = 0.15         # replaced-word detection (0: off)
    replace_weight: float = 1.0
    replace_pool: str = "same-tag+relation"   # relation words too; "same-tag": keywords only;
    #                                    "any": every replacement from the whole vocabulary
    n_val: int = 300
    init: str | None = "world-clip"    # image side and layers from world-CLIP's vision tower


BASE_OBJECTIVES = "ITM (one logit, BCE) + MLM"
OBJECTIVES = BASE_OBJECTIVES + " + replaced-word detection (BCE)"
REPLACE_POOLS = ("same-tag", "same-tag+relation", "any")

SCHEDULES = {
    "tiny": Schedule(n_scenes=128, epochs=1, batch_size=32, warmup=1, n_val=32, easy_epochs=0,
                     init=None),
    "small": Schedule(),
}


CLIP_TO_VILT = {"self_attn.q_proj": "attention.attention.query",
                "self_attn.k_proj": "attention.attention.key",
                "self_attn.v_proj": "attention.attention.value",
                "self_attn.out_proj": "attention.output.dense",
                "layer_norm1": "layernorm_before", "layer_norm2": "layernorm_after",
                "mlp.fc1": "intermediate.dense", "mlp.fc2": "output.dense"}


@torch.no_grad()
def start_from_world_clip(model, folder: str | Path | None = None) -> str:
    """Copy world-CLIP's vision tower into ``model`` (a world-ViLT of the same width, depth,
    activation and patch embedding), as ViLT starts from an ImageNet ViT: the patch embedding
    (the convolutional stem with it), [CLS], image position embeddings, every transformer layer
    and the final layer norm. The first convolution that reads pixels is rewritten for ViLT's
    pixel normalisation (mean = std = 0.5) so that it computes CLIP's on the same image (exactly
    for plain patches; away from the image border for a stem, whose zero padding differs);
    CLIP's pre-encoder layer norm has no ViLT counterpart and is dropped. Text embeddings,
    pooler and heads stay random. Returns world-CLIP's ``checkpoint_sha256``."""
    from capkit.models import world_clip
    from capkit.models.runtime import quiet_loading
    folder = Path(folder) if folder is not None else world_clip.SHIPPED
    with quiet_loading():
        clip = world_clip.model_class().from_pretrained(str(folder)).vision_model.state_dict()
    target = model.state_dict()
    emb = "vilt.embeddings."
    proj = emb + "patch_embeddings.projection."
    theirs = {k[len("embeddings.patch_embedding."):]: v for k, v in clip.items()
              if k.startswith("embeddings.patch_embedding.")}
    ours = {k[len(proj):] for k in target if k.startswith(proj)}
    if set(theirs) | {"bias"} != ours or any(target[proj + k].shape != v.shape
                                             for k, v in theirs.items()):
        raise ValueError("world-ViLT and world-CLIP's vision tower differ in width, patch or "
                         "stem; start_from_world_clip needs the same preset's sizes")
    mean = torch.tensor(world_clip.PREPROCESS.mean)[None, :, None, None]
    std = torch.tensor(world_clip.PREPROCESS.std)[None, :, None, None]
    first = "pre.0." if "pre.0.weight" in theirs else ""    # the convolution that reads pixels
    w = theirs[first + "weight"]                     # CLIP reads (p - mean) / std, ViLT 2p - 1
    shift = (w * (0.5 - mean) / std).sum((1, 2, 3))
    new = {proj + k: v for k, v in theirs.items()}
    new[proj + first + "weight"] = w * 0.5 / std
    new[proj + first + "bias"] = theirs.get(first + "bias", torch.zeros_like(shift)) + shift
    if first:
        new[proj + "bias"] = torch.zeros_like(target[proj + "bias"])
    new.update({emb + "cls_token": clip["embeddings.class_embedding"].view(1, 1, -1),
                emb + "position_embeddings": clip["embeddings.position_embedding.weight"][None],
                "vilt.layernorm.weight": clip["post_layernorm.weight"],
                "vilt.layernorm.bias": clip["post_layernorm.bias"]})
    for i in range(model.config.num_hidden_layers):
        for clip_name, vilt_name in CLIP_TO_VILT.items():
            for p in ("weight", "bias"):
                new[f"vilt.encoder.layer.{i}.{vilt_name}.{p}"] = \
                    clip[f"encoder.layers.{i}.{clip_name}.{p}"]
    for name, value in new.items():
        if target[name].shape != value.shape:
            raise ValueError(f"{name}: world-ViLT {tuple(target[name].shape)} vs world-CLIP "
                             f"{tuple(value.shape)}")
        target[name].copy_(value)
    return world_clip.checkpoint_sha256(folder)


@dataclass
class TrainResult:
    model: object                # WorldViltModel (a ViltForImageAndTextRetrieval)
    tokenizer: object
    history: list[dict]
    path: Path | None
    sha256: str | None

    @property
    def final(self) -> dict:
        return self.history[-1]


def normal_form(texts: list[str]) -> list[str]:
    return [" ".join(w) for w in caption_words(texts)]


def world_texts(scenes, seed: int, offset: int = 0) -> list[dict]:
    """``scene_texts`` in the transforms' normal form."""
    out = []
    for t in scene_texts(scenes, seed, offset):
        flat = normal_form(t["refs"] + [x for p in t["pairs"] for x in p])
        refs, rest = flat[:len(t["refs"])], flat[len(t["refs"]):]
        out.append({"refs": refs, "pairs": list(zip(rest[::2], rest[1::2])),
                    "types": t["types"]})
    return out


def tokens(tokenizer, texts: list[str]) -> dict:
    enc = tokenizer(texts, padding=True, truncation=True, return_tensors="pt")
    return {"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"]}


def pixels(images) -> torch.Tensor:
    return torch.from_numpy(PREPROCESS.batch(list(images))[0])                # (B, 3, 64, 64)


def run(model, text: dict, px: torch.Tensor, hidden: bool = False):
    """``forward_pass`` with the image (``tokens`` and ``pixels`` give CPU tensors; it moves
    them to the model's device)."""
    return forward_pass(model, text, px, hidden=hidden)


def mask_words(text: dict, mask_id: int, rate: float, rng) -> tuple[dict, torch.Tensor]:
    """``text`` with ``rate`` of each row's word tokens (at least one) set to [MASK], and the
    (B, T) labels (-100 where nothing is predicted)."""
    ids = text["input_ids"].clone()
    labels = torch.full_like(ids, -100)
    for b, m in enumerate(text["attention_mask"]):
        n = int(m.sum())                                  # <bos> w_1 .. w_k <eos>
        k = max(1, int(round(rate * (n - 2))))
        pos = 1 + rng.permutation(n - 2)[:k]
        labels[b, pos] = ids[b, pos]
        ids[b, pos] = mask_id
    return {"input_ids": ids, "attention_mask": text["attention_mask"]}, labels


def replace_words(text: dict, labels: torch.Tensor, word_ids: np.ndarray, rate: float, rng,
                  pools: dict[int, np.ndarray] | None = None) -> tuple[dict, torch.Tensor]:
    """``text`` with ``rate`` of each row's word tokens that MLM does not predict (``labels`` is
    -100 there) replaced by a uniformly drawn other word (of ``pools[token]`` where the token has
    a pool, e.g. a colour by another colour, else of ``word_ids``), and the (B, T) targets of
    replaced-word detection (1 replaced, 0 kept, -1 for <bos>, <eos>, padding and masked)."""
    ids = text["input_ids"].clone()
    target = torch.full(ids.shape, -1.0)
    for b, m in enumerate(text["attention_mask"]):
        n = int(m.sum())
        free = [t for t in range(1, n - 1) if labels[b, t] < 0]
        target[b, free] = 0.0
        k = int(round(rate * len(free)))
        for t in rng.permutation(free)[:k]:
            old = int(ids[b, t])
            pool = word_ids if pools is None else pools.get(old, word_ids)
            new = int(pool[rng.integers(len(pool))])
            while new == old:
                new = int(pool[rng.integers(len(pool))])
            ids[b, t] = new
            target[b, t] = 1.0
    return {"input_ids": ids, "attention_mask": text["attention_mask"]}, target


def keyword_pools(tokenizer, relations: bool = False) -> dict[int, np.ndarray]:
    """Token id of each keyword of the world grammar -> the ids of its same-tag words (UMIC's
    keyword dictionary: colours and sizes, shapes, plural shapes); with ``relations``, also each
    relation word -> the words that make its relation false (``capkit.world.foils``'
    ``RELATION_SWAPS``: left -> right, above -> below or under, ...)."""
    from capkit.training.umic import world_keyword_dictionary
    from capkit.world.foils import RELATION_SWAPS
    vocab = tokenizer.get_vocab()
    pools = {}
    for words in world_keyword_dictionary().values():
        ids = np.array([vocab[w] for w in words if w in vocab])
        if len(ids) < 2:        # a word alone in its pool has no same-tag replacement
            continue
        for i in ids:
            pools[int(i)] = ids
    if relations:
        for word, swaps in RELATION_SWAPS.items():
            ids = np.array([vocab[w] for w in swaps if w in vocab])
            if word in vocab and len(ids):
                pools[vocab[word]] = ids
    return pools


def _choose(texts, scenes, rows, rng, s: Schedule, foils: bool = True
            ) -> tuple[list[str], list[str]]:
    pos, neg = [], []
    for j, i in enumerate(rows):
        t = texts[i]
        true, foil = t["pairs"][int(rng.integers(len(t["pairs"])))]
        pos.append(true if rng.random() < s.foil_weight else
                   t["refs"][int(rng.integers(len(t["refs"])))])
        other = texts[rows[(j + 1) % len(rows)]]["refs"][int(rng.integers(5))]
        use_foil = (foils and rng.random() < s.foil_weight) or check(scenes[i], other).true
        neg.append(foil if use_foil else other)
    return pos, neg


def step_loss(model, mlm_head, tokenizer, px, pos, neg, rng, s: Schedule, rtd_head=None,
              word_ids=None, pools=None):
    """ITM + MLM (+ replaced-word detection) of one batch (see the module docstring); returns
    (loss, itm, mlm, rtd)."""
    p, n = tokens(tokenizer, pos), tokens(tokenizer, neg)
    logits = torch.cat([run(model, p, px).logits[:, 0], run(model, n, px).logits[:, 0]])
    target = torch.cat([torch.ones(len(pos)), torch.zeros(len(neg))]).to(logits.device)
    itm = nn.functional.binary_cross_entropy_with_logits(logits, target)
    masked, labels = mask_words(p, tokenizer.mask_token_id, s.mask_rate, rng)
    if rtd_head is not None:
        masked, replaced = replace_words(masked, labels, word_ids, s.replace_rate, rng, pools)
    states = run(model, masked, px, hidden=True).hidden_states[-1]        # (B, T + 1 + P, D)
    states = model.vilt.layernorm(states[:, :labels.shape[1]])
    mlm = nn.functional.cross_entropy(mlm_head(states).flatten(0, 1),
                                      labels.flatten().to(states.device))
    if rtd_head is None:
        return itm + mlm, float(itm.detach()), float(mlm.detach()), float("nan")
    replaced = replaced.to(states.device)
    keep = replaced >= 0
    rtd = nn.functional.binary_cross_entropy_with_logits(rtd_head(states)[..., 0][keep],
                                                         replaced[keep])
    return (itm + mlm + s.replace_weight * rtd, float(itm.detach()), float(mlm.detach()),
            float(rtd.detach()))


@torch.no_grad()
def evaluate(model, tokenizer, images, texts: list[dict]) -> dict:
    """Held-out foil accuracy per type: the true caption's matching logit above the foil's."""
    model.eval()
    hits: dict[str, list[bool]] = {t: [] for t in FOIL_TYPES}
    flat = [(k, kind, pair) for k, t in enumerate(texts) for kind, pair in zip(t["types"],
                                                                               t["pairs"])]
    for a in range(0, len(flat), 256):
        chunk = flat[a:a + 256]
        px = pixels([images[k] for k, _, _ in chunk])
        good = run(model, tokens(tokenizer, [p[0] for _, _, p in chunk]), px).logits[:, 0]
        bad = run(model, tokens(tokenizer, [p[1] for _, _, p in chunk]), px).logits[:, 0]
        for (_, kind, _), g, b in zip(chunk, good.tolist(), bad.tolist()):
            hits[kind].append(g > b)
    row = {f"foil_{k}": float(np.mean(h)) if h else float("nan") for k, h in hits.items()}
    row["foil_all"] = float(np.mean([x for h in hits.values() for x in h]))
    return row


def _lr(step: int, total: int, s) -> float:
    if step < s.warmup:
        return s.lr * (step + 1) / s.warmup
    return s.lr * 0.5 * (1 + math.cos(math.pi * (step - s.warmup) / max(1, total - s.warmup)))


def make_optimizer(params, s) -> torch.optim.Optimizer:
    params = list(params)
    decay = [p for _, p in params if p.ndim >= 2]
    rest = [p for _, p in params if p.ndim < 2]
    return torch.optim.AdamW([{"params": decay, "weight_decay": s.weight_decay},
                              {"params": rest, "weight_decay": 0.0}], lr=s.lr)


def train_world_vilt(preset: str = "small", *, out: str | Path | None = None, seed: int = 0,
                     threads: int = 1, schedule: Schedule | None = None,
                     model_config: dict | None = None, device: str | None = None,
                     progress: bool = False) -> TrainResult:
    """Pre-train world-ViLT (see the module docstring); ``out``: the folder to write;
    ``device``: where to train (``capkit.models.runtime.resolve_device``: default CPU). The data,
    word choices and masks are drawn on the CPU whatever the device, so a GPU run sees the same
    batches; its weights differ from the CPU run's in the last bits of float32."""
    import time

    from tqdm.auto import tqdm
    from transformers.models.vilt.modeling_vilt import ViltMLMHead

    from capkit.models.runtime import resolve_device, seeded
    device = resolve_device(device)
    s = schedule or SCHEDULES.get(preset, SCHEDULES["small"])
    if threads < 1:
        raise ValueError(f"threads must be at least 1, got {threads!r}")
    if s.init not in (None, "world-clip"):
        raise ValueError(f"init must be 'world-clip' or None, got {s.init!r}")
    if s.replace_pool not in REPLACE_POOLS:
        raise ValueError(f"replace_pool must be one of {REPLACE_POOLS}, got {s.replace_pool!r}")
    cfg = get_config(preset, **(model_config or {}))
    start = time.perf_counter()
    with deterministic(threads):
        scenes = split_scenes("train", s.n_scenes, seed)
        texts = world_texts(scenes, seed)
        images = [sc.render(cfg.image_size) for sc in scenes]
        val_scenes = split_scenes("val", s.n_val, seed)
        val_images = [sc.render(cfg.image_size) for sc in val_scenes]
        val_texts = world_texts(val_scenes, seed, offset=10_000_000)
        words = list(dict.fromkeys(grammar_words() + sorted(
            {w for t in texts for x in t["refs"] + [w for p in t["pairs"] for w in p]
             for w in x.split()})))
        tokenizer = build_tokenizer(words, cfg.context)
        model = build_model(cfg, len(tokenizer), seed)
        init = start_from_world_clip(model) if s.init == "world-clip" else None
        with seeded(seed + 1):
            mlm_head = ViltMLMHead(model.config)
        heads = [mlm_head]
        rtd_head, word_ids, pools = None, None, None
        if s.replace_rate > 0:
            with seeded(seed + 2):
                rtd_head = nn.Linear(model.config.hidden_size, 1)
            heads.append(rtd_head)
            special = set(tokenizer.all_special_ids)
            word_ids = np.array([i for i in range(len(tokenizer)) if i not in special])
            pools = (None if s.replace_pool == "any" else
                     keyword_pools(tokenizer, relations=s.replace_pool == "same-tag+relation"))
        model.to(device)
        for h in heads:
            h.to(device)
        head_params = [x for h in heads for x in h.named_parameters()]
        optimizer = make_optimizer([*model.named_parameters(), *head_params], s)
        per_epoch = len(texts) // s.batch_size
        total, step, history = per_epoch * s.epochs, 0, []
        for epoch in range(s.epochs):
            rng = np.random.default_rng([seed, epoch])
            order = rng.permutation(len(texts))[:per_epoch * s.batch_size]
            model.train()
            losses = []
            for b in tqdm(range(per_epoch), disable=not progress, desc=f"epoch {epoch + 1}",
                          unit="batch", leave=False):
                rows = order[b * s.batch_size:(b + 1) * s.batch_size]
                pos, neg = _choose(texts, scenes, rows, rng, s, foils=epoch >= s.easy_epochs)
                for group in optimizer.param_groups:
                    group["lr"] = _lr(step, total, s)
                loss, itm, mlm, rtd = step_loss(model, mlm_head, tokenizer,
                                                pixels([images[i] for i in rows]), pos, neg,
                                                rng, s, rtd_head, word_ids, pools)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                nn.utils.clip_grad_norm_([*model.parameters(),
                                          *(x for h in heads for x in h.parameters())], s.clip)
                optimizer.step()
                losses.append((itm, mlm, rtd))
                step += 1
            row = {"epoch": epoch + 1, "itm_loss": float(np.mean([x[0] for x in losses])),
                   "mlm_loss": float(np.mean([x[1] for x in losses]))}
            if rtd_head is not None:
                row["rtd_loss"] = float(np.mean([x[2] for x in losses]))
            row.update(evaluate(model, tokenizer, val_images, val_texts))
            history.append(row)
        recipe = {"name": "world-vilt", "preset": preset, "config": dataclasses.asdict(cfg),
                  "seed": seed, "threads": threads, "schedule": dataclasses.asdict(s),
                  "objectives": OBJECTIVES if rtd_head is not None else BASE_OBJECTIVES,
                  "text": "transforms normal form",
                  "init": None if init is None else f"world-clip@{init[:12]}",
                  "data": "capkit.world split_scenes('train'); val: split_scenes('val')",
                  "history": history, "torch": torch.__version__,
                  "command": f"capkit train world-vilt --preset {preset} --seed {seed} "
                             f"--threads {threads}"}
        if s.replace_pool != SCHEDULES.get(preset, SCHEDULES["small"]).replace_pool:
            recipe["command"] += f" --replace-pool {s.replace_pool}"
        if device != "cpu":        # (a CPU recipe stays as the shipped one was written)
            recipe["device"] = device
            recipe["command"] += f" --device {device}"
        model.eval()
        sha = save_folder(model, tokenizer, out, recipe) if out is not None else None
    history[-1]["seconds"] = time.perf_counter() - start
    return TrainResult(model, tokenizer, history, None if out is None else Path(out), sha)
