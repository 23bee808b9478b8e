"""`capkit bench-speed`: capkit against pycocoevalcap 1.2 on the same system, in one run.

Both sides start from raw text and include tokenisation: pycocoevalcap runs its Java PTB
tokenizer (one JVM for the references, one for the candidates) and its Python scorers; capkit
runs its pure-Python PTB tokenizer and its array scorers. Each step is repeated and the median
is reported, with the largest difference between the two sides' corpus scores as a sanity check.

With ``meteor=True`` a "meteor" row follows (and ``total`` is unchanged): each side scores the
tokenised captions from a cold start, i.e. pycocoevalcap starts its JVM and loads the
paraphrase table (``Meteor()``) then scores; capkit drops its in-memory resources and reloads
them from its binary cache (built beforehand, once per machine) then scores.
"""
from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import numpy as np

from capkit.metrics import bleu, cider_d, prepare, rouge_l
from capkit.metrics.inputs import CaptionBatch


def median_time(fn: Callable[[], object], repeat: int) -> tuple[float, object]:
    """Median wall time of `repeat` calls of fn, and its last result."""
    _check_repeat(repeat)
    times, out = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


def _check_repeat(repeat: int) -> None:
    if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
        raise ValueError(f"repeat is the number of timed runs of each side, at least 1; "
                         f"got {repeat!r}")


def _reference_side(cands: dict[str, str], refs: dict[str, list[str]], repeat: int):
    try:
        from pycocoevalcap.bleu.bleu import Bleu
        from pycocoevalcap.cider.cider import Cider
        from pycocoevalcap.rouge.rouge import Rouge
        from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer
    except ImportError as err:
        raise RuntimeError("bench-speed compares against pycocoevalcap: "
                           "pip install pycocoevalcap==1.2 (and have Java on PATH)") from err

    def tok():
        t = PTBTokenizer()
        gts = t.tokenize({k: [{"caption": c} for c in v] for k, v in refs.items()})
        res = t.tokenize({k: [{"caption": c}] for k, c in cands.items()})
        return gts, res

    t_tok, (gts, res) = median_time(tok, repeat)
    t_bleu, b = median_time(lambda: Bleu(4).compute_score(gts, res, verbose=0), repeat)
    t_rouge, r = median_time(lambda: Rouge().compute_score(gts, res), repeat)
    t_cider, c = median_time(lambda: Cider().compute_score(gts, res), repeat)
    corpus = {"bleu_4": b[0][3], "rouge_l": r[0], "cider_d": c[0]}
    return {"tokenize": t_tok, "bleu": t_bleu, "rouge_l": t_rouge, "cider_d": t_cider}, corpus


def _capkit_side(cands: dict[str, str], refs: dict[str, list[str]], repeat: int):
    t_tok, batch = median_time(lambda: prepare(cands, refs), repeat)

    def fresh() -> CaptionBatch:       # the same tokens, no cached n-gram tables
        return CaptionBatch(batch.candidates, batch.references, batch.ids, batch.tokenizer)

    t_bleu, _ = median_time(lambda: bleu(fresh()), repeat)
    t_rouge, _ = median_time(lambda: rouge_l(fresh()), repeat)
    t_cider, _ = median_time(lambda: cider_d(fresh()), repeat)

    def end_to_end():
        b = prepare(cands, refs)
        return bleu(b), rouge_l(b), cider_d(b)

    t_all, (b, r, c) = median_time(end_to_end, repeat)
    corpus = {"bleu_4": b.corpus, "rouge_l": r.corpus, "cider_d": c.corpus}
    return {"tokenize": t_tok, "bleu": t_bleu, "rouge_l": t_rouge, "cider_d": t_cider,
            "total": t_all}, corpus


def _reference_meteor(cands: dict[str, str], refs: dict[str, list[str]], repeat: int):
    """pycocoevalcap's METEOR from a cold start (JVM + paraphrase table) on PTB tokens."""
    from pycocoevalcap.meteor.meteor import Meteor
    from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer
    t = PTBTokenizer()
    gts = t.tokenize({k: [{"caption": c} for c in v] for k, v in refs.items()})
    res = t.tokenize({k: [{"caption": c}] for k, c in cands.items()})

    def run():
        scorer = Meteor()
        try:
            return scorer.compute_score(gts, res)[0]
        finally:
            scorer.meteor_p.stdout.close()    # its __del__ kills the JVM but leaves these open
            scorer.meteor_p.stderr.close()
            del scorer

    return median_time(run, repeat)


