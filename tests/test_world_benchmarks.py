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


def test_wrong_relation_swaps_a_colour_where_a_scene_has_one_object(outputs):
    kinds = {len(s.objects) > 1: set() for s in SCENES}
    for scene, record in zip(SCENES, outputs["wrong_relation"]):
        kinds[len(scene.objects) > 1].add(type(record.form).__name__)
    assert kinds[True] == {"Relation"} and "Relation" not in kinds[False]
    assert "one-object scene" in ERRORS["wrong_relation"]


def test_records_are_the_checks_of_the_captions_and_deterministic(outputs):
    for name, out in outputs.items():
        assert [check(s, c.caption) for s, c in zip(SCENES, out)] == out
        assert run_system(name, SCENES[:20], seed=0) == out[:20]
    assert run_system("correct", SCENES[:20], seed=1) != outputs["correct"][:20]


# ----------------------------------------------------------------------------- splits


def test_training_and_benchmark_scenes_never_meet():
    from capkit.world.splits import BENCHMARKS, STREAMS, TRAINING, seed_words, split_scenes
    assert len(set(STREAMS.values())) == len(STREAMS) and 0 not in STREAMS.values()
    for seed in range(3):
        train = set().union(*(seed_words(s, 2000, seed) for s in TRAINING))
        for other_seed in range(3):
            for bench in BENCHMARKS:
                assert not train & seed_words(bench, 2000, other_seed)
    seen = {repr(s.to_dict()) for s in split_scenes("train", 3000)}
    for bench in BENCHMARKS:
        assert not seen & {repr(s.to_dict()) for s in split_scenes(bench, 300)}
    with pytest.raises(ValueError, match="unknown split 'test': choose one of train"):
        split_scenes("test", 1)


# ----------------------------------------------------------------------------- benchmarks


@pytest.fixture(scope="module")
def world():
    from capkit.data import load
    return {name: load(name) for name in ("world_expert", "world_foil", "world_systems")}


def test_world_benchmarks_load_by_name_deterministically(world):
    from capkit.data import load
    from capkit.meta_eval import get_protocol
    for name, data in world.items():
        assert data.name == name and len(data) == get_protocol(name).n_rows
        again = load(name)
        if name == "world_foil":
            assert again.caption_a == data.caption_a and again.caption_b == data.caption_b
            assert (again.label == data.label).all()
        else:
            assert again.candidates == data.candidates and (again.human == data.human).all()
        assert again.references == data.references
    with pytest.raises(ValueError, match="world_expert has no option scenes"):
        load("world_expert", scenes=3)


def test_world_expert_ratings_follow_the_rubric(world):
    from capkit.world.splits import split_scenes
    data = world["world_expert"]
    scenes = split_scenes("world_expert", 150)
    assert set(data.human.tolist()) == {1.0, 2.0, 3.0, 4.0}
    for k in range(0, len(data.candidates), 7):
        scene = scenes[int(data.images[k].rsplit("/", 1)[1])]
        assert check(scene, data.candidates[k]).rating == data.human[k]
        assert all(check(scene, r).true for r in data.references[k])
    held_out = [k for k, s in enumerate(data.item_extra["system"]) if s == "reference"]
    assert len(held_out) == 150 and all(data.human[k] >= 3 for k in held_out)
    assert all(data.candidates[k] not in data.references[k] for k in held_out)


def test_the_rubric_as_documented_gives_3_to_a_true_caption_missing_several_objects():
    from capkit.meta_eval import get_protocol
    from capkit.world import Scene
    four = Scene.from_dict({"objects": [dict(shape="circle", color="red", size="big", x=x, y=x)
                                        for x in (.2, .4, .6, .8)]})
    record = check(four, "there is a shape")
    assert record.true and record.coverage == 0.25 and record.rating == 3      # misses three
    assert "3 true, misses one or more" in get_protocol("world_expert").target
    assert "misses one or more" in type(record).rating.__doc__


