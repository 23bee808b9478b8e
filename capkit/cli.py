"""capkit: image-caption evaluation metrics, reproduced, tested and taught.

Subcommands live in capkit/commands/, one module each.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys

from capkit.commands import COMMANDS


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser; only the module of the command named in ``argv`` is imported (speed: a
    command's start-up pays for its own imports, not for every other command's)."""
    parser = argparse.ArgumentParser(prog="capkit", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
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
    try:
        return args.func(args)
    except (ValueError, FileNotFoundError, TypeError, RuntimeError) as err:
        print(f"capkit {args.command}: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
