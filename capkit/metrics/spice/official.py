"""SPICE 1.0 (Anderson et al. 2016) through the official jar, for those who have its parser.

``spice(candidates, references)`` runs pycocoevalcap 1.2's ``spice-1.0.jar`` on PTB-tokenised,
lower-cased captions, as COCOEvalCap does. It needs Stanford CoreNLP 3.6.0, which no package
registry carries: get it once with ``python -m data_scripts.spice_corenlp`` (or put
``stanford-corenlp-3.6.0.jar`` and ``stanford-corenlp-3.6.0-models.jar`` in
``$CAPKIT_CORENLP_DIR``, default ``~/.cache/capkit/stanford-corenlp-3.6.0``). Nothing is
downloaded here. Without CoreNLP (or Java), use ``spice_lite``, its Java-free approximation.

What this wrapper fixes around the jar:

* Java 15+ has no JavaScript engine, which the jar needs only to pretty-print its output, so it
  fails after scoring; there capkit runs a 30-line Java source file (``RUNNER``, launched with
  Java 11+'s source launcher) that calls the same public SPICE classes and writes the JSON
  itself. ``--add-opens`` flags let its serialiser (fst 2.47) work on Java 16+.
* the parse cache lives in capkit's cache folder, not inside site-packages, and a read-only
  cache folder means parsing without it (one warning), not a crash;
* a time limit (``timeout``), an error with the jar's own message when it fails, and no NaN
  corpus score: a caption whose parse failed (``f`` = NaN) gets 0 with a warning, and the
  corpus score is the mean over the others, like the jar's own summary (pycocoevalcap's mean
  would be NaN).

Explained in notebooks/01_classic_metrics.ipynb, section "SPICE".
"""
from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import tempfile
import warnings
from pathlib import Path

import numpy as np

from capkit.metrics.inputs import prepare
from capkit.scores import Scores, make_signature

CORENLP_ENV = "CAPKIT_CORENLP_DIR"
CORENLP_JARS = ("stanford-corenlp-3.6.0.jar", "stanford-corenlp-3.6.0-models.jar")
# where data_scripts.spice_corenlp fetches them from (tests/test_spice.py checks both agree)
CORENLP_URL = "https://nlp.stanford.edu/software/stanford-corenlp-full-2015-12-09.zip"
ADD_OPENS = tuple(f"--add-opens=java.base/{p}=ALL-UNNAMED" for p in (
    "java.lang", "java.util", "java.io", "java.net", "java.text", "java.math",
    "java.util.concurrent", "java.lang.reflect", "java.nio"))
RUNNER_CLASS = "CapkitSpiceRunner"
RUNNER = """\
import edu.anu.spice.*;
import java.io.*;
import java.nio.charset.StandardCharsets;
import java.nio.file.*;
import java.util.*;
import org.json.simple.*;
import org.json.simple.parser.JSONParser;

/** What SpiceScorer.scoreBatch does (-subset), minus the JavaScript pretty-printer. */
public class CapkitSpiceRunner {
  public static void main(String[] args) throws Exception {
    Reader in = new InputStreamReader(new FileInputStream(args[0]), StandardCharsets.UTF_8);
    JSONArray input = (JSONArray) new JSONParser().parse(in);
    List<Object> ids = new ArrayList<>();
    List<String> tests = new ArrayList<>(), refs = new ArrayList<>();
    List<Integer> chunks = new ArrayList<>();
    for (Object o : input) {
      JSONObject item = (JSONObject) o;
      ids.add(item.get("image_id"));
      tests.add((String) item.get("test"));
      JSONArray r = (JSONArray) item.get("refs");
      chunks.add(r.size());
      for (Object x : r) refs.add((String) x);
    }
    SpiceParser parser = new SpiceParser(args[2].isEmpty() ? null : args[2],
                                         Integer.parseInt(args[3]), true);
    List<SceneGraph> refGraphs = parser.parseCaptions(refs, chunks);
    List<SceneGraph> testGraphs = parser.parseCaptions(tests);
    Map<String, TupleFilter> filters = new HashMap<>();
    filters.put("Object", TupleFilter.objectFilter);
    filters.put("Attribute", TupleFilter.attributeFilter);
    filters.put("Relation", TupleFilter.relationFilter);
    filters.put("Cardinality", TupleFilter.cardinalityFilter);
    filters.put("Color", TupleFilter.colorFilter);
    filters.put("Size", TupleFilter.sizeFilter);
    SpiceStats stats = new SpiceStats(filters, false);
    for (int i = 0; i < testGraphs.size(); i++)
      stats.score(ids.get(i), testGraphs.get(i), refGraphs.get(i), true);
    Files.write(Paths.get(args[1]), stats.toJSONString().getBytes(StandardCharsets.UTF_8));
  }
}
"""


