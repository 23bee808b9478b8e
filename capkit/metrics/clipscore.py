"""CLIPScore and RefCLIPScore (Hessel et al. 2021), as the paper defines them and its code computes.

    CLIP-S(c, v)        = w * max(cos(E_text("A photo depicts " + c), E_image(v)), 0),  w = 2.5
    RefCLIP-S(c, R, v)  = H-mean(CLIP-S(c, v), max(max_{r in R} cos(E_text(c), E_text(r)), 0))

with the prompt on candidates and references alike, texts truncated at the model's context
length (77 tokens for CLIP), and the corpus score = the mean over captions. The paper's model is
ViT-B/32 (``model="clip-vit-b32"`` = ``openai/clip-vit-base-patch32``; online only), the default
unless ``$CAPKIT_CLIP_MODEL`` names another (a preset, hub name or folder, e.g. ``tiny-clip``).
Offline, capkit has no trained CLIP: ``tiny-clip`` is an UNTRAINED stand-in that runs the same
code, and its signature says so.

``variant="torchmetrics"`` reproduces ``torchmetrics.multimodal.CLIPScore`` to show why libraries
disagree: 100 * cos (not 2.5), no prompt, no clamp per caption; the corpus score is
max(mean(100 * cos), 0), clamped after averaging (and torchmetrics defaults to ViT-L/14).
Pitfalls: docs/benchmarks.md. Explained in
notebooks/03_embedding_metrics.ipynb, section 4 "CLIPScore".

``clipscore_world`` / ``refclipscore_world`` are these functions with ``model="world-clip"``,
the CLIP trained in capkit's world (``capkit.models.world_clip``, trained by
``capkit.training.world_clip``): WORLD numbers, explained in notebooks/10_captioned_world.ipynb,
section "World-CLIP: an image metric trained in this world".
"""
from __future__ import annotations

import os

import numpy as np

from capkit.metrics.inputs import align, candidate_texts
from capkit.scores import Scores, make_signature

PROMPT = "A photo depicts "
W = 2.5
VARIANTS = ("paper", "torchmetrics")
CLIP_MODEL_ENV = "CAPKIT_CLIP_MODEL"
PAPER_MODEL = "clip-vit-b32"


def _clip(model, device):
    from capkit.models.presets import load_model
    name = model if model is not None else os.environ.get(CLIP_MODEL_ENV) or PAPER_MODEL
    return load_model(name, "vision_language", device=device)


def _unit(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _image_text_cosines(enc, texts, images, cache, batch_size, progress):
    from capkit.models.vision_language import encode_images, encode_texts
    t = _unit(encode_texts(enc, texts, cache=cache, batch_size=batch_size, progress=progress))
    v = _unit(encode_images(enc, images, cache=cache, progress=progress))
    return t, (t * v).sum(axis=1)


def clipscore(candidates, references=None, images=None, *, model: object = None,
              variant: str = "paper", w: float = W, prompt: str | None = None,
              batch_size: int = 64, device: str | None = None, cache: object = False,
              progress: bool | str = "auto") -> Scores:
    """CLIP-S per caption (reference-free: ``references`` is ignored).

    ``images``: a list aligned with ``candidates``, ``{id: image}`` or a folder of ``<id>.jpg``
    (images are paths, PIL images or (H, W, 3) uint8 arrays). ``prompt`` defaults to the variant's
    ("A photo depicts " for the paper, none for torchmetrics). ``parts``: ``cos`` (raw cosine)
    and ``n_truncated`` (captions cut at the context length).
    """
    from capkit.models.feature_cache import resolve_cache
    from capkit.models.images import align_images
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
    if variant == "torchmetrics" and w != W:
        raise ValueError(f"variant='torchmetrics' scales by 100 and has no w (got w={w!r}); "
                         "leave w out, or use variant='paper' to weight the cosine by w")
    texts, ids = candidate_texts(candidates)
    pictures = align_images(candidates, images)
    enc = _clip(model, device)
    prompt = (PROMPT if variant == "paper" else "") if prompt is None else prompt
    prompted = [prompt + t for t in texts]
    _, cos = _image_text_cosines(enc, prompted, pictures, resolve_cache(cache), batch_size,
                                 progress)
    if variant == "paper":
        per, corpus = w * np.maximum(cos, 0.0), None
    else:
        per = 100.0 * cos
        corpus = max(float(per.mean()), 0.0) if len(per) else float("nan")
    corpus = float(per.mean()) if corpus is None and len(per) else corpus
    truncated = int(sum(n > enc.context_length for n in enc.count_tokens(prompted)))
    sig = make_signature("clipscore", variant=variant, model=enc.signature,
                         w=w if variant == "paper" else 100, prompt=repr(prompt),
                         clamp="per_caption" if variant == "paper" else "after_mean",
                         trunc=enc.context_length)
    return Scores("clipscore", per, corpus if corpus is not None else float("nan"), sig, ids,
                  {"cos": cos, "n_truncated": truncated})


def refclipscore(candidates, references=None, images=None, *, model: object = None,
                 w: float = W, prompt: str = PROMPT, batch_size: int = 64,
                 device: str | None = None, cache: object = False,
                 progress: bool | str = "auto") -> Scores:
    """RefCLIP-S per caption: the harmonic mean of CLIP-S and the best text-text cosine.

    The text term is max(max_r cos(c, r), 0), not scaled by w (the paper's equation; its code
    omits the clamp, which matters only for negative cosines, unseen with trained CLIP).
    ``parts``: ``clip_s``, ``ref_cos`` (the clamped text term), ``corpus_clip_s`` and
    ``corpus_ref_cos``. When both terms are 0 the harmonic mean is taken as 0.
    """
    from capkit.models.feature_cache import resolve_cache
    from capkit.models.images import align_images
    from capkit.models.vision_language import encode_texts
    cands, refs, ids = align(candidates, references)
    pictures = align_images(candidates, images)
    enc = _clip(model, device)
    store = resolve_cache(cache)
    cand_vecs, cos = _image_text_cosines(enc, [prompt + c for c in cands], pictures, store,
                                         batch_size, progress)
    clip_s = w * np.maximum(cos, 0.0)
    flat = [prompt + r for rs in refs for r in rs]
    ref_vecs = _unit(encode_texts(enc, flat, cache=store, batch_size=batch_size,
                                  progress=progress))
    owner = np.repeat(np.arange(len(cands)), [len(rs) for rs in refs])
    sims = (cand_vecs[owner] * ref_vecs).sum(axis=1)                       # (R,)
    starts = np.concatenate([[0], np.cumsum([len(rs) for rs in refs])[:-1]]).astype(np.int64)
    ref_cos = np.maximum(np.maximum.reduceat(sims, starts), 0.0) if len(sims) else np.zeros(0)
    total = clip_s + ref_cos
    with np.errstate(invalid="ignore", divide="ignore"):
        per = np.where(total != 0, 2 * clip_s * ref_cos / total, 0.0)
    sig = make_signature("refclipscore", model=enc.signature, w=w, prompt=repr(prompt),
                         refs="max_cos", mean="harmonic", trunc=enc.context_length)
    parts = {"clip_s": clip_s, "ref_cos": ref_cos,
             "corpus_clip_s": float(clip_s.mean()) if len(cands) else float("nan"),
             "corpus_ref_cos": float(ref_cos.mean()) if len(cands) else float("nan")}
    return Scores("refclipscore", per, float(per.mean()) if len(per) else float("nan"), sig,
                  ids, parts)