def test_world_foil_pairs_differ_in_one_word(world):
    from capkit.world.grammar import tokens
    from capkit.world.splits import split_scenes
    data = world["world_foil"]
    scenes = split_scenes("world_foil", 150)
    assert set(data.category.tolist()) == {"color", "shape", "count", "relation"}
    assert set(data.label.tolist()) == {0, 1}
    for a, b, label, refs, key in zip(data.caption_a, data.caption_b, data.label, data.references,
                                      data.images):
        scene = scenes[int(key.rsplit("/", 1)[1])]
        true, foil = (a, b) if label == 0 else (b, a)
        t, f = tokens(true), tokens(foil)
        assert len(t) == len(f) and sum(x != y for x, y in zip(t, f)) == 1
        assert check(scene, true).true and check(scene, foil).true is False
        assert check(scene, foil).grammatical
        assert all(tokens(r) != t for r in refs) and len(refs) == 5


def test_a_colour_or_shape_foil_word_can_be_in_the_references(world):
    """A foil's new colour or shape may belong to another object of the scene, so the references
    can contain it; notebook 10's prose must not say they never do."""
    from capkit.world.grammar import tokens
    data = world["world_foil"]
    found = set()
    for k in range(len(data)):
        true, foil = (data.caption_a[k], data.caption_b[k])[::1 if data.label[k] == 0 else -1]
        word = next(f for t, f in zip(tokens(true), tokens(foil)) if t != f)
        if any(word in tokens(r) for r in data.references[k]):
            found.add(str(data.category[k]))
    assert {"color", "shape"} <= found


def test_system_statistic_matches_system_level(world):
    from capkit.meta_eval.stats import SystemStatistic, system_level
    data = world["world_systems"]
    systems = np.asarray(data.item_extra["system"])
    assert len(set(systems.tolist())) == 31
    metric = np.random.default_rng(0).random(len(data))
    for name in ("pearson", "kendall_tau_b"):
        stat = SystemStatistic(name, metric, data.human, systems)
        assert stat() == pytest.approx(system_level(metric, data.human, systems,
                                                    statistic=name)[0])
    truth = {s: data.human[systems == s].mean() for s in set(systems.tolist())}
    assert truth["correct"] == 1.0 and truth["wrong_count@0.9"] < truth["wrong_count@0.3"]


def _mean_red(candidates, references, images):
    """A toy image metric: how red the image is (checks the images reach the metric)."""
    return np.array([np.asarray(im)[..., 0].mean() / 255 for im in images])


def test_bench_runs_world_benchmarks_with_their_own_images():
    from capkit.meta_eval import benchmark
    from capkit.meta_eval.protocols import variant
    from capkit.metrics.registry import MetricSpec
    spec = MetricSpec("mean_red", _mean_red, images=True, references=False)
    small = [variant(b, n_scenes=12) for b in ("world_expert", "world_foil", "world_systems")]
    res = benchmark({"bleu_4": "bleu_4", "mean_red": spec}, small, n_boot=20)
    assert not res.skipped
    foil = res[small[1].name]["bleu_4"]
    assert set(foil.categories) == {"color", "count", "relation", "shape"}
    assert res[small[2].name]["mean_red"].statistic == "system_kendall_tau_b"
    assert {"system_pearson", "system_kendall_tau_b"} <= set(res[small[2].name]["bleu_4"]
                                                            .categories)


def _truth(candidates, references, scenes):
    """A metric of scenes: the world's own truth checker (1 true, 0 otherwise)."""
    return np.array([float(check(s, c).true is True) for c, s in zip(candidates, scenes)])


def test_bench_hands_world_scenes_to_metrics_of_scenes():
    from capkit.meta_eval import benchmark, compare
    from capkit.meta_eval.protocols import variant
    from capkit.metrics.registry import MetricSpec
    spec = MetricSpec("truth", _truth, scenes=True, references=False)
    foil, systems = variant("world_foil", n_scenes=12), variant("world_systems", n_scenes=12)
    res = benchmark({"truth": spec, "bleu_4": "bleu_4"}, [foil, systems, "flickr8k_expert"],
                    n_boot=20)
    # the scenes are the right ones: truth itself picks the true caption of every foil pair
    assert res[foil.name]["truth"].value == 100.0
    assert res[systems.name]["truth"].categories["system_pearson"] == pytest.approx(100.0)
    assert res[foil.name]["bleu_4"].value < 100.0
    assert [(b, m) for b, m, _ in res.skipped] == [("flickr8k_expert", "truth")]
    assert "not a world benchmark" in res.skipped[0][2]
    assert compare(spec, "bleu_4", foil, n_boot=20).difference > 0
