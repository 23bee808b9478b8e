"""Pathological captions on purpose: transformations of strength gamma in [0, 1].

Cui et al. (CVPR 2018, section 3.3) define transformations that produce captions a good metric
should score low, and measure a metric's robustness by how its score falls as the strength
gamma grows (``capkit.robustness``). UMIC (Lee et al. 2021, section 3.2) adds more negative
types. Each transform is a seeded, pure function: same captions, gamma and seed, same output.

====  =========================================  ==========================  ===============
code  what                                       function                    keeps
====  =========================================  ==========================  ===============
RC    caption of one of the top-gamma neighbours  ``random_captions``         -
WP    gamma of the words permuted (>= 2)          ``word_permutation``        multiset of words
RW    gamma of the words -> random words (>= 2)   ``random_words``            length
KS    gamma of the keywords -> same-tag words     ``keyword_substitution``    length
RR    words repeated / removed with prob. gamma   ``repeat_remove``           -
SO    caption cut in gamma*n segments, reordered  ``segment_permutation``     multiset of words
HN    caption of one of the 3 nearest images      ``hard_negatives``          -
SS    GloVe synonym switch with prob. gamma       ``switch_synonyms``         length
====  =========================================  ==========================  ===============

Captions are transformed as words (PTB tokens, lower case, no punctuation) and returned in that
form at every gamma (``words.py``). For gamma > 0 a transform returns the original caption only
when no change is possible (a 1-word caption cannot be permuted); the rules for short captions
are in each module's docstring. RC and HN need a ``TransformContext`` (the whole dataset).

Taught in notebooks/04_robustness.ipynb. Importing this package loads only numpy (spaCy, scipy
and GloVe load on first use).
"""
from capkit.transforms.context import TransformContext
from capkit.transforms.keywords import (
    keyword_dictionary,
    keyword_substitution,
    keyword_tags,
)
from capkit.transforms.neighbours import (
    feature_vectors,
    image_features,
    neighbour_order,
    tfidf_vectors,
)
from capkit.transforms.other_captions import hard_negatives, random_captions
from capkit.transforms.permutation import segment_permutation, word_permutation
from capkit.transforms.random_words import build_vocabulary, random_words
from capkit.transforms.registry import (
    PAPER_TRANSFORMS,
    TRANSFORMS,
    Transform,
    apply_transform,
    get_transform,
)
from capkit.transforms.repetition import repeat_remove
from capkit.transforms.strength import GAMMAS, check_gamma, words_to_change
from capkit.transforms.synonyms import switch_synonyms
from capkit.transforms.words import caption_words, normalise

__all__ = [
    "GAMMAS", "PAPER_TRANSFORMS", "TRANSFORMS", "Transform", "TransformContext",
    "apply_transform", "build_vocabulary", "caption_words", "check_gamma", "feature_vectors",
    "get_transform", "hard_negatives", "image_features", "keyword_dictionary",
    "keyword_substitution", "keyword_tags", "neighbour_order", "normalise", "random_captions",
    "random_words", "repeat_remove", "segment_permutation", "switch_synonyms", "tfidf_vectors",
    "word_permutation", "words_to_change",
]
