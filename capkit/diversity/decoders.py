"""Caption sets from a trained captioner: m captions per image, sampled at a temperature.

Wang & Chan compare decoders in the diversity-accuracy plane: beam search and greedy decoding
give accurate, repetitive sets; random sampling gives diverse, less accurate ones; a temperature
T moves a sampler between the two (p(w) proportional to exp(logit_w / T); T -> 0 is greedy).
``sample_sets`` decodes the world captioner (``capkit.models.world_captioner``) that way, so
notebook 09 can place decoders of a model capkit ships in that plane (Exercise 9.3).

==========================  ================================================================
``sample_sets``             m captions per image: T = 0 greedy (m copies), T > 0 sampled
``first_word_probabilities`` the decoder's distribution of the first word at temperature T
``world_set_measures``      per scene: a set's Self-CIDEr, CIDEr-D accuracy and share of true
                            captions (the world's checker knows each caption's truth)
==========================  ================================================================

Sampling is inverse-CDF on float64 probabilities with one ``np.random.default_rng(seed)`` draw
per caption and step, so a seed gives the same sets on every run. WORLD numbers only: the
captioner is trained on capkit's generated scenes.
"""
from __future__ import annotations

import numpy as np

__all__ = ["first_word_probabilities", "sample_sets", "world_set_measures"]


def _pixels(captioner, images):
    import torch

    from capkit.models.world_captioner import pixels
    if isinstance(images, torch.Tensor):
        return images
    return pixels(images, captioner.cfg.image_size)


def _softmax(logits, temperature: float) -> np.ndarray:
    z = logits.double().numpy() / temperature
    z -= z.max(axis=1, keepdims=True)
    p = np.exp(z)
    return p / p.sum(axis=1, keepdims=True)


def sample_sets(captioner, images, m: int, temperature: float, seed: int = 0) -> list[list[str]]:
    """``m`` captions of each image (a list per image), decoded word by word from the
    captioner's softmax at ``temperature`` until ``<eos>`` or the captioner's ``max_len``.

    ``temperature=0`` decodes greedily (argmax, as ``WorldCaptioner.caption``): the m captions
    of an image are then the same. ``images``: 64 x 64 renders (an (N, 64, 64, 3) uint8 array
    or PIL images) or the (N, 3, 64, 64) input tensor of ``world_captioner.pixels``.
    """
    import torch

    from capkit.models.world_captioner import BOS, EOS, PAD
    if not isinstance(m, (int, np.integer)) or m < 1:
        raise ValueError(f"m is the number of captions per image, at least 1; got {m!r}")
    if not temperature >= 0:
        raise ValueError(f"temperature must be >= 0 (0: greedy); got {temperature!r}")
    px = _pixels(captioner, images)
    net, rng = captioner.net, np.random.default_rng(seed)
    with torch.no_grad():
        grid, keys, h = (t.repeat_interleave(m, 0) for t in net.encode(px))
        word = torch.full((len(grid),), BOS, dtype=torch.long)
        done = np.zeros(len(grid), dtype=bool)
        rows = []
        for _ in range(captioner.cfg.max_len):
            logits, h = net.step(word, h, grid, keys)
            if temperature == 0:
                pick = logits.argmax(-1).numpy()
            else:
                cdf = np.cumsum(_softmax(logits, temperature), axis=1)
                u = rng.random(len(cdf)) * cdf[:, -1]
                pick = np.minimum((cdf < u[:, None]).sum(1), cdf.shape[1] - 1)
            pick = np.where(done, PAD, pick)
            rows.append(pick)
            done |= pick == EOS
            word = torch.from_numpy(pick.astype(np.int64))
            if done.all():
                break
    captions = []
    for row in np.stack(rows, 1).tolist():
        row = row[:row.index(EOS)] if EOS in row else row
        captions.append(" ".join(captioner.words[i] for i in row if i != PAD))
    return [captions[i * m:(i + 1) * m] for i in range(len(px))]


def first_word_probabilities(captioner, images, temperature: float) -> list[dict[str, float]]:
    """For each image, {first word: probability} of the decoder at ``temperature`` > 0
    (``""`` stands for an empty caption, ``<eos>`` first)."""
    import torch

    from capkit.models.world_captioner import BOS, EOS
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0; got {temperature!r}")
    px = _pixels(captioner, images)
    with torch.no_grad():
        grid, keys, h = captioner.net.encode(px)
        logits, _ = captioner.net.step(torch.full((len(grid),), BOS, dtype=torch.long), h, grid,
                                       keys)
    p = _softmax(logits, temperature)
    words = ["" if i == EOS else w for i, w in enumerate(captioner.words)]
    return [{words[i]: float(row[i]) for i in np.flatnonzero(row > 0)} for row in p]


def world_set_measures(sets, scenes, references, *, document_frequency=None) -> dict[str, np.ndarray]:
    """Per scene, for caption sets of world scenes (a list of m-caption lists, one per scene):
    ``self_cider`` (the set's diversity), ``cider_d`` (its mean CIDEr-D against ``references``,
    a list of reference lists, the paper's accuracy) and ``true`` (the share of its captions
    that ``capkit.world.check`` finds true in the scene). ``document_frequency`` weights both
    CIDEr-D measures (default: the references' own)."""
    from capkit.diversity.accuracy import accuracy
    from capkit.diversity.lsa import self_cider
    from capkit.metrics import document_frequencies
    from capkit.world.check import check
    if not len(sets) == len(scenes) == len(references):
        raise ValueError(f"one set, scene and reference list per scene: got {len(sets)} sets, "
                         f"{len(scenes)} scenes, {len(references)} reference lists")
    keyed = {str(i): list(s) for i, s in enumerate(sets)}
    refs = {str(i): list(r) for i, r in enumerate(references)}
    df = document_frequency or document_frequencies(refs, name=f"references({len(refs)})")
    return {"self_cider": self_cider(keyed, document_frequency=df).per_caption,
            "cider_d": accuracy(keyed, refs, document_frequency=df).per_caption,
            "true": np.array([np.mean([bool(check(scene, c).true) for c in s])
                              for scene, s in zip(scenes, sets)])}
