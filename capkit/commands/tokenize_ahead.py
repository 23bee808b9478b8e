"""A first ``capkit score`` run tokenises its references in a child process while it starts.

A ``capkit score`` of one COCO system spends its first ~0.2 s starting Python, importing numpy
and reading the files, then, on a first run, ~0.2 s lexing and numbering the 25,010 references,
which a repeated run reads from the token cache instead (``capkit.metrics.token_cache``). The
two need not wait for each other: ``start`` forks a child as the process starts, before numpy
is imported; the child reads the two files, lexes the references' stream as ``inputs.align``
will order it (candidate ids in file order, each id's references in order) and saves its
tokens file through ``ptb_cache.save``, with the bytes the parent would have written; it never
prints, never reads standard input, and always ends with ``os._exit``. The parent's
``token_cache.lookup`` calls ``wait`` (through ``ptb_cache.expect_writer``) once it has
aligned the texts, tokenised the candidates and hashed the references' stream, just before
it looks for the file, and then finds it, as a repeated run does. On the 2-core machine of
docs/speed.md this takes 0.03-0.08 s off a first run.

Nothing rests on the child: a file it names by a stream the parent does not score (references
with lone surrogates, which ``align`` drops) is never looked up, one it fails to write (a
read-only cache folder, a crash, a kill) is simply not there and the parent tokenises the
references itself, and the file's name is the key of its whole stream, so whatever the child
does the parent reads a file of exactly the stream it scores, or none.

The child is started only for ``capkit score`` run as a process of its own (``cli.entry``), with
the PTB tokenizer, the token cache on, both files regular files (not ``-``, not a pipe, which
the parent must read itself) of 256 MiB or less together, at least two CPUs to run on, on
Linux (where it was tested; it forks before any thread is started), and not when
``CAPKIT_TOKENIZE_AHEAD`` is 0 (off, false, no). The parent stops it unwaited when
it will not need it (no metric that takes tokens; an input scored in chunks, which never uses
the cache) or when the run ends early (an error).
"""
from __future__ import annotations

import os
import sys

ENV = "CAPKIT_TOKENIZE_AHEAD"
WAIT_S = 60.0     # the child takes ~0.2 s on a COCO split; past this the parent goes on alone
# Larger inputs are scored in chunks, which never read the token cache (``metrics.chunked``'s
# CHUNK_SIZE, which imports numpy): the child stops after reading the candidates. And files
# this large are not read twice at once (the child would hold a second copy in memory).
MAX_CANDIDATES = 50_000
MAX_FILE_BYTES = 256 * 2**20

_child: tuple[int, int] | None = None     # (pid, read end of a pipe the child holds open)


def wanted(argv: list[str], environ=os.environ) -> tuple[str, str] | None:
    """The candidates and references files of a ``capkit score`` command line whose references
    a child can tokenise ahead (see the module docstring); None when it cannot."""
    if environ.get(ENV, "").strip().lower() in {"0", "off", "false", "no"} or \
            not sys.platform.startswith("linux") or _cpus() < 2:
        return None
    from capkit.text import ptb_cache
    if not ptb_cache.enabled(environ):
        return None
    options = _options(argv)
    paths = options.get("--candidates"), options.get("--references")
    if options.get("--tokenizer", "ptb") != "ptb" or not all(paths) or \
            not all(os.path.isfile(p) for p in paths) or \
            sum(map(os.path.getsize, paths)) > MAX_FILE_BYTES:
        return None
    return paths


def _options(argv: list[str]) -> dict[str, str]:
    """``--name value`` and ``--name=value`` pairs of ``argv``, as written (argparse's
    abbreviations are not expanded: an abbreviated option just means no child)."""
    out = {}
    for i, arg in enumerate(argv):
        name, eq, value = arg.partition("=")
        if name.startswith("--"):
            if eq:
                out[name] = value
            elif i + 1 < len(argv):
                out[name] = argv[i + 1]
    return out


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:           # (not Linux)
        return os.cpu_count() or 1


def start(argv: list[str]) -> bool:
    """Fork the child for this command line if ``wanted``; True if one was started. Call it
    before numpy (or anything that starts threads) is imported."""
    global _child
    try:
        paths = wanted(argv)
        if paths is None or _child is not None or _threads_started():
            return False
        read_end, write_end = os.pipe()
    except OSError:                  # a file gone meanwhile, no file descriptors left: no child
        return False
    try:
        pid = os.fork()
    except OSError:                  # no memory or processes left for it: the parent alone
        os.close(read_end)
        os.close(write_end)
        return False
    if pid == 0:                     # the child: never returns
        code = 1
        try:
            os.close(read_end)
            quiet = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(quiet, fd)
            tokenize_references(*paths)
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    _child = pid, read_end
    from capkit.text import ptb_cache
    ptb_cache.expect_writer(wait)     # token_cache.lookup waits for it, once it has the name
    return True


def _threads_started() -> bool:
    threading = sys.modules.get("threading")
    return threading is not None and threading.active_count() > 1


def tokenize_references(candidates_path: str, references_path: str) -> bool:
    """Save the PTB tokens of the references' stream of these two files in the token cache, as
    ``inputs.prepare`` would (what the child runs). False when there is nothing to do: more
    candidates than are scored in memory, a stream too short to cache, the cache off, or the
    file there already."""
    from capkit.caption_files import read_candidates, read_references
    from capkit.text import ptb_cache, ptb_tokenize
    cands = read_candidates(candidates_path)
    if len(cands) > MAX_CANDIDATES:
        return False
    refs = read_references(references_path)
    stream = [caption for i in cands for caption in refs[i]]
    path = ptb_cache.path_of(stream)
    if path is None or path.exists():
        return False
    text = ptb_tokenize(stream)
    ptb_cache.save(path, text, ptb_cache.encode(text))
    return True


def wait(timeout: float = WAIT_S) -> bool:
    """Wait until the child has ended (its file saved, or not); True if one ran. After
    ``timeout`` seconds it is stopped and the parent tokenises on its own. (``start`` hands
    it to ``ptb_cache.expect_writer``: ``token_cache.lookup`` calls it.)"""
    global _child
    if _child is None:
        return False
    import select
    pid, read_end = _child
    _child = None
    _forget()
    try:
        ended, _, _ = select.select([read_end], [], [], timeout)   # EOF once the child exits
        if not ended:
            _kill(pid)
    finally:
        os.close(read_end)
        os.waitpid(pid, 0)
    return True


def stop() -> None:
    """Stop the child if it still runs (the parent does not need it, or is ending)."""
    global _child
    if _child is None:
        return
    pid, read_end = _child
    _child = None
    _forget()
    _kill(pid)
    os.close(read_end)
    os.waitpid(pid, 0)


def _forget() -> None:
    from capkit.text import ptb_cache
    ptb_cache.expect_writer(None)


def _kill(pid: int) -> None:
    import signal
    try:
        os.kill(pid, signal.SIGKILL)   # (a write it is in the middle of leaves a temporary
    except ProcessLookupError:         # file, which ptb_cache.prune removes within an hour)
        pass
