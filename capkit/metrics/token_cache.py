"""PTB tokens of a reference stream, kept on disk between runs.

Scoring one model after another (or each checkpoint of one) against the same references lexes
and encodes the same captions every time: for the 25,010 references of the COCO Karpathy test
split that is ~0.15 s of a ~0.6 s `capkit score` of BLEU-4 + ROUGE-L + CIDEr-D (docs/speed.md).
``inputs.prepare`` therefore keeps, for every reference stream of at least ``MIN_CAPTIONS``
(1,000)
captions, its PTB tokens and their ids in capkit's cache folder (``$CAPKIT_CACHE_DIR/tokens``,
else ``~/.cache/capkit/tokens``), and the next run with the same stream reads them back and
looks up only the candidates' words (``ngrams.join_encoded``). Tokens and ids are exactly what
tokenising and encoding give (the ids as ``ngrams.encode_flat`` numbers them), so scores and
signatures are the same with or without the cache.

The files' name, format and bounds are ``capkit.text.ptb_cache``'s (which needs no numpy, so
that ``capkit score`` can tokenise a first run's references in a child process while it starts:
``capkit.commands.tokenize_ahead``); this module reads them into arrays.

* **Key**: BLAKE2b of the stream (every caption, in order, and each one's length: two streams
  that join to the same text still differ), of the tokenizer's source files as this process
  imported them (``ptb.SOURCE_DIGEST``: ``ptb.py``, ``ptb_fast.py``, ``ptb_lexer.py``,
  ``ptb_rules.py``), of Python's Unicode tables and version and of the file format: another
  stream, another order (the PTB tokenizer reads the stream as one text), an edited tokenizer or
  another Python gives another file, and a kernel that imported the tokenizer before its files
  were edited keys its tokens by the code it runs.
* **File**: ``tokens/ptb-<32 hex>.txt``, in the format ``ptb_cache`` describes (the tokens, then
  the vocabulary and int32 ids unless they are not single-spaced). A file whose header, count,
  digest or ids are wrong is reported with one ``CacheWarning`` and replaced. Writes are atomic
  (``cache_files.write_atomic``) and take no lock: a file's bytes depend on its stream only
  (``prepare`` encodes the references alone, whatever the candidates), so every writer writes
  the same bytes (``CachedStream.save``, and ``capkit score``'s tokenising child through
  ``ptb_cache.encode``), and a reader sees one whole file. A folder that cannot be written costs
  one warning; the tokens are then made in memory.
* **Bounded**: a read marks its file as used (its modification time); once a new file is
  written, the least recently used ones beyond ``ptb_cache.MAX_FILES`` files or ``MAX_BYTES``
  in all are deleted, and so are temporary files that writers killed mid-write left over an
  hour ago.
* **Lists on request**: ``prepare`` gives the references as lists; the ``Scorer`` asks for
  them lazily (``lazy_references``), for its built-in metrics, and hands a user's token metric
  lists (``CaptionBatch.with_lists``).
* **Off**: ``CAPKIT_TOKEN_CACHE=0`` in the environment, or ``prepare(..., token_cache=False)``.
  Candidates are never cached (each system's are new), nor streams tokenised block by block
  (``Scorer(chunk_size=...)``, over 50,000 candidates), nor the ``split`` tokenizer's.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from capkit.metrics.ngrams import Encoded
from capkit.text import ptb_cache


@dataclass
class CachedStream:
    """One reference stream's entry: where it is kept, and what was found there (``text``
    None: not yet, or a damaged file; ``encoding`` None also when the stream's tokens are not
    single-spaced, as ``ptb_cache.tokens_of`` needs)."""
    path: Path
    text: list[str] | None = None
    encoding: Encoded | None = None

    def save(self, text: list[str], encoding: Encoded | None) -> None:
        """Write the stream's tokens (and ids) atomically (``ptb_cache.save``: no lock, every
        writer writes the same bytes). Never raises: a folder that cannot be written costs one
        ``CacheWarning``."""
        words = None if encoding is None else (
            encoding.vocab, encoding.tokens.astype("<i4").tobytes(),
            encoding.lengths.astype("<i4").tobytes())
        ptb_cache.save(self.path, text, words)


def lookup(captions: list[str]) -> CachedStream | None:
    """The entry of the stream ``captions`` (None: shorter than ``ptb_cache.MIN_CAPTIONS``,
    cache off, or the tokenizer's sources unreadable), with its tokens when a run saved them
    before. A damaged file is reported (one ``CacheWarning``) and read as missing: ``save``
    replaces it. A process that may be writing the file (``ptb_cache.expect_writer``) is
    waited for first."""
    path = ptb_cache.path_of(captions)
    ptb_cache.wait_for_writer()      # (capkit score's child may be writing this very file)
    if path is None:
        return None
    entry = CachedStream(path)
    try:
        entry.text, entry.encoding = read(entry.path, len(captions))
    except FileNotFoundError:
        return entry
    except (OSError, ValueError, OverflowError, MemoryError) as err:
        from capkit.cache_files import unreadable_message, warn
        warn(unreadable_message(entry.path, err, "tokenising the references again, and "
                                "replacing it"))
        return entry
    ptb_cache.mark_used(entry.path)
    return entry


def read(path: Path, count: int) -> tuple[list[str], Encoded | None]:
    """The ``count`` tokenised captions in ``path`` and their encoding (if saved); ValueError if
    it is not a whole cache file of this format holding that many (FileNotFoundError: none)."""
    with open(path, "rb") as f:
        data = f.read()
    text, vocab, body, start, n_tokens = ptb_cache.parse(data, count)
    if vocab is None:
        return text, None
    ids = np.frombuffer(body, "<i4", n_tokens, start).astype(np.int64)
    lengths = np.frombuffer(body, "<i4", count, start + 4 * n_tokens)
    if int(lengths.sum()) != n_tokens or \
            (n_tokens and not 0 <= ids.min() <= ids.max() < len(vocab)):
        raise ValueError("its token ids do not match its vocabulary")
    lengths = lengths.astype(np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    return text, Encoded(ids, lengths, starts, vocab)
