"""capkit's cache files: where they live, who may have written them, the lock that guards
each, atomic writes, rebuilds.

Every cache capkit writes (encoder features, METEOR's resources, the official SPICE's parse
cache) follows four rules, so that no other user can change a score through it and broken files
and concurrent runs (two notebooks, a test run beside a benchmark) never cost more than a
recomputation:

* **Only your own files**: a cache feeds scores, and capkit does not check a cached value
  against the input it stands for, so it reads a cache only from a place that only the current
  user can write (as ssh and gpg treat key files). The cache folder (``cache_dir``:
  ``$CAPKIT_CACHE_DIR``, else the platform's user cache folder, ``~/.cache/capkit`` on Linux
  or ``$XDG_CACHE_HOME/capkit``) is created private (mode 0700), and the folders and files in it
  are never group- or other-writable. A cache file, or any folder from the cache folder down to
  it, that another user owns or that group or others can write is not read and not written:
  one ``CacheWarning`` names it and says why, and the value is computed (the decision lives in
  ``capkit.cache_trust``).
  There is no shared cache; what a lab may share is the read-only data folder
  (``$CAPKIT_DATA_DIR``), whose owner the readers then trust (INSTRUCTORS.md).

* **Lock**: a cross-process lock (``filelock``, an ``flock`` on POSIX) guards each file or folder
  that is built or rewritten; the lock file lives next to what it guards, named
  ``<name>.lock``. It is never deleted (deleting a lock file while others wait on it would let
  two processes hold "the" lock at once) but with an outdated file it guards, which nothing
  needs any more (``remove_unused``). A process that dies releases its lock with it.
* **Atomic write**: a file is written under a temporary name in its own folder, flushed to disk
  (``fsync``) and moved into place with ``os.replace``, so a reader sees the old file or the new
  one, never half of one, even if the writer is killed. A folder that must be whole (a dataset,
  a model checkpoint) is built in a hidden folder beside it and swapped in at the end
  (``write_folder``, ``replace_folder``), so it too is the old one or the new one, never a mix.
* **Read or rebuild**: a cache file that cannot be read (truncated, empty, another format) is
  rebuilt with one ``CacheWarning`` that names it; a cache folder capkit cannot write (read-only,
  full disk) means the work is done in memory this time, again with one warning. Neither is an
  error: a cache only saves time.

Readers take no lock (atomic writes make that safe); builders do, and check again once they
hold it, so N processes that miss at once build once.

A command's output files (results, tables, figures, notebooks) are written the same atomic way,
by ``write_output``, whose error names the file that could not be written. Silence the warnings with
``warnings.simplefilter("ignore", capkit.cache_files.CacheWarning)``.
"""
from __future__ import annotations

import contextlib
import errno
import os
import sys
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, TypeVar

from capkit.cache_trust import CACHE_ENV, make_private_folder, trust_problem, untrusted_message

LOCK_TIMEOUT_S = 600.0     # a live process holding a cache lock this long is stuck, not busy

T = TypeVar("T")


