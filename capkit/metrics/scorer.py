"""The one scorer: any set of metric specs on one input, each handed exactly what it needs.

``metrics.score``, the benchmark harness, robustness curves, system tables, the command line, the
pycocoevalcap drop-in and the torchmetrics adapter all call ``Scorer``. It

* validates and aligns the input once (ids must match; an empty candidate scores what
  pycocoevalcap gives it, with one warning, or raises with ``strict=True``);
* tokenises once for every metric that takes tokens, and counts n-grams once when BLEU and
  CIDEr-D run together;
* hands images, scenes and document frequencies to the metrics whose spec asks for them, and
  refuses clearly when one is missing;
* checks that each metric returned one finite score per candidate, and attaches the ids;
* scores BLEU, ROUGE-L and CIDEr-D of a large input in chunks of compact token ids, with the same
  results (``chunk_size``; ``capkit.metrics.chunked``).
"""
from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePath

import numpy as np

from capkit.caption_files import paused_gc
from capkit.metrics.chunked import CHUNK_SIZE, chunkable, score_chunks
from capkit.metrics.compact import compact
from capkit.metrics.inputs import CaptionBatch, align, prepare
from capkit.metrics.registry import MetricSpec, resolve, suite
from capkit.scores import Scores, as_scores, content_hash

NGRAM_METRICS = frozenset({"capkit.metrics.bleu:bleu", "capkit.metrics.cider:cider_d"})
# keywords that say how a metric runs, not what it computes (the inputs, a progress bar, the
# device and batch size): built-ins leave them out of their signatures, and so does a user's
RUN_OPTIONS = frozenset({"images", "scenes", "progress", "device", "batch_size"})


class Scorer:
    """Score several metrics on the same inputs: ``Scorer(["bleu_4", "cider_d"]).score(c, r)``.

    ``options``: ``{metric name: {option: value}}`` passed to that metric only.
    ``chunk_size``: candidates per chunk for BLEU, ROUGE-L and CIDEr-D on inputs larger than
    that (``capkit.metrics.chunked``: compact token ids, memory bounded by the chunk, the same
    scores); ``"auto"``: chunks of ``chunked.CHUNK_SIZE`` when there is more than one; None:
    never.
    """

    def __init__(self, metrics=None, *, tokenizer: str = "ptb", strict: bool = False,
                 options: Mapping[str, Mapping[str, object]] | None = None,
                 chunk_size: int | str | None = "auto"):
        self.specs = resolve(suite("classic") if metrics is None else metrics)
        self.tokenizer = tokenizer
        self.strict = strict
        if not (chunk_size is None or chunk_size == "auto" or
                (isinstance(chunk_size, int) and not isinstance(chunk_size, bool)
                 and chunk_size > 0)):
            raise ValueError(f"chunk_size must be a positive number of candidates, 'auto' or "
                             f"None (never chunk), got {chunk_size!r}")
        self.chunk_size = chunk_size
        self.options = {k: dict(v) for k, v in (options or {}).items()}
        unknown = set(self.options) - set(self.specs)
        if unknown:
            raise ValueError(f"options given for {sorted(unknown)}, which are not among the "
                             f"metrics scored ({', '.join(self.specs)})")

    def __repr__(self) -> str:
        return f"Scorer({list(self.specs)}, tokenizer={self.tokenizer!r})"

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.specs)

    def score(self, candidates, references=None, *, images=None, scenes=None,
              document_frequency=None, batch: CaptionBatch | None = None) -> dict[str, Scores]:
        """``{name: Scores}`` in the order the metrics were given.

        ``batch``: an already tokenised ``CaptionBatch`` of the same candidates (e.g. the
        robustness study's transformed words), used by the metrics that take tokens.
        """
        if isinstance(candidates, CaptionBatch):
            batch, candidates = candidates, None
        if batch is not None and candidates is None:
            texts = None
            n = len(batch)
        else:
            with paused_gc():
                texts = align(candidates, references, strict=self.strict)
            n = len(texts[0])
        if n == 0:
            raise ValueError("no candidates: give at least one caption to score")
        kwargs = {name: self._kwargs(name, spec, images, scenes, document_frequency)
                  for name, spec in self.specs.items()}
        done, n_empty = self._score_in_chunks(texts, kwargs) if batch is None else ({}, None)
        in_memory = {name: spec for name, spec in self.specs.items() if name not in done}
        if any(s.tokens for s in in_memory.values()) and batch is None:
            with paused_gc():
                batch = prepare(*texts[:2], tokenizer=self.tokenizer, ids=texts[2], checked=True,
                                strict=self.strict)
            if sum(_target(s) in NGRAM_METRICS for s in in_memory.values()) > 1:
                batch.ngrams(4)            # BLEU-1..4 and CIDEr-D share one n-gram index
        if texts is None and any(not s.tokens for s in self.specs.values()):
            raise ValueError("metrics that read plain text cannot be scored from a CaptionBatch "
                             "alone; pass the candidates and references")
        ids = texts[2] if texts is not None else batch.ids
        # align and prepare warned about them; the count goes into every result's parts
        if n_empty is None:
            n_empty = sum(not c for c in batch.candidates) if batch is not None else \
                _count_empty(texts[0])
        out = {}
        for name, spec in self.specs.items():
            try:
                if name in done:
                    result = done.pop(name)
                else:
                    result = spec.function(*metric_arguments(spec, texts, batch),
                                           **kwargs[name])
            except Exception as err:
                if not spec.builtin:        # a user's function: say which one failed
                    err.add_note(f"(raised by the metric {name!r})")
                raise
            settings = None if spec.builtin else \
                _user_settings(spec, kwargs[name], batch.tokenizer if spec.tokens else None)
            out[name] = _checked(name, spec, result, n, ids, n_empty, settings)
        return out

    def _score_in_chunks(self, texts, kwargs) -> tuple[dict[str, Scores], int | None]:
        """The metrics that can be scored in chunks, when the input is large enough: their
        results and the number of candidates with no tokens; ({}, None) when there are none."""
        size = self.chunk_size_for(len(texts[0]))
        chunked = {name: spec for name, spec in self.specs.items()
                   if size and chunkable(spec, kwargs[name])}
        if not chunked:
            return {}, None
        captions = compact(*texts, tokenizer=self.tokenizer, strict=self.strict)
        return score_chunks(chunked, captions, size, kwargs), captions.n_empty

    def chunk_size_for(self, n: int) -> int | None:
        """Candidates per chunk for an input of n candidates; None: score it in memory."""
        if self.chunk_size == "auto":
            return CHUNK_SIZE if n > CHUNK_SIZE else None
        return self.chunk_size if self.chunk_size is not None and n > self.chunk_size else None

    def _kwargs(self, name: str, spec: MetricSpec, images, scenes, document_frequency) -> dict:
        kwargs = dict(self.options.get(name, {}))
        if spec.images:
            if images is None:
                raise ValueError(f"{name} scores captions against images: pass images= (a "
                                 "folder, a list aligned with the candidates, or {id: image})")
            kwargs["images"] = images
        if spec.scenes:
            if scenes is None:
                raise ValueError(f"{name} scores captions against world scenes: pass scenes= "
                                 "(one capkit.world Scene per candidate)")
            kwargs["scenes"] = scenes
        if document_frequency is not None and spec.document_frequency:
            kwargs.setdefault("document_frequency", document_frequency)
        return kwargs