def spice_dir() -> Path:
    """pycocoevalcap 1.2's ``spice`` folder (spice-1.0.jar and lib/)."""
    import importlib.util
    spec = importlib.util.find_spec("pycocoevalcap")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("SPICE's jar ships with pycocoevalcap: pip install "
                                "pycocoevalcap==1.2 (or use spice_lite, which needs no Java)")
    return Path(list(spec.submodule_search_locations)[0]) / "spice"


def corenlp_dir(folder: str | os.PathLike | None = None) -> Path:
    """Where the two CoreNLP 3.6.0 jars are expected (the documented folder)."""
    if folder is not None:
        return Path(folder).expanduser()
    from capkit.cache_files import cache_dir
    return Path(os.environ.get(CORENLP_ENV) or cache_dir() / "stanford-corenlp-3.6.0")


def _check_own_jars(jars: list[Path], folder) -> None:
    """Java runs these jars: in capkit's cache folder (the default place, not a folder the user
    named) they must be the user's own, as every cache file there (``cache_files``)."""
    from capkit.cache_files import cache_dir
    from capkit.cache_trust import trust_problem
    root = cache_dir()
    if folder is not None or os.environ.get(CORENLP_ENV) or root not in jars[0].absolute().parents:
        return
    for jar in jars:
        problem = trust_problem(jar, root)
        if problem is not None:
            raise PermissionError(f"capkit does not run the CoreNLP jar at {problem}: anyone who "
                                  "can write there could run code as you. Delete the folder and "
                                  "fetch it again (python -m data_scripts.spice_corenlp), or make "
                                  "it yours and private (chmod go-w).")


def find_corenlp(folder: str | os.PathLike | None = None) -> list[Path]:
    """The two CoreNLP 3.6.0 jars, or a FileNotFoundError that says how to get them."""
    places = [corenlp_dir(folder)]
    if folder is None:
        try:
            places.append(spice_dir() / "lib")     # pycocoevalcap's own downloader puts them here
        except FileNotFoundError:
            pass
    for place in places:
        jars = [place / name for name in CORENLP_JARS]
        if all(j.is_file() for j in jars):
            _check_own_jars(jars, folder)
            return jars
    raise FileNotFoundError(
        f"SPICE needs Stanford CoreNLP 3.6.0 ({' and '.join(CORENLP_JARS)}), not found in "
        f"{places[0]}. Get it once: from a capkit clone, `python -m data_scripts.spice_corenlp`; "
        f"otherwise download {CORENLP_URL} (~400 MB), unzip it and copy the two jars there (or "
        f"set ${CORENLP_ENV} to their folder); or use spice_lite, which approximates SPICE "
        "without Java")


def find_spice_java(java: str | None = None) -> str:
    """The ``java`` SPICE runs on (``java``, else ``$CAPKIT_JAVA``, else PATH), or a
    FileNotFoundError that says what to do."""
    from capkit.metrics.meteor.java import find_java
    where = java or os.environ.get("CAPKIT_JAVA") or "`java` on PATH"
    return find_java(java, missing=(
        f"SPICE needs a Java runtime (8+), and {where} was not found: install one (e.g. "
        "`apt-get install default-jre-headless`), then put it on PATH, set $CAPKIT_JAVA to it or "
        "pass java='/path/to/java'; or use spice_lite, which approximates SPICE without Java"))


@functools.lru_cache(maxsize=4)
def java_version(java: str) -> int:
    """Major version of a Java runtime (8 for 1.8)."""
    out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60)
    m = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if m is None:
        raise RuntimeError(f"cannot tell the version of {java}: {out.stderr.strip()[:200]}")
    major = int(m.group(1))
    return int(m.group(2) or 0) if major == 1 else major


def spice_command(java: str, version: int, input_json: Path, output_json: Path, *,
                  corenlp: list[Path], cache: Path | None, threads: int, memory: str,
                  runner: Path | None = None) -> list[str]:
    """The command line for one SPICE run (the jar's own main up to Java 14, else RUNNER)."""
    home = spice_dir()
    libs = [j for j in sorted((home / "lib").glob("*.jar")) if j.name not in CORENLP_JARS]
    jars = [home / "spice-1.0.jar", *corenlp, *libs]
    cmd = [java, f"-Xmx{memory}", "-Duser.language=en", "-Duser.country=US",
           "-Dfile.encoding=UTF-8"]
    if version >= 9:
        cmd += list(ADD_OPENS)
    cmd += ["-cp", os.pathsep.join(map(str, jars))]
    if version < 15:
        cmd += ["edu.anu.spice.SpiceScorer", str(input_json), "-out", str(output_json),
                "-subset", "-silent", "-threads", str(threads)]
        return cmd + (["-cache", str(cache)] if cache is not None else [])
    if runner is None:
        raise ValueError("Java 15+ needs the runner source file (runner=)")
    return cmd + [str(runner), str(input_json), str(output_json),
                  "" if cache is None else str(cache), str(threads)]