def _read_umask() -> int:
    """The process umask, read without changing it where the system says it (Linux)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    umask = os.umask(0)      # elsewhere the only portable way: set it and set it back
    os.umask(umask)
    return umask


# Read once, at import: setting the umask is process-wide, so doing it on every write could let
# a file another thread creates meanwhile be made with umask 0.
_UMASK = _read_umask()


def unreadable() -> tuple[type[BaseException], ...]:
    """What reading a damaged cache file raises: zip/npz errors, short reads, missing members.
    (A function, so that importing this module does not import zipfile.)"""
    import zipfile
    return (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile)


class CacheWarning(UserWarning):
    """A cache file was rebuilt, or could not be written (the result is right either way)."""


def cache_dir(path: str | os.PathLike | None = None) -> Path:
    """capkit's cache folder: ``path``, else ``$CAPKIT_CACHE_DIR``, else the platform's user
    cache folder for capkit (``platformdirs``: ``$XDG_CACHE_HOME/capkit``, by default
    ``~/.cache/capkit``, on Linux; ``~/Library/Caches/capkit`` on macOS)."""
    if path or os.environ.get(CACHE_ENV):
        return Path(path or os.environ[CACHE_ENV]).expanduser()
    import platformdirs
    return Path(platformdirs.user_cache_dir("capkit", appauthor=False))


def lock_path(path: str | os.PathLike) -> Path:
    """The lock file that guards ``path``: ``<path>.lock``, beside it."""
    path = Path(path)
    return path.with_name(path.name + ".lock")


def file_lock(path: str | os.PathLike, timeout: float = LOCK_TIMEOUT_S):
    """A cross-process lock guarding ``path`` (use as ``with file_lock(path): ...``).

    Creates ``path``'s folder if needed; raises OSError if it cannot (a read-only folder) and
    ``filelock.Timeout`` (a TimeoutError, so an OSError too) after ``timeout`` seconds (-1:
    wait for ever). Not reentrant across objects: do not nest two locks on the same path.
    """
    from filelock import FileLock
    lock = lock_path(path)
    lock.parent.mkdir(parents=True, exist_ok=True)
    return FileLock(lock, timeout=timeout)


def remove_unused(path: str | os.PathLike) -> bool:
    """Delete the cache file ``path`` and its lock file unless another process holds that lock
    now (it is building ``path``): True once both are gone, False if busy (nothing is touched).
    Raises OSError if they cannot be deleted (no permission, a read-only folder).

    Only for a file that nothing of this version reads (another format's). Readers take no lock:
    one reading ``path`` as it goes reads on where an open file outlives its name (POSIX) and
    makes the deletion fail elsewhere. The lock file is deleted while held: a process that was
    waiting on it may then hold a lock that a newcomer does not see, so at worst two processes
    of the older version rebuild that file at once, each atomically (no harm but the time).
    """
    from filelock import Timeout
    path = Path(path)
    lock = file_lock(path, timeout=0)
    try:
        lock.acquire()
    except Timeout:
        return False
    try:
        path.unlink(missing_ok=True)
        with contextlib.suppress(OSError):   # an empty file (Windows deletes it on release)
            lock_path(path).unlink()
    finally:
        lock.release()
    return True


def write_atomic(path: str | os.PathLike, write: Callable[[IO[bytes]], None]) -> Path:
    """Write ``path`` through ``write(file)``: temporary file in the same folder, fsync, rename.

    The temporary file is hidden (``.<name>.tmp-*``) so that globs for ``*<suffix>`` never see a
    half-written file, and it is removed if ``write`` fails or the process is interrupted. The
    file gets the usual permissions less group and other write (mkstemp's 0600 would make a
    dataset in a shared data folder unreadable to the others; a writable file would make a
    cache untrusted, ``trust_problem``).
    """
    import tempfile
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644 & ~_UMASK)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def staging_folder(target: str | os.PathLike) -> Path:
    """A new, empty, hidden folder beside ``target`` to build its replacement in:
    ``.<name>.partial-<8 hex>`` (made with the umask's mode, not mkdtemp's 0o700, which would
    outlive the rename)."""
    import uuid
    target = Path(target).absolute()
    staged = target.with_name(f".{target.name}.partial-{uuid.uuid4().hex[:8]}")
    staged.mkdir()
    return staged


def work_folders(target: str | os.PathLike) -> list[Path]:
    """Staging and old folders of ``target`` left by a killed writer; delete them only while
    holding a lock that shows they are nobody's."""
    target = Path(target).absolute()
    return [p for kind in ("partial", "old")
            for p in target.parent.glob(f".{target.name}.{kind}-*")]


def exchange_folders(a: str | os.PathLike, b: str | os.PathLike) -> bool:
    """Swap two folders in one atomic step (Linux ``renameat2(RENAME_EXCHANGE)``); False where
    the C library, kernel or file system cannot, so the caller falls back to two renames."""
    import ctypes
    renameat2 = getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None) \
        if sys.platform.startswith("linux") else None
    if renameat2 is None:
        return False
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):
        return False
    raise OSError(err, os.strerror(err), str(a), None, str(b))


