"""METEOR on one (caption, reference) pair, with everything in between, for teaching.

``explain_meteor(caption, reference)`` returns what each module matches, which matches the
search keeps, the statistics and each term of the score. It runs the readable one-pair path
(``meteor.align``) on the very resources and normalisation the metric uses, so its score is
the metric's score for that pair. ``capkit.plots.alignments.meteor_alignment`` draws it.

Explained in notebooks/01_classic_metrics.ipynb, section "METEOR".
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from capkit.metrics.meteor.align import MODULES, Match, find_matches, resolve, summarize


@dataclass(frozen=True)
class MeteorExplanation:
    caption: list[str]                 # normalised words (line 1)
    reference: list[str]               # normalised words (line 2)
    candidates: dict[str, list[Match]]  # every match each module finds
    chosen: list[Match]                # the alignment the beam search keeps
    stats: np.ndarray                  # (21,) in ``meteor.STATS`` order
    precision: float
    recall: float
    fmean: float
    penalty: float                     # fragmentation penalty
    score: float

    def rows(self) -> list[tuple[str, str, str, bool]]:
        """(module, caption words, reference words, kept?) for every candidate match."""
        kept = set(self.chosen)
        out = []
        for name, matches in self.candidates.items():
            for m in matches:
                cap = self.caption[m.match_start:m.match_start + m.match_length]
                ref = self.reference[m.start:m.start + m.length]
                out.append((name, " ".join(cap), " ".join(ref), m in kept))
        return out


def _terms(stats: np.ndarray) -> tuple[float, float, float, float]:
    """Precision, recall, Fmean and penalty, as ``MeteorScorer.computeMetrics``."""
    from capkit.metrics.meteor.metric import ALPHA, BETA, DELTA, GAMMA, WEIGHTS
    s = stats
    t_wlen = DELTA * (s[0] - s[2]) + (1 - DELTA) * s[2]
    r_wlen = DELTA * (s[1] - s[3]) + (1 - DELTA) * s[3]
    w = np.asarray(WEIGHTS)
    t_w = (s[4:8] * w).sum() * DELTA + (s[12:16] * w).sum() * (1 - DELTA)
    r_w = (s[8:12] * w).sum() * DELTA + (s[16:20] * w).sum() * (1 - DELTA)
    with np.errstate(divide="ignore", invalid="ignore"):
        p, r = t_w / t_wlen, r_w / r_wlen
        fmean = 1 / ((1 - ALPHA) / p + ALPHA / r)
        matched = s[4:8].sum() + s[12:16].sum() + s[8:12].sum() + s[16:20].sum()
        perfect = s[4:8].sum() + s[12:16].sum() == s[0] and \
            s[8:12].sum() + s[16:20].sum() == s[1] and s[20] == 1
        frag = 0.0 if perfect else s[20] / (matched / 2)
    return float(p), float(r), float(fmean), float(GAMMA * frag ** BETA)


def explain_meteor(caption: str, reference: str, *, tokenizer: str = "ptb",
                   meteor_dir: str | None = None) -> MeteorExplanation:
    """Align one caption with one reference the way METEOR 1.5 does, step by step."""
    from capkit.metrics.inputs import prepare
    from capkit.metrics.meteor.metric import alignment_stats, lexicon, meteor_from_stats
    from capkit.metrics.meteor.lexicon import paraphrase_matches
    from capkit.metrics.meteor.normalize import meteor_words

    batch = prepare([caption], [[reference]], tokenizer)
    lex = lexicon(meteor_dir)
    nb = lex.res.nonbreaking
    hyp = lex.segment(meteor_words(" ".join(batch.candidates[0]), nb))
    ref = lex.segment(meteor_words(" ".join(batch.references[0][0]), nb))

    def para(src, dst):
        return paraphrase_matches(src, dst, lex.res)

    candidates = {}
    for k, name in enumerate(MODULES):        # each module on its own, in the jar's order
        per_position = find_matches(hyp, ref, para, modules=MODULES[k:k + 1])
        candidates[name] = [m for ms in per_position for m in ms if m.module == k]
    matches = find_matches(hyp, ref, para)
    chosen = resolve(matches, len(hyp.words))
    a = summarize(hyp.words, ref.words, chosen, lex.res.function_words)
    stats = alignment_stats(a)
    p, r, fmean, penalty = _terms(stats)
    return MeteorExplanation(hyp.words, ref.words, candidates, chosen, stats, p, r, fmean,
                             penalty, float(meteor_from_stats(stats)))