def _capkit_meteor(cands: dict[str, str], refs: dict[str, list[str]], repeat: int):
    """capkit's METEOR from a cold start (resources reloaded from the binary cache)."""
    import importlib

    from capkit.metrics.meteor.resources import load_resources
    meteor_module = importlib.import_module("capkit.metrics.meteor")   # the module, not the fn
    batch = prepare(cands, refs)
    load_resources()                      # builds the binary cache if this machine has none

    def run():
        load_resources.cache_clear()
        meteor_module.lexicon.cache_clear()
        return meteor_module.meteor(batch).corpus

    return median_time(run, repeat)


def bench_speed(cands: dict[str, str], refs: dict[str, list[str]], repeat: int = 3,
                meteor: bool = False) -> dict:
    """Median seconds per step for both sides, their ratios and the corpus-score agreement.

    ``meteor=True`` adds a "meteor" row after "total" and ``meteor_corpus_diff``.
    """
    _check_repeat(repeat)
    ref_t, ref_scores = _reference_side(cands, refs, repeat)
    cap_t, cap_scores = _capkit_side(cands, refs, repeat)
    ref_t["total"] = ref_t["tokenize"] + ref_t["bleu"] + ref_t["rouge_l"] + ref_t["cider_d"]
    rows = [(step, ref_t[step], cap_t[step], ref_t[step] / cap_t[step]) for step in ref_t]
    diff = max(abs(ref_scores[m] - cap_scores[m]) for m in ref_scores)
    out = {"rows": rows, "max_corpus_diff": float(diff), "n_captions": len(cands),
           "n_references": int(np.sum([len(v) for v in refs.values()]))}
    if meteor:
        t_ref, m_ref = _reference_meteor(cands, refs, repeat)
        t_cap, m_cap = _capkit_meteor(cands, refs, repeat)
        rows.append(("meteor", t_ref, t_cap, t_ref / t_cap))
        out["meteor_corpus_diff"] = float(abs(m_ref - m_cap))
    return out


# what a pycocoevalcap user runs as a script: read the two files, tokenise, BLEU-4 + ROUGE-L + CIDEr-D
_PYCOCOEVALCAP_SCRIPT = """
import json, sys
from pycocoevalcap.bleu.bleu import Bleu
from pycocoevalcap.cider.cider import Cider
from pycocoevalcap.rouge.rouge import Rouge
from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer
cands, refs = (json.load(open(p)) for p in sys.argv[1:3])
t = PTBTokenizer()
gts = t.tokenize({k: [{"caption": c} for c in refs[k]] for k in cands})
res = t.tokenize({k: [{"caption": c}] for k, c in cands.items()})
b, r, c = (m.compute_score(gts, res)[0] for m in (Bleu(4), Rouge(), Cider()))
print(json.dumps({"bleu_4": b[3], "rouge_l": r, "cider_d": c}))
"""


def _run(command: list[str], env: dict[str, str] | None = None) -> str:
    import subprocess
    done = subprocess.run(command, capture_output=True, text=True, check=False, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command[:4])} ... failed: {done.stderr.strip()[-500:]}")
    return done.stdout


