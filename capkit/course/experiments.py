"""The checks of experiment exercises: a student's run against capkit's own test of that run.

An experiment exercise trains or rescores models and decides something from a paired test. Its
check cannot compare with a number fixed in advance (trained weights differ in their last digits
from one CPU to another), so it checks what holds on every machine: the runs differ only in the
factor under study, the student's paired comparison equals capkit's on the student's own models,
and the student's decision rule reads intervals the way the reference rule does.

``check_attention_experiment``  notebooks/06_intrinsic_i2ce.ipynb, Exercise 6.3: I2CE's
                                auto-encoder with and without attention on Flickr8k-Expert
"""
from __future__ import annotations

import functools
from types import SimpleNamespace

__all__ = ["ATTENTION_KEY", "attention_verdict", "check_attention_experiment"]

# benchmark, metric, against: the paired comparison Exercise 6.3 reads (without minus with)
ATTENTION_KEY = ("flickr8k_expert", "without", "with")
# made-up 95% intervals the student's verdict is also checked on (above, below, across, at 0)
MADE_UP = ((0.4, 3.0), (-5.0, -0.1), (-1.0, 2.0), (0.0, 1.0))
_NOT_SETTINGS = ("model_config", "history", "command")     # what may differ between the runs


def attention_verdict(comparison) -> str:
    """The reference rule: the 95% interval of *without minus with* attention lies above 0
    ("attention hurts"), below 0 ("attention helps"), or includes 0 ("no difference shown")."""
    if comparison.low > 0:
        return "attention hurts"
    if comparison.high < 0:
        return "attention helps"
    return "no difference shown"


def _settings(run) -> dict:
    return {k: v for k, v in run.model.meta.items() if k not in _NOT_SETTINGS}


def check_attention_experiment(runs, verdict, *, preset: str, seed: int,
                               n_boot: int) -> tuple[bool, str]:
    """(passed, why) for ``runs = {"with": TrainResult, "without": TrainResult, "bench":
    BenchResults}`` and the student's ``verdict(comparison) -> str``.

    The runs must share every recorded setting (preset, seed, schedule, threads, corpus,
    vocabulary) but attention; the student's paired comparison must equal capkit's, recomputed
    here on the student's two models with the same resamples; ``verdict`` must agree with
    ``attention_verdict`` on that comparison and on made-up intervals."""
    from capkit.meta_eval import benchmark
    from capkit.metrics import i2ce
    missing = {"with", "without", "bench"} - set(runs)
    if missing:
        return False, f"the returned dict has no {sorted(missing)}"
    try:
        with_, without = _settings(runs["with"]), _settings(runs["without"])
    except AttributeError:
        return False, "'with' and 'without' must be what training.train_i2ce returns"
    if with_ != without:
        differ = sorted(k for k in with_.keys() | without.keys() if with_.get(k) != without.get(k))
        return False, f"the two runs differ in more than attention: {differ}"
    if (with_.get("preset"), with_.get("seed")) != (preset, seed):
        return False, (f"the runs are {with_.get('preset')!r}, seed {with_.get('seed')}: train "
                       f"{preset!r} with seed {seed}")
    width = {name: runs[name].model.model.cfg.attention for name in ("with", "without")}
    if width["with"] == 0 or width["without"] != 0:
        return False, f"attention sizes {width}: 'with' keeps the preset's, 'without' has 0"
    yours = runs["bench"].comparisons.get(ATTENTION_KEY)
    if yours is None:
        return False, ("no paired comparison of 'without' against 'with' on flickr8k_expert in "
                       "your BenchResults (name the metrics so, and pass against=)")
    ours = benchmark({name: functools.partial(i2ce, model=runs[name].model)
                      for name in ("without", "with")}, ATTENTION_KEY[0], n_boot=n_boot,
                     seed=seed, against="with", progress=False).comparisons[ATTENTION_KEY]
    if any(abs(a - b) > 1e-9 for a, b in [(yours.difference, ours.difference),
                                         (yours.low, ours.low), (yours.high, ours.high)]):
        return False, (f"your comparison {yours.difference:+.2f} [{yours.low:+.2f}, "
                       f"{yours.high:+.2f}] differs from capkit's on your models "
                       f"{ours.difference:+.2f} [{ours.low:+.2f}, {ours.high:+.2f}] (n_boot "
                       f"{n_boot}, seed {seed})")
    cases = [ours] + [SimpleNamespace(difference=(lo + hi) / 2, low=lo, high=hi)
                      for lo, hi in MADE_UP]
    try:
        for c in cases:
            if verdict(c) != attention_verdict(c):
                return False, (f"verdict on the interval [{c.low:+.1f}, {c.high:+.1f}] says "
                               f"{verdict(c)!r}, the interval says {attention_verdict(c)!r}")
    except NotImplementedError:
        return False, "the experiment runs; `verdict` is not done yet"
    except Exception as err:                 # the student's function: reported, never raised
        return False, f"verdict raised {type(err).__name__}: {err}"
    return True, (f"two {preset} runs that differ in attention only; your paired comparison "
                  f"equals capkit's on your models; your verdict is right on {len(cases)} "
                  "intervals")
