"""capkit.course.lab: the contract check (each breach detected), the dev split, restricting and
subsampling benchmarks, the lab benchmark and the report card (notebooks/11_lab_your_metric)."""
import json

import numpy as np
import pytest

from capkit.course import contract, lab
from capkit.course import report_card as report_card_module
from capkit.data.schema import CaptionJudgments, PairJudgments
from capkit.metrics import align
from capkit.scores import Scores, make_signature

CANDS = {f"i{k}": c for k, c in enumerate([
    "a dog runs on the grass", "two men play football", "a cat sleeps on a sofa",
    "a red car parked in the street", "children swim in a pool", "a man rides a horse",
    "a woman reads a book", "a bird sits on a branch"])}
REFS = {k: ["a dog is running across the grass", "a brown dog outside"] if k == "i0" else
        [CANDS[k].replace("a ", "the ", 1), "something else entirely"] for k in CANDS}


def overlap(candidates, references):
    """A good metric: share of candidate words found in the best reference."""
    cands, refs, ids = align(candidates, references)
    if not cands:
        raise ValueError("overlap: no candidates; give at least one caption")
    per = np.array([max(len(set(c.split()) & set(r.split())) / len(c.split()) for r in rs)
                    for c, rs in zip(cands, refs)])
    return Scores("overlap", per, float(per.mean()), make_signature("overlap", refs="max"), ids)


def _wrap(name, fn):
    fn.__name__ = name
    return fn


def _as(result, values=None, ids="keep", signature="keep"):
    values = result.per_caption if values is None else values
    return Scores(result.metric, values, float(np.mean(values)) if len(values) else 0.0,
                  result.signature if signature == "keep" else signature,
                  result.ids if ids == "keep" else ids)


BROKEN = {
    "runs": _wrap("raises", lambda c, r: 1 / 0),
    "one score per candidate": _wrap("short", lambda c, r: _as(overlap(c, r),
                                                               overlap(c, r).per_caption[:-1],
                                                               ids=None)),
    "ids kept": _wrap("reversed_ids", lambda c, r: _as(overlap(c, r),
                                                       ids=tuple(reversed(overlap(c, r).ids)))),
    "finite": _wrap("nan", lambda c, r: _as(overlap(c, r), np.where(
        overlap(c, r).per_caption > 0.5, np.nan, overlap(c, r).per_caption))),
    "deterministic": _wrap("noisy", lambda c, r: _as(overlap(c, r), overlap(c, r).per_caption
                                                     + np.random.default_rng().random(len(c)))),
    "batch-size invariant": _wrap("batch_max", lambda c, r: _as(
        overlap(c, r), overlap(c, r).per_caption / overlap(c, r).per_caption.max())),
    "signature": _wrap("no_signature", lambda c, r: _as(overlap(c, r), signature="")),
}


def test_a_good_metric_keeps_the_contract():
    record = contract.check_contract(overlap, CANDS, REFS)
    assert record.passed and bool(record) and not record.failed()
    assert [c.name for c in record.checks] == list(contract.CLAUSES)
    assert record.signature.startswith("overlap|refs:max")
    text = str(record)
    assert text.startswith("contract of overlap on 8 candidates: keeps the contract")
    assert text.count("✓") == len(contract.CLAUSES)
    json.dumps(record.to_dict())


@pytest.mark.parametrize("clause", list(BROKEN))
def test_each_breach_is_detected(clause):
    record = contract.check_contract(BROKEN[clause], CANDS, REFS)
    assert not record.passed
    assert clause in record.failed()
    assert f"✗ {clause}" in str(record)
    # a breach shows where it is, and only where it must: a short or noisy result cannot match
    # itself in batches, and a short one cannot carry one id per candidate
    also = {"one score per candidate": ["ids kept", "batch-size invariant"],
            "deterministic": ["batch-size invariant"]}.get(clause, [])
    if clause != "runs":
        assert record.failed() == [c for c in contract.CLAUSES if c in [clause, *also]]


@pytest.mark.parametrize("empty, expected", [
    (lambda c, r: overlap(c, r) if c else np.zeros(0), "returned a result"),
    (lambda c, r: overlap(c, r) if c else [][0], "IndexError instead of ValueError"),
    (lambda c, r: overlap(c, r) if c else (_ for _ in ()).throw(ValueError()),
     "ValueError without a message"),
])
def test_an_unclear_error_on_empty_input_is_a_breach(empty, expected):
    record = contract.check_contract(empty, CANDS, REFS)
    assert record.failed() == ["error on empty input"]
    assert expected in record["error on empty input"].detail


def test_an_array_without_ids_or_signature_breaks_those_clauses():
    record = contract.check_contract(lambda c, r: overlap(c, r).per_caption, CANDS, REFS)
    assert record.failed() == ["ids kept", "signature"]


