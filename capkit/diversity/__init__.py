"""Diversity of caption sets (Wang & Chan, "Describing like humans: on diversity in image
captioning", CVPR 2019), as array code over all images at once.

A caption set is the m >= 2 captions one method gives for one image. Every score here is
oriented so that higher = more diverse, and returns a ``capkit.scores.Scores`` whose
``per_caption`` holds one value per *set*, ``corpus`` their mean, and a signature string.

==========================  ================================================================
``self_cider``              -log_m(r) from the singular values of the CIDEr-D kernel (authors' code)
``lsa_diversity``           -log_m(r) from the singular values of the word-caption matrix
``mbleu``                   1 - mBLEU-1..4 and mix, each caption against the rest
``distinct_n``              distinct n-grams / n-grams in each set
``word_frequencies``        words by count (vocabulary size, long tail)
``accuracy``                mean CIDEr-D of each set against the human references
``human_accuracy``          leave-one-out CIDEr-D of the human references
``f_score``                 (1 + b^2) div acc / (b^2 div + acc), b^2 = 5
``lsa_projection``          captions on the strongest LSA topics (radar plots)
``kernel_projection``       captions on the leading eigenvectors of the Self-CIDEr kernel
``metric_mds``              2-D map of captions from a kernel (paper Fig. 9; ``classical_mds``)
``synonym_sets``            the paper's synonym-switch generator (GloVe, seeded)
``sample_references``       k human references per image (seeded)
``diversity_summary``       all of the above per image, as `capkit diversity` prints it
``sample_sets``             m captions per image from the world captioner at a temperature
``first_word_probabilities`` that decoder's first-word distribution (``decoders``)
``world_set_measures``      a world set's Self-CIDEr, CIDEr-D accuracy and share of true captions
==========================  ================================================================

Taught in notebooks/09_diversity.ipynb. Importing this package loads only numpy.
"""
from capkit.diversity.accuracy import PAPER_BETA, accuracy, f_score, human_accuracy
from capkit.diversity.caption_sets import CaptionSets, caption_sets, read_caption_sets
from capkit.diversity.decoders import first_word_probabilities, sample_sets, world_set_measures
from capkit.diversity.generators import (
    PAPER_PS,
    sample_references,
    synonym_sets,
    synonym_switch,
)
from capkit.diversity.kernels import (
    bow_matrices,
    cider_d_kernel,
    reference_document_frequencies,
)
from capkit.diversity.lsa import (
    diversity_from_singular_values,
    lsa_diversity,
    self_cider,
    self_cider_kernel,
    singular_values,
)
from capkit.diversity.mbleu import mbleu
from capkit.diversity.projection import (
    STOP_WORDS,
    Projection,
    classical_mds,
    kernel_distances,
    kernel_projection,
    lsa_projection,
    metric_mds,
)
from capkit.diversity.summary import DiversitySummary, diversity_summary
from capkit.diversity.vocabulary import (
    distinct_n,
    tail_share,
    vocabulary_size,
    word_frequencies,
)

__all__ = [
    "PAPER_BETA", "PAPER_PS", "STOP_WORDS", "CaptionSets", "DiversitySummary", "Projection",
    "accuracy", "bow_matrices", "caption_sets", "cider_d_kernel", "classical_mds",
    "distinct_n", "diversity_from_singular_values", "diversity_summary", "f_score",
    "first_word_probabilities",
    "human_accuracy", "kernel_distances", "kernel_projection", "lsa_diversity",
    "lsa_projection", "mbleu", "metric_mds",
    "read_caption_sets", "reference_document_frequencies", "sample_references",
    "sample_sets",
    "self_cider",
    "self_cider_kernel", "singular_values", "synonym_sets", "synonym_switch", "tail_share",
    "vocabulary_size", "word_frequencies", "world_set_measures",
]
