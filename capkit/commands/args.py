"""Argument types and checks shared by several subcommands.

Output paths are checked before any work (``output_dir``, ``output_file``): a benchmark that runs
for minutes and then cannot write its results has wasted those minutes. The check writes and
removes a probe file where the output will go (``os.access`` would not do: it says yes to root
on a read-only mount and to anyone on ``/proc``); it creates nothing that stays.
"""
from __future__ import annotations

import argparse
import os
from pathlib import Path


def metric_list(text: str) -> list[str]:
    """'bleu_4, cider_d,pkg.mod:fn' -> ['bleu_4', 'cider_d', 'pkg.mod:fn']."""
    names = [m.strip() for m in text.split(",") if m.strip()]
    if not names:
        raise argparse.ArgumentTypeError("give at least one metric name")
    return names


def integer(minimum: int, why: str = ""):
    """An argparse type: an integer of at least ``minimum``, else the error (argparse adds the
    option's name) says so and, with ``why``, why."""
    wanted = "a non-negative integer" if minimum == 0 else f"an integer >= {minimum}"

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < minimum:
            raise argparse.ArgumentTypeError(f"must be {wanted}{why}, got {text}")
        return value
    return parse


def seed_option(parser: argparse.ArgumentParser) -> None:
    """``--seed``, as every seeded command takes it (numpy's generators need it >= 0)."""
    parser.add_argument("--seed", type=integer(0), default=0,
                        help="random seed, a non-negative integer (default 0)")


# bootstrap resamples (bench --n-boot, robustness --bootstrap): refused at once below 2, since an
# interval needs several resamples and a run should not find that out after its scoring
resamples = integer(2, " (an interval needs several resamples; e.g. 1000, or 20 for a quick look)")


def _probe(path: Path, folder: Path, option: str, what: str) -> None:
    """Raise ValueError (naming ``option`` and ``path``) unless a file can be created in
    ``folder``, or, if it does not exist yet, in the nearest folder above it that does."""
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent                 # the folder that would hold the new ones
    if not existing.is_dir():
        raise ValueError(f"{option} {path}: cannot write the {what} there, {existing} is a "
                         "file, not a folder; give another path")
    import tempfile                    # (not at import: `capkit score` starts faster)
    try:
        fd, probe = tempfile.mkstemp(dir=existing, prefix=".capkit-probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as err:
        raise ValueError(f"{option} {path}: cannot write the {what} there ({err.strerror or err}"
                         f" in {existing}); give a folder you can write to") from None


def output_dir(path: str | os.PathLike, option: str = "--out") -> Path:
    """``path`` as a Path, once it is known that the folder exists or can be created, and that
    files can be written in it; otherwise a ValueError naming ``option`` and the path."""
    path = Path(path).expanduser()
    if path.exists() and not path.is_dir():
        raise ValueError(f"{option} {path} is a file; give a folder (it is created if missing)")
    _probe(path, path, option, "output folder")
    return path


def checkpoint_dir(path: str | os.PathLike, files, option: str = "--out") -> Path:
    """``output_dir`` for a checkpoint folder written as a whole (``cache_files.write_folder``):
    also checked before training that replacing it loses no other file, and that its parent
    takes the staging folder beside it."""
    from capkit.cache_files import check_replaceable
    path = output_dir(path, option)
    try:
        check_replaceable(path, files)
    except FileExistsError as err:
        raise ValueError(f"{option}: {err}") from None
    _probe(path.absolute().parent, path.absolute().parent, option, "output folder's parent")
    return path


def output_file(path: str | os.PathLike, option: str = "--out") -> Path:
    """``path`` as a Path, once it is known that the file can be written (its folder exists or
    can be created and is writable; it is not a folder); otherwise a ValueError."""
    path = Path(path).expanduser()
    if path.is_dir():
        raise ValueError(f"{option} {path} is a folder; give a file name")
    _probe(path, path.parent, option, "file")
    return path


def figure_file(path: str | os.PathLike, option: str = "--figure") -> Path:
    """``output_file`` for a figure, whose suffix must also be one matplotlib writes (checked
    before the work: an unknown format found at the save would lose the run's results)."""
    from matplotlib.backend_bases import FigureCanvasBase
    path = output_file(path, option)
    kinds = FigureCanvasBase.get_supported_filetypes()
    if path.suffix.lower().lstrip(".") not in kinds:
        what = path.suffix or "a name without a suffix"
        raise ValueError(f"{option} {path}: matplotlib cannot write {what}; end the name with one "
                         f"of {', '.join('.' + k for k in sorted(kinds))}")
    return path


FORMATS = ["json", "table", "markdown", "csv"]


def _glove_file(text: str) -> str:
    if not Path(text).expanduser().is_file():
        raise argparse.ArgumentTypeError(f"no file {text}; give a GloVe .txt (or .txt.gz) file, "
                                         "or leave out --glove for the offline bundle")
    return text


def workdir(args: argparse.Namespace) -> None:
    """Before any training: ``--workdir`` can be written, and is given when ``--resume`` asks
    to continue from it."""
    if args.resume and args.workdir is None:
        raise ValueError("--resume needs --workdir, the folder of the interrupted run's "
                         "training state")
    if args.workdir is not None:
        output_dir(args.workdir, "--workdir")


def device(name: str | None) -> str:
    """``--device`` (else ``$CAPKIT_DEVICE``, else cpu) resolved before any work, as
    ``capkit.models.runtime.resolve_device`` does; CUDA asked for where there is none is an
    error naming the option."""
    from capkit.models.runtime import DEVICE_ENV, DeviceUnavailable, resolve_device
    try:
        return resolve_device(name)
    except DeviceUnavailable:
        given = f"--device {name}" if name else f"{DEVICE_ENV}={os.environ.get(DEVICE_ENV)}"
        raise ValueError(f"{given} asks for CUDA, which is not available here; use --device "
                         "cpu") from None


def training_options(parser: argparse.ArgumentParser, run, *, workdir: bool = False,
                     glove: bool = False) -> None:
    """The options every ``capkit train <model>`` shares: ``--seed`` and ``--threads`` (the two
    that, with the preset, make a checkpoint reproducible byte for byte), ``--workdir`` and
    ``--resume`` for the models trained in resumable epochs, ``--glove`` for those that read
    GloVe vectors, ``--format``; and ``run`` as the command."""
    if workdir:
        parser.add_argument("--workdir", default=None,
                            help="folder for the per-epoch training state (needed by --resume)")
        parser.add_argument("--resume", action="store_true",
                            help="continue from --workdir's state")
    seed_option(parser)
    parser.add_argument("--threads", type=integer(1), default=1,
                        help="CPU threads; keep it fixed to reproduce a checkpoint byte for byte")
    if glove:
        parser.add_argument("--glove", type=_glove_file, default=None,
                            help="a GloVe text file (default: the offline 6B 50-d bundle)")
    parser.add_argument("--format", choices=FORMATS, default="table")
    parser.set_defaults(func=run)


def training_bars(args) -> bool:
    """Whether a ``capkit train`` command draws its epoch bars: where a person watches
    (``capkit.progress``, "auto": not in a pipe or a log file), never with ``--format json``."""
    from capkit.progress import enabled
    return args.format != "json" and enabled("auto")

