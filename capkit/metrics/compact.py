"""Captions as compact integer arrays, for inputs too large to hold as token lists.

A million candidates with five references each, as ``CaptionBatch`` token lists of Python
strings, take ~15 GB. ``CompactCaptions`` stores each distinct tokenisation once, as int32 token
ids in one flat array with offsets beside it, and each caption as the int32 index of its
tokenisation: a few bytes per token of the distinct captions plus 4 bytes per caption.
``batch(start, stop)`` gives candidates start..stop as a ``CaptionBatch`` of token ids, which the
metric kernels score as they score any batch (``capkit.metrics.chunked``).

Token ids are numbered in order of first appearance, candidates then references, as
``CaptionBatch.encoded`` numbers them for the whole input. So a chunk's n-gram tables list each
caption's n-grams in the order the whole input's tables would, and every per-caption sum is the
same floating-point sum as in memory: chunked scores equal in-memory ones to the last bit.
"""
from __future__ import annotations

import itertools
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from capkit.caption_files import paused_gc
from capkit.metrics.inputs import CaptionBatch, no_tokens, tokenized_text
from capkit.metrics.ngrams import Encoded
from capkit.text.flat_tokens import splits_apart

TOKENIZE_BLOCK = 100_000      # captions tokenised per call (bounds the tokenizer's memory)
REMEMBERED = 2_000_000        # distinct tokenisations remembered for reuse (bounds a dict)


@dataclass(frozen=True, eq=False)
class CompactCaptions:
    """Tokenised candidates and references as int32 ids; each distinct tokenisation once."""
    vocab: list[str]              # token id -> token (first appearance: candidates, references)
    tokens: np.ndarray            # (T,) int32 token ids of the distinct tokenisations
    offsets: np.ndarray           # (D + 1,) int64 where each distinct tokenisation starts
    candidates: np.ndarray        # (N,) int32 distinct tokenisation of each candidate
    references: np.ndarray        # (R,) int32 distinct tokenisation of each reference
    ref_offsets: np.ndarray       # (N + 1,) int64 where each candidate's references start
    ids: tuple[str, ...] | None   # candidate ids when the input was keyed
    tokenizer: str
    # ROUGE-L's own split (see inputs.prepare): token ids of ``text.split(" ")`` for the
    # tokenisations where it differs from ``split()``; an id -1 - j is ``rouge_words[j]``
    rouge_split: dict[int, np.ndarray]
    rouge_words: list[str]

    def __len__(self) -> int:
        return len(self.candidates)

    @property
    def lengths(self) -> np.ndarray:
        """(D,) tokens of each distinct tokenisation."""
        return np.diff(self.offsets)

    @property
    def n_empty(self) -> int:
        """Candidates with no tokens."""
        return int(np.count_nonzero(self.lengths[self.candidates] == 0))

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in (self.tokens, self.offsets, self.candidates,
                                      self.references, self.ref_offsets))

    def chunks(self, size: int) -> Iterator[CaptionBatch]:
        """Batches of ``size`` candidates (the last one smaller), in order."""
        for start in range(0, len(self), size):
            yield self.batch(start, min(start + size, len(self)))

    def batch(self, start: int, stop: int) -> CaptionBatch:
        """Candidates start..stop and their references as a ``CaptionBatch`` of token ids."""
        first, last = self.ref_offsets[start], self.ref_offsets[stop]
        segs = np.concatenate([self.candidates[start:stop], self.references[first:last]])
        lengths = self.lengths[segs]                                                # (S,)
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)    # (S,)
        source = np.repeat(self.offsets[segs] - starts, lengths) + np.arange(int(lengths.sum()))
        encoded = Encoded(self.tokens[source].astype(np.int64), lengths, starts, self.vocab)
        n_refs = np.diff(self.ref_offsets[start:stop + 1])
        ids = self.ids[start:stop] if self.ids is not None else None
        batch = CaptionBatch.from_encoded(encoded, n_refs, ids, self.tokenizer)
        if self.rouge_split:
            view = self._rouge_view(segs, encoded)
            if view is not None:
                batch.cache["rouge_view"] = CaptionBatch.from_encoded(view, n_refs, ids,
                                                                      self.tokenizer)
        return batch

    def _rouge_view(self, segs: np.ndarray, encoded: Encoded) -> Encoded | None:
        """The chunk as ROUGE-L splits it (``split(" ")``: no token is one empty token), or None
        where that is the same as ``encoded``."""
        special = np.isin(segs, np.fromiter(self.rouge_split, dtype=np.int64)) \
            | (encoded.lengths == 0)
        if not special.any():
            return None
        bounds = np.append(encoded.starts, len(encoded.tokens))
        empty = np.array([-1], dtype=np.int64)                      # rouge_words[0] == ""
        pieces, lengths, prev = [], encoded.lengths.copy(), 0
        for p in np.flatnonzero(special):
            own = self.rouge_split.get(int(segs[p]), empty)
            pieces += [encoded.tokens[bounds[prev]:bounds[p]], own]
            lengths[p] = len(own)
            prev = p + 1
        pieces.append(encoded.tokens[bounds[prev]:])
        tokens = np.concatenate(pieces).astype(np.int64)
        V = len(self.vocab)
        tokens = np.where(tokens < 0, V - 1 - tokens, tokens)      # -1 - j -> V + j
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
        return Encoded(tokens, lengths, starts, self.vocab + self.rouge_words)


