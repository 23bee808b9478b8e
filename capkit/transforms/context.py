"""What the dataset-level transforms need to know about the whole caption dataset, computed once.

RC and HN take captions of *other* images, RW draws from the dataset's vocabulary and KS from its
tagged keywords. A ``TransformContext`` holds the dataset's human captions by image (in the
transforms' normal form, ``capkit.transforms.words``) and computes the rest lazily, once:

* ``vocabulary()``: Cui et al.'s rule (words seen at least 5 times, the 10,000 most frequent) on
  the *vocabulary corpus*: ``vocabulary_captions`` when given (the paper: its training captions;
  ``capkit robustness``: every reference of the dataset's split), else the context's own captions.
  On a small subset its own captions leave only the commonest words ("a", "on", "of", ...; 71
  words for 40 COCO images against 2,353 for all 5,000), so RW is weaker and its AUC depends on
  how many images are evaluated: give the whole dataset's captions when evaluating a subset.
  ``vocabulary_provenance()`` names the corpus, its size and the pool's (for signatures);
* ``neighbours()``: the (N, N - 1) neighbour ranking, from ``features`` when given, else from
  the tf-idf of each image's references (``capkit.transforms.neighbours``). Neighbours stay
  within the context's own images on purpose: RC and HN draw the caption of another *evaluated*
  image, whose image (features) and references are at hand; a larger vocabulary corpus does not
  change them (so RC on a subset draws from fewer, hence less similar, neighbours);
* ``keyword_dictionary()``: {Penn tag: keywords}, from the first caption of every image;
* ``tags(words)``: spaCy keyword tags, cached by caption, so KS at 10 strengths tags once.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from capkit.transforms.words import caption_words


OWN_CAPTIONS = "evaluated"      # vocabulary_source when RW's pool comes from the context itself


def _corpus(captions) -> tuple[str, ...]:
    """A list of captions, or {image: [captions]} flattened, as a tuple of strings."""
    if isinstance(captions, Mapping):
        if any(isinstance(cs, str) or not isinstance(cs, Sequence) for cs in captions.values()):
            raise ValueError("vocabulary_captions as a mapping must be {image: [captions]}")
        captions = [c for cs in captions.values() for c in cs]
    if isinstance(captions, str) or not isinstance(captions, Sequence) or not captions:
        raise ValueError("vocabulary_captions must be a non-empty list of captions or "
                         "{image: [captions]}")
    bad = [c for c in captions if not isinstance(c, str)]
    if bad:
        raise ValueError(f"vocabulary_captions must hold caption strings; got {bad[0]!r}")
    return tuple(captions)


@dataclass(frozen=True)
class TransformContext:
    images: tuple[str, ...]                      # (N,) image ids
    captions: tuple[tuple[str, ...], ...]        # (N,) each image's human captions, normal form
    features: np.ndarray | None = None           # (N, d) image features, or None: text proxy
    # RW's vocabulary corpus (raw captions), or None: ``captions`` above; and its name
    vocabulary_captions: tuple[str, ...] | None = field(default=None, repr=False)
    vocabulary_source: str = OWN_CAPTIONS
    cache: dict = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_references(cls, references: Mapping[str, Sequence[str]], features=None, *,
                        vocabulary_captions=None,
                        vocabulary_source: str | None = None) -> TransformContext:
        """From {image: [captions]} (at least 2 images), optionally with (N, d) image features
        in the same order as the mapping.

        ``vocabulary_captions``: the corpus RW's vocabulary is built from, as a list of
        captions or {image: [captions]} (e.g. every reference of the dataset a subset was drawn
        from); None: ``references`` themselves. ``vocabulary_source`` names it in signatures
        (default ``"evaluated"`` for ``references``, ``"given"`` for other captions)."""
        if not isinstance(references, Mapping) or len(references) < 2:
            raise ValueError("references must be a mapping {image: [captions]} with at least 2 "
                             "images (RC and HN draw captions from other images)")
        images = tuple(str(i) for i in references)
        sizes, flat = [], []
        for image, caps in references.items():
            if isinstance(caps, str) or not isinstance(caps, Sequence) or not caps:
                raise ValueError(f"image {image!r} has no list of captions (got {caps!r}); give "
                                 "every image a non-empty list")
            sizes.append(len(caps))
            flat.extend(caps)
        words = caption_words(flat, "reference captions")
        texts = [" ".join(w) for w in words]
        starts = np.concatenate([[0], np.cumsum(sizes)])
        captions = tuple(tuple(texts[a:b]) for a, b in zip(starts[:-1], starts[1:]))
        if features is not None:
            features = np.asarray(features)
            if features.ndim != 2 or len(features) != len(images):
                raise ValueError(f"features must have one row per image ({len(images)}), got "
                                 f"shape {features.shape}")
        from capkit.models.protocol import clean_signature
        corpus = None if vocabulary_captions is None else _corpus(vocabulary_captions)
        source = vocabulary_source or (OWN_CAPTIONS if corpus is None else "given")
        return cls(images, captions, features, corpus, clean_signature(str(source)))

    def rows(self, images: Sequence[str]) -> np.ndarray:
        """(M,) row of each image id; ValueError naming the ids the context does not hold."""
        if "row" not in self.cache:
            self.cache["row"] = {i: r for r, i in enumerate(self.images)}
        row = self.cache["row"]
        missing = [i for i in images if str(i) not in row]
        if missing:
            raise ValueError(f"{len(missing)} image id(s) are not in the transform context "
                             f"(first: {missing[:5]}); build it from references that include them")
        return np.fromiter((row[str(i)] for i in images), dtype=np.int64, count=len(images))

    def vocabulary(self, min_count: int = 5, max_size: int = 10_000) -> tuple[str, ...]:
        """RW's pool: Cui et al.'s rule on the vocabulary corpus (see the module docstring)."""
        key = ("vocabulary", min_count, max_size)
        if key not in self.cache:
            from capkit.transforms.random_words import build_vocabulary
            corpus = (self.vocabulary_captions if self.vocabulary_captions is not None else
                      [c for cs in self.captions for c in cs])
            self.cache[key] = build_vocabulary(corpus, min_count=min_count, max_size=max_size)
        return self.cache[key]

    def vocabulary_provenance(self) -> dict[str, object]:
        """{"rw_vocab": corpus name, "rw_vocab_captions": its captions, "rw_vocab_words": the
        pool's size}: which pool RW drew from (``capkit.robustness`` puts it in its signature)."""
        n = (len(self.vocabulary_captions) if self.vocabulary_captions is not None else
             sum(map(len, self.captions)))
        return {"rw_vocab": self.vocabulary_source, "rw_vocab_captions": n,
                "rw_vocab_words": len(self.vocabulary())}

    def neighbours(self) -> np.ndarray:
        """(N, N - 1) other images, most similar first (features, else the tf-idf proxy)."""
        if "neighbours" not in self.cache:
            from capkit.transforms.neighbours import (feature_vectors, neighbour_order,
                                                      tfidf_vectors)
            vectors = (feature_vectors(self.features) if self.features is not None else
                       tfidf_vectors([[c.split() for c in cs] for cs in self.captions]))
            self.cache["neighbours"] = neighbour_order(vectors)
        return self.cache["neighbours"]

    @property
    def neighbour_source(self) -> str:
        return "features" if self.features is not None else "tfidf-references"

    def tags(self, words: Sequence[Sequence[str]], nlp=None) -> list[list[str]]:
        """Keyword tags of each word list (``keywords.keyword_tags``), cached by caption."""
        from capkit.transforms.keywords import keyword_tags
        known = self.cache.setdefault("tags", {})
        todo = list(dict.fromkeys(" ".join(ws) for ws in words if " ".join(ws) not in known))
        if todo:
            known.update(zip(todo, keyword_tags([t.split() for t in todo], nlp)))
        return [known[" ".join(ws)] for ws in words]

    def keyword_dictionary(self, nlp=None, min_count: int = 2) -> dict[str, tuple[str, ...]]:
        """{Penn tag: keywords} from the first caption of every image."""
        key = ("keyword_dictionary", min_count)
        if key not in self.cache:
            from capkit.transforms.keywords import keyword_dictionary
            words = [cs[0].split() for cs in self.captions]
            self.cache[key] = keyword_dictionary(words, self.tags(words, nlp),
                                                 min_count=min_count)
        return self.cache[key]
