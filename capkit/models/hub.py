"""Hugging Face hub names: one quick check that the hub answers before loading one, and the error
that says what to do when a name cannot be loaded.

Why the check: without a network, huggingface_hub retries each file it cannot find in its cache
5 times, waiting 1 + 2 + 4 + 8 + 8 s (``http_backoff``; the count is fixed in its code, no
setting changes it, and shorter timeouts do not help when the name does not resolve), and
transformers asks for several files. That was ~25 s before the error for a model never
downloaded, and minutes for one downloaded by ``hf download`` (its cache holds no "missing file"
markers, so every optional file is retried). So before loading a hub name, ``hub_loading`` sends
one HEAD request to the hub endpoint (``HF_ENDPOINT``) through huggingface_hub's own HTTP client
(its proxies and certificates), waiting ``PROBE_TIMEOUT`` s at most. If the hub answers (any HTTP
status), loading goes on exactly as before: downloads, update checks. If not, the name is loaded
from the local cache only (``local_files_only=True``, as ``HF_HUB_OFFLINE=1`` does): a cached
model loads at once with no more network calls, and one not cached fails at once with
``hub_error``. Local folders and ``HF_HUB_OFFLINE=1`` skip the check.
"""
from __future__ import annotations

import contextlib
import os
import textwrap
from collections.abc import Iterator
from pathlib import Path

PROBE_TIMEOUT = 5.0      # seconds; HF_HUB_ETAG_TIMEOUT, when the user sets it, is used instead


def is_folder(name: str | Path) -> bool:
    return Path(str(name)).expanduser().exists()


def _one_line(err: BaseException, width: int = 200) -> str:
    return textwrap.shorten(" ".join(str(err).split()), width, placeholder=" ...")


def probe_hub() -> str | None:
    """None when the hub endpoint answers one request, else why not (one line)."""
    from huggingface_hub import constants
    from huggingface_hub.utils import get_session
    timeout = constants.HF_HUB_ETAG_TIMEOUT if os.environ.get("HF_HUB_ETAG_TIMEOUT") \
        else PROBE_TIMEOUT                       # the user's setting, even if it is the default
    try:
        get_session().head(constants.ENDPOINT, timeout=timeout)
    except Exception as err:    # any transport error: httpx2, httpx or requests by hub version
        return f"{type(err).__name__}: {_one_line(err, 120)}"
    return None


def offline_mode() -> bool:
    """HF_HUB_OFFLINE=1 (or TRANSFORMERS_OFFLINE=1), as huggingface_hub read it at import."""
    from huggingface_hub import constants
    return bool(constants.HF_HUB_OFFLINE)


@contextlib.contextmanager
def hub_loading(name: str, what: str, *, tiny: str, offline: str | None = None,
                example: str | None = None) -> Iterator[dict]:
    """Load ``name`` (a hub name or folder) in the block: it gets the extra keyword arguments
    for every ``from_pretrained`` call (``{}``, or ``local_files_only=True`` when the hub does
    not answer), runs quietly, and an ``OSError`` becomes a ``FileNotFoundError`` that says
    what to do (``offline``: a phrase naming an offline preset; ``tiny``: the stand-in). A name
    that is neither a folder nor a valid hub name (a mistyped path) is refused first, with no
    network check (``example``: a hub name to suggest)."""
    from capkit.models.runtime import quiet_loading
    if not is_folder(name):
        from huggingface_hub.utils import HFValidationError, validate_repo_id
        try:
            validate_repo_id(name)
        except HFValidationError:
            raise FileNotFoundError(
                f"no {what} folder {name} (it does not exist), and {name!r} is not a hub name; "
                f"give an existing folder or a hub name{f' such as {example}' if example else ''}"
            ) from None
    unreachable = None if is_folder(name) or offline_mode() else probe_hub()
    options = {"local_files_only": True} if unreachable else {}
    try:
        with quiet_loading():
            yield options
    except OSError as err:
        raise FileNotFoundError(hub_error(name, what, offline, tiny, err, unreachable)) from None


def hub_error(name: str, what: str, offline: str | None, tiny: str, err: Exception,
              unreachable: str | None = None) -> str:
    """The message when a hub name or folder cannot be loaded (usually: offline), one line.
    ``unreachable``: why the hub did not answer, when ``probe_hub`` said so."""
    from huggingface_hub import constants
    alt = f"{offline} or " if offline else ""
    stand_in = f"'{tiny}' (an untrained stand-in for tests)"
    head = f"could not load the {what} {name!r} ({type(err).__name__}: {_one_line(err)})."
    if is_folder(name):
        return f"{head} A folder must be one written by save_pretrained; or use {alt}{stand_in}"
    cache = f"the model is not (completely) in the local cache ({constants.HF_HUB_CACHE})"
    if unreachable:
        head += (f" The Hugging Face hub ({constants.ENDPOINT}) did not answer ({unreachable}), "
                 f"and {cache}.")
    elif offline_mode():
        head += f" HF_HUB_OFFLINE is set, so only the cache was searched; perhaps {cache}."
    last = ("Unset HF_HUB_OFFLINE to download" if offline_mode() else
            "Set HF_HUB_OFFLINE=1 to use the cache only, with no network check")
    return (f"{head} Hub names need the internet once: where there is internet, run "
            f"`hf download {name}` (huggingface_hub < 1.0: `huggingface-cli download {name}`) "
            "or save_pretrained to a folder and give the folder; offline, use "
            f"{alt}{stand_in}. {last}")
