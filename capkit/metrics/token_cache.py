"""PTB tokens of a reference stream, kept on disk between runs.

Scoring one model after another (or each checkpoint of one) against the same references lexes
and encodes the same captions every time: for the 25,010 references of the COCO Karpathy test
split that is ~0.15 s of a ~0.6 s `capkit score` of BLEU-4 + ROUGE-L + CIDEr-D (docs/speed.md).
``inputs.prepare`` therefore keeps, for every reference stream of at least ``MIN_CAPTIONS``
captions, its PTB tokens and their ids in capkit's cache folder (``$CAPKIT_CACHE_DIR/tokens``,
else ``~/.cache/capkit/tokens``), and the next run with the same stream reads them back and
looks up only the candidates' words (``ngrams.join_encoded``). Tokens and ids are exactly what
tokenising and encoding give (the ids as ``ngrams.encode_flat`` numbers them), so scores and
signatures are the same with or without the cache.

* **Key**: BLAKE2b of the stream (every caption, in order, and each one's length: two streams
  that join to the same text still differ), of the tokenizer's source files as this process
  imported them (``ptb.SOURCE_DIGEST``: ``ptb.py``, ``ptb_lexer.py``, ``ptb_rules.py``), of
  Python's Unicode tables and version and of the file format: another stream, another order
  (the PTB tokenizer reads the stream as one text), an edited tokenizer or another Python gives
  another file, and a kernel that imported the tokenizer before its files were edited keys its
  tokens by the code it runs.
* **File**: ``tokens/ptb-<32 hex>.txt``: a header line ``capkit-ptb-tokens <FORMAT> <captions>
  <text bytes> <words> <tokens> <BLAKE2b of these fields and the rest>``, the tokenised
  captions one a line (UTF-8; tokens never hold a line break), then, unless ``<words>`` is -1
  (tokens that are not single-spaced), the vocabulary one word a line and the ids and lengths
  as little-endian int32. A file whose header, count, digest or ids are wrong is reported with
  one ``CacheWarning`` and replaced. Writes are atomic (``cache_files.write_atomic``) and take
  no lock: a file's bytes depend on its stream only (``prepare`` encodes the references alone,
  whatever the candidates), so every writer writes the same bytes (``CachedStream.save``),
  and a reader sees one whole file. A folder that cannot be written costs one warning; the
  tokens are then made in memory.
* **Bounded**: a read marks its file as used (its modification time); once a new file is
  written, the least recently used ones beyond ``MAX_FILES`` files or ``MAX_BYTES`` in all are
  deleted, and so are temporary files that writers killed mid-write left over an hour ago.
* **Lists on request**: ``prepare`` gives the references as lists; the ``Scorer`` asks for
  them lazily (``lazy_references``), for its built-in metrics, and hands a user's token metric
  lists (``CaptionBatch.with_lists``).
* **Off**: ``CAPKIT_TOKEN_CACHE=0`` in the environment, or ``prepare(..., token_cache=False)``.
  Candidates are never cached (each system's are new), nor streams tokenised block by block
  (``Scorer(chunk_size=...)``, over 50,000 candidates), nor the ``split`` tokenizer's.
"""
from __future__ import annotations

import hashlib
import os
import sys
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from capkit.metrics.ngrams import Encoded

FORMAT = 2
MIN_CAPTIONS = 1_000          # below this, tokenising costs about what a file read does
MAX_FILES = 64
MAX_BYTES = 512 * 2**20
ENV = "CAPKIT_TOKEN_CACHE"    # "0", "off", "false" or "no": never read or write the cache
_MAGIC = b"capkit-ptb-tokens"


