"""LEIC (Cui et al. 2018, "Learning to Evaluate Image Captioning"): a learned critic's P(human).

    score(c) = 1/|R| sum_{r in R} P(human | context r, candidate c)     (the paper, appendix A.4)

A critic (``capkit.models.leic``) trained to tell human captions from machine captions and
pathological transforms reads one human reference as its context and the candidate, and outputs
the probability that the candidate is human. Two ways to use the references, named in the
signature:

* ``reference="mean"`` (default): the paper's rule, every reference as the context in turn, the
  scores averaged ("iterate through all the reference captions ... the average of these scores
  is the final score");
* ``reference="random"``: the authors' code (``inference()``), one reference per candidate drawn
  at random (seeded by ``seed``).

``parts["per_reference"]`` holds every (reference, candidate) score. The corpus score is the
mean over candidates, the paper's system score. Model: ``model=None`` is the shipped
caption-context critic trained with data augmentation (``capkit/models/weights/
leic_small.safetensors``, registry ``leic``); ``"leic_no_da"`` the one trained on machine
captions only; a path or a loaded ``LEIC`` also work. Its sha256 prefix is in the signature.

``images`` is ignored by caption-context critics. The world critics (``leic_world``,
``leic_world_no_da``: image + caption context, trained by ``capkit train leic --world``) read one
image per candidate (a list aligned with the candidates, ``{id: image}`` or a folder), turned
into the world-CLIP image features they were trained with; they are meaningful on world images
only. The signature names the world-CLIP checkpoint that made the features
(``image:world-clip@<sha12>~world``): a retrained world-CLIP changes the world critics' scores,
and their signature with them. Explained in notebooks/05_learned_critic.ipynb, sections "Scoring a caption" and
"System level and the world".
"""
from __future__ import annotations

import numpy as np

from capkit.metrics.inputs import align
from capkit.scores import Scores, make_signature

REFERENCE_RULES = ("mean", "random")


def image_features(critic, pictures) -> tuple[np.ndarray, str]:
    """(N, F) image features as the critic was trained with (its ``image_encoder``), and the
    signature of the encoder that made them (``world-clip@<sha12>~world``)."""
    encoder = critic.meta.get("image_encoder")
    if encoder != "world-clip":
        raise ValueError(f"this critic was trained with image features {encoder!r}; capkit "
                         "computes only 'world-clip' features (the world critics)")
    from capkit.models.vision_language import encode_images
    from capkit.models.world_clip import load_world_clip
    encoder = load_world_clip()
    return encode_images(encoder, pictures).astype(np.float32), encoder.signature


def leic(candidates, references=None, images=None, *, model=None, reference: str = "mean",
         seed: int = 0, device: str | None = None, threads: int | None = 1,
         progress: bool = False) -> Scores:
    """P(human) per caption from a LEIC critic (see the module docstring).
    ``threads``: torch CPU threads while scoring (restored afterwards)."""
    if reference not in REFERENCE_RULES:
        raise ValueError(f"reference must be one of {REFERENCE_RULES} ('mean': the paper's "
                         f"average over all references; 'random': the code's one random "
                         f"reference), got {reference!r}")
    from capkit.models.i2ce import _threads
    from capkit.models.leic_critic import load_leic
    cands, refs, ids = align(candidates, references)
    critic = load_leic(model, device=device)
    feats = image_signature = None
    if critic.cfg.context != "caption":
        from capkit.models.images import align_images
        feats, image_signature = image_features(critic, align_images(candidates, images))
    n_refs = np.array([len(rs) for rs in refs], dtype=np.int64)
    if reference == "random":
        rng = np.random.default_rng(seed)
        refs = [[rs[rng.integers(len(rs))]] for rs in refs]
    if critic.cfg.context == "image":              # the context is the image alone
        refs = [[""] for _ in cands]
    counts = np.array([len(rs) for rs in refs], dtype=np.int64)
    owner = np.repeat(np.arange(len(cands)), counts)
    with _threads(threads):
        pair = critic.score_pairs(None if critic.cfg.context == "image"
                                  else [r for rs in refs for r in rs],
                                  [cands[i] for i in owner],
                                  None if feats is None else feats[owner])
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    per = np.add.reduceat(pair, starts) / counts if len(pair) else pair
    name = critic.meta.get("name", "leic")
    sig = make_signature(name, model=f"{name}@{critic.sha256[:12]}",
                         context=critic.cfg.context, combine=critic.cfg.combine,
                         reference=reference, **({"seed": seed} if reference == "random" else {}),
                         quirk15=critic.cfg.truncation_quirk, tok="ptb",
                         **({"image": image_signature} if feats is not None else {}))
    parts = {"per_reference": np.split(pair, np.cumsum(counts)[:-1]),
             "n_references": n_refs}
    return Scores(name, per, float(per.mean()) if len(per) else float("nan"), sig, ids, parts)
