"""capkit.diversity beyond the three diversity scores: accuracy and F, vocabulary, projections,
caption-set generators, the summary, the plots and `capkit diversity`."""
import argparse
import json

import numpy as np
import pytest

from capkit.diversity import (
    accuracy,
    caption_sets,
    classical_mds,
    distinct_n,
    diversity_summary,
    f_score,
    human_accuracy,
    kernel_distances,
    kernel_projection,
    lsa_projection,
    metric_mds,
    sample_references,
    self_cider,
    self_cider_kernel,
    synonym_sets,
    synonym_switch,
    tail_share,
    vocabulary_size,
    word_frequencies,
)
from capkit.metrics import cider_d, document_frequencies
from capkit.models.glove import GloVe

TOK = "split"
SETS = {"1": ["a dog runs on grass", "a brown dog is running", "dog on the lawn"],
        "2": ["two cats sleep", "two cats sleep", "a cat naps on a sofa"]}
REFS = {"1": ["a dog running on the grass", "a brown dog runs outside"],
        "2": ["two cats sleeping on a couch", "cats asleep on a sofa", "two cats resting"],
        "3": ["a red car on a street", "a car parked"]}


@pytest.fixture(scope="module")
def df():
    return document_frequencies(REFS, tokenizer=TOK, name="refs3")


def test_accuracy_is_mean_cider_d_against_the_references(df):
    got = accuracy(SETS, REFS, tokenizer=TOK)
    for n, (i, caps) in enumerate(SETS.items()):
        per = cider_d(caps, [REFS[i]] * len(caps), document_frequency=df, tokenizer=TOK)
        assert got.per_caption[n] == pytest.approx(per.per_caption.mean(), abs=1e-12)
    assert "df:references(3)" in got.signature
    given = accuracy(SETS, REFS, document_frequency=df, tokenizer=TOK)
    np.testing.assert_allclose(given.per_caption, got.per_caption, atol=1e-12)
    with pytest.raises(ValueError, match="no references"):
        accuracy(SETS, {"1": REFS["1"]}, tokenizer=TOK)
    with pytest.raises(ValueError, match="non-empty list"):
        accuracy(SETS, {"1": [], "2": ["x"]}, tokenizer=TOK)


def test_human_leave_one_out_accuracy(df):
    got = human_accuracy(REFS, ["1", "2"], tokenizer=TOK)
    refs = REFS["2"]
    loo = [cider_d([refs[i]], [[r for j, r in enumerate(refs) if j != i]],
                   document_frequency=df, tokenizer=TOK).per_caption[0] for i in range(3)]
    assert got.per_caption[1] == pytest.approx(np.mean(loo), abs=1e-12)
    with pytest.raises(ValueError, match="fewer than 2"):
        human_accuracy({"1": ["only one"], "2": ["a", "b"]}, tokenizer=TOK)


def test_f_score():
    assert f_score(0.5, 2.0) == pytest.approx(6 * 0.5 * 2.0 / (5 * 0.5 + 2.0))
    assert f_score(0.5, 2.0, beta=1.0) == pytest.approx(2 * 0.5 * 2.0 / 2.5)
    assert f_score(0.0, 0.0) == 0.0
    np.testing.assert_allclose(f_score(np.array([0.5, 1.0]), 1.0), [6 * .5 / 3.5, 1.0])
    with pytest.raises(ValueError, match="beta"):
        f_score(0.5, 1.0, beta=-1)


def test_vocabulary_statistics():
    d1 = distinct_n(SETS, 1, tokenizer=TOK)
    words = SETS["2"]
    toks = [t for c in words for t in c.split()]
    assert d1.per_caption[1] == pytest.approx(len(set(toks)) / len(toks))
    d2 = distinct_n(SETS, 2, tokenizer=TOK)
    bigrams = [tuple(c.split()[i:i + 2]) for c in words for i in range(len(c.split()) - 1)]
    assert d2.per_caption[1] == pytest.approx(len(set(bigrams)) / len(bigrams))
    freqs = word_frequencies(SETS, tokenizer=TOK)
    assert freqs[0] == ("a", 4) and vocabulary_size(SETS, tokenizer=TOK) == len(freqs)
    assert vocabulary_size(["a b", "b c"], tokenizer=TOK) == 3
    assert tail_share([("a", 3), ("b", 1)], 1) == 0.25
    with pytest.raises(ValueError, match="at least 1"):
        distinct_n(SETS, 0, tokenizer=TOK)
    with pytest.raises(TypeError, match="captions"):
        word_frequencies([1, 2], tokenizer=TOK)


