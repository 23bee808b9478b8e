"""ViLBERTScore (Lee et al., Eval4NLP 2020): BERTScore's greedy matching on image-conditioned
token states, here from a single-stream ViLT encoder::

    H_c = states(c | v), H_r = states(r | v)      each caption encoded with the SAME image v
    P = sum_i w_i max_j cos(h_c,i, h_r,j)         over the candidate's tokens
    R = sum_j w_j max_i cos(h_c,i, h_r,j)         over the reference's tokens
    F = 2 P R / (P + R);  P, R, F averaged over the references (ViLBERTScore's mean over 5)

with w uniform (1 / #tokens; no idf, no baseline rescaling: the authors' code) or idf weights
(``idf=True``: log((M + 1) / (df + 1)) over the M references scored, bert_score's formula).
Tokens are the text's word pieces without its first and last positions ([CLS] / [SEP], or
world-ViLT's <bos> / <eos>) and without padding. ``layer`` (1..L) picks the transformer layer
(default the last; ViLBERT's was the last co-attention layer). ``with_image=False`` is the
text-only control: every image position is masked out of attention, so the states, and the
score, cannot depend on the image (``images`` may then be omitted).

``model="world-vilt"`` is the shipped world checkpoint (WORLD numbers); a ViLT hub name or
folder runs the same code online (e.g. ``dandelin/vilt-b32-mlm``). ViLBERT itself is not in
transformers; its closest relative there, BridgeTower (two streams joined by 6 cross-modal
layers, ``BridgeTower/bridgetower-base`` or a folder of a ``BridgeTowerModel``), is loaded by
``capkit.models.bridgetower``: its text states after a cross-modal layer are matched the same
way (it has no image mask, so no ``with_image=False`` control). Explained in
notebooks/08_vilbertscore.ipynb, sections "P, R and F from scratch" and "The world benchmarks".
"""
from __future__ import annotations

import functools
import math
from collections import Counter
from pathlib import Path

import numpy as np

from capkit.scores import Scores, make_signature


def greedy_prf(a: np.ndarray, b: np.ndarray, wa: np.ndarray | None = None,
               wb: np.ndarray | None = None) -> tuple[float, float, float]:
    """P, R, F of candidate states ``a`` (Tc, D) against reference states ``b`` (Tr, D), with
    token weights (uniform by default; normalised to sum 1 here)."""
    if len(a) == 0 or len(b) == 0:
        return 0.0, 0.0, 0.0
    wa = np.full(len(a), 1.0) if wa is None else np.asarray(wa, float)
    wb = np.full(len(b), 1.0) if wb is None else np.asarray(wb, float)
    ua = a / np.linalg.norm(a, axis=1, keepdims=True)
    ub = b / np.linalg.norm(b, axis=1, keepdims=True)
    sim = ua @ ub.T                                                         # (Tc, Tr)
    p = float(wa @ sim.max(axis=1) / wa.sum()) if wa.sum() > 0 else 0.0
    r = float(wb @ sim.max(axis=0) / wb.sum()) if wb.sum() > 0 else 0.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def idf_weights(docs: list[np.ndarray]) -> dict[int, float]:
    """{token id: log((M + 1) / (df + 1))} over M documents of token ids."""
    df = Counter(t for doc in docs for t in set(int(x) for x in doc))
    return {t: math.log((len(docs) + 1) / (c + 1)) for t, c in df.items()}


def _encode_all(enc, cands, refs, pictures, layer, with_image, batch_size):
    """Token (ids, states) of every distinct (image, text) pair, and the row of each caption."""
    rows: dict[tuple, int] = {}
    texts, imgs = [], []

    def row(i: int, text: str) -> int:
        key = (id(pictures[i]) if with_image else 0, text)
        if key not in rows:
            rows[key] = len(texts)
            texts.append(text)
            imgs.append(pictures[i])
        return rows[key]
    cand_rows = [row(i, c) for i, c in enumerate(cands)]
    ref_rows = [[row(i, r) for r in rs] for i, rs in enumerate(refs)]
    return enc.token_states(texts, imgs, layer, with_image=with_image,
                            batch_size=batch_size), cand_rows, ref_rows


def _encoder(model: object, device: str | None):
    """A loaded encoder (unchanged), BridgeTower by folder or hub name, or ViLT (``load_named``)."""
    from capkit.models.bridgetower import BridgeTowerEncoder, is_bridgetower
    from capkit.models.world_vilt import NAMED, load_named
    if isinstance(model, BridgeTowerEncoder):
        return model
    if isinstance(model, (str, Path)) and str(model) not in NAMED and is_bridgetower(model):
        return _bridgetower(str(model), device)
    return load_named(model, device=device)


@functools.lru_cache(maxsize=2)
def _bridgetower(name: str, device: str | None):
    from capkit.models.bridgetower import load_bridgetower
    return load_bridgetower(name, device=device)


def vilbertscore(candidates, references=None, images=None, *, model: object = "world-vilt",
                 layer: int | None = None, idf: bool = False, with_image: bool = True,
                 batch_size: int = 128, device: str | None = None) -> Scores:
    """ViLBERTScore F per caption (``parts``: ``P``, ``R``, ``F``; corpus = mean F).

    ``images``: one per candidate (a list, ``{id: image}`` or a folder), the image every
    caption of that candidate's row is encoded with."""
    from capkit.metrics.inputs import align
    from capkit.models.images import align_images
    cands, refs, ids = align(candidates, references)
    if any(not c.strip() for c in cands):
        raise ValueError("an empty candidate has no tokens to match; remove it or give it text")
    if with_image or images is not None:
        pictures = align_images(candidates, images)
    else:
        pictures = [np.zeros((8, 8, 3), np.uint8)] * len(cands)    # never seen: masked out
    enc = _encoder(model, device)
    layer = enc.check_layer(enc.num_layers if layer is None else layer)
    states, cand_rows, ref_rows = _encode_all(enc, cands, refs, pictures, layer, with_image,
                                              batch_size)
    table = idf_weights([states[r][0] for r in sorted({r for rs in ref_rows for r in rs})]) \
        if idf else None
    default = math.log(len({r for rs in ref_rows for r in rs}) + 1)

    def weights(r: int):
        return None if table is None else np.array([table.get(int(t), default)
                                                     for t in states[r][0]])
    prf = np.zeros((len(cands), 3))
    for i, (c, rs) in enumerate(zip(cand_rows, ref_rows)):
        prf[i] = np.mean([greedy_prf(states[c][1], states[r][1], weights(c), weights(r))
                          for r in rs], axis=0)
    sig = make_signature("vilbertscore", model=enc.signature, layer=layer,
                         image="with" if with_image else "masked", idf=idf, refs="mean",
                         rescale=False)
    return Scores("vilbertscore", prf[:, 2], float(prf[:, 2].mean()) if len(cands) else
                  float("nan"), sig, ids, {"P": prf[:, 0], "R": prf[:, 1], "F": prf[:, 2]})
