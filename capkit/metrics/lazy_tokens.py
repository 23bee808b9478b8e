"""Token lists made on access: a batch's segments decoded from token ids, for the metrics that
read token strings at all (BLEU, ROUGE-L and CIDEr-D read ids). Used by
``inputs.CaptionBatch.from_encoded`` (the chunks of ``metrics.compact``)."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from capkit.metrics.ngrams import Encoded


class Lazy(Sequence):
    """A sequence whose items are made on access (``_item``): slices give lists, and it equals
    any sequence (not a string) with equal items, as the list it stands for would."""

    def _item(self, i: int):
        raise NotImplementedError

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if not -len(self) <= i < len(self):
            raise IndexError(i)
        return self._item(i % len(self))

    def __eq__(self, other) -> bool:
        return isinstance(other, Sequence) and not isinstance(other, (str, bytes)) \
            and len(self) == len(other) and list(self) == list(other)

    __hash__ = None                                     # mutable-list semantics: unhashable

    def __repr__(self) -> str:
        return repr(list(self))


class DecodedSegments(Lazy):
    """Token lists of some segments of an ``Encoded``, decoded on access."""

    def __init__(self, encoded: Encoded, segments: np.ndarray):
        self.encoded, self.segments = encoded, segments

    def __len__(self) -> int:
        return len(self.segments)

    def _item(self, i: int):
        enc, s = self.encoded, self.segments[i]
        return [enc.vocab[t] for t in enc.tokens[enc.starts[s]:enc.starts[s] + enc.lengths[s]]]


class DecodedReferences(Lazy):
    """Per candidate, the token lists of its references in an ``Encoded``, decoded on access."""

    def __init__(self, encoded: Encoded, first: np.ndarray):
        self.encoded, self.first = encoded, first          # (N + 1,) segment offsets

    def __len__(self) -> int:
        return len(self.first) - 1

    def _item(self, i: int):
        return list(DecodedSegments(self.encoded, np.arange(self.first[i], self.first[i + 1])))