def replace_folder(staged: str | os.PathLike, target: str | os.PathLike) -> None:
    """Move the finished folder ``staged`` (from ``staging_folder``) to ``target``, then delete
    what was there. Where ``exchange_folders`` can, a reader always finds a complete folder;
    elsewhere there is a gap of two renames (the old copy waits as ``.<name>.old-<8 hex>``)."""
    import shutil
    import uuid
    staged, target = Path(staged), Path(target).absolute()
    if not target.exists():
        staged.rename(target)
    elif exchange_folders(staged, target):
        shutil.rmtree(staged, ignore_errors=True)         # now holds the previous copy
    else:
        old = target.with_name(f".{target.name}.old-{uuid.uuid4().hex[:8]}")
        target.rename(old)
        staged.rename(target)
        shutil.rmtree(old, ignore_errors=True)


def check_replaceable(folder: str | os.PathLike, names) -> Path:
    """``folder`` (absolute) once it is known that replacing it as a whole by a folder of the
    files ``names`` loses nothing: it is missing, empty, or holds only such files. Raises
    FileExistsError otherwise, or if it is a file: commands call it before their work, so a
    long run never ends unable to save."""
    folder = Path(folder).expanduser().absolute()
    if folder.exists() and not folder.is_dir():
        raise FileExistsError(f"{folder} is a file, not a folder: choose a folder to write.")
    names = set(names)
    extra = sorted(p.name for p in folder.iterdir() if p.name not in names) \
        if folder.is_dir() else []
    if extra:
        raise FileExistsError(
            f"{folder} already holds {', '.join(extra[:5])}{' ...' * (len(extra) > 5)}, which "
            "would be lost: the folder is replaced as a whole. Choose a new or empty folder, or "
            "move those files out, and write it again.")
    return folder


def write_folder(folder: str | os.PathLike, files: Mapping[str, bytes]) -> Path:
    """Write ``folder`` holding exactly ``files`` (name -> bytes) as a whole: each file written
    (``write_atomic``) into a ``staging_folder``, then swapped in by ``replace_folder``. A kill or
    an error at any point leaves the folder that was there, complete, or the new one (but for
    the moment between two renames where no atomic swap exists); an error or Ctrl-C also removes
    the staging folder (a hard kill leaves it, hidden, beside ``folder``).

    Raises FileExistsError, before writing anything, if ``folder`` exists and holds anything
    but these files' names: it is replaced as a whole, so other files in it would be lost.
    """
    import shutil
    folder = check_replaceable(folder, files)
    folder.parent.mkdir(parents=True, exist_ok=True)
    staged = staging_folder(folder)
    try:
        for name, data in files.items():
            write_atomic(staged / name, lambda f, data=data: f.write(data))
        replace_folder(staged, folder)
    except BaseException:
        shutil.rmtree(staged, ignore_errors=True)
        raise
    return folder


class OutputError(OSError):
    """An output file could not be written: ``filename`` names it, ``errno``/``strerror`` say
    why (a full disk, a file-size limit, no permission). Nothing is left under its name."""

    def __str__(self) -> str:
        why = self.strerror if self.errno is None else f"[Errno {self.errno}] {self.strerror}"
        return (f"cannot write {self.filename} ({why}); "
                "nothing half-written was left there: make room (disk space, quota, file-size "
                "limit) or give a folder you can write to, then run again")


def write_output(path: str | os.PathLike, data: bytes | str) -> Path:
    """Write one output file (``str`` as UTF-8) with ``write_atomic``: a unique hidden temporary
    name, fsync, rename, so a reader never finds half a file under ``path``. Raises
    ``OutputError`` (an OSError with the same errno) naming ``path`` if it cannot be written.

    A command that writes several files writes the one that says the run is complete (e.g.
    ``results.json``) last, so an interrupted run never looks finished.
    """
    payload = data.encode("utf-8") if isinstance(data, str) else data
    try:
        return write_atomic(path, lambda f: f.write(payload))
    except OSError as err:
        raise OutputError(err.errno, err.strerror or str(err), str(path)) from err