def _target(spec: MetricSpec) -> str | None:
    return spec.target if isinstance(spec.target, str) else None


def metric_arguments(spec: MetricSpec, texts, batch: CaptionBatch | None) -> tuple:
    """The positional arguments a metric is called with: the ``CaptionBatch`` for one that takes
    tokens, else the texts (``_plain_inputs``). Options follow as keywords. A user's metric
    gets the batch's token lists as lists (``CaptionBatch.with_lists``), never a lazy view."""
    if spec.tokens:
        return (batch if spec.builtin else batch.with_lists(),)
    return _plain_inputs(spec, texts)


def _plain_inputs(spec: MetricSpec, texts) -> tuple:
    """Built-ins (capkit.metrics functions: ``MetricSpec.builtin``) get ``{id: caption}`` when
    ids exist (image folders are keyed by id); users' functions, however registered, get plain
    lists aligned by position, as ``register`` and ``module:function`` promise."""
    cands, refs, ids = texts
    if not spec.references:
        refs = None
    if spec.builtin and ids is not None:
        return dict(zip(ids, cands)), None if refs is None else dict(zip(ids, refs))
    return list(cands), refs


def _count_empty(candidates: Sequence[str]) -> int:
    return sum(not c.strip() for c in candidates)


def _user_settings(spec: MetricSpec, kwargs: Mapping[str, object],
                   tokenizer: str | None) -> dict[str, str]:
    """What a user's metric was called with, for its signature: the options bound to it (by a
    ``functools.partial``, by its spec) and given to the Scorer (which win, as in the call), in
    name order, then ``tok:<tokenizer>`` when it takes tokens. (Built-ins write their own.)"""
    fn, bound, args = spec.function, {}, ()
    while isinstance(fn, functools.partial):     # the outer partial's keywords win
        fn, bound, args = fn.func, {**fn.keywords, **bound}, fn.args + args
    given = {k: v for k, v in {**bound, **kwargs}.items() if k not in RUN_OPTIONS}
    settings = {"args": _setting(args)} if args else {}
    settings.update((k, _setting(given[k])) for k in sorted(given))
    if tokenizer is not None:
        settings["tok"] = _setting(tokenizer)
    return settings


