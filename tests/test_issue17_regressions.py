"""Issue #17, "Why" points 1-5: one regression test each (plus a Java one for point 4).

Every test here failed on the code before the registry (9559228) and passes since 617713f. The
API added by #17 is reached as ``capkit.metrics.<name>`` inside the tests, so on the old code a
missing name fails that one test (AttributeError), not the whole file.
"""
import copy
import dataclasses
import importlib
import json
import math
import pickle
import pkgutil
import warnings

import numpy as np
import pytest

import capkit.metrics
import capkit.text
from capkit.metrics import cider_d, document_frequencies, score
from capkit.scores import Scores
from reference_metrics import reference_scores
from skip_policy import needs_java
from test_meta_eval import TOY, _toy_judgments

CANDS = {"1": "a dog runs on the grass", "2": "two cats sleep on a sofa",
         "3": "a man rides a red bike"}
REFS = {"1": ["a dog is running across the grass", "a brown dog runs outside"],
        "2": ["two cats are sleeping on a couch"],
        "3": ["a man riding a bicycle", "someone on a red bike"]}


def _word_count(candidates, references):
    """A user's metric: plain texts in, one number per candidate out."""
    return [float(len(c.split())) for c in candidates]


@pytest.fixture
def user_metric():
    name = "issue17_word_count"
    capkit.metrics.register(_word_count, name=name, score_range=(0, 1e6))
    yield name
    capkit.metrics.unregister(name)


@pytest.fixture
def scorer_calls(monkeypatch):
    """Every ``Scorer.score`` call, as the tuple of metric names it scored."""
    calls = []
    real = capkit.metrics.Scorer.score

    def spy(self, *args, **kwargs):
        calls.append(self.names)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(capkit.metrics.Scorer, "score", spy)
    return calls


# ------------------------------------------------------------ 1. the registry is the one place

def test_1_registry_is_the_one_place_no_parallel_name_lists():
    for old in ("METRICS", "CLASSIC", "TEXT_METRICS", "DEFAULT_BENCH", "IMAGE_METRICS"):
        assert not hasattr(capkit.metrics, old), old
    marked = []
    for mod in pkgutil.walk_packages(capkit.metrics.__path__, "capkit.metrics."):
        module = importlib.import_module(mod.name)
        marked += [f"{mod.name}.{k}" for k, v in vars(module).items()
                   if callable(v) and hasattr(v, "needs_images")]
    assert not marked, f"functions still carry needs_images: {marked}"
    specs = capkit.metrics.registered()
    assert len({s.name for s in specs}) == len(specs) > 10
    for spec in specs:
        assert capkit.metrics.get_spec(spec.name) is spec
        assert callable(spec.function)
    for suite in ("classic", "systems", "bench"):
        assert set(capkit.metrics.suite(suite)) <= {s.name for s in specs}


def test_1_a_registered_user_metric_runs_through_the_one_scorer_everywhere(
        user_metric, scorer_calls, monkeypatch):
    import capkit.data
    from capkit.data.schema import SystemCaptions
    from capkit.meta_eval import benchmark
    from capkit.robustness import robustness
    from capkit.systems import score_systems
    want = [float(len(c.split())) for c in CANDS.values()]

    out = score(CANDS, REFS, [user_metric, "bleu_4"])
    assert out[user_metric].per_caption.tolist() == want
    assert scorer_calls.pop() == (user_metric, "bleu_4")

    toy = _toy_judgments()
    monkeypatch.setattr(capkit.data, "load", lambda name, **options: toy)
    cell = benchmark([user_metric], TOY, n_boot=5)["toy"][user_metric]
    assert cell.n == 80 and scorer_calls.pop() == (user_metric,)

    refs = {k: [*v, "a photo"] for k, v in REFS.items()}      # leave-one-out needs two
    result = robustness(refs, [user_metric], ["RC"], n_boot=5, gammas=[0.0, 0.5, 1.0])
    assert set(result.curves) == {user_metric}
    assert scorer_calls and all(names == (user_metric,) for names in scorer_calls)
    scorer_calls.clear()

    corpus = SystemCaptions("toy", REFS, {"sys_a": CANDS})
    assert score_systems(corpus, [user_metric])["sys_a"][user_metric].per_caption.tolist() \
        == want
    assert scorer_calls == [(user_metric,)]


def test_1_one_tokenisation_and_one_ngram_index_for_all_token_metrics(monkeypatch):
    import capkit.metrics.inputs as inputs
    tokenised, indexed = [], []
    real_ptb, real_index = capkit.text.ptb_tokenize, inputs.build_index

    def ptb(texts, **kwargs):
        tokenised.append(len(texts))
        return real_ptb(texts, **kwargs)

    def index(*args, **kwargs):
        indexed.append(args[1:])
        return real_index(*args, **kwargs)

    monkeypatch.setattr(capkit.text, "ptb_tokenize", ptb)
    monkeypatch.setattr(inputs, "build_index", index)
    score(CANDS, REFS, ["bleu_1", "bleu_4", "rouge_l", "cider_d", "meteor", "bleu_1_nostop"])
    assert tokenised == [3, 5]          # one stream of candidates, one of references
    # BLEU-1, BLEU-4 and CIDEr-D share one 1..4-gram index; B@1* indexes its stop-word-free tokens
    assert indexed == [(4,), (1,)]


