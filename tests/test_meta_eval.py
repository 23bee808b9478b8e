"""capkit.meta_eval: statistics against scipy, tie policies, group bootstrap, the harness and its
errors on toy data, the protocol table, and (slow, real data) the Flickr8k reproduction."""
import json
import math

import re

import numpy as np
import pytest
from scipy import stats

import capkit.data
from capkit.data.schema import CaptionJudgments, PairJudgments
from capkit.meta_eval import (
    PROTOCOLS, BenchResults, Protocol, benchmark, bootstrap_ci, kendall_tau, pair_credit,
    paired_bootstrap, pairwise_accuracy, pearson, published, row_statistic, spearman,
)
from capkit.meta_eval.kendall import KendallTau, _MergeLevels, _ValueLevels


def _tied_data(rng, n, levels_x, levels_y):
    x = rng.integers(0, levels_x, n) / 3.0 if levels_x else rng.random(n)
    y = rng.integers(0, levels_y, n) * 0.5
    return x, y


# ----------------------------------------------------------------------------- statistics

@pytest.mark.parametrize("variant", ["b", "c"])
@pytest.mark.parametrize("levels", [(0, 4), (7, 5), (0, 300), (40, 300)])
def test_kendall_matches_scipy_with_ties(variant, levels):
    rng = np.random.default_rng(sum(levels))
    for n in (2, 3, 17, 500):
        x, y = _tied_data(rng, n, *levels)
        want = stats.kendalltau(x, y, variant=variant).statistic
        got = kendall_tau(x, y, variant=variant)
        assert (math.isnan(got) and math.isnan(want)) or abs(got - want) < 1e-12
        rows = rng.integers(0, n, n)                      # a resample that repeats rows
        want = stats.kendalltau(x[rows], y[rows], variant=variant).statistic
        got = KendallTau(x, y, variant)(rows)
        assert (math.isnan(got) and math.isnan(want)) or abs(got - want) < 1e-12


def test_both_discordance_counters_are_exercised():
    rng = np.random.default_rng(0)
    few = KendallTau(rng.random(1000), rng.integers(0, 4, 1000), "c")
    many = KendallTau(rng.random(1000), rng.random(1000), "c")
    assert isinstance(few._counter, _ValueLevels) and isinstance(many._counter, _MergeLevels)


def test_kendall_needs_an_explicit_variant():
    with pytest.raises(TypeError):
        kendall_tau([1, 2, 3], [1, 3, 2])                 # keyword-only and required
    with pytest.raises(ValueError, match="variant='b'.*variant='c'"):
        kendall_tau([1, 2, 3], [1, 3, 2], variant="a")


def test_tau_b_and_tau_c_differ_on_a_hand_computed_case():
    # pairs: C C C (3 concordant), 0 discordant; 1 pair tied in x only, 2 tied in y only
    x, y = [1, 2, 2, 3], [1, 1, 2, 2]
    assert kendall_tau(x, y, variant="b") == pytest.approx(3 / math.sqrt((6 - 1) * (6 - 2)),
                                                           abs=1e-15)
    # tau-c = 2 (C - D) / (n^2 (m - 1) / m), m = min(3 x values, 2 y values) = 2 -> 6 / 8
    assert kendall_tau(x, y, variant="c") == pytest.approx(0.75, abs=1e-15)


@pytest.mark.parametrize("name,fn,ref", [
    ("pearson", pearson, lambda a, b: stats.pearsonr(a, b).statistic),
    ("spearman", spearman, lambda a, b: stats.spearmanr(a, b).statistic),
])
def test_pearson_spearman_match_scipy_with_ties(name, fn, ref):
    rng = np.random.default_rng(1)
    x, y = _tied_data(rng, 300, 6, 5)
    assert abs(fn(x, y) - ref(x, y)) < 1e-12
    rows = rng.integers(0, 300, 300)
    assert abs(row_statistic(name, x, y)(rows) - ref(x[rows], y[rows])) < 1e-12