def whole_process(candidates_path: str, references_path: str, repeat: int = 3) -> dict:
    """Wall time of a whole process on each side, start-up and file reading included.

    capkit: ``python -m capkit score --metrics bleu_4,rouge_l,cider_d --format json`` with an
    empty cache folder of its own; pycocoevalcap: a script reading the same files, its
    PTBTokenizer (Java) and the three scorers. The sides run alternately, ``repeat`` times
    each, after both packages' bytecode is compiled (``compile_bytecode``). Returns each side's
    median and best (fastest) times and the ratios, the largest corpus-score difference and
    whether the bytecode was compiled. The best time is the one least slowed by other work on
    the machine.
    """
    _check_repeat(repeat)
    import json
    import os
    import sys
    import tempfile
    ours = [sys.executable, "-m", "capkit", "score", "--candidates", str(candidates_path),
            "--references", str(references_path), "--metrics", "bleu_4,rouge_l,cider_d",
            "--format", "json"]
    theirs = [sys.executable, "-c", _PYCOCOEVALCAP_SCRIPT, str(candidates_path),
              str(references_path)]
    compiled = compile_bytecode()
    times: dict[str, list[float]] = {"capkit": [], "pycocoevalcap": []}
    outputs: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="capkit-bench-") as tmp:
        env = {**os.environ, "CAPKIT_CACHE_DIR": os.path.join(tmp, "cache")}
        for _ in range(repeat):     # alternating, so that both sides meet the same machine load
            for side, command, side_env in [("pycocoevalcap", theirs, None), ("capkit", ours, env)]:
                start = time.perf_counter()
                outputs[side] = _run(command, side_env)
                times[side].append(time.perf_counter() - start)
    med = {side: statistics.median(t) for side, t in times.items()}
    best = {side: min(t) for side, t in times.items()}
    a = {m: v["corpus"] for m, v in json.loads(outputs["capkit"])["metrics"].items()}
    b = json.loads(outputs["pycocoevalcap"].strip().splitlines()[-1])  # its Bleu prints stats first
    return {"capkit_s": med["capkit"], "pycocoevalcap_s": med["pycocoevalcap"],
            "ratio": med["pycocoevalcap"] / med["capkit"],
            "capkit_best_s": best["capkit"], "pycocoevalcap_best_s": best["pycocoevalcap"],
            "best_ratio": best["pycocoevalcap"] / best["capkit"],
            "max_corpus_diff": max(abs(a[m] - b[m]) for m in b), "bytecode_compiled": compiled}


def compile_bytecode() -> bool:
    """Compile capkit's and pycocoevalcap's modules to bytecode before the whole-process runs,
    as ``pip install`` leaves an installed package. An editable install compiles a module at its
    first import, and with PYTHONDONTWRITEBYTECODE set (as on some shared machines) at every
    start, which would time the compiler instead of the tool. False if a folder is read-only."""
    import compileall

    import capkit
    import pycocoevalcap        # (a namespace package: no __file__, one folder in __path__)
    return all([compileall.compile_dir(folder, quiet=2)
                for package in (capkit, pycocoevalcap) for folder in package.__path__])


def measurement_record(args, results: dict, packages: tuple[str, ...] = ()) -> dict:
    """A benchmark's JSON record: the command that made it, the machine, the versions of what
    was timed, the date (UTC) and the results, so that a figure in the docs can be traced to
    the run that printed it (docs/measurements/). ``packages``: versions to record beside
    capkit's, numpy's and pycocoevalcap's."""
    import datetime
    import json
    import os
    import platform
    import sys
    from importlib.metadata import PackageNotFoundError, version

    def installed(name: str) -> str | None:
        try:
            return version(name)
        except PackageNotFoundError:
            return None

    options = {k: v for k, v in vars(args).items() if k not in ("func", "record")}
    options = json.loads(json.dumps(options, default=str))     # paths as text
    return {"command": "capkit " + " ".join(sys.argv[1:]) if sys.argv[1:] else "capkit",
            "options": options,
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "machine": {"platform": platform.platform(), "processor": platform.machine(),
                        "cpus": os.cpu_count(), "load_average": list(os.getloadavg())
                        if hasattr(os, "getloadavg") else None},
            "versions": {"python": platform.python_version(),
                         **{name: installed(name) for name in
                            ("capkit", "numpy", "pycocoevalcap", *packages)}},
            "results": results}


def speed_table(record: dict) -> str:
    """The Markdown table docs/speed.md shows, rendered from a ``bench-speed --whole-process
    --record`` record (tests/test_docs_records.py checks that the page holds it)."""
    whole = record["results"]["whole_process"]
    total = {row[0]: row for row in record["results"]["in_process"]["rows"]}["total"]
    rows = [("whole process, median", whole["pycocoevalcap_s"], whole["capkit_s"], whole["ratio"]),
            ("whole process, fastest runs", whole["pycocoevalcap_best_s"],
             whole["capkit_best_s"], whole["best_ratio"]),
            ("in process, all steps", total[1], total[2], total[3])]
    lines = ["| measure | pycocoevalcap | capkit | ratio |", "|---|---|---|---|"]
    lines += [f"| {name} | {a:.2f} s | {b:.2f} s | {r:.1f}x |" for name, a, b, r in rows]
    return "\n".join(lines)

