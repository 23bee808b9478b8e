"""The world captioner (#12.2a): save / load, deterministic training and decoding, the shipped
checkpoints ordered in quality on held-out scenes, training on train-split scenes only, the CLI,
and its captions as world systems in world_expert / world_systems."""
import dataclasses
import hashlib
import json

import numpy as np
import pytest
import torch

from capkit.models import world_captioner as C
from capkit.world import check
from capkit.world.splits import BENCHMARKS, TRAINING, seed_words, split_scenes

QUICK = dict(n_scenes=120, steps=40, save_at=(5, 40), batch_size=16, warmup=4, n_val=24)


def _run(**changes):
    from capkit.training.world_captioner import SCHEDULES, train_world_captioner
    schedule = dataclasses.replace(SCHEDULES["tiny"], **QUICK)
    return train_world_captioner("tiny", schedule=schedule, **changes)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    return [_run(out=tmp_path_factory.mktemp(f"run{k}"), seed=0) for k in range(2)]


@pytest.fixture(scope="module")
def held_out():
    scenes = split_scenes("val", 200, seed=5)
    return scenes, np.stack([np.asarray(s.render(64)) for s in scenes])


def test_short_training_is_deterministic_byte_for_byte(trained):
    a, b = trained
    for step in QUICK["save_at"]:
        assert a.paths[step].read_bytes() == b.paths[step].read_bytes()
    assert a.paths[5].read_bytes() != a.paths[40].read_bytes()


def test_short_training_lowers_the_loss(trained):
    losses = trained[0].losses
    assert np.mean(losses[-5:]) < np.mean(losses[:5]) - 0.3


def test_training_does_not_touch_the_global_rng():
    """Seeding is for the run only (as i2ce, LEIC and capkit.models.runtime.seeded do)."""
    from capkit.training.world_captioner import Schedule, train_world_captioner
    torch.manual_seed(1234)
    want = torch.rand(3)
    torch.manual_seed(1234)
    train_world_captioner("tiny", schedule=Schedule(n_scenes=20, steps=1, save_at=(1,),
                                                    batch_size=4, warmup=1, n_val=4))
    assert torch.equal(torch.rand(3), want)


def test_round_trip_gives_identical_captions(trained, held_out):
    run = trained[0]
    back = C.read_checkpoint(run.paths[40])
    _, images = held_out
    assert back.caption(images[:20]) == run.captioners[40].caption(images[:20])
    assert back.meta["sha256"] == hashlib.sha256(run.paths[40].read_bytes()).hexdigest()
    assert back.meta["step"] == 40 and back.meta["val"] == run.history[-1]
    assert back.words == run.captioners[40].words


def test_greedy_decoding_is_deterministic(held_out):
    model = C.load_world_captioner()
    _, images = held_out
    first = model.caption(images[:50])
    assert model.caption(images[:50]) == first
    assert C.read_checkpoint(C.shipped_path(C.SHIPPED_STEPS[-1])).caption(images[:50]) == first


def test_shipped_checkpoints_range_from_weak_to_good(held_out):
    scenes, images = held_out
    truth = []
    for step in C.SHIPPED_STEPS:
        captions = C.load_world_captioner(step).caption(images)
        truth.append(np.mean([check(s, c).true is True for s, c in zip(scenes, captions)]))
    assert truth == sorted(truth) and truth[0] < truth[-1] - 0.3
    assert truth[-1] > 0.4                          # the good one: true about half the time


def test_training_reads_train_split_scenes_only(monkeypatch):
    from capkit.training import world_captioner as T
    seen = []

    def spy(split, n, seed=0):
        seen.append((split, n, seed))
        return split_scenes(split, n, seed)
    monkeypatch.setattr(T, "split_scenes", spy)
    _run(seed=3)
    assert {s for s, _, _ in seen} == {"train", "val"} <= set(TRAINING)
    used = set().union(*(seed_words(s, n, seed) for s, n, seed in seen))
    for bench in BENCHMARKS:
        assert not used & seed_words(bench, 1000, 3)


def test_shipped_checkpoints_are_small_and_record_their_command():
    paths = [C.shipped_path(s) for s in C.SHIPPED_STEPS]
    assert sum(p.stat().st_size for p in paths) < 20 * 2 ** 20
    for step in C.SHIPPED_STEPS:
        meta = C.load_world_captioner(step).meta
        assert meta["step"] == step and meta["seed"] == 0 and meta["threads"] == 1
        assert meta["command"] == "capkit train world-captioner --preset small --seed 0 --threads 1"


def test_errors_say_what_to_do(tmp_path, held_out):
    with pytest.raises(ValueError, match=r"scene.render\(64\)"):
        C.load_world_captioner().caption(np.zeros((2, 32, 32, 3), np.uint8))
    renders = held_out[1][:2]
    with pytest.raises(ValueError, match=r"must be uint8.*\(img \* 255\)"):   # read as 0..1 once
        C.load_world_captioner().caption(renders / 255.0)
    with pytest.raises(ValueError, match=r"\(N, 64, 64, 3\)"):
        C.load_world_captioner().caption(renders[0])
    assert C.load_world_captioner().caption(list(renders)) == C.load_world_captioner().caption(renders)
    with pytest.raises(ValueError, match="ships world-captioner checkpoints after steps"):
        C.load_world_captioner(7)
    with pytest.raises(FileNotFoundError, match="capkit train world-captioner"):
        C.read_checkpoint(tmp_path / "none.safetensors")
    (tmp_path / "bad.safetensors").write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match="cannot be read"):
        C.read_checkpoint(tmp_path / "bad.safetensors")
    with pytest.raises(ValueError, match="unknown world-captioner preset"):
        C.get_config("huge")


def test_cli_trains_the_captioner(tmp_path, capsys, monkeypatch):
    from capkit.cli import main
    from capkit.training import world_captioner as T
    monkeypatch.setitem(T.SCHEDULES, "tiny", dataclasses.replace(T.SCHEDULES["tiny"], **QUICK))
    assert main(["train", "world-captioner", "--preset", "tiny", "--out", str(tmp_path / "c"),
                 "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert sorted(out["checkpoints"]) == ["40", "5"]
    path = tmp_path / "c" / "world_captioner_step0040.safetensors"
    assert out["checkpoints"]["40"]["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()


def test_world_benchmarks_carry_the_captioner_systems():
    from capkit.data import load
    from capkit.world.captioners import LEARNED
    assert list(LEARNED) == [f"captioner@{s}" for s in C.SHIPPED_STEPS]
    data = load("world_expert", n_scenes=10, seed=2)
    scenes = split_scenes("world_expert", 10, seed=2)
    images = np.stack([np.asarray(s.render(64)) for s in scenes])
    systems = np.asarray(data.item_extra["system"])
    for step in C.SHIPPED_STEPS:
        rows = np.flatnonzero(systems == f"captioner@{step}")
        assert [data.candidates[k] for k in rows] == C.load_world_captioner(step).caption(images)
        assert [data.human[k] for k in rows] == [
            check(s, data.candidates[k]).rating for s, k in zip(scenes, rows)]
    rule_based = load("world_expert", n_scenes=10, seed=2, learned=False)
    assert not any(s.startswith("captioner@") for s in rule_based.item_extra["system"])
    world_systems = load("world_systems", n_scenes=4)
    assert set(LEARNED) <= set(world_systems.item_extra["system"])