def _setting(value: object) -> str:
    """One option's value as a signature shows it, the same in every run: numbers and words as
    they read; a file or folder by its name and a digest of its size and time (not its folder);
    document frequencies or an encoder by their fingerprint or signature; a function by its
    name (a partial with what it binds); data (lists, dicts, arrays, tensors) by a content hash.
    What has no content to hash (an object shown by its address, a lambda, a model) is marked
    ``~unhashed``: two such values are not told apart."""
    from capkit.models.protocol import clean_signature    # (not at import: built-ins never ask)
    if hasattr(value, "detach") and hasattr(value, "numpy"):      # a tensor: its values
        return clean_signature(f"{type(value).__name__}#"
                               f"{content_hash(value.detach().cpu().numpy())}")
    if value is None or isinstance(value, (str, int, float, np.generic)):
        text = str(value)
    elif isinstance(value, PurePath):
        text = _path_setting(value)
    elif isinstance(getattr(value, "fingerprint", None), str):
        text = value.fingerprint
    elif isinstance(getattr(value, "signature", None), str):
        text = value.signature
    elif isinstance(value, functools.partial):
        bound = [*map(_setting, value.args), *(f"{k}={_setting(v)}"
                                                for k, v in sorted(value.keywords.items()))]
        text = f"{_setting(value.func)}({','.join(bound)})"
    elif callable(value) and not isinstance(value, type):
        name = getattr(value, "__qualname__", None)
        anonymous = name is None or "<" in name           # an object, a lambda, a local def
        text = f"{getattr(value, '__module__', '')}.{name or type(value).__qualname__}" + \
            "~unhashed" * anonymous
    elif " at 0x" in repr(value):                         # no content to hash: its type
        text = f"{type(value).__name__}~unhashed"
    else:
        text = f"{type(value).__name__}#{content_hash(value)}"
    if len(text) > 64:                # a long text: its start and a hash (and the mark)
        text = f"{text[:24]}...#{content_hash(text)}" + "~unhashed" * ("~unhashed" in text)
    return clean_signature(text)


def _path_setting(path: PurePath) -> str:
    """A path option: its name and a digest of the sizes and times of what is there
    (``models.protocol.source_signature``), not the folders above it."""
    from capkit.models.protocol import source_signature
    local = Path(path).expanduser()
    return source_signature(local) if local.exists() else f"{local.name}~missing"


def _checked(name: str, spec: MetricSpec, result, n: int, ids, n_empty: int,
             settings: Mapping[str, str] | None = None) -> Scores:
    """The result as ``Scores``, checked: one finite score per candidate, with the ids. A user's
    metric's Scores is named ``name`` and its signature records ``settings``
    (``_user_settings``); a built-in's Scores keeps its own name and signature."""
    try:
        scores = result if spec.builtin and isinstance(result, Scores) else \
            as_scores(name, result, settings=settings)
    except (TypeError, ValueError) as err:
        raise ValueError(f"metric {name!r}: {err}") from None
    values = scores.per_caption
    if values.shape != (n,):
        raise ValueError(f"metric {name!r} returned {values.size} scores for {n} candidates; it "
                         "must return one score per candidate, aligned by position")
    bad = np.flatnonzero(~np.isfinite(values))
    if len(bad):
        raise ValueError(f"metric {name!r} returned {len(bad)} NaN or infinite scores (first: "
                         f"candidate {ids[bad[0]] if ids else bad[0]}); it must return a finite "
                         "score for every candidate")
    changes = {}
    if scores.ids is None and ids is not None:
        changes["ids"] = ids
    if n_empty:
        changes["parts"] = {**scores.parts, "n_empty_candidates": n_empty}
    return dataclasses.replace(scores, **changes) if changes else scores


def score(candidates, references=None, metrics=None, tokenizer: str = "ptb", *,
          images=None, scenes=None, document_frequency=None, strict: bool = False,
          options: Mapping[str, Mapping[str, object]] | None = None,
          chunk_size: int | str | None = "auto") -> dict[str, Scores]:
    """Several metrics on one input, tokenised once: ``{name: Scores}``.

    ``metrics``: one name (``"bleu_4"``), a list of names / ``"module:function"`` / callables,
    or ``{name: metric}``; default: the ``"classic"`` suite (BLEU-1..4, ROUGE-L, CIDEr-D).
    ``chunk_size``: see ``Scorer``.
    """
    return Scorer(metrics, tokenizer=tokenizer, strict=strict, options=options,
                  chunk_size=chunk_size).score(
        candidates, references, images=images, scenes=scenes,
        document_frequency=document_frequency)
