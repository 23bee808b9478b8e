"""The checks of experiment exercises: a student's run against capkit's own test of that run.

An experiment exercise trains or rescores models and decides something from a paired test. Its
check cannot compare with a number fixed in advance (trained weights differ in their last digits
from one CPU to another), so it checks what holds on every machine: the runs differ only in the
factor under study, the student's paired comparison equals capkit's on the student's own models,
and the student's decision rule reads intervals the way the reference rule does.

One implementation serves every such exercise: an ``Ablation`` names the factor, the benchmark,
the metric a trained model becomes, the recorded settings the factor may change and how to see
that it was switched off; ``check_ablation`` and ``interval_verdict`` do the rest.

``check_attention_experiment``    notebooks/06_intrinsic_i2ce.ipynb, Exercise 6.3: I2CE's
                                  auto-encoder with and without attention on Flickr8k-Expert
``check_monte_carlo_experiment``  notebooks/05_learned_critic.ipynb, Exercise 5.5: the LEIC
                                  critic with and without Monte Carlo fakes on Flickr8k-Expert
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Callable

__all__ = ["ATTENTION", "ATTENTION_KEY", "MONTE_CARLO", "MONTE_CARLO_KEY", "Ablation",
           "attention_verdict", "check_ablation", "check_attention_experiment",
           "check_monte_carlo_experiment", "interval_verdict", "monte_carlo_verdict"]

# made-up 95% intervals the student's verdict is also checked on (above, below, across, at 0)
MADE_UP = ((0.4, 3.0), (-5.0, -0.1), (-1.0, 2.0), (0.0, 1.0))
_NOT_SETTINGS = ("model_config", "history", "command")     # what may differ between any two runs


@dataclass(frozen=True)
class Ablation:
    """One factor of a training recipe switched off, the two runs compared on one benchmark.

    ``factor`` names it in messages ("attention"); ``trainer`` is the function whose results
    the runs must be; ``metric(model)`` is the scorer a trained model becomes; ``changes`` are
    the recorded settings (``model.meta``) that switching the factor off may change besides
    ``_NOT_SETTINGS``; ``switched_off(with_run, without_run)`` returns why the runs do not show
    the factor on and off, or None; ``verdicts``: the interval of *without minus with* above 0,
    below 0, including 0."""
    factor: str
    benchmark: str
    trainer: str
    metric: Callable
    switched_off: Callable
    verdicts: tuple[str, str, str]
    changes: tuple[str, ...] = ()

    @property
    def key(self) -> tuple[str, str, str]:
        """benchmark, metric, against: the paired comparison the exercise reads."""
        return (self.benchmark, "without", "with")


def interval_verdict(comparison, verdicts: tuple[str, str, str]) -> str:
    """The reference rule: the 95% interval of *without minus with* lies above 0
    (``verdicts[0]``: the factor hurts), below 0 (``verdicts[1]``: it helps), or includes 0
    (``verdicts[2]``: no difference shown)."""
    if comparison.low > 0:
        return verdicts[0]
    if comparison.high < 0:
        return verdicts[1]
    return verdicts[2]


def _settings(run, changes=()) -> dict:
    return {k: v for k, v in run.model.meta.items() if k not in _NOT_SETTINGS + changes}


def check_ablation(ablation: Ablation, runs, verdict, *, preset: str, seed: int,
                   n_boot: int) -> tuple[bool, str]:
    """(passed, why) for ``runs = {"with": run, "without": run, "bench": BenchResults}`` (each
    run what ``ablation.trainer`` returns) and the student's ``verdict(comparison) -> str``.

    The runs must share every recorded setting (preset, seed, schedule, threads, corpus,
    vocabulary ...) but the factor; the student's paired comparison must equal capkit's,
    recomputed here on the student's two models with the same resamples; ``verdict`` must agree
    with ``interval_verdict`` on that comparison and on made-up intervals."""
    from capkit.meta_eval import benchmark
    factor = ablation.factor
    missing = {"with", "without", "bench"} - set(runs)
    if missing:
        return False, f"the returned dict has no {sorted(missing)}"
    try:
        with_, without = (_settings(runs[n], ablation.changes) for n in ("with", "without"))
    except AttributeError:
        return False, f"'with' and 'without' must be what {ablation.trainer} returns"
    if with_ != without:
        differ = sorted(k for k in with_.keys() | without.keys() if with_.get(k) != without.get(k))
        return False, f"the two runs differ in more than {factor}: {differ}"
    if (with_.get("preset"), with_.get("seed")) != (preset, seed):
        return False, (f"the runs are {with_.get('preset')!r}, seed {with_.get('seed')}: train "
                       f"{preset!r} with seed {seed}")
    wrong = ablation.switched_off(runs["with"], runs["without"])
    if wrong:
        return False, wrong
    yours = runs["bench"].comparisons.get(ablation.key)
    if yours is None:
        return False, (f"no paired comparison of 'without' against 'with' on {ablation.benchmark}"
                       " in your BenchResults (name the metrics so, and pass against=)")
    ours = benchmark({name: ablation.metric(runs[name].model) for name in ("without", "with")},
                     ablation.benchmark, n_boot=n_boot, seed=seed, against="with",
                     progress=False).comparisons[ablation.key]
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
            expected = interval_verdict(c, ablation.verdicts)
            if verdict(c) != expected:
                return False, (f"verdict on the interval [{c.low:+.1f}, {c.high:+.1f}] says "
                               f"{verdict(c)!r}, the interval says {expected!r}")
    except NotImplementedError:
        return False, "the experiment runs; `verdict` is not done yet"
    except Exception as err:                 # the student's function: reported, never raised
        return False, f"verdict raised {type(err).__name__}: {err}"
    return True, (f"two {preset} runs that differ in {factor} only; your paired comparison "
                  f"equals capkit's on your models; your verdict is right on {len(cases)} "
                  "intervals")


# -- Exercise 6.3: I2CE with and without attention -------------------------------------------

def _i2ce_metric(model):
    from capkit.metrics import i2ce
    return functools.partial(i2ce, model=model)


def _attention_off(with_run, without_run) -> str | None:
    width = {name: run.model.model.cfg.attention
             for name, run in (("with", with_run), ("without", without_run))}
    if width["with"] == 0 or width["without"] != 0:
        return f"attention sizes {width}: 'with' keeps the preset's, 'without' has 0"
    return None


ATTENTION = Ablation("attention", "flickr8k_expert", "training.train_i2ce", _i2ce_metric,
                     _attention_off, ("attention hurts", "attention helps",
                                      "no difference shown"))
ATTENTION_KEY = ATTENTION.key
attention_verdict = functools.partial(interval_verdict, verdicts=ATTENTION.verdicts)
attention_verdict.__doc__ = ("The reference rule of Exercise 6.3 (``interval_verdict`` with "
                             "ATTENTION's verdicts).")
check_attention_experiment = functools.partial(check_ablation, ATTENTION)


# -- Exercise 5.5: the LEIC critic with and without Monte Carlo fakes ------------------------

def _leic_metric(model):
    from capkit.metrics.leic import leic
    return functools.partial(leic, model=model)


def _monte_carlo_off(with_run, without_run) -> str | None:
    kinds = {name: list(run.model.meta.get("negatives", ()))
             for name, run in (("with", with_run), ("without", without_run))}
    if "MC" not in kinds["with"] or [k for k in kinds["with"] if k != "MC"] != kinds["without"]:
        return (f"fake kinds {kinds}: 'with' has Monte Carlo fakes ('MC'), 'without' the same "
                "kinds but 'MC'")
    if with_run.model.meta.get("world"):
        return "the runs are world critics: train on real captions (world=False)"
    return None


# variant, name and command follow the fake kinds; monte_carlo records the language model
MONTE_CARLO = Ablation("Monte Carlo fakes", "flickr8k_expert", "training.train_leic",
                       _leic_metric, _monte_carlo_off,
                       ("MC fakes hurt", "MC fakes help", "no difference shown"),
                       changes=("variant", "name", "negatives", "monte_carlo"))
MONTE_CARLO_KEY = MONTE_CARLO.key
monte_carlo_verdict = functools.partial(interval_verdict, verdicts=MONTE_CARLO.verdicts)
monte_carlo_verdict.__doc__ = ("The reference rule of Exercise 5.5 (``interval_verdict`` with "
                               "MONTE_CARLO's verdicts).")
check_monte_carlo_experiment = functools.partial(check_ablation, MONTE_CARLO)
