"""METEOR 1.5 (Denkowski & Lavie 2014) exactly as pycocoevalcap 1.2 runs it, without Java.

pycocoevalcap pipes PTB-tokenised captions into ``meteor-1.5.jar - - -stdio -l en -norm``:
one ``SCORE`` line per caption (all its references), then one ``EVAL`` line. This module does
the same computation in Python, from the same resource files (``meteor.resources``):

* normalisation ``-norm`` (``meteor.normalize``), then lower-casing;
* alignment of the caption with each reference: exact, stem, synonym and paraphrase matches,
  then the jar's beam search (``meteor.align``, ``meteor.batch``);
* per reference: precision P and recall R over weighted matches (module weights 1.0 / 0.6 /
  0.8 / 0.6, content words x delta, function words x (1 - delta)), Fmean = 1 / ((1 - alpha)/P +
  alpha/R), fragmentation penalty gamma * (chunks / mean matches) ^ beta, with alpha = 0.85,
  beta = 0.2, gamma = 0.6, delta = 0.75 (the "rank" task);
* per caption: the reference with the best score (the first one on ties);
* corpus: the statistics of those best references are summed over all captions and the
  formula is applied once (a caption matched whole in one chunk adds no chunk: the jar's
  ``MeteorStats.addStats``). It is not the mean of the per-caption scores.

``backend="java"`` runs the original jar instead (``meteor.java.JavaMeteor``).
Explained in notebooks/01_classic_metrics.ipynb, section "METEOR".
"""
from __future__ import annotations

import functools
import re

import numpy as np

from capkit.metrics.inputs import prepare
from capkit.metrics.meteor.align import MODULES, align_pair
from capkit.metrics.meteor.batch import MAX_WORDS, Tokens, candidate_matches, tokens
from capkit.metrics.meteor.beam import alignment_stats as array_alignment_stats
from capkit.metrics.meteor.beam import beam_search, search_space
from capkit.metrics.meteor.lexicon import Lexicon, paraphrase_matches
from capkit.metrics.meteor.normalize import meteor_words
from capkit.metrics.meteor.resources import load_resources
from capkit.scores import Scores, make_signature

ALPHA, BETA, GAMMA, DELTA = 0.85, 0.2, 0.6, 0.75     # Constants.PARAM_RANK[LANG_EN]
WEIGHTS = (1.0, 0.6, 0.8, 0.6)                       # Constants.WEIGHT_RANK[LANG_EN]
BACKENDS = ("python", "java")
_NOT_PLAIN = re.compile("[^a-z0-9 \n]")
CHUNK = 50_000                                       # alignments searched at once
# one row of METEOR statistics (MeteorStats at word level), as columns of an (N, 20) array
STATS = ("test_len", "ref_len", "test_fn", "ref_fn",
         *[f"{side}_{kind}_{m}" for side, kind in (("test", "content"), ("ref", "content"),
                                                    ("test", "function"), ("ref", "function"))
           for m in MODULES], "chunks")


@functools.lru_cache(maxsize=2)
def lexicon(meteor_dir: str | None = None) -> Lexicon:
    """The resources and per-word caches, loaded once per process."""
    return Lexicon(load_resources(meteor_dir))


def alignment_stats(a) -> np.ndarray:
    """(20,) statistics of one ``Alignment`` in ``STATS`` order."""
    return np.array([len(a.words1), len(a.words2), a.function1, a.function2, *a.content1,
                     *a.content2, *a.functional1, *a.functional2, a.chunks], dtype=np.float64)


