"""Progress bars: one setting for every long loop (scoring, encoders, benchmarks, robustness, training).

``progress`` takes ``True``, ``False`` or ``"auto"`` (the default everywhere). ``"auto"`` shows a
bar where a person is watching and hides it where a machine reads the output:

* ``$CAPKIT_PROGRESS`` = ``1`` / ``0`` decides first (``make test`` sets 0 for nbval, so stored
  notebook outputs never hold a bar);
* in a Jupyter kernel: on, as tqdm's notebook bar (a widget that JupyterLab draws);
* elsewhere: on when standard error is a terminal, off when it is a pipe or a file (CI logs,
  ``capkit score ... 2> log``), and off under pytest, which captures it.

>>> from capkit.progress import bar
>>> for batch in bar(range(3), desc="encode", progress=False):
...     pass
"""
from __future__ import annotations

import os
import sys

PROGRESS_ENV = "CAPKIT_PROGRESS"
_ON, _OFF = {"1", "true", "on", "yes"}, {"0", "false", "off", "no"}


def _in_kernel() -> bool:
    shell = sys.modules.get("IPython")
    if shell is None or "ipykernel" not in sys.modules:
        return False
    ip = shell.get_ipython()
    return ip is not None and getattr(ip, "kernel", None) is not None


def enabled(progress: bool | str = "auto") -> bool:
    """Whether a bar is drawn for this ``progress`` setting (see the module docstring)."""
    if isinstance(progress, bool):
        return progress
    if progress != "auto":
        raise ValueError(f"progress={progress!r}: give True, False or 'auto'")
    env = os.environ.get(PROGRESS_ENV, "").strip().lower()
    if env in _ON:
        return True
    if env in _OFF:
        return False
    if env not in ("", "auto"):
        raise ValueError(f"{PROGRESS_ENV}={env!r}: set it to 1, 0 or auto")
    if _in_kernel():
        return True
    stream = sys.stderr
    return stream is not None and hasattr(stream, "isatty") and stream.isatty()


def bar(iterable=None, *, total: int | None = None, desc: str | None = None,
        progress: bool | str = "auto", leave: bool | None = None, **options):
    """A tqdm bar (the notebook widget in Jupyter, text on a terminal), or a disabled one.

    ``leave=None`` keeps a finished bar in a Jupyter kernel (it shows the work was done, and
    closing a notebook bar destroys its widget model, which JupyterLab may still be drawing: the
    browser console then reports "widget model not found") and clears it on a terminal.
    """
    from tqdm.auto import tqdm
    if leave is None:
        leave = _in_kernel()
    return tqdm(iterable, total=total, desc=desc, disable=not enabled(progress), leave=leave,
                **options)
