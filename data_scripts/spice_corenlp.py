"""Get Stanford CoreNLP 3.6.0 for the official SPICE (``capkit.metrics.spice``), explicitly.

    python -m data_scripts.spice_corenlp [--zip PATH] [--dest DIR] [--sha256 HEX]

SPICE 1.0 parses captions with CoreNLP 3.6.0, which no package registry carries. This script
downloads ``stanford-corenlp-full-2015-12-09.zip`` (~400 MB, the file pycocoevalcap's
``get_stanford_models.py`` fetches at first use), or takes a copy you downloaded (``--zip``),
and extracts only ``stanford-corenlp-3.6.0.jar`` and ``stanford-corenlp-3.6.0-models.jar``
into the folder SPICE looks in: ``--dest``, else ``$CAPKIT_CORENLP_DIR``, else
``~/.cache/capkit/stanford-corenlp-3.6.0``. The jars are written under temporary names and
renamed into place only after both are checked (they must hold CoreNLP's pipeline class and the
English parser model), so an interrupted run leaves nothing half-done. capkit never downloads
CoreNLP by itself; without it, ``spice_lite`` approximates SPICE without Java.

The archive's checksum could not be pinned when this script was written (the machines had no
access to nlp.stanford.edu): the script prints it; pass ``--sha256`` to enforce one.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import sys
import tempfile
import urllib.request
import zipfile
from pathlib import Path

URL = "https://nlp.stanford.edu/software/stanford-corenlp-full-2015-12-09.zip"
INNER = "stanford-corenlp-full-2015-12-09"
JARS = ("stanford-corenlp-3.6.0.jar", "stanford-corenlp-3.6.0-models.jar")
MUST_CONTAIN = {
    "stanford-corenlp-3.6.0.jar": "edu/stanford/nlp/pipeline/StanfordCoreNLP.class",
    "stanford-corenlp-3.6.0-models.jar": "edu/stanford/nlp/models/lexparser/englishPCFG.ser.gz",
}
CHUNK = 1 << 20


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(CHUNK), b""):
            h.update(block)
    return h.hexdigest()


def download(url: str, dest: Path) -> None:
    with urllib.request.urlopen(url, timeout=60) as r, open(dest, "wb") as out:
        shutil.copyfileobj(r, out, CHUNK)


def check_jar(path: Path, name: str) -> None:
    with zipfile.ZipFile(path) as z:
        if MUST_CONTAIN[name] not in z.namelist():
            raise ValueError(f"{path} does not hold {MUST_CONTAIN[name]}; it is not the CoreNLP "
                             "3.6.0 jar SPICE needs")


def install(archive: Path, dest: Path) -> list[Path]:
    """Extract and check the two jars from the archive, then move them into ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    staged = []
    with zipfile.ZipFile(archive) as z:
        for name in JARS:
            fd, tmp = tempfile.mkstemp(dir=dest, prefix=f".{name}.", suffix=".part")
            with os.fdopen(fd, "wb") as out, z.open(f"{INNER}/{name}") as src:
                shutil.copyfileobj(src, out, CHUNK)
            staged.append((Path(tmp), dest / name))
    try:
        for tmp, final in staged:
            check_jar(tmp, final.name)
    except Exception:
        for tmp, _ in staged:
            tmp.unlink(missing_ok=True)
        raise
    for tmp, final in staged:
        os.replace(tmp, final)
    return [final for _, final in staged]


def main(argv: list[str] | None = None) -> int:
    from capkit.metrics.spice.official import corenlp_dir
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--zip", type=Path, help=f"a downloaded {INNER}.zip (skips the download)")
    p.add_argument("--dest", type=Path, help="folder for the two jars (default: SPICE's)")
    p.add_argument("--sha256", help="refuse an archive with another checksum")
    p.add_argument("--url", default=URL)
    args = p.parse_args(argv)
    dest = corenlp_dir(args.dest)
    with tempfile.TemporaryDirectory() as tmp:
        archive = args.zip
        if archive is None:
            archive = Path(tmp) / f"{INNER}.zip"
            print(f"downloading {args.url} (~400 MB) ...", file=sys.stderr)
            download(args.url, archive)
        digest = sha256_of(archive)
        print(f"sha256 {digest}  {archive.name}", file=sys.stderr)
        if args.sha256 and digest != args.sha256.lower():
            print(f"checksum mismatch: expected {args.sha256}", file=sys.stderr)
            return 1
        jars = install(archive, dest)
    for j in jars:
        print(j)
    return 0


if __name__ == "__main__":
    sys.exit(main())
