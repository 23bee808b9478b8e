"""Caption sets: several captions for each image, validated and tokenised once.

Every diversity metric takes the same input, in any of these forms:

* ``{image_id: [caption, ...]}`` (what ``capkit.data.load("diversity_wang_chan")`` returns);
* ``[[caption, ...], ...]`` (sets identified by position);
* the paper's file format ``[{"image_id": ..., "captions": [...]}, ...]`` (``read_caption_sets``);
* a ``CaptionSets`` already made by ``caption_sets`` (passes through, so several metrics share one
  tokenisation and one n-gram index).

Sets may differ in size m, but each needs m >= 2 (diversity divides by log m). An empty caption
(a model can emit one) is kept: it shares no n-gram with any caption, so it contributes a zero row
to every kernel, as in the authors' code. A set with no word in any caption is an error.
"""
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from capkit.caption_files import DuplicateKeyError, unique_keys
from capkit.metrics.inputs import TOKENIZERS, tokenize
from capkit.metrics.ngrams import NgramIndex, build_index


@dataclass(frozen=True)
class CaptionSets:
    """Caption sets as token lists, laid out set after set."""
    ids: tuple[str, ...]              # (N,) set ids, usually image ids
    texts: list[str]                  # (S,) captions as given, set after set
    tokens: list[list[str]]           # (S,) tokens of each caption
    sizes: np.ndarray                 # (N,) captions per set: m
    tokenizer: str
    cache: dict = field(default_factory=dict, repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def starts(self) -> np.ndarray:
        """(N,) index of each set's first caption."""
        return np.concatenate([[0], np.cumsum(self.sizes)[:-1]]).astype(np.int64)

    @property
    def owner(self) -> np.ndarray:
        """(S,) set index of each caption."""
        return np.repeat(np.arange(len(self), dtype=np.int64), self.sizes)

    @property
    def position(self) -> np.ndarray:
        """(S,) index of each caption inside its set."""
        return np.arange(len(self.tokens), dtype=np.int64) - np.repeat(self.starts, self.sizes)

    @property
    def max_size(self) -> int:
        return int(self.sizes.max())

    @property
    def size_label(self) -> str:
        """Captions per set as signatures record it (``m:5``; ``m:3-5`` when sets differ): the
        scores depend on it (e.g. ``first(m)``, the paper's Fig. 6)."""
        low, high = int(self.sizes.min()), self.max_size
        return str(low) if low == high else f"{low}-{high}"

    def ngrams(self, n: int = 4) -> NgramIndex:
        """1..n-gram tables of all captions (built once per object and order)."""
        have = [k for k in self.cache if k[0] == "ngrams" and k[1] >= n]
        if have:
            return self.cache[have[0]]
        self.cache[("ngrams", n)] = build_index(self.tokens, n)
        return self.cache[("ngrams", n)]

    def lengths(self) -> np.ndarray:
        """(N, M) tokens per caption, zero-padded to the largest set size M."""
        out = np.zeros((len(self), self.max_size), dtype=np.int64)
        out[self.owner, self.position] = [len(t) for t in self.tokens]
        return out

    def to_dict(self) -> dict[str, list[str]]:
        """The captions as ``{id: [caption, ...]}``."""
        return {i: self.texts[s:s + m] for i, s, m in zip(self.ids, self.starts, self.sizes)}

    def ranked(self, scores) -> CaptionSets:
        """Each set's captions sorted by ``scores`` (S,), highest first (ties keep order): with
        per-caption accuracy, ``ranked(acc).first(m)`` is the paper's Fig. 6 protocol."""
        scores = np.asarray(scores, dtype=np.float64)
        if scores.shape != (len(self.tokens),):
            raise ValueError(f"need one score per caption ({len(self.tokens)}), got shape "
                             f"{scores.shape}; e.g. accuracy(...).parts['per_caption']")
        order = np.lexsort((self.position, -scores, self.owner))
        return CaptionSets(self.ids, [self.texts[i] for i in order],
                           [self.tokens[i] for i in order], self.sizes.copy(), self.tokenizer)

    def first(self, m: int) -> CaptionSets:
        """The first ``m`` captions of every set (for the effect of m, paper Fig. 6)."""
        if m < 2 or m > int(self.sizes.min()):
            raise ValueError(f"m must be between 2 and the smallest set size "
                             f"({int(self.sizes.min())}), got {m!r}")
        keep = np.flatnonzero(self.position < m)
        return CaptionSets(self.ids, [self.texts[i] for i in keep],
                           [self.tokens[i] for i in keep],
                           np.full(len(self), m, dtype=np.int64), self.tokenizer)


def _as_mapping(sets) -> dict[str, list]:
    if isinstance(sets, Mapping):
        return {str(k): v for k, v in sets.items()}
    if isinstance(sets, (str, bytes)) or not isinstance(sets, Sequence):
        raise TypeError("caption sets must be {id: [captions]}, a list of caption lists, or the "
                        "paper's list of {'image_id': ..., 'captions': [...]}")
    if sets and all(isinstance(e, Mapping) for e in sets):
        out: dict[str, list] = {}
        for i, e in enumerate(sets):
            if "image_id" not in e or "captions" not in e:
                raise ValueError(f"entry {i} must have 'image_id' and 'captions' (the paper's "
                                 f"format), got keys {sorted(e)}")
            key = str(e["image_id"])
            if key in out:
                raise ValueError(f"image_id {key} appears twice; give each image one entry "
                                 "holding all its captions")
            out[key] = e["captions"]
        return out
    return {str(i): v for i, v in enumerate(sets)}


def caption_sets(sets, tokenizer: str = "ptb") -> CaptionSets:
    """Validate and tokenise caption sets once (see the module docstring for the forms)."""
    if isinstance(sets, CaptionSets):
        return sets
    if tokenizer not in TOKENIZERS:
        raise ValueError(f"unknown tokenizer {tokenizer!r}; choose one of {TOKENIZERS}")
    by_id = _as_mapping(sets)
    if not by_id:
        raise ValueError("no caption sets given; give at least one set of 2 or more captions")
    for key, caps in by_id.items():
        if isinstance(caps, str) or not isinstance(caps, Sequence):
            raise TypeError(f"captions of set {key} must be a list of strings, got {caps!r}")
        if len(caps) < 2:
            raise ValueError(f"set {key} has {len(caps)} caption(s): diversity is undefined for "
                             "m < 2 (it divides by log m); give at least 2 captions per set or "
                             "drop the set")
        for j, c in enumerate(caps):
            if not isinstance(c, str):
                raise TypeError(f"caption {j} of set {key} must be a string, got {c!r}")
    texts = [c for caps in by_id.values() for c in caps]
    tokens = tokenize(texts, tokenizer)
    sizes = np.fromiter((len(c) for c in by_id.values()), dtype=np.int64, count=len(by_id))
    out = CaptionSets(tuple(by_id), texts, tokens, sizes, tokenizer)
    words = np.bincount(out.owner, weights=[len(t) for t in tokens], minlength=len(out))
    if (words == 0).any():
        bad = [out.ids[i] for i in np.flatnonzero(words == 0)]
        raise ValueError(f"{len(bad)} set(s) have no word in any caption (first: {bad[:5]}); "
                         "their diversity is undefined: drop them or give real captions")
    return out


def read_caption_sets(path: str | Path) -> dict[str, list[str]]:
    """Read the paper's format ``[{"image_id": ..., "captions": [...]}]`` (or ``{id: [...]}``)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"captions file {str(path)!r} does not exist")
    try:
        data = json.loads(path.read_text(encoding="utf-8"), object_pairs_hook=unique_keys)
    except DuplicateKeyError as err:
        raise ValueError(f"captions file {str(path)!r} gives the id (or key) {err.key!r} twice "
                         "in one object; a JSON reader would keep only the last one silently: "
                         "give each image one entry holding all its captions") from None
    except json.JSONDecodeError as err:
        raise ValueError(f"captions file {str(path)!r} is not valid JSON: {err}") from err
    if not (isinstance(data, dict) or (isinstance(data, list) and data
                                       and all(isinstance(e, Mapping) for e in data))):
        raise ValueError(f"{path} must hold [{{'image_id': ..., 'captions': [...]}}, ...] "
                         "(the format of Wang & Chan's merge_results.json) or {id: [captions]}")
    try:
        return _as_mapping(data)
    except ValueError as err:                    # an image_id twice in the paper's list form
        raise ValueError(f"captions file {str(path)!r}: {err}") from None
