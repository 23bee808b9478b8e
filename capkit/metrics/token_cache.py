"""PTB tokens of a reference stream, kept on disk between runs.

Scoring one model after another (or each checkpoint of one) against the same references lexes
the same captions every time: the 25,010 references of the COCO Karpathy test split take ~0.1 s,
a fifth of a whole `capkit score` of BLEU-4 + ROUGE-L + CIDEr-D (docs/speed.md). ``prepare``
therefore keeps the PTB tokens of every reference stream of at least ``MIN_CAPTIONS`` captions
in capkit's cache folder (``$CAPKIT_CACHE_DIR/tokens``, else ``~/.cache/capkit/tokens``) and the
next run with the same stream reads them back (~0.01 s). The tokens are the tokenizer's own
output, so scores and signatures are the same with or without the cache.

* **Key**: BLAKE2b of the stream (every caption, in order, and each one's length: two streams
  that join to the same text still differ), of the tokenizer's source files (``capkit/text/``
  ``ptb.py``, ``ptb_lexer.py``, ``ptb_rules.py``), of Python's Unicode tables and of the file
  format: another stream, another order (the PTB tokenizer reads the stream as one text), an
  edited tokenizer or another Python gives another file.
* **File**: ``tokens/ptb-<32 hex>.txt``, UTF-8: a header line ``capkit-ptb-tokens <FORMAT>
  <captions> <BLAKE2b of the rest>``, then one tokenised caption per line (tokens never hold a
  line break). A file whose header, count or digest is wrong is rebuilt with one
  ``CacheWarning``; writes are atomic and guarded by a lock, and a cache folder that cannot be
  written means tokenising in memory, with one warning (``capkit.cache_files``).
* **Bounded**: a read marks its file as used (its modification time); once a new file is
  written, the least recently used ones beyond ``MAX_FILES`` files or ``MAX_BYTES`` in all are
  deleted (but one another process is writing).
* **Off**: ``CAPKIT_TOKEN_CACHE=0`` in the environment, or ``prepare(..., token_cache=False)``.
  The candidates are never cached (each system's are new), nor streams tokenised block by block
  (``Scorer(chunk_size=...)``), nor the ``split`` tokenizer (nothing to save).
"""
from __future__ import annotations

import functools
import hashlib
import os
import sys
import unicodedata
from pathlib import Path

FORMAT = 1
MIN_CAPTIONS = 1_000          # below this, tokenising costs about what a file read does
MAX_FILES = 64
MAX_BYTES = 512 * 2**20
ENV = "CAPKIT_TOKEN_CACHE"    # "0", "off", "false" or "no": never read or write the cache
_MAGIC = b"capkit-ptb-tokens"
_SOURCES = ("ptb.py", "ptb_lexer.py", "ptb_rules.py")


def enabled() -> bool:
    """False when ``$CAPKIT_TOKEN_CACHE`` is 0, off, false or no."""
    return os.environ.get(ENV, "").strip().lower() not in {"0", "off", "false", "no"}


def ptb_tokens(captions: list[str]) -> list[str]:
    """``ptb_tokenize(captions)`` (one stream), read from the cache when this stream was
    tokenised before; saved there otherwise. Streams shorter than ``MIN_CAPTIONS`` are
    tokenised directly, as is every stream when the cache is off or its key unknown."""
    key = stream_key(captions) if len(captions) >= MIN_CAPTIONS and enabled() else None
    if key is None:
        return _tokenize(captions)
    path = folder() / f"ptb-{key}.txt"
    try:                               # the common case, without the lock machinery's imports
        tokens = read(path, len(captions))
    except (OSError, ValueError):      # missing or damaged: read_or_rebuild sees it again
        pass
    else:
        _mark_used(path)
        return tokens
    from capkit.cache_files import read_or_rebuild
    return read_or_rebuild(path, lambda p: read(p, len(captions)), lambda: _tokenize(captions),
                           write, what="tokenised references", on_written=prune)