def test_tie_policies_on_a_hand_made_case():
    a, b = [0.9, 0.2, 0.5, 0.5], [0.1, 0.8, 0.5, 0.5]
    label = [0, 0, 0, 1]           # right, wrong, tie, tie
    assert pairwise_accuracy(a, b, label) == 0.5                    # ties count 1/2
    assert pairwise_accuracy(a, b, label, ties="wrong") == 0.25
    draws = [pairwise_accuracy(a, b, label, ties="random", seed=s) for s in range(400)]
    assert set(draws) <= {0.25, 0.5, 0.75}
    assert pairwise_accuracy(a, b, label, ties="random", seed=7) == draws[7]   # seeded
    assert abs(np.mean(draws) - 0.5) < 0.03                         # "half" is its expectation
    assert list(pair_credit(a, b, label, ties="wrong")) == [1, 0, 0, 0]
    with pytest.raises(ValueError, match="needs a seed"):
        pairwise_accuracy(a, b, label, ties="random")
    with pytest.raises(ValueError, match="choose one of"):
        pairwise_accuracy(a, b, label, ties="skip")


def test_bootstrap_resamples_groups_not_rows():
    rng = np.random.default_rng(2)
    x = rng.random(40)
    y = x + rng.normal(0, 0.5, 40)
    images = np.arange(40)
    # every image's row 10 times: no new information, so the group bootstrap must not change
    dup = np.repeat(np.arange(40), 10)
    pairs = [(lambda r: x[r].mean(), lambda r: x[dup][r].mean()),
             (row_statistic("pearson", x, y), row_statistic("pearson", x[dup], y[dup]))]
    for stat, stat_dup in pairs:
        one = bootstrap_ci(stat, images, 300, seed=0)
        grouped = bootstrap_ci(stat_dup, images[dup], 300, seed=0)
        assert grouped.low == pytest.approx(one.low, abs=1e-12)
        assert grouped.high == pytest.approx(one.high, abs=1e-12)
        naive = bootstrap_ci(stat_dup, np.arange(len(dup)), 300, seed=0)   # rows as units
        assert (naive.high - naive.low) < 0.5 * (grouped.high - grouped.low)


def test_weighted_bootstrap_equals_the_plain_loop():
    rng = np.random.default_rng(3)
    x, y = _tied_data(rng, 120, 8, 4)
    groups = rng.integers(0, 30, 120)
    fast = bootstrap_ci(KendallTau(x, y, "c"), groups, 100, seed=5)
    slow = bootstrap_ci(lambda r: stats.kendalltau(x[r], y[r], variant="c").statistic,
                        groups, 100, seed=5)
    assert np.allclose(fast.samples, slow.samples, atol=1e-12, equal_nan=True)


def test_paired_bootstrap():
    rng = np.random.default_rng(4)
    human = rng.random(300)
    good, noise = human + rng.normal(0, 0.1, 300), rng.random(300)
    groups = np.arange(300) // 3
    a, b = row_statistic("kendall_tau_b", good, human), row_statistic("kendall_tau_b", noise, human)
    res = paired_bootstrap(a, b, groups, 200, seed=0)
    assert res.difference > 0.5 and res.low > 0 and res.p_value < 0.01
    same = paired_bootstrap(a, a, groups, 200, seed=0, alternative="two-sided")
    assert same.difference == 0 and same.p_value == 1.0


# ----------------------------------------------------------------------------- harness (toy data)

def _toy_judgments():
    rng = np.random.default_rng(0)
    words = ["a dog runs on grass", "a cat sleeps on a bed", "two men play football",
             "a red car on the road", "children swim in a pool"]
    candidates, references, images = [], [], []
    for i in range(40):
        own = words[i % 5]
        candidates.append(own if i % 2 else words[(i + 1) % 5])
        references.append([own, own.replace("a ", "the ")])
        images.append(f"img{i // 4}")
    item_of_rating = np.repeat(np.arange(40), 2)
    human = np.array([4.0 if i % 2 else 1.0 for i in item_of_rating]) + rng.integers(0, 2, 80)
    return CaptionJudgments("toy", candidates, references, images, item_of_rating, human,
                            {"statistic": "kendall_tau_c"})


