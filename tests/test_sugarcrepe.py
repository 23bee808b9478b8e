"""SugarCrepe: the loader's reference rule, the shared tie rule, and parity with pycocoevalcap 1.2.

The parity test scores a slice (the two swap types, 911 pairs, where one reference leaves dozens
of negatives with a CIDEr-D equal to their positive's) as COCOEvalCap would: the positives as one
system and the negatives as another, keyed by pair id, PTB-tokenised (capkit's Java-free
tokenizer, equal to CoreNLP 3.4.1: tests/test_text.py), CIDEr-D's document frequencies from the
slice's references. capkit's accuracies and tie counts must equal those of pycocoevalcap's
per-caption scores exactly; its per-caption scores agree within 1e-12.
"""
from collections import Counter

import numpy as np
import pytest

from capkit.data import load
from capkit.data.sugarcrepe import TYPES, caption_key
from capkit.meta_eval import benchmark, get_protocol, pair_credit, system_level, tie_codes, tied
from capkit.meta_eval.protocols import variant
from capkit.meta_eval.stats import SystemStatistic

SWAPS = ("swap_att", "swap_obj")


@pytest.fixture(scope="module")
def refs4(shared_data):
    return load("sugarcrepe")


def test_counts_and_references(refs4):
    assert len(refs4) == 7511
    assert Counter(refs4.category.tolist()) == {
        "add_att": 692, "add_obj": 2062, "replace_att": 788, "replace_obj": 1652,
        "replace_rel": 1406, "swap_att": 666, "swap_obj": 245}
    assert Counter(len(r) for r in refs4.references) == {4: 7459, 5: 47, 3: 2, 2: 3}
    assert len(set(refs4.images)) == 1560 and set(refs4.label.tolist()) == {0}
    for positive, refs in zip(refs4.caption_a, refs4.references):
        assert caption_key(positive) not in {caption_key(r) for r in refs}
    assert refs4.ids[:2] == ["add_att/0", "add_att/1"] and len(set(refs4.ids)) == 7511


def test_refs1_is_the_first_remaining_reference(refs4, shared_data):
    one = load("sugarcrepe", references="refs1")
    assert one.caption_a == refs4.caption_a and one.caption_b == refs4.caption_b
    assert one.references == [r[:1] for r in refs4.references]


def test_references_in_annotation_id_order(refs4):
    # add_att/0's image 000000085329.jpg: its 5 captions in annotation-id order, the positive
    # ("A drawing of a young woman with many facial piercings.") removed
    assert refs4.images[0] == "000000085329.jpg"
    assert refs4.references[0][0] == "An image of a very cute girl with face piercings."
    assert len(refs4.references[0]) == 4


def test_caption_key():
    assert caption_key("  A  man\nrides a Horse . ") == "a man rides a horse"
    assert caption_key("A man rides a horse..") == "a man rides a horse."
    assert caption_key("a man") == caption_key("A man.")


def test_loader_errors(shared_data):
    with pytest.raises(ValueError, match="choose one of"):
        load("sugarcrepe", references="refs2")
    with pytest.raises(ValueError, match="give one or more of"):
        load("sugarcrepe", types=("swap",))
    with pytest.raises(ValueError, match="benchmark\\(\\) runs them all"):
        get_protocol("sugarcrepe")


def test_tie_rule():
    a = np.array([1.0, 0.0, 3.0, 1e-300, 2.0])
    b = np.array([1.0 + 2e-16, 0.0, 3.0 * (1 + 2e-9), 0.0, 2.0 + 1e-10])
    assert tied(a, b).tolist() == [True, True, False, False, True]
    # a last-bit difference is a tie, counted one half, on PASCAL-50S pairs as on SugarCrepe
    credit = pair_credit([0.1 + 0.2, 0.5], [0.3, 0.4], [0, 0])
    assert credit.tolist() == [0.5, 1.0]
    assert tie_codes([0.3, 0.1 + 0.2, 0.5, 0.1]).tolist() == [1, 1, 2, 0]


def test_system_ranks_use_the_tie_rule():
    # two systems whose means are equal in exact arithmetic but not in floating point
    metric = np.array([0.1, 0.2, 0.3, 0.0, 0.9, 0.9])
    human = np.array([1.0, 1.0, 2.0, 2.0, 3.0, 3.0])
    systems = np.array(["a", "a", "b", "b", "c", "c"])
    assert metric[:2].mean() != metric[2:4].mean()
    tau, _ = system_level(metric, human, systems, statistic="kendall_tau_b")
    assert tau == pytest.approx(2 / np.sqrt(2 * 3))      # a and b tied in the metric only
    stat = SystemStatistic("kendall_tau_b", metric, human, systems)
    assert stat() == pytest.approx(tau)


