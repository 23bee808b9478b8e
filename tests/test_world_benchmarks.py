"""capkit.world captioners of known quality and the world_* benchmarks built from them (#12)."""
import numpy as np
import pytest

from capkit.world import check, make_scenes
from capkit.world.captioners import ERRORS, SYSTEMS, run_system

SCENES = make_scenes(200, 11)
FALSE = ("hallucinated_object", "wrong_color", "wrong_shape", "wrong_relation", "wrong_count")
BROKEN = ("repetition", "shuffled", "ungrammatical")


@pytest.fixture(scope="module")
def outputs():
    return {name: run_system(name, SCENES, seed=0) for name in SYSTEMS}


def test_every_system_is_documented():
    assert set(ERRORS) == set(SYSTEMS)
    with pytest.raises(ValueError, match="unknown world system 'perfect': choose one of correct"):
        run_system("perfect", SCENES[:1])


def test_systems_make_their_named_error(outputs):
    rate = {n: (np.mean([c.grammatical for c in out]), np.mean([c.true is True for c in out]))
            for n, out in outputs.items()}
    assert rate["correct"] == (1.0, 1.0) and rate["generic"] == (1.0, 1.0)
    for name in FALSE:
        assert rate[name][0] == 1.0 and rate[name][1] <= 0.03, (name, rate[name])
    for name in BROKEN:
        assert rate[name][0] <= 0.05, (name, rate[name])
    cover = [c.coverage for c in outputs["correct"]]
    assert min(cover) < 0.5 and max(cover) == 1.0                 # varying coverage
    assert np.mean([c.coverage for c in outputs["generic"]]) < np.mean(cover)


def test_records_are_the_checks_of_the_captions_and_deterministic(outputs):
    for name, out in outputs.items():
        assert [check(s, c.caption) for s, c in zip(SCENES, out)] == out
        assert run_system(name, SCENES[:20], seed=0) == out[:20]
    assert run_system("correct", SCENES[:20], seed=1) != outputs["correct"][:20]
