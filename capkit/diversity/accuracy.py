"""Accuracy of caption sets and the diversity-accuracy F-score (Wang & Chan 2019, section 4.2).

* ``accuracy``: acc = 1/m sum_i CIDEr-D(c_i, human references of the image), per set.
* ``human_accuracy``: the humans' leave-one-out accuracy, 1/N sum_i CIDEr-D(g_i, refs \\ g_i).
* ``f_score``: F = (1 + beta^2) div acc / (beta^2 div + acc), beta^2 = 5 in the paper (accuracy
  weighs more). div lies in [0, 1] and CIDEr-D in [0, 10]: the two scales differ, as the paper
  notes, so F is mostly read as a ranking.

CIDEr-D is ``capkit.metrics.cider_d`` with fixed document frequencies: by default those of every
reference set passed in ``references`` (pass the whole corpus, e.g. all 5,000 Karpathy-test
images, even when scoring a subset), so a caption's score does not depend on the other sets.

Explained in notebooks/09_diversity.ipynb, sections "Model samples, human references and
synonym switches" and "The diversity-accuracy plane".
"""
from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from capkit.diversity.caption_sets import caption_sets
from capkit.diversity.kernels import df_label
from capkit.metrics.cider import DocumentFrequencies, cider_d, document_frequencies
from capkit.metrics.inputs import CaptionBatch, tokenize
from capkit.scores import Scores, make_signature

PAPER_BETA = math.sqrt(5.0)   # beta^2 = 5


def _references(references) -> dict[str, list[str]]:
    if not isinstance(references, Mapping):
        raise TypeError("references must be a mapping {image_id: [caption, ...]}")
    out = {str(k): v for k, v in references.items()}
    for k, v in out.items():
        if isinstance(v, str) or not isinstance(v, (list, tuple)) or not v \
                or not all(isinstance(r, str) and r.strip() for r in v):
            raise ValueError(f"references of image {k} must be a non-empty list of non-empty "
                             f"captions, got {v!r}")
    return out


def _corpus_df(refs: dict[str, list[str]], given: DocumentFrequencies | None,
               tokenizer: str) -> DocumentFrequencies:
    return given if given is not None else \
        document_frequencies(refs, tokenizer=tokenizer, name=f"references({len(refs)})")


def accuracy(sets, references, *, document_frequency: DocumentFrequencies | None = None,
             n: int = 4, sigma: float = 6.0, tokenizer: str = "ptb") -> Scores:
    """Mean CIDEr-D of each set's captions against the image's references, per set.

    ``parts["per_caption"]`` holds the (S,) CIDEr-D of every caption, set after set.
    """
    sets = caption_sets(sets, tokenizer)
    refs = _references(references)
    missing = [i for i in sets.ids if i not in refs]
    if missing:
        raise ValueError(f"{len(missing)} set(s) have no references (first: {missing[:5]}); "
                         "give references for every image id of the caption sets")
    df = _corpus_df(refs, document_frequency, sets.tokenizer)
    flat = tokenize([r for i in sets.ids for r in refs[i]], sets.tokenizer)
    ref_tokens, pos = [], 0
    for i in sets.ids:
        ref_tokens.append(flat[pos:pos + len(refs[i])])
        pos += len(refs[i])
    batch = CaptionBatch(sets.tokens, [ref_tokens[o] for o in sets.owner], None, sets.tokenizer)
    per_caption = cider_d(batch, document_frequency=df, n=n, sigma=sigma).per_caption
    per_set = np.bincount(sets.owner, per_caption, minlength=len(sets)) / sets.sizes
    sig = make_signature("accuracy", score="cider_d", n=n, sigma=sigma,
                         df=df_label(df, document_frequency),
                         mean="set", m=sets.size_label, tok=sets.tokenizer)
    return Scores("accuracy", per_set, float(per_set.mean()), sig, sets.ids,
                  {"per_caption": per_caption})


def human_accuracy(references, ids=None, *, document_frequency: DocumentFrequencies | None = None,
                   n: int = 4, sigma: float = 6.0, tokenizer: str = "ptb") -> Scores:
    """Leave-one-out accuracy of the human references of each image (of ``ids``, default all)."""
    refs = _references(references)
    ids = list(refs) if ids is None else [str(i) for i in ids]
    short = [i for i in ids if i not in refs or len(refs[i]) < 2]
    if short:
        raise ValueError(f"{len(short)} image(s) have fewer than 2 references or none (first: "
                         f"{short[:5]}); leave-one-out accuracy needs at least 2 per image")
    df = _corpus_df(refs, document_frequency, tokenizer)
    sets = caption_sets({i: refs[i] for i in ids}, tokenizer)
    others = [[t for j, t in enumerate(sets.tokens[s:s + m]) if j != p]
              for s, m in zip(sets.starts, sets.sizes) for p in range(m)]
    batch = CaptionBatch(sets.tokens, others, None, sets.tokenizer)
    per_caption = cider_d(batch, document_frequency=df, n=n, sigma=sigma).per_caption
    per_set = np.bincount(sets.owner, per_caption, minlength=len(sets)) / sets.sizes
    sig = make_signature("human_accuracy", score="cider_d", n=n, sigma=sigma,
                         df=df_label(df, document_frequency),
                         mean="leave_one_out", m=sets.size_label, tok=sets.tokenizer)
    return Scores("human_accuracy", per_set, float(per_set.mean()), sig, sets.ids,
                  {"per_caption": per_caption})


def f_score(diversity, accuracy, *, beta: float = PAPER_BETA):
    """F = (1 + beta^2) div acc / (beta^2 div + acc); floats or arrays; 0 where both are 0."""
    if not beta >= 0:
        raise ValueError(f"beta must be >= 0 (beta > 1 weighs accuracy more), got {beta!r}")
    div, acc = np.asarray(diversity, dtype=np.float64), np.asarray(accuracy, dtype=np.float64)
    b2 = beta * beta
    denom = b2 * div + acc
    out = np.divide((1 + b2) * div * acc, denom, out=np.zeros(np.broadcast(div, acc).shape),
                    where=denom != 0)
    return float(out) if out.ndim == 0 else out