def _pycocoevalcap_accuracy(data):
    """Accuracy x 100 and ties of BLEU-4 and CIDEr-D from pycocoevalcap 1.2's per-caption
    scores, positives and negatives scored as two systems keyed by pair id."""
    from pycocoevalcap.bleu.bleu import Bleu
    from pycocoevalcap.cider.cider import Cider

    from capkit.text import ptb_tokenize
    flat = iter(ptb_tokenize([r for refs in data.references for r in refs]))
    gts = {k: [next(flat) for _ in refs] for k, refs in zip(data.ids, data.references)}
    per = {}
    for side, captions in (("a", data.caption_a), ("b", data.caption_b)):
        res = dict(zip(data.ids, ([c] for c in ptb_tokenize(captions))))
        per[("bleu_4", side)] = np.asarray(Bleu(4).compute_score(gts, res, verbose=0)[1][3])
        per[("cider_d", side)] = np.asarray(Cider().compute_score(gts, res)[1])
    out = {}
    for m in ("bleu_4", "cider_d"):
        a, b = per[(m, "a")], per[(m, "b")]
        even = tied(a, b)
        out[m] = (100 * np.where(even, 0.5, (a > b).astype(float)).mean(), int(even.sum()),
                  int((a == b).sum()), np.r_[a, b])
    return out


@pytest.mark.parametrize("references", ["refs4", "refs1"])
def test_bleu_cider_accuracy_equals_pycocoevalcap(shared_data, references):
    protocol = variant(f"sugarcrepe_{references}", types=SWAPS)
    res = benchmark(["bleu_4", "cider_d"], protocol, n_boot=20, progress=False)[protocol.name]
    theirs = _pycocoevalcap_accuracy(load("sugarcrepe", references=references, types=SWAPS))
    for m in ("bleu_4", "cider_d"):
        accuracy, n_ties, _, scores = theirs[m]
        np.testing.assert_allclose(res[m].scores.per_caption, scores, rtol=0, atol=1e-12)
        assert res[m].value == pytest.approx(accuracy, abs=1e-12), m
        assert res[m].n_ties == n_ties, m
        assert set(res[m].categories) == set(SWAPS)
    if references == "refs1":      # the slice needs the tie rule: == alone would split ties
        assert theirs["cider_d"][2] < theirs["cider_d"][1]


def test_both_protocols_per_type_intervals_and_skipped_images(shared_data, tmp_path):
    res = benchmark(["bleu_4", "clipscore"], "sugarcrepe", n_boot=50, progress=False)
    assert list(res.results) == ["sugarcrepe_refs4", "sugarcrepe_refs1"]
    cell = res["sugarcrepe_refs4"]["bleu_4"]
    assert cell.n == 7511 and set(cell.categories) == set(TYPES)
    assert set(cell.category_ci95) == set(TYPES)
    for k, (low, high) in cell.category_ci95.items():
        assert low <= cell.categories[k] <= high
    assert cell.ci95[0] <= cell.value <= cell.ci95[1]
    assert cell.value == pytest.approx(100 * np.mean(
        np.where(tied(*cell.scores.per_caption.reshape(2, -1)), 0.5,
                 np.greater(*cell.scores.per_caption.reshape(2, -1)))))
    why = {b: r for b, m, r in res.skipped if m == "clipscore"}
    assert set(why) == {"sugarcrepe_refs4", "sugarcrepe_refs1"}
    assert "COCO val2017" in why["sugarcrepe_refs1"]
    assert "--images sugarcrepe=DIR" in why["sugarcrepe_refs1"]
    # a folder given for the group serves both protocols (here: it lacks the images)
    res = benchmark(["bleu_4", "clipscore"], "sugarcrepe", n_boot=5, progress=False,
                    images={"sugarcrepe": str(tmp_path)})
    assert all("1560 of 1560 images" in r for _, m, r in res.skipped)


def test_capkit_bench_prints_both_protocols_per_type_with_intervals(shared_data, capsys):
    from capkit.cli import main
    assert main(["bench", "--benchmarks", "sugarcrepe", "--metrics", "bleu_4,clipscore",
                 "--n-boot", "20"]) == 0
    out, err = capsys.readouterr()
    for refs in ("sugarcrepe_refs4", "sugarcrepe_refs1"):
        assert f"{refs}  bleu_4  pairwise_accuracy(ties=half), over all pairs  7511" in out
        line = next(x for x in out.splitlines() if x.startswith(f"  {refs} / bleu_4: "))
        assert line.count("[") == 7 and "swap_obj" in line and line.endswith(" ties")
        assert f"skipped clipscore on {refs}: needs the images of sugarcrepe (COCO val2017" in err