@pytest.mark.parametrize("result", [
    lambda c: {k: 1.0 for k in c},                    # {id: score}: a student's first try
    lambda c: ["good"] * len(c),
    lambda c: ["0.5"] * len(c),                       # numbers written as text: not numbers
    lambda c: "hello",
])
def test_a_result_that_is_not_numbers_is_a_breach_not_a_crash(result):
    record = contract.check_contract(lambda c, r: result(c), CANDS, REFS)
    assert record.failed() == ["one score per candidate"]
    detail = record["one score per candidate"].detail
    assert "not numbers" in detail and "return a capkit.scores.Scores" in detail
    assert "✗ one score per candidate" in str(record)
    with pytest.raises(TypeError, match="not numbers"):
        contract.batch_difference(lambda c, r: result(c), CANDS, REFS, 3)


def test_contract_on_lists_and_registered_names():
    cands, refs = list(CANDS.values()), list(REFS.values())
    assert contract.check_contract(overlap, cands, refs).passed
    assert contract.check_contract("bleu_1", CANDS, REFS).passed
    cider = contract.check_contract("cider_d", CANDS, REFS)       # idf from the batch, by design
    assert cider.failed() == ["batch-size invariant"]


def test_contract_input_errors():
    with pytest.raises(ValueError, match="at least 2 candidates"):
        contract.check_contract(overlap, {"a": "x"}, {"a": ["x"]})
    with pytest.raises(TypeError, match="callable"):
        contract.check_contract(42, CANDS, REFS)


def test_batch_difference():
    assert contract.batch_difference(overlap, CANDS, REFS, 3) == 0.0
    assert contract.batch_difference(BROKEN["batch-size invariant"], CANDS, REFS, 3) > 0.1
    assert contract.batch_difference("cider_d", CANDS, REFS, 4) > 0
    with pytest.raises(ValueError, match="positive"):
        contract.batch_difference(overlap, CANDS, REFS, 0)


# ----------------------------------------------------------------------------- dev / test

IMAGES = [f"img{k:03d}.jpg" for k in range(101)] * 3


def test_split_images_is_disjoint_covering_and_seeded():
    dev, test = lab.split_images(IMAGES, seed=0)
    assert not dev & test and dev | test == set(IMAGES)
    assert len(dev) == round(0.5 * 101)
    assert (dev, test) == lab.split_images(list(reversed(IMAGES)), seed=0)   # order-free
    assert dev != lab.split_images(IMAGES, seed=1)[0]
    dev30, _ = lab.split_images(IMAGES, seed=0, fraction=0.3)
    assert len(dev30) == 30


def test_split_breaches_grades_the_method_not_one_way_of_drawing():
    """Exercise 11.2's check: any seeded random split by image passes; each way of getting the
    method wrong is named."""
    import random

    def other_draw(images, seed=0, fraction=0.5):          # another generator, another order
        distinct = sorted(set(images))
        dev = set(random.Random(seed).sample(distinct, round(fraction * len(distinct))))
        return dev, set(distinct) - dev

    def sorted_cut(images, seed=0, fraction=0.5):           # not random, seed ignored
        distinct = sorted(set(images))
        k = round(fraction * len(distinct))
        return set(distinct[:k]), set(distinct[k:])

    def first_seen_order(images, seed=0, fraction=0.5):     # depends on the rows' order
        distinct = list(dict.fromkeys(images))
        order = np.random.default_rng(seed).permutation(len(distinct))
        k = round(fraction * len(distinct))
        return {distinct[i] for i in order[:k]}, {distinct[i] for i in order[k:]}

    def by_row(images, seed=0, fraction=0.5):               # a row split: images on both sides
        coin = np.random.default_rng(seed).random(len(images)) < fraction
        return ({i for i, c in zip(images, coin) if c}, {i for i, c in zip(images, coin) if not c})

    assert lab.split_breaches(lab.split_images, IMAGES) == []
    assert lab.split_breaches(other_draw, IMAGES) == []
    assert lab.split_breaches(other_draw, IMAGES, fraction=0.3) == []
    cut = lab.split_breaches(sorted_cut, IMAGES)
    assert any("another seed" in b for b in cut) and any("not a random split" in b for b in cut)
    assert any("order or the repetition" in b for b in lab.split_breaches(first_seen_order, IMAGES))
    rows = lab.split_breaches(by_row, IMAGES)
    assert any("in both dev and test" in b for b in rows)

    def unfinished(images, seed=0, fraction=0.5):
        raise NotImplementedError()
    with pytest.raises(NotImplementedError):
        lab.split_breaches(unfinished, IMAGES)


