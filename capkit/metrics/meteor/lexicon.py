"""What METEOR needs to know about each word and phrase of a segment, looked up once per word.

``Lexicon`` wraps ``MeteorResources`` with per-word caches: the Java hash code (exact module),
the hash of the Snowball stem (stem module), the synsets of the word and of its base forms
(synonym module: ``getSynSets(w) | getStemSynSets(w)``, with WordNet's suffix rules from
``SynonymDictionary.morph``), and the id in the paraphrase table's vocabulary. ``Segment``
holds those features for one normalised segment plus its phrases found in the table.

Explained in notebooks/01_classic_metrics.ipynb, section "METEOR".
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from capkit.metrics.meteor.normalize import english_stemmer, java_hash
from capkit.metrics.meteor.resources import (HASH_SEED, MAX_PHRASE, MeteorResources,
                                             hash_final, hash_step)

# SynonymDictionary.morph: WordNet 3.0's detachment rules (nouns, verbs, adjectives)
_SUFFIXES = ("s", "ses", "xes", "zes", "ches", "shes", "men", "ies",
             "s", "ies", "es", "es", "ed", "ed", "ing", "ing", "er", "est", "er", "est")
_ENDINGS = ("", "s", "x", "z", "ch", "sh", "man", "y",
            "", "y", "e", "", "e", "", "e", "", "", "", "e", "e")
@dataclass
class Segment:
    """One normalised segment and its per-word features (aligned lists)."""
    words: list[str]
    hash: list[int]
    stem: list[int]
    synsets: list[frozenset]
    phrase: np.ndarray            # (n,) paraphrase-vocabulary ids, -1 if unknown
    ref_phrases: list             # (start, length, table row) of phrases with paraphrases
    par_at: dict                  # paraphrase id -> [(start, length), ...] by start


class Lexicon:
    """Per-word features with caches; one per resources object (not thread-safe)."""

    def __init__(self, resources: MeteorResources):
        self.res = resources
        self.stemmer = english_stemmer()
        self._hash: dict[str, int] = {}
        self._stem: dict[str, int] = {}
        self._syn: dict[str, frozenset] = {}

    def java_hash(self, w: str) -> int:
        h = self._hash.get(w)
        if h is None:
            h = self._hash[w] = java_hash(w)
        return h

    def stem_hash(self, w: str) -> int:
        h = self._stem.get(w)
        if h is None:
            h = self._stem[w] = java_hash(self.stemmer.stemWord(w))
        return h

    def synsets(self, w: str) -> frozenset:
        """``getSynSets(w) | getStemSynSets(w)``."""
        s = self._syn.get(w)
        if s is None:
            s = self.res.synsets(w)
            bases = self.res.exceptions.get(w)
            if bases is not None:
                for base in bases:
                    s = s | self.res.synsets(base)
            else:
                s = s | self.res.synsets(self.morph(w))
            self._syn[w] = s
        return s

    def morph(self, w: str) -> str:
        """``SynonymDictionary.morph``: a base form in WordNet, or "" (bugs kept)."""
        end = "ful" if w.endswith("ful") else ""
        if w.endswith("ss") or len(w) <= 2:
            return w
        for suffix, ending in zip(_SUFFIXES, _ENDINGS):
            if w.endswith(suffix):
                base = w[:len(w) - len(suffix)] + ending
                if base in self.res.syn_index:
                    return base + end
        return ""

    def features(self, types: list[str]):
        """Per word type: hash, stem hash, function word?, paraphrase id, synsets."""
        table, fn = self.res.paraphrase, self.res.function_words
        n = len(types)
        para = np.fromiter((table.vocab.get(w, -1) for w in types), dtype=np.int64, count=n)
        known = para >= 0
        hashes = np.where(known, table.word_hash[np.maximum(para, 0)], 0)
        stems = np.where(known, table.word_stem[np.maximum(para, 0)], 0)
        for k in np.flatnonzero(~known):           # words outside the table's vocabulary
            hashes[k], stems[k] = self.java_hash(types[k]), self.stem_hash(types[k])
        return (hashes, stems, np.fromiter((w in fn for w in types), dtype=bool, count=n),
                para, [self.synsets(w) for w in types])

    def segment(self, words: list[str]) -> Segment:
        vocab = self.res.paraphrase.vocab
        ids = np.array([vocab.get(w, -1) for w in words], dtype=np.int64)
        refs, pars = phrase_lookup(ids, self.res)
        par_at: dict[int, list] = {}
        for start, length, pid in pars:
            par_at.setdefault(pid, []).append((start, length))
        return Segment(words, [self.java_hash(w) for w in words],
                       [self.stem_hash(w) for w in words], [self.synsets(w) for w in words],
                       ids, refs, par_at)


def phrase_occurrences(ids: np.ndarray, seg_end: np.ndarray):
    """Every n-gram (n <= 7) of known words in concatenated segments.

    ``ids``: (W,) paraphrase-vocabulary ids (-1: unknown word); ``seg_end``: (W,) end
    (exclusive) of each token's segment. Returns (position, length, hash), by length then
    position. Hashes are rolled one word at a time, so each n-gram costs one step.
    """
    pos = np.flatnonzero(ids >= 0)
    state = hash_step(np.full(len(pos), HASH_SEED, dtype=np.uint64), ids[pos])
    ones = np.ones(len(pos), dtype=np.int64)
    out = [(pos, ones, hash_final(state, ones))]
    for length in range(2, MAX_PHRASE + 1):
        nxt = pos + length - 1
        ok = nxt < seg_end[pos]
        ok[ok] = ids[nxt[ok]] >= 0
        pos, state = pos[ok], hash_step(state[ok], ids[nxt[ok]])
        lengths = np.full(len(pos), length, dtype=np.int64)
        out.append((pos, lengths, hash_final(state, lengths)))
    pos, lengths, h = (np.concatenate(x) for x in zip(*out))
    return pos, lengths, h


_LOW = np.uint64((1 << 24) - 1)


def phrases_in_table(table, h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(row in the phrase table, paraphrase id) of each n-gram hash, -1 where absent."""
    rows, pars = find_sorted([table.ref_hash, table.par_hash], h)
    return rows, pars


