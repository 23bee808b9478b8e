"""The record every metric returns: per-caption scores, a corpus score, named parts, a signature.

``Scores`` is a value: its arrays are read-only, two records are equal when every field is equal
(NaN equals NaN, arrays element by element), and it can be hashed, so results can be compared,
deduplicated and used as keys. ``to_dict`` / ``to_json`` write NaN and infinities as ``null``
(JSON has no NaN); ``to_frame`` gives a pandas DataFrame, one row per candidate.

The signature is a settings string in the spirit of bert_score's hash and sacrebleu's signature:
print it next to a number and anyone can tell exactly how the number was computed. Settings that
are data (given document frequencies, idf weights, stop-word lists, checkpoints) appear as a
short content hash (``content_hash``), so two different tables never share a signature.
"""
from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

import numpy as np

from capkit import __version__


class ReadOnlyDict(dict):
    """A dict that refuses changes; pickles and deep-copies like a dict (a mappingproxy does not)."""

    def _refuse(self, *args, **kwargs):
        raise TypeError("this mapping is read-only (Scores and MetricSpec are values); build a "
                        "new one with dataclasses.replace(...)")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = __ior__ = _refuse

    def __reduce__(self):
        return (type(self), (dict(self),))

    def __deepcopy__(self, memo):
        import copy
        return type(self)(copy.deepcopy(dict(self), memo))

    def __hash__(self) -> int:        # hashable when its values are
        return hash(tuple(sorted(self.items(), key=repr)))


def _frozen(value: object) -> object:
    """A read-only copy of an array (or of the arrays inside a list/tuple/dict)."""
    if isinstance(value, np.ndarray):
        out = np.array(value, copy=True)
        out.setflags(write=False)
        return out
    if isinstance(value, Mapping):
        return ReadOnlyDict({k: _frozen(v) for k, v in value.items()})
    if isinstance(value, list):
        return tuple(_frozen(v) for v in value)
    return value


def _same(a: object, b: object) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape:
            return False
        if a.dtype.kind in "fc" or b.dtype.kind in "fc":
            return bool(np.array_equal(a, b, equal_nan=True))
        return bool(np.array_equal(a, b))
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return bool(a == b)


def _plain(value: object) -> object:
    """JSON-ready: arrays to lists, NaN / inf to None."""
    if isinstance(value, np.ndarray):
        return [_plain(v) for v in value.tolist()]
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (float, np.floating)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.bool_):
        return bool(value)
    return value


@dataclass(frozen=True, eq=False)
class Scores:
    metric: str                          # registry name, e.g. "cider_d"
    per_caption: np.ndarray              # (N,) float64, one score per candidate (read-only)
    corpus: float                        # the metric's own corpus definition (documented per metric)
    signature: str                       # exact settings, e.g. "cider_d|n:4|sigma:6|df:corpus|tok:ptb"
    ids: tuple[str, ...] | None = None   # candidate ids, aligned with per_caption
    parts: Mapping[str, object] = field(default_factory=dict)  # named extras (P/R, lower orders)

    def __post_init__(self) -> None:
        values = np.array(self.per_caption, dtype=np.float64, copy=True)
        if values.ndim != 1:
            raise ValueError(f"{self.metric}: per_caption must be 1-d, got shape {values.shape}")
        values.setflags(write=False)
        object.__setattr__(self, "per_caption", values)
        object.__setattr__(self, "corpus", float(self.corpus))
        if self.ids is not None:
            ids = tuple(str(i) for i in self.ids)
            if len(ids) != len(values):
                raise ValueError(f"{self.metric}: {len(ids)} ids for {len(values)} scores")
            object.__setattr__(self, "ids", ids)
        object.__setattr__(self, "parts", _frozen(dict(self.parts)))

    def __len__(self) -> int:
        return len(self.per_caption)

    def __repr__(self) -> str:
        return f"Scores({self.metric}: corpus={self.corpus:.4f}, n={len(self)}, {self.signature})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Scores):
            return NotImplemented
        return (self.metric == other.metric and self.signature == other.signature
                and self.ids == other.ids and _same(self.corpus, other.corpus)
                and _same(self.per_caption, other.per_caption)
                and _same(self.parts, other.parts))

    def __hash__(self) -> int:
        return hash((self.metric, self.signature, self.ids, self.per_caption.tobytes(),
                     tuple(sorted(self.parts))))

    def __reduce__(self):
        # pickle and copy.deepcopy rebuild the record through __post_init__, which makes the
        # unpickled arrays read-only again
        return (type(self), (self.metric, self.per_caption, self.corpus, self.signature,
                             self.ids, dict(self.parts)))

    def by_id(self) -> dict[str, float]:
        """Per-caption scores keyed by candidate id (positions as strings when no ids were given)."""
        return {i: float(s) for i, s in zip(self._names(), self.per_caption)}

    def _names(self) -> tuple[str, ...]:
        return self.ids if self.ids is not None else tuple(str(i) for i in range(len(self)))

    def to_dict(self, per_caption: bool = True) -> dict:
        """JSON-ready dict; NaN and infinities become ``None`` (``null`` in JSON)."""
        out = {"metric": self.metric, "corpus": _plain(self.corpus),
               "signature": self.signature, "n": len(self)}
        if per_caption:
            out["ids"] = list(self._names())
            out["per_caption"] = _plain(self.per_caption)
        out["parts"] = _plain(self.parts)
        return out

    def to_json(self, indent: int | None = None, per_caption: bool = True) -> str:
        return json.dumps(self.to_dict(per_caption), indent=indent, allow_nan=False)

    def to_frame(self):
        """pandas DataFrame indexed by candidate id: the score and every per-caption part."""
        import pandas as pd
        columns = {self.metric: self.per_caption}
        for key, value in self.parts.items():
            if isinstance(value, np.ndarray) and value.shape == self.per_caption.shape:
                columns[key] = value
        return pd.DataFrame(columns, index=pd.Index(self._names(), name="id"))


