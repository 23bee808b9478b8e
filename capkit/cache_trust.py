"""Who may have written a cache file: the rule that keeps other users' files out of scores.

capkit does not check a cached value against the input it stands for, so it reads a cache only
from a place that only the current user can write, as ssh and gpg treat key files: the cache
folder, every folder below it down to the file, and the file itself must be the user's own and
neither group- nor other-writable. capkit creates its cache folders private (mode 0700).
``capkit.cache_files`` applies the rule to every cache it reads or writes.
"""
from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV = "CAPKIT_CACHE_DIR"


def ownership_problem(owner: int, mode: int, user: int) -> str | None:
    """Why a cache file or folder with owner ``owner`` and mode bits ``mode`` is not trusted by
    the user ``user``, or None: it must be the user's own and neither group- nor
    other-writable (the decision ``trust_problem`` makes for each path; root is no exception)."""
    import stat
    if owner != user:
        return f"it is owned by user id {owner}, not by you (user id {user})"
    if mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"group or others can write it (mode {stat.filemode(mode)})"
    return None


def trust_problem(path: str | os.PathLike, root: str | os.PathLike) -> str | None:
    """Why capkit must not read (or write) the cache file or folder ``path`` inside the cache
    folder ``root``, or None when it may: ``root``, every folder below it down to ``path``, and
    ``path`` itself must pass ``ownership_problem`` (the ones that do not exist yet pass: capkit
    creates them private). Always None where the system has no user ids (Windows: its ACLs,
    not mode bits, decide who writes a folder there)."""
    if not hasattr(os, "geteuid"):
        return None
    root, path = Path(root).absolute(), Path(path).absolute()
    try:
        parts = path.relative_to(root).parts
    except ValueError:
        raise ValueError(f"{path} is not inside the cache folder {root}") from None
    user = os.geteuid()
    for depth in range(len(parts) + 1):
        place = root.joinpath(*parts[:depth])
        try:
            st = os.stat(place)
        except FileNotFoundError:
            return None
        problem = ownership_problem(st.st_uid, st.st_mode, user)
        if problem is not None:
            return f"{place}: {problem}"
    return None


def untrusted_message(problem: str, what: str) -> str:
    """The warning for a cache that ``trust_problem`` refused; ``what`` (plural) names the
    result that is computed instead."""
    return (f"capkit does not use its cache at {problem}: anyone who can write there could "
            f"change your scores. So {what} are computed and not saved. Make it your own and "
            "private (`chmod go-w`, or delete it: it is only a cache), or point "
            f"${CACHE_ENV} at a folder of your own.")


def make_private_folder(folder: str | os.PathLike, root: str | os.PathLike) -> Path:
    """Create ``folder`` (inside the cache folder ``root``) and whatever is missing of ``root``
    and the folders between, each with mode 0700; the folders above ``root`` get the usual
    mode. Returns ``folder``."""
    root, folder = Path(root).absolute(), Path(folder).absolute()
    parts = folder.relative_to(root).parts
    root.parent.mkdir(parents=True, exist_ok=True)
    for depth in range(len(parts) + 1):
        place = root.joinpath(*parts[:depth])
        try:
            os.mkdir(place, 0o700)
        except FileExistsError:
            pass
    return folder