@dataclass
class CachedStream:
    """One reference stream's entry: where it is kept, and what was found there (``text``
    None: not yet, or a damaged file; ``encoding`` None also when the stream's tokens are not
    single-spaced, as ``inputs._tokens_of`` needs)."""
    path: Path
    text: list[str] | None = None
    encoding: Encoded | None = None

    def save(self, text: list[str], encoding: Encoded | None) -> None:
        """Write the stream's tokens (and ids) atomically. Never raises: a folder that cannot
        be written costs one ``CacheWarning``.

        No lock: every process that writes this file writes the same bytes (the key names
        them), so two that miss at once each tokenise (~0.1 s; waiting for the other would
        cost as much) and the last rename wins; importing the lock library alone would add
        ~0.03 s to every first run."""
        from capkit.cache_files import unwritable_message, warn, write_atomic
        try:
            write_atomic(self.path, lambda f: write(f, text, encoding))
        except ValueError:             # a token with a line break: nothing to save
            return
        except OSError as err:
            warn(unwritable_message(self.path.parent, err, "tokenised references"))
            return
        prune(self.path)


def enabled() -> bool:
    """False when ``$CAPKIT_TOKEN_CACHE`` is 0, off, false or no."""
    return os.environ.get(ENV, "").strip().lower() not in {"0", "off", "false", "no"}


def lookup(captions: list[str]) -> CachedStream | None:
    """The entry of the stream ``captions`` (None: shorter than ``MIN_CAPTIONS``, cache off,
    or the tokenizer's sources unreadable), with its tokens when a run saved them before. A
    damaged file is reported (one ``CacheWarning``) and read as missing: ``save`` replaces it."""
    key = stream_key(captions) if len(captions) >= MIN_CAPTIONS and enabled() else None
    if key is None:
        return None
    entry = CachedStream(folder() / f"ptb-{key}.txt")
    try:
        entry.text, entry.encoding = read(entry.path, len(captions))
    except FileNotFoundError:
        return entry
    except (OSError, ValueError, OverflowError, MemoryError) as err:
        from capkit.cache_files import unreadable_message, warn
        warn(unreadable_message(entry.path, err, "tokenising the references again, and "
                                "replacing it"))
        return entry
    _mark_used(entry.path)
    return entry


def folder() -> Path:
    from capkit.cache_files import cache_dir
    return cache_dir() / "tokens"


def tokenizer_key() -> bytes | None:
    """What the tokens depend on besides the captions: the tokenizer's sources as this process
    imported them (``ptb.SOURCE_DIGEST``), Python's Unicode tables and version, the file format.
    None (no caching) if a source could not be read."""
    from capkit.text import ptb
    if ptb.SOURCE_DIGEST is None:
        return None
    return b"|".join([str(FORMAT).encode(), unicodedata.unidata_version.encode(),
                      str(sys.version_info[:2]).encode(), ptb.SOURCE_DIGEST])