def content_hash(data: object, length: int = 10) -> str:
    """A short sha256 of a setting that is data (a df table, idf weights, a word list, a file's
    bytes).

    Mappings are hashed in sorted key order, so the same table always gives the same hash.
    """
    import hashlib                     # (not at import: most signatures hash nothing)
    h = hashlib.sha256()
    _feed(h, data)
    return h.hexdigest()[:length]


def _feed(h, data: object) -> None:
    if isinstance(data, Mapping):
        h.update(b"{")
        for key in sorted(data, key=repr):
            _feed(h, key)
            _feed(h, data[key])
        h.update(b"}")
    elif isinstance(data, (list, tuple)):
        h.update(b"[")
        for item in data:
            _feed(h, item)
        h.update(b"]")
    elif isinstance(data, (set, frozenset)):
        _feed(h, sorted(data, key=repr))
    elif isinstance(data, (bytes, bytearray)):          # a file's bytes: fed as they are
        h.update(b"b%d:" % len(data))
        h.update(data)
    elif isinstance(data, np.ndarray):
        h.update(str(data.dtype).encode() + str(data.shape).encode())
        h.update(np.ascontiguousarray(data).tobytes())
    else:
        h.update(repr(data).encode("utf-8"))
        h.update(b"\x00")


def make_signature(metric: str, **settings: object) -> str:
    """`metric|key:value|...|capkit:<version>`, keys in the order given."""
    items = [f"{k}:{v}" for k, v in settings.items()]
    return "|".join([metric, *items, f"capkit:{__version__}"])


def with_settings(signature: str, settings: Mapping[str, object]) -> str:
    """``signature`` with the ``key:value`` settings it does not record yet (neither as a
    ``key:`` field nor as ``key=`` inside one), put before its ``capkit:<version>`` field (the
    settings a user's own signature left out)."""
    fields = signature.split("|")
    have = {f.partition(":")[0] for f in fields[1:]}
    new = [f"{k}:{v}" for k, v in settings.items()
           if k not in have and not re.search(rf"(?<![\w.]){re.escape(k)}=", signature)]
    if not new:
        return signature
    tail = [fields.pop()] if len(fields) > 1 and fields[-1].startswith("capkit:") else []
    return "|".join([*fields, *new, *tail])


def as_scores(metric: str, values: object, signature: str | None = None,
              settings: Mapping[str, object] | None = None) -> Scores:
    """Wrap what a user metric returned (a Scores or an array of per-caption scores) under the
    name it was registered as (``metric``).

    ``settings``: what it was called with (its options, ``tok``), recorded in the signature: in
    ``metric|source:user|...`` for an array, and added to a returned Scores' own signature
    where that does not record them.
    """
    settings = dict(settings or {})
    if isinstance(values, Scores):
        sig = with_settings(values.signature, settings) if values.signature.strip() else \
            make_signature(metric, source="user", **settings)
        if (values.metric, values.signature) == (metric, sig):
            return values
        return replace(values, metric=metric, signature=sig)
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"metric {metric!r} must return a Scores or a 1-d array of per-caption "
                         f"scores; it returned shape {arr.shape}")
    return Scores(metric, arr, float(arr.mean()) if len(arr) else float("nan"),
                  signature or make_signature(metric, source="user", **settings))
