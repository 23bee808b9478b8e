"""Every diversity score of a set of caption sets in one call (what `capkit diversity` prints).

Per image: Self-CIDEr, LSA, mBLEU-1..4 and mix (as 1 - mBLEU), distinct-1/2 and, with
references, accuracy (mean CIDEr-D) and the F-score of Self-CIDEr and accuracy. Average: the
mean of each over images, the vocabulary size, and F of the two averages (the paper's
model-level F-score, Fig. 5).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from capkit.diversity.accuracy import PAPER_BETA, accuracy, f_score
from capkit.diversity.caption_sets import caption_sets
from capkit.diversity.lsa import lsa_diversity, self_cider
from capkit.diversity.mbleu import mbleu
from capkit.diversity.vocabulary import distinct_n
from capkit.metrics.cider import DocumentFrequencies
from capkit.scores import Scores, make_signature


@dataclass(frozen=True)
class DiversitySummary:
    scores: dict[str, Scores]                 # the library results, by metric
    per_image: dict[str, dict[str, float]]    # image id -> column -> value
    average: dict[str, float]                 # column -> mean over images (F: of the means)
    signature: dict[str, str]                 # metric -> settings string

    @property
    def columns(self) -> list[str]:
        return list(self.average)

    def column_signature(self, column: str) -> str:
        """The signature of the metric behind ``column`` (mbleu_1..4 and mbleu_mix: mbleu's);
        '' for vocabulary_size, a count with no settings of its own."""
        return self.signature.get("mbleu" if column.startswith("mbleu_") else column, "")


def diversity_summary(sets, references=None, *,
                      document_frequency: DocumentFrequencies | None = None,
                      accuracy_document_frequency: DocumentFrequencies | None = None,
                      beta: float = PAPER_BETA, tokenizer: str = "ptb") -> DiversitySummary:
    """Self-CIDEr, LSA, mBLEU, distinct-n (+ accuracy and F with references) per image.

    ``document_frequency`` weights Self-CIDEr (default: COCO Karpathy-test references);
    ``accuracy_document_frequency`` weights accuracy (default: the given references).
    """
    sets = caption_sets(sets, tokenizer)
    scores = {"self_cider": self_cider(sets, document_frequency=document_frequency),
              "lsa": lsa_diversity(sets), "mbleu": mbleu(sets),
              "distinct_1": distinct_n(sets, 1), "distinct_2": distinct_n(sets, 2)}
    columns: dict[str, np.ndarray] = {
        "self_cider": scores["self_cider"].per_caption, "lsa": scores["lsa"].per_caption,
        **{f"mbleu_{k}": scores["mbleu"].parts[f"mbleu_{k}"] for k in (1, 2, 3, 4)},
        "mbleu_mix": scores["mbleu"].parts["mbleu_mix"],
        "distinct_1": scores["distinct_1"].per_caption,
        "distinct_2": scores["distinct_2"].per_caption}
    if references is not None:
        scores["accuracy"] = accuracy(sets, references,
                                      document_frequency=accuracy_document_frequency)
        columns["accuracy"] = scores["accuracy"].per_caption
        columns["f_score"] = f_score(columns["self_cider"], columns["accuracy"], beta=beta)
    per_image = {i: {c: float(v[n]) for c, v in columns.items()} for n, i in enumerate(sets.ids)}
    average = {c: float(np.mean(v)) for c, v in columns.items()}
    if references is not None:
        average["f_score"] = float(f_score(average["self_cider"], average["accuracy"], beta=beta))
    average["vocabulary_size"] = float(len({t for toks in sets.tokens for t in toks}))
    signature = {name: s.signature for name, s in scores.items()}
    if references is not None:
        signature["f_score"] = make_signature("f_score", beta2=f"{beta * beta:g}",
                                              div="self_cider", acc="accuracy",
                                              m=sets.size_label)
    return DiversitySummary(scores, per_image, average, signature)
