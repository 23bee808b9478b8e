"""capkit: image-caption evaluation metrics, reproduced, tested and taught.

Subcommands live in capkit/commands/, one module each.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys
import warnings

from capkit import __version__
from capkit.commands import COMMANDS


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser; only the module of the command named in ``argv`` is imported (speed: a
    command's start-up pays for its own imports, not for every other command's)."""
    parser = argparse.ArgumentParser(prog="capkit", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"capkit {__version__}",
                        help="print capkit's version and exit")
    sub = parser.add_subparsers(dest="command", required=True)
    wanted = _command(argv or [])
    for name, (module, help_text) in COMMANDS.items():
        if wanted is None or name == wanted:
            importlib.import_module(f"capkit.commands.{module}").register(sub)
        else:
            sub.add_parser(name, help=help_text)
    return parser


def _command(argv: list[str]) -> str | None:
    """The subcommand named in ``argv`` (its first word that is not an option)."""
    return next((a for a in argv if not a.startswith("-")), None)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if _command(argv) == "score" and "numpy" not in sys.modules:
        # numpy's OpenBLAS starts a thread per core as it loads: a tenth of a short `capkit
        # score` on a 2-core machine, for metrics that make no BLAS call needing threads.
        # An OPENBLAS_NUM_THREADS the user set wins.
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    args = build_parser(argv).parse_args(argv)
    with warnings.catch_warnings():
        warnings.showwarning = _one_line_warnings(args.command)
        try:
            return args.func(args)
        except (ValueError, FileNotFoundError, TypeError, RuntimeError) as err:
            print(f"capkit {args.command}: error: {_message(err)}", file=sys.stderr)
            return 2


def _message(err: BaseException) -> str:
    """The error's text and its notes (e.g. which user metric raised it), on one line."""
    return " ".join([str(err), *getattr(err, "__notes__", ())])


def _one_line_warnings(command: str):
    """``warnings.showwarning`` for the command line: ``capkit <command>: warning: <text>`` on
    stderr, each text once (several metrics warn about the same empty candidate), without the
    source line and path of the library code that raised it."""
    seen: set[str] = set()

    def show(message, category, filename, lineno, file=None, line=None) -> None:
        text = str(message)
        if text not in seen:
            seen.add(text)
            print(f"capkit {command}: warning: {text}", file=sys.stderr if file is None else file)
    return show


def entry() -> None:
    """The ``capkit`` command and ``python -m capkit``: ``main``, then the process exit.

    A reader that goes away (``capkit score ... | head``) ends the run quietly, exit status 1;
    an output that cannot be written (a full disk) is a one-line error, exit status 2.
    """
    argv = sys.argv[1:]
    try:
        code = main(argv)
        sys.stdout.flush()              # a failed write shows here, not as a traceback at exit
    except BrokenPipeError:
        _drop_stdout()
        sys.exit(1)
    except OSError as err:              # the disk is full, a file cannot be written, ...
        _drop_stdout()
        print(f"capkit {_command(argv)}: error: {err}", file=sys.stderr)
        sys.exit(2)
    sys.exit(code)


def _drop_stdout() -> None:
    """As the Python docs advise for a reader that went away: stdout pointed at devnull, so
    that the flush at exit cannot fail again and print a traceback."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


if __name__ == "__main__":
    entry()