def test_projections(df):
    caps = SETS["1"] + SETS["2"]
    lsa = lsa_projection(caps, 3, tokenizer=TOK)
    assert lsa.coords.shape == (6, 3) and np.all(np.diff(lsa.strengths) <= 0)
    np.testing.assert_allclose(lsa.coords.T @ lsa.coords, np.eye(3), atol=1e-12)
    kp = kernel_projection(caps, 4, document_frequency=df, tokenizer=TOK)
    K = self_cider_kernel(caps, document_frequency=df, tokenizer=TOK)
    np.testing.assert_allclose(K @ kp.coords, kp.coords * kp.strengths, atol=1e-9)
    assert all(abs(c.max()) >= abs(c.min()) for c in kp.coords.T)     # sign convention
    points = np.array([[0.0, 0.0], [3.0, 0.0], [0.0, 4.0]])
    xy = classical_mds(points @ points.T)
    dist = np.linalg.norm(xy[:, None] - xy[None], axis=-1)
    np.testing.assert_allclose(dist, np.linalg.norm(points[:, None] - points[None], axis=-1),
                               atol=1e-9)
    np.testing.assert_allclose(np.linalg.norm(metric_mds(points @ points.T)[:, None]
                                              - metric_mds(points @ points.T)[None], axis=-1),
                               dist, atol=1e-9)
    rng = np.random.default_rng(0)
    high = rng.random((12, 5))
    target = kernel_distances(high @ high.T)

    def stress(xy):
        return ((np.linalg.norm(xy[:, None] - xy[None], axis=-1) - target) ** 2).sum()
    assert stress(metric_mds(high @ high.T)) < stress(classical_mds(high @ high.T))
    with pytest.raises(ValueError, match="square"):
        classical_mds(np.ones((2, 3)))
    with pytest.raises(ValueError, match="at least 2 captions"):
        lsa_projection(["one"], tokenizer=TOK)
    with pytest.raises(ValueError, match="stop word"):
        lsa_projection(["a the", "of on"], tokenizer=TOK)


@pytest.fixture()
def tiny_glove():
    words = ["man", "woman", "boy", "dog", "cat", "puppy", "runs", "walks", "a"]
    rng = np.random.default_rng(0)
    base = {"man": 0, "woman": 0, "boy": 0, "dog": 1, "cat": 1, "puppy": 1, "runs": 2,
            "walks": 2, "a": 3}
    vecs = np.eye(4)[[base[w] for w in words]] + 0.1 * rng.random((len(words), 4))
    return GloVe(words, vecs, source="tiny")


def test_synonym_switch_is_seeded_and_uses_neighbours(tiny_glove):
    caps = ["A man runs", "a dog walks"]
    assert synonym_switch(caps, 0.0, glove=tiny_glove) == ["a man runs", "a dog walks"]
    one = synonym_switch(caps, 1.0, glove=tiny_glove, k=2, seed=3)
    assert one == synonym_switch(caps, 1.0, glove=tiny_glove, k=2, seed=3)
    assert all(w1 != w0 for c0, c1 in zip(caps, one)
               for w0, w1 in zip(c0.lower().split(), c1.split()))
    assert one[0].split()[1] in {"woman", "boy"}
    sets = synonym_sets({"7": "a man runs"}, glove=tiny_glove, seed=1)
    assert len(sets["7"]) == 10 and sets["7"][0] == "a man runs"
    assert sets == synonym_sets({"7": "a man runs"}, glove=tiny_glove, seed=1)
    with pytest.raises(ValueError, match="probability"):
        synonym_switch(caps, 1.5, glove=tiny_glove)
    with pytest.raises(TypeError, match="list of strings"):
        synonym_switch("a man", 0.5, glove=tiny_glove)
    with pytest.raises(ValueError, match="ps must be"):
        synonym_sets({"7": "a man"}, ps=(), glove=tiny_glove)