def test_split_images_errors():
    with pytest.raises(ValueError, match="fraction"):
        lab.split_images(IMAGES, fraction=1.0)
    with pytest.raises(ValueError, match="2 distinct"):
        lab.split_images(["a", "a"])


def test_dev_split_of_flickr8k_cf_halves_its_images(shared_data):
    split = lab.dev_split(seed=0)
    assert len(split.dev) == len(split.test) == 500
    assert not split.dev & split.test
    assert split == lab.dev_split(seed=0) and split.dev != lab.dev_split(seed=1).dev


def _judgments():
    return CaptionJudgments(
        name="toy", candidates=["c0", "c1", "c2", "c3"], references=[["r0"], ["r1"], ["r2"],
                                                                      ["r3"]],
        images=["a", "a", "b", "c"], item_of_rating=np.array([0, 0, 1, 2, 3, 3]),
        human=np.array([1.0, 2.0, 3.0, 4.0, 1.0, 2.0]), protocol={},
        item_extra={"system": ["s0", "s1", "s0", "s1"]})


def test_restrict_keeps_the_rows_of_the_images_and_remaps_ratings():
    sub = lab.restrict(_judgments(), ["a", "c"])
    assert sub.candidates == ["c0", "c1", "c3"] and sub.images == ["a", "a", "c"]
    assert sub.item_of_rating.tolist() == [0, 0, 1, 2, 2]
    assert sub.human.tolist() == [1.0, 2.0, 3.0, 1.0, 2.0]
    assert sub.item_extra["system"] == ["s0", "s1", "s1"]
    with pytest.raises(ValueError, match="nothing would be left"):
        lab.restrict(_judgments(), ["z"])


def test_restrict_pairs():
    pairs = PairJudgments("toy", ["a0", "a1", "a2"], ["b0", "b1", "b2"], [["r"]] * 3,
                          ["x", "y", "x"], np.array([0, 1, 1]), np.array(["HC", "HI", "HM"]), {})
    sub = lab.restrict(pairs, {"x"})
    assert sub.caption_a == ["a0", "a2"] and sub.label.tolist() == [0, 1]
    assert sub.category.tolist() == ["HC", "HM"]


def test_subsample_is_seeded_and_by_image():
    data = _judgments()
    assert lab.subsample(data, None) is data and lab.subsample(data, 5) is data
    one = lab.subsample(data, 2, seed=0)
    assert len(set(one.images)) == 2 and one.images == lab.subsample(data, 2, seed=0).images


def test_test_sets_hold_no_dev_image(shared_data):
    split = lab.dev_split(seed=0)
    sets = lab.lab_sets(split, names=("flickr8k_cf@dev", "flickr8k_cf@test", "flickr8k_expert",
                                      "capeval1k"), n_images={"capeval1k": 20})
    assert set(sets["flickr8k_cf@dev"].data.images) == split.dev
    assert set(sets["flickr8k_cf@test"].data.images) == split.test
    assert not set(sets["flickr8k_expert"].data.images) & split.dev
    assert [s.role for s in sets.values()] == ["dev", "test", "test", "test"]
    assert sets["capeval1k"].rows == "20 of 200 images"
    assert sets["flickr8k_expert"].rows == "all 500 images (500 dev images dropped)"
    with pytest.raises(ValueError, match="not among"):
        lab.lab_sets(split, names=("capeval1k",), n_images={"thumb": 3})


# ----------------------------------------------------------------------------- bench, card

def test_bench_and_report_card(tmp_path, shared_data):
    split = lab.dev_split(seed=0)
    sets = lab.lab_sets(split, names=("capeval1k", "thumb"),
                        n_images={"capeval1k": 40, "thumb": 40})
    res = lab.bench({"mine": overlap, "bleu_1": "bleu_1", "bleu_4": "bleu_4"}, sets,
                    n_boot=20, compare=["mine"], baselines=["bleu_1", "bleu_4"],
                    against=["bleu_4"], progress=False)
    assert set(res.results) == {"capeval1k", "thumb"}
    cell = res["capeval1k"]["mine"]
    assert cell.published is None and cell.ci95[0] <= cell.value <= cell.ci95[1]
    best = lab.best_baselines(res, ["bleu_1", "bleu_4"])["thumb"]
    assert ("thumb", "mine", best) in res.comparisons and ("thumb", "mine", "bleu_4") in \
        res.comparisons
    with pytest.raises(ValueError, match="not among the metrics"):
        lab.bench({"mine": overlap}, sets, compare=["other"])
    record = contract.check_contract(overlap, CANDS, REFS)
    card = lab.report_card("mine", res, baselines=["bleu_1", "bleu_4"], contract=record,
                           sets=sets, settings={"mode": "test"}, out=tmp_path)
    md, js = card.paths
    assert md.read_text().startswith("# Report card: mine")
    data = json.loads(js.read_text())
    assert data["signature"].startswith("overlap|") and data["contract"]["passed"]
    assert set(data["test_sets"]) == {"capeval1k", "thumb"}
    assert data["baseline_signatures"]["bleu_4"].startswith("bleu_4|")
    assert data["test_sets"]["thumb"]["paired"]["bleu_4"]["p_value"] > 0
    assert "capeval1k" in card._repr_markdown_() and "mine" in repr(card)
    assert "NOT the benchmarked metric" not in card.markdown
    with pytest.raises(ValueError, match="was not benchmarked"):
        lab.report_card("other", res, baselines=["bleu_1"], contract=record, sets=sets)