def parse_cache(folder: Path, root: Path) -> Path | None:
    """``folder`` (in the cache folder ``root``) for the jar's parse cache (an LMDB database,
    which manages concurrent runs itself), or None with one warning when it cannot be written
    or is not the user's own (``cache_files.trust_problem``: the jar reads its parses from it
    as they are): SPICE then parses anew."""
    from capkit.cache_files import unwritable_message, warn
    from capkit.cache_trust import make_private_folder, trust_problem, untrusted_message
    problem = trust_problem(folder, root)
    if problem is not None:
        warn(untrusted_message(problem, "SPICE's parses"))
        return None
    try:
        make_private_folder(folder, root)
        tempfile.TemporaryFile(dir=folder).close()    # LMDB writes its lock file there
    except OSError as err:
        warn(unwritable_message(folder, err, "SPICE's parses"))
        return None
    return folder


def run_spice(tests: list[str], refs: list[list[str]], *, corenlp_folder=None, java=None,
              timeout: float = 3600, threads: int | None = None, memory: str = "8G",
              use_cache: bool = True) -> list[dict]:
    """The jar's per-caption ``scores`` dicts for aligned inputs (``f`` may be NaN)."""
    from capkit.cache_files import cache_dir
    java = find_spice_java(java)
    corenlp = find_corenlp(corenlp_folder)
    version = java_version(java)
    cache = parse_cache(cache_dir() / "spice" / "parse-cache", cache_dir()) if use_cache else None
    with tempfile.TemporaryDirectory(prefix="capkit-spice-") as tmp:
        tmp = Path(tmp)
        runner = None
        if version >= 15:
            runner = tmp / f"{RUNNER_CLASS}.java"
            runner.write_text(RUNNER, encoding="utf-8")
        data = [{"image_id": k, "test": t, "refs": r} for k, (t, r) in enumerate(zip(tests, refs))]
        (tmp / "in.json").write_text(json.dumps(data), encoding="utf-8")
        cmd = spice_command(java, version, tmp / "in.json", tmp / "out.json", corenlp=corenlp,
                            cache=cache, threads=threads or os.cpu_count() or 1, memory=memory,
                            runner=runner)
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                                  cwd=spice_dir())
        except subprocess.TimeoutExpired:
            raise TimeoutError(f"SPICE did not finish in {timeout:g} s and was stopped; raise "
                               "timeout= (parsing takes ~1 s per 10 captions on first use; the "
                               "parse cache makes reruns fast)") from None
        if done.returncode != 0 or not (tmp / "out.json").is_file():
            raise RuntimeError(f"SPICE failed (exit {done.returncode}, Java {version}); its "
                               f"error output ends with:\n{done.stderr[-2000:]}")
        results = json.loads((tmp / "out.json").read_text(encoding="utf-8"))
    by_id = {item["image_id"]: item["scores"] for item in results}
    return [by_id[k] for k in range(len(tests))]


def spice(candidates, references=None, images=None, *, tokenizer: str = "ptb",
          corenlp_dir: str | None = None, timeout: float = 3600, threads: int | None = None,
          memory: str = "8G", java: str | None = None) -> Scores:
    """Official SPICE F1 per caption (needs Java and CoreNLP 3.6.0); corpus = mean F1.

    ``parts``: ``precision``, ``recall`` and each tuple category's F1 (``object``,
    ``attribute``, ``relation``, ``cardinality``, ``color``, ``size``; NaN where a category has
    no reference tuple, as the jar reports).
    """
    batch = prepare(candidates, references, tokenizer)
    tests = [" ".join(t) for t in batch.candidates]
    refs = [[" ".join(t) for t in rs] for rs in batch.references]
    scores = run_spice(tests, refs, corenlp_folder=corenlp_dir, java=java, timeout=timeout,
                       threads=threads, memory=memory)

    def column(category, key):
        return np.array([_number(s.get(category, {}).get(key)) for s in scores])

    f = column("All", "f")
    failed = np.flatnonzero(~np.isfinite(f))
    if len(failed):
        names = [batch.ids[i] if batch.ids else str(i) for i in failed[:5]]
        warnings.warn(f"SPICE gave no score for {len(failed)} caption(s) (a failed parse; "
                      f"first: {names}); they score 0 and the corpus score is the mean of the "
                      "others", stacklevel=2)
    corpus = float(np.nanmean(f)) if np.isfinite(f).any() else float("nan")
    parts = {"precision": column("All", "pr"), "recall": column("All", "re"), "failed": failed}
    for cat in ("Object", "Attribute", "Relation", "Cardinality", "Color", "Size"):
        parts[cat.lower()] = column(cat, "f")
    sig = make_signature("spice", version="1.0", parser="corenlp-3.6.0", synsets="meteor-1.5",
                         corpus="mean-of-parsed", tok=batch.tokenizer)
    return Scores("spice", np.nan_to_num(f, nan=0.0), corpus, sig, batch.ids, parts)


def _number(x) -> float:
    try:
        return float(x)
    except (TypeError, ValueError):
        return float("nan")