def test_sample_references():
    got = sample_references(REFS, 2, seed=0)
    assert all(len(v) == 2 and set(v) <= set(REFS[k]) for k, v in got.items())
    assert got == sample_references(REFS, 2, seed=0)
    with pytest.raises(ValueError, match="fewer than 3"):
        sample_references(REFS, 3)


def test_summary_columns_and_model_level_f(df):
    s = diversity_summary(SETS, REFS, document_frequency=df, tokenizer=TOK)
    assert list(s.per_image) == ["1", "2"]
    assert set(s.per_image["1"]) == {"self_cider", "lsa", "mbleu_1", "mbleu_2", "mbleu_3",
                                     "mbleu_4", "mbleu_mix", "distinct_1", "distinct_2",
                                     "accuracy", "f_score"}
    assert s.average["self_cider"] == pytest.approx(
        self_cider(SETS, document_frequency=df, tokenizer=TOK).corpus)
    assert s.average["f_score"] == pytest.approx(f_score(s.average["self_cider"],
                                                         s.average["accuracy"]))
    assert s.average["vocabulary_size"] == vocabulary_size(SETS, tokenizer=TOK)
    assert "accuracy" not in diversity_summary(SETS, document_frequency=df,
                                               tokenizer=TOK).average


def test_plots_return_axes():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from capkit.plots import diversity as dp
    coords = np.random.default_rng(0).random((4, 5))
    assert dp.diversity_accuracy({"a": (0.5, 1.0), "b": (0.8, 0.3)}) is not None
    assert dp.diversity_by_m({"a": {2: .3, 5: .5}}, dashed={"a": {2: .2, 5: .4}}) is not None
    assert dp.word_frequency_tails({"a": [("x", 5), ("y", 2)]}) is not None
    assert dp.caption_map(coords[:, :2], groups=[0, 0, 1, 1], labels=list("abcd")) is not None
    assert dp.radar(coords, captions=list("abcd")).name == "polar"
    assert dp.kernel_heatmap(np.eye(3)) is not None
    _, ax = plt.subplots()
    assert dp.diversity_accuracy({"a": (0.5, 1.0)}, ax=ax) is ax
    with pytest.raises(ValueError, match="polar"):
        dp.radar(coords, ax=ax)
    plt.close("all")


def _cli(argv, capsys):
    from capkit.commands import diversity
    parser = argparse.ArgumentParser(prog="capkit")
    diversity.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    assert args.func(args) == 0
    return capsys.readouterr().out


def test_cli_json_matches_the_library(tmp_path, capsys, df):
    caps, refs, dfr = tmp_path / "caps.json", tmp_path / "refs.json", tmp_path / "df.json"
    caps.write_text(json.dumps([{"image_id": int(k), "captions": v} for k, v in SETS.items()]))
    refs.write_text(json.dumps(REFS))
    dfr.write_text(json.dumps(REFS))
    out = json.loads(_cli(["diversity", "--captions", str(caps), "--references", str(refs),
                           "--df-references", str(dfr), "--tokenizer", TOK,
                           "--format", "json"], capsys))
    assert set(out) == {"per_image", "average", "signature"}
    lib = diversity_summary(SETS, REFS, document_frequency=df, tokenizer=TOK)
    for i, row in lib.per_image.items():
        for col, value in row.items():
            assert out["per_image"][i][col] == pytest.approx(value, abs=1e-12)
    assert out["average"]["f_score"] == pytest.approx(lib.average["f_score"])
    assert "self_cider" in out["signature"]
    table = _cli(["diversity", "--captions", str(caps), "--tokenizer", TOK, "--num", "2",
                  "--df-references", str(dfr)], capsys)
    assert "<average>" in table and "accuracy" not in table and "signatures:" in table
    subset = caption_sets(SETS, TOK).first(2)
    assert f"{self_cider(subset, document_frequency=df).corpus:.4f}" in table


