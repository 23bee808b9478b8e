"""The original METEOR 1.5 jar as a backend: one persistent ``-stdio`` process.

Talks to ``meteor-1.5.jar - - -stdio -l en -norm`` (the jar and flags pycocoevalcap uses) the
way pycocoevalcap does: one ``SCORE ||| ref ||| ... ||| hyp`` line per caption (the jar answers
with its statistics), then one ``EVAL ||| stats ||| ...`` line (it answers with each caption's
score, then the corpus score). Differences from pycocoevalcap's wrapper, all deliberate:

* the JVM starts once per process and is reused (``java_backend``), and is stopped at exit;
* its locale is forced to English: the jar parses statistics with ``java.util.Scanner``,
  which expects a decimal comma under e.g. ``de_DE`` and then fails;
* input is sanitised: ``|||`` (the field separator) becomes ``| | |``, which the normaliser
  splits into the same tokens anyway, and line breaks become spaces, so no caption can shift
  the protocol (pycocoevalcap removes ``|||`` from captions only, not from references);
* a missing ``java``, a crash or a stuck JVM give an error that says what to do.

Explained in notebooks/01_classic_metrics.ipynb, section "METEOR".
"""
from __future__ import annotations

import atexit
import functools
import os
import queue
import re
import shutil
import subprocess
import tempfile
import threading

import numpy as np

from capkit.metrics.meteor.resources import meteor_files

_LINE_BREAKS = re.compile("[\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
JAVA_OPTIONS = ("-Xmx2G", "-Duser.language=en", "-Duser.country=US",
                "-Duser.language.format=en", "-Duser.country.format=US", "-Dfile.encoding=UTF-8")


def sanitize(text: str) -> str:
    """Make a caption safe for one ``|||``-separated protocol line."""
    return _LINE_BREAKS.sub(" ", text).replace("|||", "| | |")


def find_java(java: str | None = None, *, missing: str | None = None) -> str:
    """Path of the ``java`` executable (``java``, else ``$CAPKIT_JAVA``, else the one on PATH),
    or a FileNotFoundError that says what to do: ``missing``, else METEOR's message."""
    path = shutil.which(java or os.environ.get("CAPKIT_JAVA", "java"))
    if path is None:
        raise FileNotFoundError(missing or (
            "METEOR backend='java' needs a Java runtime, and no `java` is on PATH: install one "
            "(e.g. `apt-get install default-jre-headless`, any Java 8+), set $CAPKIT_JAVA to its "
            "path, or use backend='python', which gives the same scores without Java"))
    return path


class JavaMeteor:
    """A running ``meteor-1.5.jar -stdio`` process (a JVM: expensive, so kept alive)."""

    def __init__(self, meteor_dir: str | None = None, java: str | None = None,
                 timeout: float = 300.0):
        jar, _ = meteor_files(meteor_dir)
        self.command = [find_java(java), *JAVA_OPTIONS, "-jar", str(jar), "-", "-", "-stdio",
                        "-l", "en", "-norm"]
        self.timeout = timeout
        env = {**os.environ, "LC_ALL": "C.UTF-8", "LANG": "C.UTF-8"}
        self._stderr = tempfile.TemporaryFile()
        self._proc = subprocess.Popen(self.command, cwd=jar.parent, env=env,
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=self._stderr)
        self._lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self._lock = threading.Lock()

    def _read(self) -> None:
        try:
            for line in self._proc.stdout:
                self._lines.put(line.decode("utf-8").strip())
        except (OSError, ValueError):
            pass
        finally:
            self._proc.stdout.close()                           # this thread owns stdout
            self._lines.put(None)                               # end of stream

    def _readline(self) -> str:
        try:
            line = self._lines.get(timeout=self.timeout)
        except queue.Empty:
            self.close()
            raise TimeoutError(f"meteor-1.5.jar gave no answer in {self.timeout:g} s; it was "
                               "stopped. Raise timeout= for very large inputs") from None
        if line is None:
            self._proc.wait()
            self._stderr.seek(0)
            err = self._stderr.read().decode("utf-8", "replace")[-2000:]
            raise RuntimeError(f"meteor-1.5.jar exited (command: {' '.join(self.command)}); "
                               f"its error output ends with:\n{err}")
        return line

    def _write(self, lines: list[str]) -> None:
        data = "".join(line + "\n" for line in lines).encode("utf-8")
        threading.Thread(target=self._send, args=(data,), daemon=True).start()

    def _send(self, data: bytes) -> None:
        try:
            self._proc.stdin.write(data)
            self._proc.stdin.flush()
        except (BrokenPipeError, ValueError):
            pass                                   # the reader reports the exit

    def score(self, hyps: list[str], refs: list[list[str]]):
        """(per-caption scores, corpus score, (N, 23) jar statistics) for aligned inputs."""
        with self._lock:
            self._write([" ||| ".join(["SCORE", *map(sanitize, rs), sanitize(h)])
                         for h, rs in zip(hyps, refs)])
            stats = [self._readline() for _ in hyps]
            self._write([" ||| ".join(["EVAL", *stats])])
            per = np.array([float(self._readline()) for _ in hyps], dtype=np.float64)
            corpus = float(self._readline())
        table = np.array([[float(x) for x in s.split()] for s in stats], dtype=np.float64)
        return per, corpus, table.reshape(len(hyps), 23)

    def close(self) -> None:
        if self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()
        for stream in (self._proc.stdin, self._stderr):
            try:
                stream.close()
            except (OSError, ValueError):
                pass

    def __enter__(self) -> "JavaMeteor":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


@functools.lru_cache(maxsize=2)
def java_backend(meteor_dir: str | None = None) -> JavaMeteor:
    """The process-wide jar process (started on first use, stopped at exit)."""
    proc = JavaMeteor(meteor_dir)
    atexit.register(proc.close)
    return proc


def jar_stats_to_capkit(table: np.ndarray) -> np.ndarray:
    """The jar's 23 statistics -> capkit's 21 (``meteor.STATS`` order)."""
    table = np.asarray(table, dtype=np.float64).reshape(-1, 23)
    stages = table[:, 4:20].reshape(-1, 4, 4)     # per stage: test/ref content, test/ref function
    return np.concatenate([table[:, :4], stages[:, :, 0], stages[:, :, 1], stages[:, :, 2],
                           stages[:, :, 3], table[:, 20:21]], axis=1)


def java_meteor(hyps: list[str], refs: list[list[str]], meteor_dir: str | None = None):
    """(per-caption scores, corpus score, (N, 21) statistics) from the jar."""
    if not hyps:
        return np.zeros(0), float("nan"), np.zeros((0, 21))
    backend = java_backend(meteor_dir)
    if backend._proc.poll() is not None:                  # died earlier: start a new one
        java_backend.cache_clear()
        backend = java_backend(meteor_dir)
    per, corpus, table = backend.score(hyps, refs)
    return per, corpus, jar_stats_to_capkit(table)
