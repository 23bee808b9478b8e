"""CIDEr-D document frequencies from a training corpus: a safe file format and its conversions.

Self-critical training (Rennie et al. 2017) rewards CIDEr-D with n-gram document frequencies
of the *training* references, not of the batch being scored. ``CiderD(df=...)`` takes them as

* a ``capkit.metrics.DocumentFrequencies`` (e.g. ``document_frequencies(train_refs,
  tokenizer="split")`` on tokenised training captions);
* a path to a file written by ``save_document_frequencies`` (this module's JSON format);
* self-critical.pytorch's dict ``{"document_frequency": {ngram tuple: df}, "ref_len": D}``,
  already in memory; ``ref_len`` is the number of documents, as its ``prepro_ngrams.py`` writes
  it (its scorer takes the log).

capkit never reads pickles: a ``coco-train-idxs.p`` file is a pickle, and unpickling runs
whatever code the file names. Build the same statistics from the training captions instead,
once, and keep them as JSON::

    df = capkit.metrics.document_frequencies(train_refs, tokenizer="split", name="coco-train")
    save_document_frequencies(df, "coco-train-df.json.gz")

(``train_refs``: ``{image: [tokenised caption, ...]}`` of the training split, tokenised as the
captions you will score), or pass self-critical's in-memory dict where its ``prepro_ngrams.py``
builds it.

File format (UTF-8 JSON, gzip-compressed when the name ends in ``.gz``)::

    {"format": "capkit-cider-df", "version": 1, "name": "coco-train",
     "n_documents": 113287,
     "ngrams": [[["a"], 112019], [["a", "man"], 24000], ...]}

``n_documents`` is D, the number of documents (one document = the reference set of one image);
each ``ngrams`` entry is ``[tokens of the n-gram, number of documents that contain it]``; an
n-gram not listed has df 0. Tokens are those of the captions that will be scored (words of
PTB-tokenised text, or self-critical's vocabulary indices as strings).
"""
from __future__ import annotations

import gzip
import json
import math
import os
from collections.abc import Mapping
from pathlib import Path

from capkit.metrics import DocumentFrequencies

FORMAT, VERSION = "capkit-cider-df", 1
PICKLE_SUFFIXES = (".p", ".pkl", ".pickle")
REBUILD = ("build them from the training captions instead, once: df = capkit.metrics."
           "document_frequencies(train_refs, tokenizer='split', name='coco-train'); "
           "save_document_frequencies(df, 'coco-train-df.json.gz')")


def save_document_frequencies(df: DocumentFrequencies | Mapping, path: str | os.PathLike) -> Path:
    """Write document frequencies (or self-critical's dict) to ``path`` in the format above."""
    df = as_document_frequencies(df)
    data = {"format": FORMAT, "version": VERSION, "name": df.name,
            "n_documents": _number(df.n_documents),
            "ngrams": [[list(g), _number(c)] for g, c in df.counts.items()]}
    path = Path(path)
    with _open(path, "w") as f:
        json.dump(data, f, ensure_ascii=False, separators=(",", ":"))
    return path


def load_document_frequencies(path: str | os.PathLike) -> DocumentFrequencies:
    """Read a file written by ``save_document_frequencies``."""
    path = Path(path)
    if path.suffix in PICKLE_SUFFIXES:
        raise ValueError(
            f"{path} looks like a pickle; capkit does not unpickle files (unpickling can run "
            "arbitrary code): " + REBUILD)
    if not path.is_file():
        raise FileNotFoundError(
            f"no document-frequency file at {path}; write one with save_document_frequencies, "
            "or pass df='corpus' to take them from the scored references. (self-critical's "
            "df='coco-train-idxs' means its pickle data/coco-train-idxs.p, which capkit does "
            "not read: " + REBUILD + ")")
    try:
        with _open(path, "r") as f:
            data = json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"{path} is not a capkit document-frequency file ({err})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f"{path} is not a capkit document-frequency file (no "
                         f"'format': '{FORMAT}'); write one with save_document_frequencies")
    if data.get("version") != VERSION:
        raise ValueError(f"{path} has format version {data.get('version')!r}; this capkit "
                         f"reads version {VERSION}")
    grams = data.get("ngrams")
    if not isinstance(grams, list) or not all(
            isinstance(e, list) and len(e) == 2 and isinstance(e[0], list)
            and isinstance(e[1], (int, float)) and not isinstance(e[1], bool) for e in grams):
        raise ValueError(f"{path}: 'ngrams' must be a list of [[token, ...], count] pairs")
    counts = {tuple(g): float(c) for g, c in grams}
    return _checked(counts, data.get("n_documents"), str(data.get("name") or path.stem),
                    str(path))


def as_document_frequencies(df) -> DocumentFrequencies:
    """A ``DocumentFrequencies`` from any of the accepted forms except ``"corpus"``."""
    if isinstance(df, DocumentFrequencies):
        return df
    if isinstance(df, Mapping) and "document_frequency" in df:
        if "ref_len" not in df:
            raise ValueError("a self-critical document-frequency dict needs 'ref_len' (the "
                             "number of documents) besides 'document_frequency'")
        counts = {g: float(c) for g, c in df["document_frequency"].items()}
        return _checked(counts, df["ref_len"], str(df.get("name", "given")), "the dict")
    if isinstance(df, (str, os.PathLike)):
        return load_document_frequencies(df)
    raise TypeError("df must be 'corpus', a capkit DocumentFrequencies, a path to a file from "
                    "save_document_frequencies, or a dict {'document_frequency': ..., "
                    f"'ref_len': ...}}; got {type(df).__name__}")


def _checked(counts: dict, n_documents, name: str, where: str) -> DocumentFrequencies:
    if isinstance(n_documents, bool) or not isinstance(n_documents, (int, float)) \
            or not math.isfinite(n_documents) or n_documents < 1:
        raise ValueError(f"{where}: the number of documents must be a number >= 1, "
                         f"got {n_documents!r}")
    bad = next((g for g in counts if not isinstance(g, tuple) or not g
                or not all(isinstance(t, str) for t in g)), None)
    if bad is not None:
        raise ValueError(f"{where}: every n-gram must be a non-empty tuple of string tokens "
                         f"(as the captions are split), got {bad!r:.80}")
    top = max(counts.values(), default=0.0)
    if top > n_documents:
        raise ValueError(
            f"{where}: an n-gram occurs in {top:g} documents but there are only "
            f"{n_documents:g}; the number of documents (self-critical's 'ref_len') must be the "
            "count, not its log: pass the count of reference sets")
    return DocumentFrequencies(counts, int(n_documents) if float(n_documents).is_integer()
                               else n_documents, name)


def _number(x):
    return int(x) if float(x).is_integer() else float(x)


def _open(path: Path, mode: str):
    if path.suffix == ".gz":
        return gzip.open(path, mode + "t", encoding="utf-8")
    return open(path, mode, encoding="utf-8")