def _toy_pairs():
    j = _toy_judgments()
    return PairJudgments("toy_pairs", j.candidates[:20], j.candidates[20:], j.references[:20],
                         j.images[:20], np.array([0, 1] * 10), np.array(["HC", "HI"] * 10), {})


TOY = Protocol(name="toy", loader="toy", statistic="kendall_tau_c", n_rows=80)
TOY_PAIRS = Protocol(name="toy_pairs", loader="toy_pairs", statistic="pairwise_accuracy",
                     n_rows=20, categories=("HC", "HI"))


@pytest.fixture
def toy_data(monkeypatch):
    sets = {"toy": _toy_judgments(), "toy_pairs": _toy_pairs()}
    monkeypatch.setattr(capkit.data, "load", lambda name, **options: sets[name])
    return sets


USER_METRIC = '''
def word_overlap(candidates, references):
    """Share of candidate words found in any reference."""
    out = []
    for cand, refs in zip(candidates, references):
        ref_words = {w for r in refs for w in r.lower().split()}
        words = cand.lower().split()
        out.append(sum(w in ref_words for w in words) / len(words))
    return out


def too_short(candidates, references):
    return [0.5] * (len(candidates) - 1)


def with_nan(candidates, references):
    return [float("nan")] + [0.5] * (len(candidates) - 1)


def _reshaped(values):
    import numpy as np
    return np.array(values, dtype=float).reshape(3, -1)     # a bug deep in the user's code


def raises_inside(candidates, references):
    return _reshaped([len(c) for c in candidates])
'''


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    (tmp_path / "my_caption_metric.py").write_text(USER_METRIC)
    monkeypatch.syspath_prepend(str(tmp_path))
    return "my_caption_metric"


def test_user_metric_from_a_file_runs_through_benchmark(toy_data, user_module):
    res = benchmark([f"{user_module}:word_overlap", "bleu_1"], [TOY, TOY_PAIRS], n_boot=50)
    cell = res["toy"][f"{user_module}:word_overlap"]
    assert cell.n == 80 and cell.statistic == "kendall_tau_c"
    assert cell.ci95[0] <= cell.value <= cell.ci95[1] and "source:user" in cell.signature
    pairs = res["toy_pairs"]["bleu_1"]
    assert pairs.statistic == "pairwise_accuracy(ties=half)"
    assert set(pairs.categories) == {"HC", "HI"}
    assert pairs.value == pytest.approx(np.mean(list(pairs.categories.values())))
    out = json.loads(res.to_json())
    assert set(out) == {"n_boot", "seed", "tokenizer", "protocols", "results"}
    assert (out["n_boot"], out["seed"], out["tokenizer"]) == (50, 0, "ptb")
    assert out["protocols"]["toy_pairs"]["statistic"] == "pairwise_accuracy"
    assert out["protocols"]["toy_pairs"]["ties"] == "half"
    assert set(out["results"]["toy"][f"{user_module}:word_overlap"]) == {
        "value", "statistic", "n", "ci95", "categories", "published", "published_source",
        "signature"}
    table = res.table("csv").splitlines()
    assert table[0] == "benchmark,metric,statistic,n,value,CI,published,diff" and len(table) == 5


@pytest.mark.parametrize("fn,message", [("too_short", r"returned 39 scores for 40 candidates"),
                                        ("with_nan", r"returned 1 NaN or infinite scores")])
def test_bad_user_metric_gets_a_clear_error(toy_data, user_module, fn, message):
    with pytest.raises(ValueError, match=message) as err:
        benchmark(f"{user_module}:{fn}", TOY, n_boot=10)
    assert f"{user_module}:{fn}" in str(err.value) and "'toy'" in str(err.value)


