"""The PTB lexer's compiled pattern, kept in capkit's cache folder between processes.

The full lexer (``ptb_lexer.build_lexer``) is one pattern of ~14,000 characters and 110
groups. ``re.compile`` parses and translates it in pure Python, ~0.03 s (~0.05 s while the
other core is busy), and a process pays it again the first time one caption needs the lexer:
on a COCO split a hundred of the 25,010 references do, so it is a tenth of what a first
``capkit score`` spends tokenising. Python keeps no compiled pattern between processes, so
this module keeps the one thing ``re`` computes from the text, the program that
``re._compiler`` generates for its C matcher, and builds the pattern object from it with
``_sre.compile`` as ``re.compile`` itself does (~1 ms).

Only programs ``re`` made are used, and only as ``re`` made them:

* a program is saved only after the pattern built from it compared equal to ``re.compile``'s
  (``Pattern.__eq__`` compares the pattern text, the flags and the whole program) with the same
  groups;
* its file is named by a hash of the pattern text, the flags, the Python build
  (``sys.version``) and the matcher's version (``_sre.MAGIC``, ``_sre.CODESIZE``), so another
  Python, another pattern or another ``re`` never reads it;
* the file carries a digest of its contents (written atomically, ``cache_files.write_atomic``);
  a damaged one is reported with one ``CacheWarning`` and rebuilt, and ``_sre.compile`` checks a
  program before it runs it anyway. Nothing is unpickled.

The folder (``patterns/`` in capkit's cache folder) keeps the ``MAX_FILES`` newest files.

Where ``re`` has no ``_compiler`` module (Python 3.10) or the token cache is off
(``CAPKIT_TOKEN_CACHE=0``, ``ptb_cache.enabled``), ``compile`` is ``re.compile``.
"""
from __future__ import annotations

import re
import sys
from array import array
from pathlib import Path

FORMAT = 1
MAGIC = b"capkit-sre"
MAX_FILES = 16     # (~60 KB each; a new lexer or another Python adds one)


def compile(pattern: str, flags: int = 0) -> re.Pattern:  # noqa: A001 (it is re.compile's)
    """``re.compile(pattern, flags)``, read from the cache folder when this Python compiled
    the same pattern before; compiled and saved there otherwise."""
    internals = _internals()
    path = path_of(pattern, flags) if internals is not None else None
    if path is None:
        return re.compile(pattern, flags)
    loaded = _load(path, pattern, internals[2])
    if loaded is not None:
        return loaded
    compiled = re.compile(pattern, flags)
    program = _program(pattern, flags, internals)
    if program is not None and _build(pattern, program, internals[2]) == compiled:
        _save(path, program)
    return compiled


def _internals():
    """``re``'s parser and code generator and ``_sre``, or None where this Python lacks them
    (or its code units are not 4-byte ``array('I')`` items)."""
    try:
        import _sre
        from re import _compiler, _parser
    except ImportError:
        return None
    if getattr(_sre, "CODESIZE", None) != array("I").itemsize or not hasattr(_compiler, "_code"):
        return None
    return _parser, _compiler, _sre


def path_of(pattern: str, flags: int = 0) -> Path | None:
    """Where the program of ``pattern`` is kept for this Python; None when the cache is off."""
    import hashlib

    from capkit.text import ptb_cache
    if not ptb_cache.enabled():
        return None
    import _sre
    digest = hashlib.blake2b(digest_size=16)
    for part in (FORMAT, sys.version, _sre.MAGIC, _sre.CODESIZE, flags):
        digest.update(b"%s|" % str(part).encode())
    digest.update(pattern.encode("utf-8", "surrogatepass"))
    from capkit.cache_files import cache_dir
    return cache_dir() / "patterns" / f"sre-{digest.hexdigest()}.bin"


def _program(pattern: str, flags: int, internals) -> tuple[int, int, dict, list[int]] | None:
    """(flags, number of groups, named groups, code) of ``pattern`` as ``re.compile`` makes
    them (its ``re._compiler.compile``, less the last step); None if ``re`` differs here."""
    parser, compiler, _sre = internals
    try:
        parsed = parser.parse(pattern, flags)
        code = compiler._code(parsed, flags)
        return flags | parsed.state.flags, parsed.state.groups, dict(parsed.state.groupdict), list(code)
    except Exception:          # (another re than the one this was written against)
        return None


