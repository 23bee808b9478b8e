"""A reference stream's PTB tokens on disk: the file's name, its format, the folder's bounds.

``capkit.metrics.token_cache`` documents the cache and turns its files into the arrays that
``inputs.prepare`` scores from; this module holds what needs no numpy, so that ``capkit
score``'s tokenising child (``capkit.commands.tokenize_ahead``) can write a stream's file while
its parent is still importing numpy. Both write a file through ``save``, with the same bytes.

* **Name**: ``tokens/ptb-<32 hex>.txt`` in capkit's cache folder, the hex digits a BLAKE2b of
  the stream (every caption, in order, and each one's length: two streams that join to the
  same text still differ), of the tokenizer's source files as this process imported them
  (``ptb.SOURCE_DIGEST``), of Python's Unicode tables and version and of the file format.
* **File**: a header line ``capkit-ptb-tokens <FORMAT> <captions> <text bytes> <words>
  <tokens> <BLAKE2b of these fields and the rest>``, the tokenised captions one a line (UTF-8;
  tokens never hold a line break), then, unless ``<words>`` is -1 (tokens that are not
  single-spaced), the vocabulary one word a line and the ids and lengths as little-endian int32.
* **Bounded**: after a write, the least recently used files beyond ``MAX_FILES`` files or
  ``MAX_BYTES`` in all are deleted (``prune``).
"""
from __future__ import annotations

import collections
import itertools
import os
import re
import sys
from array import array
from collections.abc import Callable
from pathlib import Path

FORMAT = 2
MIN_CAPTIONS = 1_000          # below this, tokenising costs about what a file read does
MAX_FILES = 64
MAX_BYTES = 512 * 2**20
ENV = "CAPKIT_TOKEN_CACHE"    # "0", "off", "false" or "no": never read or write the cache
MAGIC = b"capkit-ptb-tokens"

# The wait for a process that may be writing the tokens file this one is about to read
# (``capkit score``'s child, ``commands.tokenize_ahead``); ``wait_for_writer`` calls it once.
_writer_wait: Callable[[], object] | None = None


def enabled(environ=os.environ) -> bool:
    """False when ``$CAPKIT_TOKEN_CACHE`` is 0, off, false or no."""
    return environ.get(ENV, "").strip().lower() not in {"0", "off", "false", "no"}


def folder() -> Path:
    from capkit.cache_files import cache_dir
    return cache_dir() / "tokens"


def path_of(captions: list[str]) -> Path | None:
    """Where the tokens of the stream ``captions`` are kept; None when they are not (a stream
    shorter than ``MIN_CAPTIONS``, the cache off, the tokenizer's sources unreadable)."""
    if len(captions) < MIN_CAPTIONS or not enabled():
        return None
    key = stream_key(captions)
    return None if key is None else folder() / f"ptb-{key}.txt"


def expect_writer(wait: Callable[[], object] | None) -> None:
    """Say that another process may be writing the file of the stream this one will look up
    (``wait`` returns once it has ended), or, with None, that none is."""
    global _writer_wait
    _writer_wait = wait


def wait_for_writer() -> None:
    """Wait for the process ``expect_writer`` named, once: ``token_cache.lookup`` calls it
    when it has the file's name, just before it looks for the file, so that everything a run
    does before (aligning, tokenising the candidates, hashing the stream) overlaps the
    writer's work."""
    global _writer_wait
    wait, _writer_wait = _writer_wait, None
    if wait is not None:
        wait()


def tokenizer_key() -> bytes | None:
    """What the tokens depend on besides the captions: the tokenizer's sources as this process
    imported them (``ptb.SOURCE_DIGEST``), Python's Unicode tables and version, the file format.
    None (no caching) if a source could not be read."""
    import unicodedata

    from capkit.text import ptb
    if ptb.SOURCE_DIGEST is None:
        return None
    return b"|".join([str(FORMAT).encode(), unicodedata.unidata_version.encode(),
                      str(sys.version_info[:2]).encode(), ptb.SOURCE_DIGEST])