def test_an_error_inside_a_user_metric_keeps_its_traceback_and_note(toy_data, user_module):
    """benchmark() and compare() name the benchmark, and keep what score() shows: the user's
    own traceback (the original, chained) and the Scorer's note naming the metric."""
    import traceback
    from capkit.meta_eval import compare
    metric = f"{user_module}:raises_inside"
    for run in (lambda: benchmark(["bleu_1", metric], TOY, n_boot=10),
                lambda: compare("bleu_1", metric, TOY, n_boot=10)):
        with pytest.raises(ValueError, match=r"^benchmark 'toy': cannot reshape array") as err:
            run()
        assert err.value.__notes__ == [f"(raised by the metric {metric!r})"]
        assert isinstance(err.value.__cause__, ValueError)
        frames = [f.name for f in traceback.extract_tb(err.value.__cause__.__traceback__)]
        assert frames[-2:] == ["raises_inside", "_reshaped"]


def test_callables_and_dicts_as_metrics(toy_data):
    def shortness(candidates, references):
        return [-len(c) for c in candidates]
    res = benchmark({"short": shortness, "b4": "bleu_4"}, TOY, n_boot=10)
    assert list(res["toy"]) == ["short", "b4"]
    assert list(benchmark(shortness, TOY, n_boot=10)["toy"]) == ["shortness"]
    with pytest.raises(ValueError, match="unknown benchmark"):
        benchmark("bleu_4", "flickr9k")


def test_compare_and_row_count_warning(toy_data, user_module):
    from capkit.meta_eval import compare
    res = compare(f"{user_module}:word_overlap", "bleu_4", TOY, n_boot=50)
    assert res.low <= res.difference <= res.high and 0 < res.p_value <= 1
    assert "paired bootstrap" in res.method
    wrong = Protocol(name="toy", loader="toy", statistic="kendall_tau_c", n_rows=81)
    with pytest.warns(UserWarning, match="loaded 80 rows but the protocol expects 81"):
        benchmark("bleu_1", wrong, n_boot=5)


@pytest.mark.parametrize("protocol", [TOY, TOY_PAIRS], ids=["correlation", "pairwise"])
def test_paired_tests_in_benchmark_equal_compare(toy_data, user_module, protocol):
    from capkit.meta_eval import compare
    metric = f"{user_module}:word_overlap"
    res = benchmark([metric, "bleu_1", "bleu_4"], protocol, n_boot=60, seed=3, against="bleu_4")
    assert set(res.comparisons) == {("toy" if protocol is TOY else "toy_pairs", m, "bleu_4")
                                    for m in (metric, "bleu_1")}
    for (_, name, _), got in res.comparisons.items():
        want = compare(name, "bleu_4", protocol, n_boot=60, seed=3)
        assert got == want            # same scores, same resamples: the very same test
        cells = res[protocol.name]
        assert got.difference == pytest.approx(cells[name].value - cells["bleu_4"].value)
    out = json.loads(res.to_json())["comparisons"]
    assert {c["metric"] for c in out} == {metric, "bleu_1"} and out[0]["against"] == "bleu_4"
    assert res.comparison_table("csv").splitlines()[0] == \
        "benchmark,metric,against,difference,CI,p"
    with pytest.raises(ValueError, match="not among the metrics"):
        benchmark(["bleu_1"], protocol, n_boot=5, against="cider_d")


def test_save_figures(toy_data, tmp_path):
    from capkit.plots.bench import save_figures
    res = benchmark(["bleu_1", "rouge_l"], [TOY, TOY_PAIRS], n_boot=10)
    paths = save_figures(res, tmp_path / "figs")
    assert [p.name for p in paths] == ["heatmap.png", "bars_toy.png", "bars_toy_pairs.png"]
    assert all(p.read_bytes()[:4] == b"\x89PNG" for p in paths)