def _build(pattern: str, program: tuple[int, int, dict, list[int]], _sre) -> re.Pattern | None:
    """The pattern object of a program, as ``re._compiler.compile`` ends: None if ``_sre``
    rejects it."""
    flags, groups, groupindex, code = program
    try:
        indexgroup = [None] * groups
        for name, index in groupindex.items():
            indexgroup[index] = name
        return _sre.compile(pattern, flags, code, groups - 1, groupindex, tuple(indexgroup))
    except Exception:          # RuntimeError("invalid SRE code"), a group out of range, ...
        return None


def _save(path: Path, program: tuple[int, int, dict, list[int]]) -> None:
    """Write the file (see ``encode``); a folder that cannot be written costs one warning."""
    from capkit.cache_files import unwritable_message, warn, write_atomic
    try:
        write_atomic(path, lambda f: f.write(encode(program)))
    except OSError as err:
        warn(unwritable_message(path.parent, err, "the tokenizer's compiled patterns"))
        return
    prune(path.parent)


def prune(folder: Path) -> list[Path]:
    """Delete all but the ``MAX_FILES`` most recently written program files of ``folder``
    (a file is written only when it is missing, so those are the ones of the newest lexers and
    Pythons), and return the files deleted. Never raises: a file another process deleted
    first is skipped."""
    found = []
    for p in folder.glob("sre-*.bin"):
        try:
            found.append((p.stat().st_mtime, p))
        except OSError:
            pass
    deleted = []
    for _, p in sorted(found, reverse=True)[MAX_FILES:]:
        try:
            p.unlink()
            deleted.append(p)
        except OSError:
            pass
    return deleted


def encode(program: tuple[int, int, dict, list[int]]) -> bytes:
    """A program as a file: a header line (magic, format, flags, groups, named groups as
    ``name=index`` pairs or ``-``, digest of the rest), then the code as 4-byte native integers."""
    flags, groups, groupindex, code = program
    names = ",".join(f"{name}={index}" for name, index in groupindex.items()) or "-"
    body = array("I", code).tobytes()
    fields = b"%s %d %d %d %s" % (MAGIC, FORMAT, flags, groups, names.encode())
    return b"%s %s\n%s" % (fields, _digest(fields, body), body)


def decode(data: bytes) -> tuple[int, int, dict, list[int]]:
    """The program of a file's bytes; ValueError if they are not a whole file of this format."""
    header, _, body = data.partition(b"\n")
    fields, _, digest = header.rpartition(b" ")
    parts = fields.split(b" ")
    if len(parts) != 5 or parts[0] != MAGIC or parts[1] != b"%d" % FORMAT:
        raise ValueError("not a compiled-pattern file of this format")
    if _digest(fields, body) != digest or len(body) % array("I").itemsize:
        raise ValueError("its contents do not match its digest (a damaged or partial file)")
    pairs = [] if parts[4] == b"-" else [pair.partition("=") for pair in parts[4].decode().split(",")]
    groupindex = {name: int(index) for name, _, index in pairs}
    code = array("I")
    code.frombytes(body)
    return int(parts[2]), int(parts[3]), groupindex, code.tolist()


def _digest(fields: bytes, body: bytes) -> bytes:
    import hashlib
    return hashlib.blake2b(fields + b"\n" + body, digest_size=16).hexdigest().encode()


def _load(path: Path, pattern: str, _sre) -> re.Pattern | None:
    """The cached pattern; None when there is none or it is damaged (one ``CacheWarning``)."""
    try:
        data = path.read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as err:
        return _damaged(path, err)
    try:
        built = _build(pattern, decode(data), _sre)
    except ValueError as err:
        return _damaged(path, err)
    return built if built is not None else _damaged(path, ValueError("the matcher rejected its code"))


def _damaged(path: Path, err: BaseException) -> None:
    from capkit.cache_files import unreadable_message, warn
    warn(unreadable_message(path, err, "compiling the pattern again"))
    return None              # (compile then writes it anew)