def test_sugarcrepe_is_a_test_set_with_its_row_and_types_on_the_card(tmp_path, shared_data):
    assert "sugarcrepe_refs4" in lab.TEST_SETS
    sets = lab.lab_sets(lab.dev_split(seed=0), names=("sugarcrepe_refs4",),
                        n_images={"sugarcrepe_refs4": 30}, progress=False)
    s = sets["sugarcrepe_refs4"]
    assert s.role == "test" and s.rows == "30 of 1560 images" and len(s.data.ids) == len(s.data)
    res = lab.bench({"mine": overlap, "cider_d": "cider_d"}, sets, n_boot=20, compare=["mine"],
                    baselines=["cider_d"], progress=False)
    cell = res["sugarcrepe_refs4"]["cider_d"]
    assert set(cell.categories) <= set(s.protocol.categories) and cell.category_ci95
    card = lab.report_card("mine", res, baselines=["cider_d"], sets=sets,
                           contract=contract.check_contract(overlap, CANDS, REFS), out=tmp_path)
    assert "| sugarcrepe_refs4 | 30 of 1560 images |" in card.markdown
    assert "## SugarCrepe accuracy by error type" in card.markdown
    assert card.data["sugarcrepe_by_type"] == res["sugarcrepe_refs4"]["mine"].categories


def test_a_constant_metric_gets_a_report_card_with_its_undefined_numbers(tmp_path, shared_data):
    """Every row tied: Kendall's tau and the paired tests are NaN, written '-' and null."""
    def constant(candidates, references):
        cands, _, ids = align(candidates, references)
        if not cands:
            raise ValueError("constant: no candidates")
        return Scores("constant", np.full(len(cands), 0.5), 0.5, make_signature("constant"), ids)

    sets = lab.lab_sets(lab.dev_split(seed=0), names=("capeval1k",), n_images={"capeval1k": 30})
    res = lab.bench({"constant": constant, "bleu_4": "bleu_4"}, sets, n_boot=10,
                    compare=["constant"], baselines=["bleu_4"], progress=False)
    assert np.isnan(res["capeval1k"]["constant"].value)
    card = lab.report_card("constant", res, baselines=["bleu_4"], sets=sets, out=tmp_path,
                           contract=contract.check_contract(constant, CANDS, REFS))
    entry = json.loads(card.paths[1].read_text())["test_sets"]["capeval1k"]
    assert entry["value"] is None and entry["paired"]["bleu_4"]["difference"] is None
    row = next(line for line in card.markdown.splitlines() if line.startswith("| capeval1k"))
    assert "| - [-, -] |" in row and "vs bleu_4: -, p = " in row
    assert "-: undefined" in card.markdown
    # a '-' elsewhere on the card (a robustness AUC) gets the footnote too; none: no footnote
    for auc, note in ((float("nan"), True), (0.5, False)):
        data = dict(card.data, test_sets={}, robustness_auc={"RC": auc})
        data = json.loads(json.dumps(report_card_module._finite(data)))
        assert ("-: undefined" in report_card_module._card_markdown(data)) is note
    assert "NOT the benchmarked metric" not in card.markdown
    other = lab.report_card("constant", res, baselines=["bleu_4"], sets=sets,
                            contract=contract.check_contract(overlap, CANDS, REFS))
    assert "NOT the benchmarked metric: the contract was checked on `overlap|" in other.markdown
    # the same metric with settings that depend on the data it saw (a different idf table): the
    # same metric, no warning; a record whose metric did not run has no signature: no warning
    def sized(candidates, references):
        cands, _, ids = align(candidates, references)
        return Scores("constant", np.full(len(cands), 0.5), 0.5,
                      make_signature("constant", refs=f"refs({len(cands)})"), ids)

    def broken(candidates, references):
        raise RuntimeError("not written yet")
    for fn in (sized, broken):
        card = lab.report_card("constant", res, baselines=["bleu_4"], sets=sets,
                               contract=contract.check_contract(fn, CANDS, REFS))
        assert "NOT the benchmarked metric" not in card.markdown