# ----------------------------------------------------------------------------- protocols, published

BENCHMARKS_MD = {   # ../shared/docs/BENCHMARKS.md section 1: rows and statistic
    "flickr8k_expert": (16992, "kendall_tau_c"), "flickr8k_cf": (47830, "kendall_tau_b"),
    "composite": (11985, "kendall_tau_c"), "pascal50s": (4000, "pairwise_accuracy"),
    "thumb": (2500, "kendall_tau_c"), "nebula": (3298, "kendall_tau_c"),
    "capeval1k": (700, "kendall_tau_b"),
}


def test_protocol_table_matches_benchmarks_md():
    assert {k: (p.n_rows, p.statistic) for k, p in PROTOCOLS.items()} == BENCHMARKS_MD
    assert PROTOCOLS["pascal50s"].categories == ("HC", "HI", "HM", "MM")
    assert PROTOCOLS["thumb"].system_level


def test_published_numbers():
    b4 = published("flickr8k_expert", "bleu_4")
    assert b4.value == 30.776 and b4.source == "PAC-S README (30.776 / 16.863); CLIPScore paper"
    assert published("pascal50s", "cider_d").categories == {"HC": 65.1, "HI": 98.1, "HM": 90.5,
                                                           "MM": 64.8}
    assert published("nebula", "bleu_4") is None


def test_published_sources_cite_numbers_of_their_own_benchmark():
    """A source quoting the precise values of a row (``README (30.776 / 16.863)``) quotes the
    Flickr8k-Expert / CF columns: only those entries may cite them as theirs; any other entry
    whose source quotes them says whose they are (the Composite column once cited them)."""
    from capkit.meta_eval.published import load_published
    for bench, entries in load_published()["benchmarks"].items():
        for metric, entry in entries.items():
            quoted = [float(x) for pair in re.findall(r"\(([\d.]+ / [\d.]+)\)", entry["source"])
                      for x in pair.split(" / ")]
            if not quoted:
                continue
            if bench in ("flickr8k_expert", "flickr8k_cf"):
                assert entry["precise"] in quoted, (bench, metric)
            else:
                assert "precise" not in entry and "Flickr8k-Expert / CF ones" in entry["source"], \
                    (bench, metric)
    note = published("composite", "bleu_4").note
    assert "~28" in note and published("flickr8k_expert", "bleu_4").note == ""


# ----------------------------------------------------------------------------- real data (slow)

@pytest.mark.slow
def test_protocol_row_counts_on_the_data(shared_data):
    from capkit.meta_eval.harness import load_benchmark
    for name, protocol in PROTOCOLS.items():
        assert len(load_benchmark(protocol)) == BENCHMARKS_MD[name][0], name


@pytest.mark.slow
def test_flickr8k_reproduces_the_published_numbers(shared_data):
    res = benchmark(["bleu_1", "bleu_4", "rouge_l", "cider_d"], ["flickr8k_expert", "flickr8k_cf"],
                    n_boot=20)
    assert isinstance(res, BenchResults)
    want = {("flickr8k_expert", "bleu_1"): 32.3, ("flickr8k_expert", "bleu_4"): 30.8,
            ("flickr8k_expert", "rouge_l"): 32.3, ("flickr8k_expert", "cider_d"): 43.9,
            ("flickr8k_cf", "bleu_4"): 16.9, ("flickr8k_cf", "cider_d"): 24.6}
    for (bench, metric), value in want.items():
        cell = res[bench][metric]
        assert abs(cell.value - value) <= 0.1, (bench, metric, cell.value)
        assert cell.n == BENCHMARKS_MD[bench][0]
        assert cell.ci95[0] < cell.value < cell.ci95[1]


