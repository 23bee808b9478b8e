"""The check of notebook 05's experiment exercise (5.5): a student's LEIC critics trained with and
without Monte Carlo fakes, against capkit's own paired test of the same two critics
(capkit.course.experiments, the machinery of Exercise 6.3)."""
import dataclasses
from types import SimpleNamespace

import pytest

from capkit.course.experiments import (MONTE_CARLO_KEY, check_monte_carlo_experiment,
                                       monte_carlo_verdict)
from capkit.meta_eval import benchmark
from capkit.metrics.leic import leic
from test_leic import _synthetic_corpus, toy_glove

pytestmark = pytest.mark.filterwarnings("ignore")


@pytest.fixture(scope="module")
def trained():
    """Real train_leic runs on the synthetic corpus (toy GloVe, one short epoch each)."""
    from capkit.models import glove as glove_module
    from capkit.training import caption_lm
    from capkit.training import leic as training
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(glove_module, "load_glove", lambda path=None: toy_glove())
        mp.setitem(caption_lm.LM_SCHEDULES, "tiny", dataclasses.replace(
            caption_lm.LM_SCHEDULES["tiny"], pool=50, val_pool=20))
        schedule = training.Schedule(epochs=1, images_per_step=20, max_val_images=40)
        run = lambda variant, **kw: training.train_leic(variant, "tiny", schedule=schedule,
                                                        corpus=_synthetic_corpus(), **kw)
        return {"leic": run("leic"), "leic_mc": run("leic_mc"), "seed1": run("leic", seed=1),
                "leic_rc": run("leic_rc"), "epochs": training.train_leic(
                    "leic", "tiny", corpus=_synthetic_corpus(),
                    schedule=dataclasses.replace(schedule, epochs=2))}


def experiment(trained, n_boot=20, seed=0, with_="leic_mc", without="leic"):
    runs = {"with": trained[with_], "without": trained[without]}
    runs["bench"] = benchmark({n: lambda c, r, m=runs[n].model: leic(c, r, model=m)
                               for n in ("with", "without")}, MONTE_CARLO_KEY[0],
                              n_boot=n_boot, seed=seed, against="with", progress=False)
    return runs


def test_a_correct_run_passes_and_every_mistake_is_named(trained):
    runs = experiment(trained)
    check = lambda verdict, **kw: check_monte_carlo_experiment(
        runs, verdict, **{"preset": "tiny", "seed": 0, "n_boot": 20, **kw})
    ok, why = check(monte_carlo_verdict)
    assert ok, why
    assert "differ in Monte Carlo fakes only" in why and "right on 5 intervals" in why
    ok, why = check(lambda c: "MC fakes help")
    assert not ok and "verdict on the interval" in why
    ok, why = check(monte_carlo_verdict, n_boot=30)
    assert not ok and "differs from capkit's on your models" in why
    ok, why = check(monte_carlo_verdict, preset="small")
    assert not ok and "train 'small' with seed 0" in why

    def stub(comparison):
        raise NotImplementedError()
    ok, why = check(stub)
    assert not ok and "not done yet" in why


def test_runs_that_differ_in_more_than_the_fakes_fail(trained):
    check = lambda runs: check_monte_carlo_experiment(runs, monte_carlo_verdict, preset="tiny",
                                                      seed=0, n_boot=20)
    ok, why = check(experiment(trained, without="seed1"))
    assert not ok and "differ in more than Monte Carlo fakes: ['seed']" in why
    ok, why = check(experiment(trained, without="epochs"))
    assert not ok and "['schedule']" in why
    ok, why = check(experiment(trained, with_="leic", without="leic_mc"))      # swapped
    assert not ok and "'with' has Monte Carlo fakes" in why
    ok, why = check(experiment(trained, without="leic_rc"))          # drops system, WP, RW too
    assert not ok and "fake kinds" in why
    ok, why = check({"with": 1})
    assert not ok and "no ['bench', 'without']" in why
    ok, why = check({"with": 1, "without": 2, "bench": None})
    assert not ok and "training.train_leic" in why


def test_the_reference_verdict_reads_the_interval():
    at = lambda lo, hi: SimpleNamespace(difference=(lo + hi) / 2, low=lo, high=hi)
    assert monte_carlo_verdict(at(0.1, 2)) == "MC fakes hurt"
    assert monte_carlo_verdict(at(-2, -0.1)) == "MC fakes help"
    assert monte_carlo_verdict(at(-1, 1)) == monte_carlo_verdict(at(0, 1)) == "no difference shown"