def test_cli_signatures_record_the_captions_per_image_in_every_column(tmp_path, capsys):
    """--num changes every number, so every signature says how many captions each image had;
    the CSV's <signature> row fills the mbleu_* columns with mbleu's signature."""
    import csv
    import io
    caps, refs = tmp_path / "caps.json", tmp_path / "refs.json"
    caps.write_text(json.dumps(SETS))
    refs.write_text(json.dumps(REFS))
    common = ["diversity", "--captions", str(caps), "--references", str(refs), "--df-references",
              str(refs), "--tokenizer", TOK]
    rows = list(csv.reader(io.StringIO(_cli([*common, "--num", "2", "--format", "csv"], capsys))))
    header, signature = rows[0], rows[-1]
    assert signature[0] == "<signature>" and len(signature) == len(header)
    for column, sig in zip(header[1:], signature[1:]):
        name = "mbleu" if column.startswith("mbleu_") else column
        assert sig.startswith(f"{name}|") and "|m:2|" in sig, (column, sig)
    every = json.loads(_cli([*common, "--format", "json"], capsys))["signature"]
    assert all("|m:3|" in sig for sig in every.values()), every


def test_cli_errors(tmp_path, capsys):
    from capkit.commands import diversity
    parser = argparse.ArgumentParser(prog="capkit")
    diversity.register(parser.add_subparsers(dest="command", required=True))
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"image_id": 1, "captions": ["only one"]}]))
    with pytest.raises(ValueError, match="m < 2"):
        diversity.run(parser.parse_args(["diversity", "--captions", str(bad)]))
    with pytest.raises(FileNotFoundError, match="does not exist"):
        diversity.run(parser.parse_args(["diversity", "--captions", str(tmp_path / "no")]))
    bad.write_text(json.dumps(["a", "b"]))
    with pytest.raises(ValueError, match="merge_results"):
        diversity.run(parser.parse_args(["diversity", "--captions", str(bad)]))
    for beta2 in ("-1", "inf", "nan"):
        with pytest.raises(ValueError, match="--beta2 must be a number >= 0"):
            diversity.run(parser.parse_args(["diversity", "--captions", str(bad), "--beta2",
                                             beta2]))
    with pytest.raises(ValueError, match="--num must be at least 2"):
        diversity.run(parser.parse_args(["diversity", "--captions", str(bad), "--num", "0"]))
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        diversity.run(parser.parse_args(["diversity", "--captions", str(bad)]))


def test_ranked_then_first_keeps_the_best_captions():
    sets = caption_sets(SETS, TOK)
    top = sets.ranked([0.1, 0.9, 0.5, 0.2, 0.2, 0.7]).first(2).to_dict()
    assert top == {"1": ["a brown dog is running", "dog on the lawn"],
                   "2": ["a cat naps on a sofa", "two cats sleep"]}
    with pytest.raises(ValueError, match="one score per caption"):
        sets.ranked([1.0, 2.0])


def test_latent_semantics_draws_two_radars(df):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from capkit.plots.diversity import latent_semantics
    axes = latent_semantics(SETS["1"] + SETS["2"], document_frequency=df, k=3, tokenizer=TOK)
    assert [a.name for a in axes] == ["polar", "polar"]
    plt.close("all")


@pytest.mark.parametrize("content, key", [
    ('{"1": ["a dog", "a cat"], "1": ["a bird", "a fish"]}', "'1' twice"),
    ('[{"image_id": 1, "captions": ["a", "b"]}, {"image_id": 1, "captions": ["c", "d"]}]',
     "image_id 1 appears twice"),
    ('[{"image_id": 1, "captions": ["a", "b"], "captions": ["c", "d"]}]', "'captions' twice"),
])
def test_read_caption_sets_refuses_an_id_given_twice(tmp_path, content, key):
    from capkit.diversity import read_caption_sets
    path = tmp_path / "sets.json"
    path.write_text(content)
    with pytest.raises(ValueError, match=f"captions file '{path}'.*{key}"):
        read_caption_sets(path)


def test_lsa_projection_drops_ptb_clitics_of_stop_words_as_b1_star_does():
    # "'s" and "n't" are NLTK stop words ("s", "not") once PTB has split them off
    from capkit.diversity.projection import lsa_projection as lsa
    caps = ["the dog's bone isn't here", "a dog's bone is there", "a cat on a mat"]
    plain = ["the dog bone here", "a dog bone there", "a cat on a mat"]
    assert np.allclose(lsa(caps, 2).coords, lsa(plain, 2).coords)