def test_variant_changes_one_rule_and_drops_the_published_value():
    from capkit.meta_eval.protocols import PROTOCOLS, variant
    v = variant("composite", remove_rated_from_refs=False)
    assert v.name == "composite[remove_rated_from_refs=False]"
    assert v.options["remove_rated_from_refs"] is False and v.n_rows == 0
    assert PROTOCOLS["composite"].options["remove_rated_from_refs"] is True   # base untouched
    assert variant("flickr8k_expert", statistic="kendall_tau_b").statistic == "kendall_tau_b"
    assert variant("nebula") is PROTOCOLS["nebula"]
    with pytest.raises(ValueError, match="unknown benchmark"):
        variant("flickr9k", drop_self=False)


@pytest.mark.slow
def test_image_metrics_are_skipped_with_a_reason_when_images_are_missing(shared_data, tmp_path):
    from capkit.meta_eval import benchmark
    res = benchmark(["bleu_4", "clipscore"], ["nebula", "pascal50s"], n_boot=10,
                    images={"pascal50s": str(tmp_path)})
    assert set(res["nebula"]) == {"bleu_4"} and set(res["pascal50s"]) == {"bleu_4"}
    reasons = {(b, m): why for b, m, why in res.skipped}
    assert "images=" in reasons[("nebula", "clipscore")]
    assert "missing in" in reasons[("pascal50s", "clipscore")]
    assert "skipped" in res.table() and res.to_dict()["skipped"][0]["metric"] == "clipscore"


def test_pascal50s_draws_average_the_variants(shared_data):
    from capkit.meta_eval import pascal50s_draws
    from capkit.meta_eval.protocols import variant
    out = pascal50s_draws(["bleu_4"], 3, n_boot=10)["bleu_4"]
    one = benchmark(["bleu_4"], [variant("pascal50s", references="draw", draw_seed=2)],
                    n_boot=10)
    assert len(out["draws"]) == 3 and out["draws"][2] == one["pascal50s[references=draw,draw_seed=2]"]["bleu_4"].value
    assert out["mean"] == pytest.approx(np.mean(out["draws"]))
    assert set(out["categories"]) == {"HC", "HI", "HM", "MM"} and len(set(out["draws"])) > 1
    with pytest.raises(ValueError, match="positive number of draws"):
        pascal50s_draws(["bleu_4"], 0)



def test_image_folders_are_checked_and_a_run_with_nothing_scored_gives_the_reasons(toy_data,
                                                                                   tmp_path):
    with pytest.raises(FileNotFoundError, match=f"images folder of toy, {tmp_path / 'no'}, "
                                                "does not exist"):
        benchmark("bleu_1", TOY, n_boot=5, images={"toy": str(tmp_path / "no")})
    with pytest.raises(ValueError, match=r"images are given for thumb, which is not among the "
                                         r"benchmarks run \(toy\)"):
        benchmark("bleu_1", TOY, n_boot=5, images={"thumb": str(tmp_path)})
    # every metric skipped: the reasons, not the scorer's "no metric given"
    with pytest.raises(ValueError, match="no metric could run on these benchmarks: ") as err:
        benchmark("clipscore", [TOY, TOY_PAIRS], n_boot=5, images={"toy": str(tmp_path)})
    assert "clipscore on toy: " in str(err.value) and "missing in" in str(err.value)
    assert "clipscore on toy_pairs: needs the images of toy_pairs" in str(err.value)
    res = benchmark(["clipscore", "bleu_1"], [TOY, TOY_PAIRS], n_boot=5)
    assert [(b, m) for b, m, _ in res.skipped] == [("toy", "clipscore"),
                                                   ("toy_pairs", "clipscore")]
    assert set(res["toy"]) == {"bleu_1"}


def test_image_folders_given_with_a_tilde_are_expanded_in_the_library_too(tmp_path, monkeypatch):
    # capkit bench expanded ~ itself; benchmark(images={"thumb": "~/coco"}) called "does not exist"
    from capkit.meta_eval.harness import _check_image_folders
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "coco").mkdir()
    assert _check_image_folders({"thumb": "~/coco"}, ["thumb"]) == {"thumb": str(tmp_path / "coco")}