def meteor_from_stats(stats: np.ndarray) -> np.ndarray:
    """``MeteorScorer.computeMetrics`` on (..., 20) statistics; same float operation order."""
    s = np.asarray(stats, dtype=np.float64)
    t_len, r_len, t_fn, r_fn = s[..., 0], s[..., 1], s[..., 2], s[..., 3]
    tc, rc, tf, rf = s[..., 4:8], s[..., 8:12], s[..., 12:16], s[..., 16:20]
    chunks = s[..., 20]
    t_wlen = DELTA * (t_len - t_fn) + (1.0 - DELTA) * t_fn
    r_wlen = DELTA * (r_len - r_fn) + (1.0 - DELTA) * r_fn
    t_w = np.zeros_like(t_len)
    r_w = np.zeros_like(r_len)
    for i, w in enumerate(WEIGHTS):
        t_w = t_w + tc[..., i] * w * DELTA
    for i, w in enumerate(WEIGHTS):
        r_w = r_w + rc[..., i] * w * DELTA
    for i, w in enumerate(WEIGHTS):
        t_w = t_w + tf[..., i] * w * (1.0 - DELTA)
    for i, w in enumerate(WEIGHTS):
        r_w = r_w + rf[..., i] * w * (1.0 - DELTA)
    t_total, r_total = tc.sum(-1) + tf.sum(-1), rc.sum(-1) + rf.sum(-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        p, r = t_w / t_wlen, r_w / r_wlen
        fmean = 1.0 / ((1.0 - ALPHA) / p + ALPHA / r)
        perfect = (t_total == t_len) & (r_total == r_len) & (chunks == 1)
        frag = np.where(perfect, 0.0, chunks / ((t_total + r_total) / 2))
        score = fmean * (1.0 - GAMMA * np.power(frag, BETA))
    return np.where(np.isnan(score), 0.0, np.maximum(score, 0.0))


def corpus_stats(stats: np.ndarray) -> np.ndarray:
    """``MeteorStats.addStats`` over (N, 21) statistics: sums, except that a caption matched
    completely in one chunk adds no chunk (the jar's rule)."""
    s = np.asarray(stats, dtype=np.float64)
    total_t = s[:, 4:8].sum(1) + s[:, 12:16].sum(1)
    total_r = s[:, 8:12].sum(1) + s[:, 16:20].sum(1)
    perfect = (total_t == s[:, 0]) & (total_r == s[:, 1]) & (s[:, 20] == 1)
    out = s.sum(0)
    out[20] = s[~perfect, 20].sum()
    return out


def _pair_stats(lex: Lexicon, hyp, refs) -> np.ndarray:
    """(R, 20) statistics of one caption against each of its references (reference path)."""
    def para(src, dst):
        return paraphrase_matches(src, dst, lex.res)
    return np.stack([alignment_stats(align_pair(hyp, ref, para, lex.res.function_words))
                     for ref in refs])


def meteor(candidates, references=None, images=None, *, backend: str = "python",
           tokenizer: str = "ptb", meteor_dir: str | None = None) -> Scores:
    """METEOR 1.5 per caption and for the corpus (summed statistics), as pycocoevalcap 1.2.

    ``backend="python"`` (default) needs no Java; ``backend="java"`` runs meteor-1.5.jar in a
    persistent process. Both read the resources of the installed pycocoevalcap 1.2 (or
    ``meteor_dir``). With ``tokenizer="ptb"`` the captions are PTB-tokenised first, as
    pycocoevalcap's COCOEvalCap does; METEOR's own ``-norm`` normalisation follows.

    ``parts["stats"]``: (N, 21) statistics of each caption's best reference (``STATS`` order);
    ``parts["best_ref"]`` (python backend): that reference's index.
    """
    if backend not in BACKENDS:
        raise ValueError(f"unknown METEOR backend {backend!r}; choose 'python' (no Java) or "
                         "'java' (the original meteor-1.5.jar, needs a Java runtime)")
    batch = prepare(candidates, references, tokenizer)
    hyps = [" ".join(t) for t in batch.candidates]
    refs = [[" ".join(t) for t in rs] for rs in batch.references]
    if backend == "java":
        from capkit.metrics.meteor.java import java_meteor
        per, corpus, stats = java_meteor(hyps, refs, meteor_dir)
        parts = {"stats": stats}
    else:
        stats, best = python_meteor_stats(hyps, refs, meteor_dir)
        per = meteor_from_stats(stats)
        corpus = float(meteor_from_stats(corpus_stats(stats))) if len(stats) else float("nan")
        parts = {"stats": stats, "best_ref": best}
    sig = make_signature("meteor", version="1.5", norm="en", task="rank",
                         params=f"{ALPHA}/{BETA}/{GAMMA}/{DELTA}",
                         weights="/".join(map(str, WEIGHTS)), corpus="summed-stats",
                         backend=backend, tok=batch.tokenizer)
    return Scores("meteor", per, corpus, sig, batch.ids, parts)


def _segments(lex: Lexicon, texts: list[str]) -> list[list[str]]:
    """Normalised, lower-cased words of each text.

    One regex pass over all texts finds those holding a character the normaliser could act on
    (anything but a-z, 0-9 and spaces); the others, most PTB-tokenised captions, are only split.
    """
    joined = "\n".join(texts)
    special = [m.start() for m in _NOT_PLAIN.finditer(joined)]
    ends = np.cumsum([len(t) + 1 for t in texts])
    touched = set(np.searchsorted(ends, special, side="right").tolist())
    nb = lex.res.nonbreaking
    return [meteor_words(t, nb) if k in touched else t.split() for k, t in enumerate(texts)]


def _best_reference(scores: np.ndarray, caption: np.ndarray, n_captions: int) -> np.ndarray:
    """Index (into the alignments) of each caption's first best-scoring reference."""
    order = np.lexsort((np.arange(len(scores)), -scores, caption))
    first = np.ones(len(order), dtype=bool)
    first[1:] = caption[order][1:] != caption[order][:-1]
    best = np.zeros(n_captions, dtype=np.int64)
    best[caption[order][first]] = order[first]
    return best


def python_meteor_stats(hyps: list[str], refs: list[list[str]], meteor_dir=None):
    """(N, 21) statistics of each caption's best reference and that reference's index."""
    if not hyps:
        return np.zeros((0, len(STATS))), np.zeros(0, dtype=np.int64)
    lex = lexicon(meteor_dir)
    n_refs = np.fromiter((len(r) for r in refs), dtype=np.int64, count=len(refs))
    segments = _segments(lex, hyps + [r for rs in refs for r in rs])
    tok = tokens(lex, segments)
    hs = np.repeat(np.arange(len(hyps)), n_refs)
    rs = len(hyps) + np.arange(len(hs))
    lengths = np.diff(tok.off)
    stats = np.zeros((len(hs), len(STATS)), dtype=np.float64)
    small = (lengths[hs] <= MAX_WORDS) & (lengths[rs] <= MAX_WORDS)
    if small.any():
        stats[small] = _array_stats(lex, tok, hs[small], rs[small])
    for a in np.flatnonzero(~small):          # very long lines: the one-pair reference path
        h, r = (lex.segment(segments[k]) for k in (hs[a], rs[a]))
        stats[a] = _pair_stats(lex, h, [r])[0]
    best = _best_reference(meteor_from_stats(stats), hs, len(hyps))
    return stats[best], best - np.concatenate([[0], np.cumsum(n_refs)[:-1]])


def _array_stats(lex: Lexicon, tok: Tokens, hs: np.ndarray, rs: np.ndarray) -> np.ndarray:
    """Statistics of alignments (``hs[a]``, ``rs[a]``), ``CHUNK`` alignments at a time (the
    search keeps (alignments x 64) arrays)."""
    if len(hs) > CHUNK:
        return np.concatenate([_array_stats(lex, tok, hs[k:k + CHUNK], rs[k:k + CHUNK])
                               for k in range(0, len(hs), CHUNK)])
    n1, n2 = np.diff(tok.off)[hs], np.diff(tok.off)[rs]
    space = search_space(candidate_matches(tok, lex, hs, rs), len(hs))
    chosen = beam_search(space, n2)
    n_fn = np.bincount(np.repeat(np.arange(len(tok.off) - 1), np.diff(tok.off)),
                       weights=tok.func, minlength=len(tok.off) - 1)
    return array_alignment_stats(space, chosen, n_fn[hs], n_fn[rs], n1, n2,
                           lambda a, pos: tok.func[tok.off[hs[a]] + pos],
                           lambda a, pos: tok.func[tok.off[rs[a]] + pos])
