"""pycocoevalcap's ``(gts, res)`` dictionaries, checked and turned into capkit token batches.

pycocoevalcap's scorers take ``gts = {id: [reference, ...]}`` and ``res = {id: [candidate]}``
of *already tokenised* strings and split them themselves: BLEU and CIDEr-D with
``str.split()``, ROUGE-L with ``str.split(" ")`` (so ``"a  b"`` has an empty token there);
METEOR hands them to the jar whole (the compat ``Meteor`` splits at spaces only).
``Captions`` keeps the strings in ``gts``' key order (the order of every per-caption result)
and builds each view once, so ``COCOEvalCap`` shares one split (and one n-gram index) between
BLEU and CIDEr-D. Nothing here tokenises: that is ``PTBTokenizer``'s job, as in the original.

Empty or whitespace-only strings are scored (0 on every metric, as pycocoevalcap does), so the
batches are built directly rather than through ``capkit.metrics.prepare``; ``score_batch`` then
runs a metric on them through capkit's one ``Scorer``, like every other facade.
"""
from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from capkit.metrics import CaptionBatch, Scorer
from capkit.scores import Scores


class InputError(ValueError, AssertionError):
    """An input pycocoevalcap would reject with a bare ``assert``.

    It is a ``ValueError`` with a sentence that says what to fix (capkit's rule), and also an
    ``AssertionError`` so that code written against pycocoevalcap still catches it. Unlike an
    ``assert``, it is raised under ``python -O`` too.
    """


@dataclass(frozen=True)
class Captions:
    """Candidates and references aligned by position, in the order pycocoevalcap scores them."""
    keys: list                      # (N,) ids, in gts' key order (or res' list order)
    candidates: list[str]           # (N,) one candidate per id
    references: list[list[str]]     # (N,) the references of each candidate

    def __len__(self) -> int:
        return len(self.keys)

    @functools.cached_property
    def batch(self) -> CaptionBatch:
        """Tokens by ``str.split()``: what BLEU and CIDEr-D see."""
        return CaptionBatch([c.split() for c in self.candidates],
                            [[r.split() for r in rs] for rs in self.references], None, "split")

    @functools.cached_property
    def rouge_batch(self) -> CaptionBatch:
        """Tokens by ``str.split(" ")``: what pycocoevalcap's ROUGE-L sees."""
        return CaptionBatch([c.split(" ") for c in self.candidates],
                            [[r.split(" ") for r in rs] for rs in self.references], None, "split")


def score_batch(metric: str, batch: CaptionBatch, *, document_frequency=None,
                **options) -> Scores:
    """One registered capkit metric on a split batch, through the one ``Scorer``."""
    scorer = Scorer([metric], options={metric: options} if options else None)
    return scorer.score(batch, document_frequency=document_frequency)[metric]


def captions(gts, res) -> Captions:
    """Check ``gts``/``res`` as pycocoevalcap's scorers do and align them.

    ``res`` is ``{id: [candidate]}`` (pycocoevalcap) or a list of
    ``{"image_id": id, "caption": [candidate]}`` (self-critical.pytorch's CiderD; ids may repeat,
    e.g. several samples of one image, and every entry is scored).
    """
    if not isinstance(gts, Mapping):
        raise InputError(f"gts must be a dict {{id: [reference, ...]}}, got {type(gts).__name__}")
    if isinstance(res, Mapping):
        if gts.keys() != res.keys():
            missing = [k for k in gts if k not in res][:5]
            extra = [k for k in res if k not in gts][:5]
            from capkit.metrics.inputs import id_type_hint
            hint = id_type_hint(res.keys() - gts.keys(), gts.keys() - res.keys(),
                                ("results", "ground truths"), ("res", "gts"))
            raise InputError("gts and res must have the same ids (pycocoevalcap asserts "
                             f"gts.keys() == res.keys()); ids only in gts: {missing}, only in "
                             f"res: {extra} (first 5 of each); score the ids present in both"
                             + (f". {hint}" if hint else ""))
        keys = list(gts.keys())
        pairs = [(k, res[k]) for k in keys]
    elif isinstance(res, Sequence) and not isinstance(res, (str, bytes)):
        pairs = [_entry(i, item) for i, item in enumerate(res)]
        keys = [k for k, _ in pairs]
        absent = [k for k in keys if k not in gts][:5]
        if absent:
            raise InputError(f"res has image ids with no references in gts (first: {absent}); "
                             "every res entry's image_id must be a key of gts")
    else:
        raise InputError("res must be a dict {id: [candidate]} or a list of "
                         f"{{'image_id': id, 'caption': [candidate]}}, got {type(res).__name__}")
    if not pairs:
        raise InputError("nothing to score: gts and res are empty")
    cands, refs = [], []
    for k, hypo in pairs:
        ref = gts[k]
        if type(hypo) is not list or len(hypo) != 1:
            raise InputError(f"the candidate of id {k!r} must be a list holding exactly one "
                             f"caption, got {hypo!r:.80}")
        if type(ref) is not list or len(ref) == 0:
            raise InputError(f"the references of id {k!r} must be a non-empty list of "
                             f"captions, got {ref!r:.80}")
        _check_strings(k, hypo, ref)
        cands.append(hypo[0])
        refs.append(ref)
    return Captions(keys, cands, refs)


def _entry(i: int, item) -> tuple:
    if not isinstance(item, Mapping) or "image_id" not in item or "caption" not in item:
        raise InputError(f"res[{i}] must be a dict with 'image_id' and 'caption' (a list "
                         f"holding one caption), got {item!r:.80}")
    return item["image_id"], item["caption"]


def _check_strings(key, hypo: list, ref: list) -> None:
    for text in (*hypo, *ref):
        if not isinstance(text, str):
            raise TypeError(f"captions of id {key!r} must be strings (tokens joined by "
                            f"spaces), got {type(text).__name__}: {text!r:.80}")


class Pairs:
    """What pycocoevalcap's ``BleuScorer`` and ``CiderScorer`` share: (hypothesis, references)
    pairs added by the constructor, ``cook_append`` or ``+=`` (a pair, or another scorer),
    counted by ``size()`` and scored together as ``Captions`` (``captions()``)."""

    def __init__(self, test=None, refs=None):
        self.ctest: list = []       # the hypotheses as added (None where none was given)
        self.crefs: list = []       # their reference lists
        self.cook_append(test, refs)

    def cook_append(self, test, refs) -> None:
        if refs is not None:
            self.crefs.append(list(refs))
            self.ctest.append(test)
        self._changed()

    def _changed(self) -> None:
        """Called when pairs are added (a subclass drops what it cached)."""

    def size(self) -> int:
        assert len(self.crefs) == len(self.ctest), \
            f"refs/test mismatch! {len(self.crefs)}<>{len(self.ctest)}"
        return len(self.crefs)

    def __iadd__(self, other):
        if type(other) is tuple:
            self.cook_append(other[0], other[1])
        else:
            self.ctest.extend(other.ctest)
            self.crefs.extend(other.crefs)
            self._changed()
        return self

    def _with_pairs_of(self, new):
        new.ctest, new.crefs = list(self.ctest), list(self.crefs)
        return new

    def captions(self) -> Captions:
        missing = [i for i, t in enumerate(self.ctest) if t is None]
        if missing:
            raise ValueError(f"pair {missing[0]} has references but no hypothesis; add "
                             "(hypothesis, references) pairs")
        return Captions(list(range(len(self.ctest))), list(self.ctest), self.crefs)