def stream_key(captions: list[str]) -> str | None:
    """32 hex digits naming the stream's tokens (None: the tokenizer's sources are unreadable)."""
    import hashlib
    source = tokenizer_key()
    if source is None:
        return None
    digest = hashlib.blake2b(source, digest_size=16)
    digest.update(array("q", map(len, captions)).tobytes())     # each length, as int64
    digest.update("\n".join(captions).encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


_APART = re.compile(r"[^\S ]").search       # whitespace other than the plain space
_ASCII_SPACES_BUT_SPACE = "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f"   # the rest of str.isspace in ASCII


def splits_apart(texts: list[str]) -> bool:
    """Whether any text holds whitespace other than the plain space (one pass over them all):
    the PTB tokenizer keeps a no-break space inside "5 1/2" and phone numbers."""
    joined = "".join(texts)
    if joined.isascii():
        return any(c in joined for c in _ASCII_SPACES_BUT_SPACE)
    return _APART(joined) is not None


def tokens_of(texts: list[str]) -> tuple[list[str], array] | None:
    """All tokens of ``texts`` in one list and the number of each text's tokens (int32), when
    every text is its tokens joined by single spaces (as tokenisers return them); else None.

    One ``str.split`` of the joined texts makes each token string once, where splitting every
    text on its own, then flattening the lists, makes a list per text and walks every token
    twice. Assumes no whitespace but the space within a text (``splits_apart`` is False).
    A text has at most its spaces + 1 tokens, exactly as many when no space leads, trails or
    follows another: so the totals agree only if every text is single-spaced."""
    lengths = array("i", [t.count(" ") + 1 if t else 0 for t in texts])
    flat = "\n".join(texts).split()
    return (flat, lengths) if len(flat) == sum(lengths) else None


def number_words(flat: list[str]) -> tuple[list[str], array]:
    """The distinct words of ``flat`` in order of first appearance, and each token's index
    among them (int32): capkit's one numbering of tokens (``ngrams.encode_flat`` and a tokens
    file use it). One pass: the dictionary gives a new word the next number as it first meets
    it (~0.02 s for the 261,000 tokens of a COCO split, where numbering the distinct words
    first and then looking every token up took ~0.033 s)."""
    ids_of = collections.defaultdict(itertools.count().__next__)
    ids = array("i", map(ids_of.__getitem__, flat))
    return list(ids_of), ids


def encode(text: list[str]) -> tuple[list[str], bytes, bytes] | None:
    """The vocabulary (words by first appearance), token ids and tokens per caption of the
    tokenised captions ``text``, the ids and counts as little-endian int32 bytes: what a file
    holds (``number_words``, as ``ngrams.encode_flat`` numbers them). None when a caption's tokens
    are not single-spaced or hold other whitespace: then the file holds the text alone."""
    found = None if splits_apart(text) else tokens_of(text)
    if found is None:
        return None
    flat, lengths = found
    words, ids = number_words(flat)
    if sys.byteorder == "big":
        ids.byteswap()
        lengths.byteswap()
    return words, ids.tobytes(), lengths.tobytes()


def write(file, text: list[str], words: tuple[list[str], bytes, bytes] | None) -> None:
    """Write ``text`` (and ``words``: vocabulary, ids, lengths as ``encode`` gives them) in the
    format of the module docstring. ValueError if a caption's tokens hold a line break."""
    body = "\n".join(text).encode("utf-8")
    if body.count(b"\n") != len(text) - 1:
        raise ValueError("a tokenised caption holds a line break")
    parts = [body]
    n_vocab, n_tokens = -1, 0
    if words is not None:
        vocab, ids, lengths = words
        n_vocab, n_tokens = len(vocab), len(ids) // 4
        parts += ["\n".join(vocab).encode("utf-8"), ids, lengths]
    data = b"".join(parts)
    fields = b"%s %d %d %d %d %d" % (MAGIC, FORMAT, len(text), len(body), n_vocab, n_tokens)
    file.write(b"%s %s\n" % (fields, digest(fields, data)))
    file.write(data)


def parse(data: bytes, count: int) -> tuple[list[str], list[str] | None, bytes, int, int]:
    """The ``count`` tokenised captions of a file's bytes, its vocabulary (None: not saved),
    and where its ids start and how many there are (``data[start:]`` holds the ids, then the
    lengths). ValueError if it is not a whole file of this format holding that many."""
    header, _, body = data.partition(b"\n")
    parts = header.split(b" ")
    if len(parts) != 7 or parts[0] != MAGIC or parts[1] != str(FORMAT).encode():
        raise ValueError("not a tokens file of this format")
    if parts[2] != str(count).encode():
        raise ValueError(f"it holds {parts[2].decode(errors='replace')} captions, not {count}")
    if digest(header.rpartition(b" ")[0], body) != parts[6]:
        raise ValueError("its header or content does not match its digest")
    text_size, n_vocab, n_tokens = map(int, parts[3:6])
    text = body[:text_size].decode("utf-8").split("\n")
    if len(text) != count:
        raise ValueError(f"it holds {len(text)} lines, not {count}")
    if n_vocab < 0:
        return text, None, body, 0, 0
    vocab_size = len(body) - text_size - 4 * (n_tokens + count)
    vocab = body[text_size:text_size + vocab_size].decode("utf-8").split("\n") if n_vocab else []
    if len(vocab) != n_vocab:
        raise ValueError("its token ids do not match its vocabulary")
    return text, vocab, body, text_size + vocab_size, n_tokens


def digest(fields: bytes, body: bytes) -> bytes:
    """32 hex digits of BLAKE2b over a file's header fields and body: a changed count or size
    in the header is caught as surely as a changed byte in the body."""
    import hashlib
    hashed = hashlib.blake2b(fields, digest_size=16)
    hashed.update(b"\n")
    hashed.update(body)
    return hashed.hexdigest().encode()


def save(path: Path, text: list[str], words: tuple[list[str], bytes, bytes] | None) -> None:
    """Write the stream's file atomically, then prune the folder. Never raises: a folder that
    cannot be written costs one ``CacheWarning``.

    No lock: every process that writes this file writes the same bytes (the key names
    them), so two that miss at once each tokenise (~0.1 s; waiting for the other would
    cost as much) and the last rename wins; importing the lock library alone would add
    ~0.03 s to every first run."""
    from capkit.cache_files import unwritable_message, warn, write_atomic
    try:
        write_atomic(path, lambda f: write(f, text, words))
    except ValueError:             # a token with a line break: nothing to save
        return
    except OSError as err:
        warn(unwritable_message(path.parent, err, "tokenised references"))
        return
    prune(path)


def mark_used(path: Path) -> None:
    try:
        os.utime(path)
    except OSError:                # a read-only shared cache: it is read, not pruned
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
