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
    # token_cache=False: every repeat tokenises, as a first run does (metrics.token_cache)
    t_tok, batch = median_time(lambda: prepare(cands, refs, token_cache=False), repeat)

    def fresh() -> CaptionBatch:       # the same tokens, no cached n-gram tables
        return CaptionBatch(batch.candidates, batch.references, batch.ids, batch.tokenizer)

    t_bleu, _ = median_time(lambda: bleu(fresh()), repeat)
    t_rouge, _ = median_time(lambda: rouge_l(fresh()), repeat)
    t_cider, _ = median_time(lambda: cider_d(fresh()), repeat)

    def end_to_end():
        b = prepare(cands, refs, token_cache=False)
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

    capkit: ``python -m capkit score --metrics bleu_4,rouge_l,cider_d --format json``, timed
    four times: as a first run (a cache folder without the references' tokens each time, so it
    tokenises them and saves their tokens, in a child process while it starts:
    ``commands.tokenize_ahead``; the lexer's compiled pattern is there, ``first_run_folder``),
    as a first run without that child (``CAPKIT_TOKENIZE_AHEAD=0``), as a first run with an
    empty cache folder (the first run on a machine: the lexer compiled and saved too), and as a
    repeated run against the same references (their tokens read from the cache,
    ``metrics.token_cache``); pycocoevalcap: a script reading the same files, its PTBTokenizer
    (Java) and the three scorers. The sides run alternately, ``repeat`` times
    each, after both packages' bytecode is compiled (``compile_bytecode``). Returns each side's
    median and best (fastest) times and the ratios, the largest corpus-score difference and
    whether the bytecode was compiled. The best time is the one least slowed by other work on
    the machine (on a small shared machine, a long pycocoevalcap run leaves the CPU slower for
    several seconds after it).
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
    env = {k: v for k, v in os.environ.items() if k != "CAPKIT_TOKEN_CACHE"}
    times: dict[str, list[float]] = {"capkit": [], "capkit_alone": [], "capkit_empty": [],
                                     "capkit_repeated": [], "pycocoevalcap": []}
    outputs: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="capkit-bench-") as tmp:
        warm = {**env, "CAPKIT_CACHE_DIR": os.path.join(tmp, "warm")}
        _run(ours, warm)                                 # fills the repeated runs' cache
        for i in range(repeat):     # alternating, so that all sides meet the same machine load
            warm_dir = os.path.join(tmp, "warm")
            cold = {**env, "CAPKIT_CACHE_DIR": first_run_folder(warm_dir, os.path.join(tmp, f"cold-{i}"))}
            alone = {**env, "CAPKIT_CACHE_DIR": first_run_folder(warm_dir, os.path.join(tmp, f"alone-{i}")),
                     "CAPKIT_TOKENIZE_AHEAD": "0"}
            empty = {**env, "CAPKIT_CACHE_DIR": os.path.join(tmp, f"empty-{i}")}
            for side, command, side_env in [("pycocoevalcap", theirs, None),
                                             ("capkit", ours, cold),
                                             ("capkit_alone", ours, alone),
                                             ("capkit_empty", ours, empty),
                                             ("capkit_repeated", ours, warm)]:
                start = time.perf_counter()
                outputs[side] = _run(command, side_env)
                times[side].append(time.perf_counter() - start)
    if len({outputs[side] for side in times if side.startswith("capkit")}) != 1:
        raise RuntimeError("capkit score printed other scores when it read the references' "
                           "tokens from its cache or tokenised them in a child process: "
                           "report this as a bug")
    med = {side: statistics.median(t) for side, t in times.items()}
    best = {side: min(t) for side, t in times.items()}
    a = {m: v["corpus"] for m, v in json.loads(outputs["capkit"])["metrics"].items()}
    b = json.loads(outputs["pycocoevalcap"].strip().splitlines()[-1])  # its Bleu prints stats first
    theirs_s, theirs_best = med["pycocoevalcap"], best["pycocoevalcap"]
    return {"capkit_s": med["capkit"], "pycocoevalcap_s": theirs_s,
            "ratio": theirs_s / med["capkit"],
            "capkit_best_s": best["capkit"], "pycocoevalcap_best_s": theirs_best,
            "best_ratio": theirs_best / best["capkit"],
            "capkit_alone_s": med["capkit_alone"], "alone_ratio": theirs_s / med["capkit_alone"],
            "capkit_empty_s": med["capkit_empty"], "empty_ratio": theirs_s / med["capkit_empty"],
            "capkit_repeated_s": med["capkit_repeated"],
            "repeated_ratio": theirs_s / med["capkit_repeated"],
            "capkit_repeated_best_s": best["capkit_repeated"],
            "repeated_best_ratio": theirs_best / best["capkit_repeated"],
            "max_corpus_diff": max(abs(a[m] - b[m]) for m in b), "bytecode_compiled": compiled}


def first_run_folder(warm: str, folder: str) -> str:
    """``folder``, made a cache folder for a first run: no tokens file, but the tokenizer's
    compiled lexer pattern (``text.pattern_cache``) of the warm cache folder ``warm``, which a
    warm-up run saved and which any earlier capkit run on the machine leaves behind, as
    ``compile_bytecode`` leaves the modules' bytecode (also used by benchmarks/paired_runs.py)."""
    import os
    import shutil
    patterns = os.path.join(warm, "patterns")
    if os.path.isdir(patterns):
        shutil.copytree(patterns, os.path.join(folder, "patterns"))
    return folder


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