def find_sorted(tables: list[np.ndarray], keys: np.ndarray) -> list[np.ndarray]:
    """For each sorted uint64 table, the index of each key in it (-1 where absent).

    numpy's binary search is several times faster on sorted queries, and sorting values is
    faster than argsort, so each query's top 40 bits are packed with its index, sorted once,
    looked up by those bits and then checked on the full key.
    """
    outs = [np.full(len(keys), -1, dtype=np.int64) for _ in tables]
    step = 1 << 24
    for lo in range(0, len(keys), step):
        part = keys[lo:lo + step]
        packed = np.sort((part & ~_LOW) | np.arange(len(part), dtype=np.uint64))
        for table, out in zip(tables, outs):
            if len(table):
                _find_packed(table, part, packed, out[lo:lo + step])
    return outs


def _find_packed(table, part, packed, out):
    table_top = table >> np.uint64(24)
    idx = (packed & _LOW).astype(np.int64)
    top = packed >> np.uint64(24)
    pos = np.searchsorted(table_top, top)
    while len(pos):                                   # rarely more than one round
        inside = pos < len(table)
        pos, idx, top = pos[inside], idx[inside], top[inside]
        same_top = table_top[pos] == top
        pos, idx, top = pos[same_top], idx[same_top], top[same_top]
        hit = table[pos] == part[idx]
        out[idx[hit]] = pos[hit]
        pos, idx, top = pos[~hit] + 1, idx[~hit], top[~hit]


def phrase_lookup(ids: np.ndarray, res: MeteorResources):
    """Phrases of one segment in the table: [(start, len, ref row)], [(start, len, par id)],
    by start then length."""
    starts, lengths, h = phrase_occurrences(ids, np.full(len(ids), len(ids)))
    order = np.lexsort((lengths, starts))
    starts, lengths, h = starts[order], lengths[order], h[order]
    table = res.paraphrase
    ref_row, par_id = phrases_in_table(table, h)
    refs = [(int(s), int(n), int(r)) for s, n, r in zip(starts, lengths, ref_row) if r >= 0]
    pars = [(int(s), int(n), int(p)) for s, n, p in zip(starts, lengths, par_id) if p >= 0]
    return refs, pars


def paraphrase_matches(src: Segment, dst: Segment, res: MeteorResources):
    """``ParaphraseMatcher``'s inner loops: (src_start, src_len, dst_start, dst_len) of each
    paraphrase of a phrase of ``src`` that occurs in ``dst``, in the jar's order."""
    table = res.paraphrase
    for start, length, row in src.ref_phrases:
        for e in range(table.ref_ptr[row], table.ref_ptr[row + 1]):
            for d, m in dst.par_at.get(int(table.entry_par[e]), ()):
                yield start, length, d, m