@contextlib.contextmanager
def open_npz(path: str | os.PathLike):
    """``with open_npz(path) as z``: an ``.npz`` cache file, never unpickled; ValueError if the
    file is not one. The file is opened here, not by ``np.load``, which leaks its handle when the
    archive turns out to be damaged."""
    import numpy as np        # here, not at the top: the fetch script imports this module too
    with open(path, "rb") as f:
        loaded = np.load(f, allow_pickle=False)
        if not isinstance(loaded, np.lib.npyio.NpzFile):
            raise ValueError(f"{path} is a .npy array, not an .npz archive")
        with loaded:
            yield loaded


def _describe(err: BaseException) -> str:
    return f"{type(err).__name__}: {str(err)[:200]}" if str(err) else type(err).__name__


def unreadable_message(path: Path, err: BaseException, action: str) -> str:
    """The warning for a damaged cache file; ``action`` says what was done about it."""
    return f"capkit's cache file {path} could not be read ({_describe(err)}); {action}."


def unwritable_message(folder: Path, err: BaseException, what: str,
                       damaged: Sequence[Path] = ()) -> str:
    """The warning for a cache folder capkit cannot write; ``what`` (plural) names the result."""
    also = (f" (the unreadable file{'s' * (len(damaged) > 1)} "
            f"{', '.join(map(str, damaged))} could not be replaced either)" if damaged else "")
    return (f"capkit cannot write its cache in {folder} ({_describe(err)}), so {what} are "
            f"computed in memory and not saved{also}. Make the folder writable, or point "
            f"${CACHE_ENV} at one that is.")


def warn(message: str) -> None:
    # stacklevel 3: point at the capkit function whose caller asked for the cached thing
    warnings.warn(message, CacheWarning, stacklevel=3)


def _try_read(path: Path, read: Callable[[Path], T]) -> tuple[bool, T | None, BaseException | None]:
    """(found, value, error): a missing file is not an error, an unreadable one is."""
    if not path.is_file():
        return False, None, None
    try:
        return True, read(path), None
    except FileNotFoundError:               # replaced or cleared between the check and the read
        return False, None, None
    except unreadable() as err:
        return False, None, err


def read_or_rebuild(path: str | os.PathLike, read: Callable[[Path], T], build: Callable[[], T],
                    write: Callable[[IO[bytes], T], None], *, what: str,
                    root: str | os.PathLike | None = None,
                    on_written: Callable[[Path], None] | None = None) -> T:
    """``read(path)``, or ``build()`` it and save it with ``write(file, value)``.

    ``root`` is the cache folder ``path`` lies in (default: ``cache_dir()`` when ``path`` is in
    it, else ``path``'s folder); a file or folder
    there that ``trust_problem`` refuses is neither read nor written: the value is built in
    memory. At most one ``CacheWarning`` per call: when the place is not trusted, when the file
    was unreadable (it is rebuilt and replaced) or when the folder cannot be written (the value
    is built in memory). ``read``
    must raise one of ``unreadable()`` for a damaged file. ``what`` (plural) names the value in
    messages, e.g. "METEOR's resources". ``on_written(path)``, if given, runs once this call
    has written ``path`` (e.g. to delete the files it supersedes); it must not raise.
    """
    path = Path(path)
    if root is None:
        root = cache_dir() if cache_dir().absolute() in path.absolute().parents else path.parent
    problem = trust_problem(path, root)
    if problem is not None:
        value = build()
        warn(untrusted_message(problem, what))
        return value
    found, value, damaged = _try_read(path, read)
    if found:
        return value
    try:
        make_private_folder(path.parent, root)
        lock = file_lock(path)
        lock.acquire()
    except OSError as err:                   # read-only folder, or a stuck lock holder
        value = build()
        warn(unwritable_message(path.parent, err, what, [path] if damaged else []))
        return value
    try:
        # Another process may have built (or rebuilt) it while this one waited for the lock.
        found, value, damaged_now = _try_read(path, read)
        if found:
            return value
        value = build()
        try:
            write_atomic(path, lambda f: write(f, value))
        except OSError as err:
            warn(unwritable_message(path.parent, err, what, [path] if damaged_now else []))
            return value
        if damaged_now is not None:
            warn(unreadable_message(path, damaged_now, f"rebuilt {what} and replaced it"))
        if on_written is not None:
            on_written(path)
        return value
    finally:
        lock.release()
