"""I2CE (Zeng & Kwong, "Intrinsic Image Captioning Evaluation", 2020): cosine of intrinsic vectors.

    Sim(c, s_j) = I(c) . I(s_j) / (|I(c)| |I(s_j)|)

where I(x) is the last hidden state of the GRU encoder of a sentence auto-encoder trained on
captions (``capkit.models.i2ce``). How the scores of a candidate's references become one score
is not stated: the text only says each (candidate, reference) pair gets a score; Fig. 3's
"final score" is exactly the maximum of the five pair scores, while Fig. 2's is neither the
maximum nor the mean (0.971 from 0.566 0.671 0.981 0.961 0.915). capkit names three variants,
each in the signature:

* ``aggregate="max"`` (default, registry ``i2ce``): the best reference, as in Fig. 3;
* ``aggregate="mean"`` (registry ``i2ce_mean``): the mean over references, as the paper defines
  its MEAN baseline;
* ``aggregate="centroid"``: the cosine with the mean of the references' unit vectors, which can
  lie between the mean and (slightly above) the max, one reading of Fig. 2.

``parts`` always holds all three per caption (``max``, ``mean``, ``centroid``) and the pair
cosines (``per_reference``: one array per candidate), so one call shows every variant.
The corpus score is the mean over candidates, as the paper averages over the test set.

Model: ``model=None`` is the checkpoint shipped with capkit (``capkit/models/weights/
i2ce_small.safetensors``, trained by ``capkit train i2ce --preset small``); a path, a preset name
with a shipped file, or a loaded ``I2CE`` (e.g. the one the notebook trains) also work. Its
sha256 prefix is in the signature. ``oov``: ``"unk"`` reads only the trained vocabulary (the
paper's closed vocabulary), ``"glove"`` also reads other GloVe words through the frozen embedding.
Explained in notebooks/06_intrinsic_i2ce.ipynb, section "The I2CE score".
"""
from __future__ import annotations

import numpy as np

from capkit.metrics.inputs import align
from capkit.scores import Scores, make_signature

AGGREGATES = ("max", "mean", "centroid")


def _unit(x: np.ndarray) -> np.ndarray:
    norm = np.linalg.norm(x, axis=-1, keepdims=True)
    return x / np.where(norm > 0, norm, 1.0)


def aggregate_cosines(cand: np.ndarray, refs: np.ndarray, n_refs: np.ndarray) -> dict:
    """cand (N, H) and refs (R, H) unit vectors, refs grouped by candidate (n_refs (N,)) ->
    per-reference cosines (R,) and the three aggregates (N,) each."""
    owner = np.repeat(np.arange(len(cand)), n_refs)                      # (R,)
    cos = (cand[owner] * refs).sum(axis=1)                               # (R,)
    # a candidate that reads as its reference scores exactly 1, not 1 +- an ulp of its own
    # vector: THumB's human captions are in their references, and the ulps, which differ from
    # one CPU to another, would break those ties differently on each
    cos[(cand[owner] == refs).all(axis=1) & refs.any(axis=1)] = 1.0
    starts = np.concatenate([[0], np.cumsum(n_refs)[:-1]]).astype(np.int64)
    centre = np.add.reduceat(refs, starts, axis=0) if len(refs) else refs  # (N, H)
    return {"cosines": cos,
            "max": np.maximum.reduceat(cos, starts) if len(cos) else cos,
            "mean": np.add.reduceat(cos, starts) / n_refs if len(cos) else cos,
            "centroid": (cand * _unit(centre)).sum(axis=1)}


def i2ce(candidates, references=None, images=None, *, model=None, aggregate: str = "max",
         oov: str = "unk", batch_size: int = 256, device: str | None = None,
         threads: int | None = 1, progress: bool | str = "auto") -> Scores:
    """I2CE per caption: cosine of intrinsic vectors, aggregated over references (see above).
    ``threads``: torch CPU threads while encoding (``I2CE.encode``). ``images`` is ignored."""
    if aggregate not in AGGREGATES:
        raise ValueError(f"aggregate must be one of {AGGREGATES} ('max': best reference, as the "
                         f"paper's Fig. 3; 'mean': average over references), got {aggregate!r}")
    from capkit.models.i2ce import load_i2ce
    cands, refs, ids = align(candidates, references)
    enc = load_i2ce(model, device=device)
    texts = list(dict.fromkeys(cands + [r for rs in refs for r in rs]))
    where = {t: i for i, t in enumerate(texts)}
    unit = _unit(enc.encode(texts, oov=oov, batch_size=batch_size, threads=threads,
                                 progress=progress))  # (U, H)
    n_refs = np.array([len(rs) for rs in refs], dtype=np.int64)
    agg = aggregate_cosines(unit[[where[c] for c in cands]],
                            unit[[where[r] for rs in refs for r in rs]], n_refs)
    per = agg[aggregate]
    splits = np.cumsum(n_refs)[:-1]
    parts = {"max": agg["max"], "mean": agg["mean"], "centroid": agg["centroid"],
             "per_reference": np.split(agg["cosines"], splits)}
    name = "i2ce" if aggregate == "max" else f"i2ce_{aggregate}"
    sig = make_signature(name, model=f"{enc.meta.get('preset', 'given')}@{enc.sha256[:12]}",
                         hidden=enc.dim, aggregate=aggregate, oov=oov, tok="ptb", sim="cos")
    return Scores(name, per, float(per.mean()) if len(per) else float("nan"), sig, ids, parts)