class _Interner:
    """Maps tokenised texts to distinct-tokenisation indices, storing each one's token ids."""

    def __init__(self) -> None:
        self.vocab: dict[str, int] = {}
        self.seen: dict[str, int] = {}          # tokenised text -> its index (bounded)
        self.tokens = array("i")                # int32
        self.offsets = array("q", [0])          # int64
        self.rouge_split: dict[int, np.ndarray] = {}
        self.rouge_words: dict[str, int] = {"": 0}

    def add(self, texts: Sequence[str]) -> array:
        """Indices of ``texts``; the tokenisations not seen before are stored."""
        out, new = array("i"), []
        get, first = self.seen.get, len(self.offsets) - 1
        for text in texts:
            index = get(text)
            if index is None:
                index = self.seen[text] = first + len(new)
                new.append(text)
            out.append(index)
        self._store(new, first)
        if len(self.seen) > REMEMBERED:         # a later repeat is stored again: still exact
            self.seen.clear()
        return out

    def _store(self, texts: list[str], first: int) -> None:
        words = [t.split() for t in texts]
        vocab = self.vocab
        for w in dict.fromkeys(itertools.chain.from_iterable(words)):   # first appearance
            if w not in vocab:
                vocab[w] = len(vocab)
        self.tokens.extend(map(vocab.__getitem__, itertools.chain.from_iterable(words)))
        self.offsets.extend(itertools.islice(
            itertools.accumulate(map(len, words), initial=self.offsets[-1]), 1, None))
        if splits_apart(texts):                 # (one pass over the block, then each text)
            for i, text in enumerate(texts):
                if splits_apart((text,)):
                    self.rouge_split[first + i] = self._rouge_ids(text)

    def _rouge_ids(self, text: str) -> np.ndarray:
        # whitespace-free pieces of split(" ") are split() tokens, already in vocab
        words = self.rouge_words
        return np.array([self.vocab[w] if w in self.vocab else -1 - words.setdefault(w, len(words))
                         for w in text.split(" ")], dtype=np.int64)


def _tokenised_blocks(texts: Sequence[str], tokenizer: str, block: int,
                      memo: dict) -> Iterator[list[str]]:
    """``tokenized_text`` of ``texts``, a block at a time, with the same result as in one call:
    the PTB stream lexes a caption's last token with the next caption as context, so each block
    is tokenised with one caption of lookahead, whose own tokens are dropped."""
    for start in range(0, len(texts), block):
        stop = min(start + block, len(texts))
        yield tokenized_text(texts[start:stop + 1], tokenizer, memo)[:stop - start]


def compact(candidates: Sequence[str], references: Sequence[Sequence[str]],
            ids: tuple[str, ...] | None = None, tokenizer: str = "ptb", *,
            strict: bool = False, block: int | None = None) -> CompactCaptions:
    """Tokenise aligned, checked captions (what ``inputs.align`` returns) into int arrays.

    Candidates and references are two tokenizer streams, as in ``inputs.prepare``, tokenised
    ``block`` captions at a time (default ``TOKENIZE_BLOCK``); a candidate with no tokens after
    tokenisation warns (or raises with ``strict=True``) as there.
    """
    block = block or TOKENIZE_BLOCK
    interner, memo = _Interner(), {}
    with paused_gc():
        cands = array("i")
        for texts in _tokenised_blocks(candidates, tokenizer, block, memo):
            cands.extend(interner.add(texts))
        flat = [r for rs in references for r in rs]
        refs = array("i")
        for texts in _tokenised_blocks(flat, tokenizer, block, memo):
            refs.extend(interner.add(texts))
        del flat, memo
    n_refs = np.fromiter(map(len, references), dtype=np.int64, count=len(references))
    out = CompactCaptions(
        vocab=list(interner.vocab), tokens=np.frombuffer(interner.tokens, dtype=np.int32),
        offsets=np.frombuffer(interner.offsets, dtype=np.int64),
        candidates=np.frombuffer(cands, dtype=np.int32),
        references=np.frombuffer(refs, dtype=np.int32),
        ref_offsets=np.concatenate([[0], np.cumsum(n_refs)]).astype(np.int64),
        ids=ids, tokenizer=tokenizer, rouge_split=interner.rouge_split,
        rouge_words=list(interner.rouge_words))
    no_tokens_at = np.flatnonzero(out.lengths[out.candidates] == 0)
    no_tokens([ids[i] if ids else str(i) for i in no_tokens_at if candidates[i].strip()],
              tokenizer, strict)
    return out
