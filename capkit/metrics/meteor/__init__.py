"""METEOR 1.5 exactly as pycocoevalcap 1.2 runs it, in pure Python (``backend="java"``: the jar).

One module per stage, in the order the jar runs them:

| module | what it holds |
|---|---|
| ``resources`` | the jar's WordNet synsets, function words and paraphrase table, cached as binary |
| ``normalize`` | ``-norm`` normalisation, the Snowball stemmer, Java's string hash |
| ``lexicon`` | stem / synonym / paraphrase look-ups over the resources |
| ``align`` | one pair's matches and beam search, readable (the reference for the batch code) |
| ``batch`` / ``beam`` | the same matches and search as arrays, for thousands of pairs at once |
| ``metric`` | ``meteor()``: per-reference P/R/Fmean/penalty, best reference, corpus statistics |
| ``explain`` | ``explain_meteor()``: the alignment of one pair, for notebooks and plots |
| ``java`` | the original jar behind the same interface (``backend="java"``) |
"""
from capkit.metrics.meteor.explain import MeteorExplanation, explain_meteor
from capkit.metrics.meteor.metric import (
    BACKENDS, STATS, WEIGHTS, corpus_stats, lexicon, meteor, meteor_from_stats,
)

__all__ = ["BACKENDS", "STATS", "WEIGHTS", "MeteorExplanation", "corpus_stats", "explain_meteor",
           "lexicon", "meteor", "meteor_from_stats"]