# ------------------------------------------------------------ 2. Scores is a value

def test_2_scores_is_a_value():
    s = score(CANDS, REFS, ["bleu_4"])["bleu_4"]
    with pytest.raises(ValueError, match="read-only"):
        s.per_caption[0] = 99
    with pytest.raises(ValueError, match="read-only"):
        s.parts["bleu_1"][0] = 99
    twin = copy.deepcopy(s)
    assert twin == s and hash(twin) == hash(s) and len({s, twin}) == 1
    assert pickle.loads(pickle.dumps(s)) == s and not twin.per_caption.flags.writeable
    assert dataclasses.replace(s, per_caption=s.per_caption + 1e-12) != s
    assert dataclasses.replace(s, signature=s.signature + "|x") != s

    nan = Scores("m", [math.nan, 1.0], math.nan, "m|x", ("a", "b"),
                 {"p": np.array([math.nan, 2.0]), "q": math.nan})
    assert nan == copy.deepcopy(nan) == Scores("m", [math.nan, 1.0], math.nan, "m|x", ("a", "b"),
                                               {"p": np.array([math.nan, 2.0]), "q": math.nan})
    assert hash(nan) == hash(copy.deepcopy(nan))

    def no_nan(token):
        raise AssertionError(f"{token} in JSON")
    data = json.loads(nan.to_json(), parse_constant=no_nan)
    assert data["corpus"] is None and data["per_caption"] == [None, 1.0]
    assert data["parts"] == {"p": [None, 2.0], "q": None}

    frame = s.to_frame()
    assert list(frame.index) == ["1", "2", "3"] and frame.index.name == "id"
    assert list(frame.columns) == ["bleu_4", "bleu_1", "bleu_2", "bleu_3", "testlen", "reflen"]
    np.testing.assert_array_equal(frame["bleu_4"], s.per_caption)


# ------------------------------------------------------------ 3. signatures name the data

def test_3_signatures_tell_different_tables_apart():
    refs_a = REFS
    refs_b = {"x": ["a bird flies over the sea"], "y": ["a red car on a road", "a car"]}
    df_a, df_b = document_frequencies(refs_a), document_frequencies(refs_b)
    assert df_a.name == df_b.name == "given"
    def sig(df):
        return cider_d(CANDS, REFS, document_frequency=df).signature
    assert sig(df_a) != sig(df_b)
    assert sig(df_a) == sig(document_frequencies(dict(reversed(list(refs_a.items())))))

    for name in ("bleu_1_nostop", "mean_glove"):
        def sig_of(words):
            return score(CANDS, REFS, [name], options={name: {"stopwords": words}})[name].signature
        a, b = sig_of(["a", "on", "the"]), sig_of(["a", "on", "of"])
        assert a != b, name
        assert a == sig_of(("the", "a", "on")) == sig_of({"on", "the", "a"}), name


# ------------------------------------------------------------ 4. empty candidates

EMPTY_CANDS = {"1": "", "2": "a dog runs on the grass", "3": "a man rides a red bike"}


def _scored_with_one_warning(metrics):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = score(EMPTY_CANDS, REFS, metrics)
    messages = [str(w.message) for w in caught]
    assert len(messages) == 1 and "1 candidate(s) are empty" in messages[0], messages
    for name, s in out.items():
        assert s.parts["n_empty_candidates"] == 1, name
        assert s.by_id()["1"] == 0.0, name
    return out


def test_4_empty_candidates_score_as_pycocoevalcap_with_one_warning():
    # the captions are lower-case words already, so the PTB tokens are the texts themselves
    out = _scored_with_one_warning(["bleu_4", "rouge_l", "cider_d"])
    theirs = reference_scores(REFS, {k: [v] for k, v in EMPTY_CANDS.items()})
    for name, s in out.items():
        np.testing.assert_allclose(s.per_caption, theirs[name][1], rtol=0, atol=1e-12,
                                   err_msg=name)
        assert s.corpus == pytest.approx(theirs[name][0], abs=1e-12), name
    with pytest.raises(ValueError, match="candidate 1 is empty"):
        score(EMPTY_CANDS, REFS, ["bleu_4"], strict=True)


@pytest.mark.java
@needs_java
def test_4_empty_candidate_meteor_equals_pycocoevalcap_meteor():
    from pycocoevalcap.meteor.meteor import Meteor
    out = _scored_with_one_warning(["meteor"])["meteor"]
    corpus, per = Meteor().compute_score(REFS, {k: [v] for k, v in EMPTY_CANDS.items()})
    np.testing.assert_allclose(out.per_caption, per, rtol=0, atol=1e-12)
    assert per[0] == 0.0 and out.corpus == pytest.approx(corpus, abs=1e-12)


# ------------------------------------------------------------ 5. no candidates; one name

def test_5_no_candidates_is_a_clear_error_and_a_bare_string_is_one_metric():
    with pytest.raises(ValueError, match="no candidates"):
        score({}, {}, ["bleu_4"])
    with pytest.raises(ValueError, match="no candidates"):
        score([], [], ["bleu_4"])
    one = score(CANDS, REFS, "bleu_4")
    assert list(one) == ["bleu_4"] and one == score(CANDS, REFS, ["bleu_4"])
