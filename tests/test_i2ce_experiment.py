"""The check of notebook 06's experiment exercise (6.3): a student's run of I2CE with and without
attention against capkit's own paired test of the same two models (capkit.course.experiments)."""
from types import SimpleNamespace

import pytest
import torch

from capkit.course.experiments import (ATTENTION_KEY, attention_verdict,
                                       check_attention_experiment)
from capkit.meta_eval import benchmark
from capkit.metrics import i2ce
from capkit.models.i2ce import I2CE, AutoEncoder, get_config
from capkit.models.i2ce_vocab import build_vocabulary, embedding_matrix
from test_i2ce import WORDS, toy_glove

pytestmark = pytest.mark.filterwarnings("ignore")


def toy_run(attention: int | None, seed: int = 0, init: int = 0):
    """What train_i2ce returns, as far as the check reads it: .model, an I2CE with its meta.
    ``init`` seeds the weights (untrained, the two variants' encoders would be the same)."""
    glove = toy_glove()
    vocab = build_vocabulary([WORDS], glove, min_count=1)
    change = {} if attention is None else {"attention": attention}
    cfg = get_config("tiny", **change, vocab_size=len(vocab), embed_dim=glove.dim)
    torch.manual_seed(init)
    meta = {"preset": "tiny", "seed": seed, "threads": 1, "schedule": {"epochs": [2, 2]},
            **({"model_config": change} if change else {})}
    return SimpleNamespace(model=I2CE(AutoEncoder(cfg, embedding_matrix(vocab, glove, seed)),
                                      vocab, meta))


def experiment(n_boot: int = 20, seed: int = 0, **runs):
    runs = {"with": toy_run(None), "without": toy_run(0, init=1), **runs}
    runs["bench"] = benchmark({n: lambda c, r, m=runs[n].model: i2ce(c, r, model=m)
                               for n in ("with", "without")}, ATTENTION_KEY[0], n_boot=n_boot,
                              seed=seed, against="with", progress=False)
    return runs


def test_a_correct_run_passes_and_every_mistake_is_named():
    runs = experiment()
    ok, why = check_attention_experiment(runs, attention_verdict, preset="tiny", seed=0, n_boot=20)
    assert ok, why
    assert "differ in attention only" in why and "right on 5 intervals" in why
    ok, why = check_attention_experiment(runs, lambda c: "attention hurts", preset="tiny",
                                         seed=0, n_boot=20)
    assert not ok and "verdict on the interval" in why
    ok, why = check_attention_experiment(runs, attention_verdict, preset="tiny", seed=0, n_boot=30)
    assert not ok and "differs from capkit's on your models" in why
    ok, why = check_attention_experiment(runs, attention_verdict, preset="small", seed=0,
                                         n_boot=20)
    assert not ok and "train 'small' with seed 0" in why

    def stub(comparison):
        raise NotImplementedError()
    ok, why = check_attention_experiment(runs, stub, preset="tiny", seed=0, n_boot=20)
    assert not ok and "not done yet" in why


def test_runs_that_differ_in_more_than_attention_fail():
    runs = experiment(without=toy_run(0, seed=1, init=1))
    ok, why = check_attention_experiment(runs, attention_verdict, preset="tiny", seed=0, n_boot=20)
    assert not ok and "differ in more than attention: ['seed']" in why
    runs = experiment(without=toy_run(None))            # both keep attention
    ok, why = check_attention_experiment(runs, attention_verdict, preset="tiny", seed=0, n_boot=20)
    assert not ok
    ok, why = check_attention_experiment({"with": 1}, attention_verdict, preset="tiny", seed=0,
                                         n_boot=20)
    assert not ok and "no ['bench', 'without']" in why


def test_the_reference_verdict_reads_the_interval():
    at = lambda lo, hi: SimpleNamespace(difference=(lo + hi) / 2, low=lo, high=hi)
    assert attention_verdict(at(0.1, 2)) == "attention hurts"
    assert attention_verdict(at(-2, -0.1)) == "attention helps"
    assert attention_verdict(at(-1, 1)) == attention_verdict(at(0, 1)) == "no difference shown"