def _tokenize(captions: list[str]) -> list[str]:
    from capkit.text import ptb_tokenize
    return ptb_tokenize(captions)


def folder() -> Path:
    from capkit.cache_files import cache_dir
    return cache_dir() / "tokens"


@functools.lru_cache(maxsize=1)
def tokenizer_key() -> bytes | None:
    """What the tokens depend on besides the captions: the tokenizer's sources, Python's
    Unicode tables and version, the file format. None (no caching) if a source is unreadable."""
    import capkit.text
    digest = hashlib.blake2b(f"{FORMAT}|{unicodedata.unidata_version}|"
                             f"{sys.version_info[:2]}".encode(), digest_size=16)
    try:
        for name in _SOURCES:
            digest.update(Path(capkit.text.__file__).with_name(name).read_bytes())
    except OSError:
        return None
    return digest.digest()


def stream_key(captions: list[str]) -> str | None:
    """32 hex digits naming the stream's tokens (None: the tokenizer's sources are unreadable)."""
    import numpy as np
    source = tokenizer_key()
    if source is None:
        return None
    digest = hashlib.blake2b(source, digest_size=16)
    digest.update(np.fromiter(map(len, captions), dtype=np.int64, count=len(captions)).tobytes())
    digest.update("\n".join(captions).encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def read(path: Path, count: int) -> list[str]:
    """The ``count`` tokenised captions in ``path``; ValueError if it is not a whole cache file
    of this format holding that many (FileNotFoundError if there is none)."""
    with open(path, "rb") as f:
        data = f.read()
    header, _, body = data.partition(b"\n")
    parts = header.split(b" ")
    if len(parts) != 4 or parts[0] != _MAGIC or parts[1] != str(FORMAT).encode():
        raise ValueError("not a tokens file of this format")
    if parts[2] != str(count).encode():
        raise ValueError(f"it holds {parts[2].decode(errors='replace')} captions, not {count}")
    if hashlib.blake2b(body, digest_size=16).hexdigest().encode() != parts[3]:
        raise ValueError("its content does not match its digest")
    tokens = body.decode("utf-8").split("\n")
    if len(tokens) != count:
        raise ValueError(f"it holds {len(tokens)} lines, not {count}")
    return tokens


def write(file, tokens: list[str]) -> None:
    """Save ``tokens`` in the format ``read`` reads; ValueError if one holds a line break."""
    body = "\n".join(tokens).encode("utf-8")
    if body.count(b"\n") != len(tokens) - 1:
        raise ValueError("a tokenised caption holds a line break")
    digest = hashlib.blake2b(body, digest_size=16).hexdigest()
    file.write(b"%s %d %d %s\n" % (_MAGIC, FORMAT, len(tokens), digest.encode()))
    file.write(body)


def _mark_used(path: Path) -> None:
    try:
        os.utime(path)
    except OSError:                    # a read-only shared cache: it is read, not pruned
        pass


def prune(written: Path, max_files: int = MAX_FILES, max_bytes: int = MAX_BYTES) -> list[Path]:
    """Delete the least recently used tokens files beside ``written`` beyond ``max_files`` files
    or ``max_bytes`` bytes in all; never ``written`` nor a file another process is writing.
    Returns the files deleted. Never raises (a cache only saves time)."""
    from capkit.cache_files import remove_unused
    try:
        files = []
        for p in written.parent.glob("ptb-*.txt"):
            stat = p.stat()
            files.append((stat.st_mtime, stat.st_size, p))
    except OSError:
        return []
    files.sort(reverse=True)           # most recently used first
    kept_files, kept_bytes, deleted = 0, 0, []
    for _, size, p in files:
        if p == written or (kept_files < max_files and kept_bytes + size <= max_bytes):
            kept_files, kept_bytes = kept_files + 1, kept_bytes + size
            continue
        try:
            if remove_unused(p):
                deleted.append(p)
        except OSError:
            pass
    return deleted
