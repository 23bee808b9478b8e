"""Test-side harness: run the real Stanford PTBTokenizer (CoreNLP 3.4.1, the jar bundled with
pycocoevalcap 1.2) the way pycocoevalcap does, but aligned: one JVM for a whole list of captions.

pycocoevalcap writes the captions one per line and runs
``java -cp stanford-corenlp-3.4.1.jar edu.stanford.nlp.process.PTBTokenizer -preserveLines -lowerCase``;
with -preserveLines the tool prints one output line per input line. Every character the lexer
treats as a line break (not only "\\n") is replaced by a space beforehand, so no caption can
shift the later lines, and the line count is checked. A separator line between captions keeps
one caption's tokens from depending on its neighbour (see ``java_ptb_raw``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Sequence

# pycocoevalcap's punctuation filter (tokenizer/ptbtokenizer.py), applied to the lower-cased tokens.
PUNCTUATIONS = frozenset(
    ["''", "'", "``", "`", "-LRB-", "-RRB-", "-LCB-", "-RCB-", ".", "?", "!", ",", ":", "-", "--", "...", ";"]
)

# Characters the 3.4.1 lexer ends a line at (its NEWLINE macro: \r, \n, \r\n, VT, FF, U+2028,
# U+2029; U+0085 is in the macro too but loses to the ellipsis rule, so it never breaks a line).
LINE_BREAKS = "\r\n\x0b\x0c\u2028\u2029"
_LINE_BREAK_TABLE = str.maketrans({c: " " for c in LINE_BREAKS})


class JavaUnavailableError(RuntimeError):
    """Raised when ``java`` or the CoreNLP jar cannot be found."""


def corenlp_jar() -> Path:
    """Path of pycocoevalcap's stanford-corenlp-3.4.1.jar."""
    try:
        import pycocoevalcap.tokenizer.ptbtokenizer as ptb
    except ImportError as e:  # pragma: no cover - dev dependency missing
        raise JavaUnavailableError("pycocoevalcap is not installed, so the CoreNLP jar is missing") from e
    jar = Path(ptb.__file__).resolve().parent / ptb.STANFORD_CORENLP_3_4_1_JAR
    if not jar.is_file():
        raise JavaUnavailableError(f"CoreNLP jar not found at {jar}")
    return jar


def java_executable() -> str:
    java = shutil.which("java")
    if java is None:
        raise JavaUnavailableError("no `java` executable on PATH; the reference PTB tokenizer needs a Java runtime")
    return java


def java_available() -> bool:
    try:
        java_executable()
        corenlp_jar()
    except JavaUnavailableError:
        return False
    return True


def java_ptb_raw(captions: Sequence[str]) -> list[str]:
    """Raw space-joined Java tokens per caption (lower-cased, before the punctuation filter).

    Raises JavaUnavailableError without a Java runtime or the jar, UnicodeEncodeError for a lone
    surrogate (which pycocoevalcap could not write either)."""
    java, jar = java_executable(), corenlp_jar()
    if not captions:
        return []
    # Every caption is followed by a separator line holding only U+0001, which the lexer deletes
    # (so that line comes out empty) and which no lookahead rule accepts. Without it the last
    # token of a caption could depend on the NEXT caption ("... the letter S." + "A dog ..." is
    # lexed like a sentence end, "s ."; "fig." + "3 cats" stays "fig.").
    text = "".join(c.translate(_LINE_BREAK_TABLE) + "\n\x01\n" for c in captions)
    fd, path = tempfile.mkstemp(suffix=".txt", prefix="ptb_java_")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        proc = subprocess.run(
            [java, "-cp", str(jar), "edu.stanford.nlp.process.PTBTokenizer", "-preserveLines", "-lowerCase", path],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            check=False,
            timeout=900,
        )
    finally:
        os.remove(path)
    if proc.returncode != 0:
        raise RuntimeError(f"PTBTokenizer failed (exit {proc.returncode}): {proc.stderr.decode(errors='replace')[-2000:]}")
    lines = proc.stdout.decode("utf-8").replace("\r\n", "\n").split("\n")  # (newLine() is \r\n on Windows)
    # Every input line ends with "\n", so the output ends with one too: drop the empty tail.
    if lines and lines[-1] == "":
        lines.pop()
    if len(lines) != 2 * len(captions) or any(lines[1::2]):
        raise RuntimeError(f"PTBTokenizer returned {len(lines)} lines for {len(captions)} captions + separators")
    return lines[0::2]


def java_ptb_tokenize(captions: Sequence[str]) -> list[str]:
    """What pycocoevalcap's PTBTokenizer makes of each caption, computed with one JVM call."""
    return [
        " ".join(w for w in line.rstrip().split(" ") if w not in PUNCTUATIONS) for line in java_ptb_raw(captions)
    ]


def java_ptb_at_end_of_input(caption: str) -> str:
    """What pycocoevalcap's PTBTokenizer makes of ``caption`` as the last line of its file,
    which it writes without a final line break: the lexer meets the end of the input there."""
    java, jar = java_executable(), corenlp_jar()
    fd, path = tempfile.mkstemp(suffix=".txt", prefix="ptb_java_")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(caption.translate(_LINE_BREAK_TABLE))
        proc = subprocess.run(
            [java, "-cp", str(jar), "edu.stanford.nlp.process.PTBTokenizer", "-preserveLines", "-lowerCase", path],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False, timeout=300)
    finally:
        os.remove(path)
    if proc.returncode != 0:
        raise RuntimeError(f"PTBTokenizer failed (exit {proc.returncode}): {proc.stderr.decode(errors='replace')[-2000:]}")
    line = proc.stdout.decode("utf-8").replace("\r\n", "\n").rstrip("\n")
    return " ".join(w for w in line.rstrip().split(" ") if w not in PUNCTUATIONS)