def stream_key(captions: list[str]) -> str | None:
    """32 hex digits naming the stream's tokens (None: the tokenizer's sources are unreadable)."""
    source = tokenizer_key()
    if source is None:
        return None
    digest = hashlib.blake2b(source, digest_size=16)
    digest.update(np.fromiter(map(len, captions), dtype=np.int64, count=len(captions)).tobytes())
    digest.update("\n".join(captions).encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def read(path: Path, count: int) -> tuple[list[str], Encoded | None]:
    """The ``count`` tokenised captions in ``path`` and their encoding (if saved); ValueError if
    it is not a whole cache file of this format holding that many (FileNotFoundError: none)."""
    with open(path, "rb") as f:
        data = f.read()
    header, _, body = data.partition(b"\n")
    parts = header.split(b" ")
    if len(parts) != 7 or parts[0] != _MAGIC or parts[1] != str(FORMAT).encode():
        raise ValueError("not a tokens file of this format")
    if parts[2] != str(count).encode():
        raise ValueError(f"it holds {parts[2].decode(errors='replace')} captions, not {count}")
    if _digest(header.rpartition(b" ")[0], body) != parts[6]:
        raise ValueError("its header or content does not match its digest")
    text_size, n_vocab, n_tokens = map(int, parts[3:6])
    text = body[:text_size].decode("utf-8").split("\n")
    if len(text) != count:
        raise ValueError(f"it holds {len(text)} lines, not {count}")
    if n_vocab < 0:
        return text, None
    vocab_size = len(body) - text_size - 4 * (n_tokens + count)
    vocab = body[text_size:text_size + vocab_size].decode("utf-8").split("\n") if n_vocab else []
    ids = np.frombuffer(body, "<i4", n_tokens, text_size + vocab_size).astype(np.int64)
    lengths = np.frombuffer(body, "<i4", count, text_size + vocab_size + 4 * n_tokens)
    if len(vocab) != n_vocab or int(lengths.sum()) != n_tokens or \
            (n_tokens and not 0 <= ids.min() <= ids.max() < n_vocab):
        raise ValueError("its token ids do not match its vocabulary")
    lengths = lengths.astype(np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    return text, Encoded(ids, lengths, starts, vocab)


def write(file, text: list[str], encoding: Encoded | None) -> None:
    """Save ``text`` (and ``encoding``) in the format ``read`` reads: a header line, then the
    captions' tokens one caption a line, the vocabulary one word a line, the ids and lengths as
    little-endian int32. ValueError if a caption's tokens hold a line break."""
    body = "\n".join(text).encode("utf-8")
    if body.count(b"\n") != len(text) - 1:
        raise ValueError("a tokenised caption holds a line break")
    parts = [body]
    n_vocab, n_tokens = -1, 0
    if encoding is not None:
        n_vocab, n_tokens = len(encoding.vocab), len(encoding.tokens)
        parts += ["\n".join(encoding.vocab).encode("utf-8"),
                  encoding.tokens.astype("<i4").tobytes(), encoding.lengths.astype("<i4").tobytes()]
    data = b"".join(parts)
    fields = b"%s %d %d %d %d %d" % (_MAGIC, FORMAT, len(text), len(body), n_vocab, n_tokens)
    file.write(b"%s %s\n" % (fields, _digest(fields, data)))
    file.write(data)


def _digest(fields: bytes, body: bytes) -> bytes:
    """32 hex digits of BLAKE2b over a file's header fields and body: a changed count or size
    in the header is caught as surely as a changed byte in the body."""
    digest = hashlib.blake2b(fields, digest_size=16)
    digest.update(b"\n")
    digest.update(body)
    return digest.hexdigest().encode()


def _mark_used(path: Path) -> None:
    try:
        os.utime(path)
    except OSError:                    # a read-only shared cache: it is read, not pruned
        pass


def prune(written: Path, max_files: int = MAX_FILES, max_bytes: int = MAX_BYTES) -> list[Path]:
    """Delete the least recently used tokens files beside ``written`` beyond ``max_files`` files
    or ``max_bytes`` bytes in all, never ``written``, and the temporary files of writers killed
    mid-write over an hour ago. Returns the files deleted. Never raises (a cache only saves
    time). A process reading a file as it goes reads on (POSIX), and one that looks for it
    next tokenises again and writes it back."""
    import time
    files, deleted = [], []
    try:
        names = list(written.parent.iterdir())
    except OSError:
        return []
    for p in names:
        try:
            stat = p.stat()
        except OSError:                # deleted meanwhile by another process's prune
            continue
        if p.name.startswith(".ptb-") and ".txt.tmp-" in p.name:
            if stat.st_mtime < time.time() - 3600:
                deleted += _unlink(p)
        elif p.name.startswith("ptb-") and p.name.endswith(".txt"):
            files.append((stat.st_mtime, stat.st_size, p))
    files.sort(reverse=True)           # most recently used first
    kept_files, kept_bytes = 0, 0
    for _, size, p in files:
        if p == written or (kept_files < max_files and kept_bytes + size <= max_bytes):
            kept_files, kept_bytes = kept_files + 1, kept_bytes + size
        else:
            deleted += _unlink(p)
    return deleted


def _unlink(path: Path) -> list[Path]:
    try:
        path.unlink()
    except OSError:
        return []
    return [path]
