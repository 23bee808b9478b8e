"""Properties of every registered text metric that runs offline (hypothesis), issue #17 point 9.

For each metric of ``capkit.metrics.registered()`` that needs no images, scenes or download:

* any Unicode (emoji, ZWJ sequences, RTL, combining marks, control characters, line and paragraph
  separators, lone surrogates, empty candidates) scores without a crash, every score finite and
  inside the spec's ``score_range``, and the same input gives the same ``Scores``;
* the per-id scores do not depend on the order of the ids;
* a 5,000-token caption, 1 to 100 references and duplicated references score, and giving every
  reference twice changes nothing (each metric takes a max or a mean over references, and a
  CIDEr-D document is a reference set, so its document frequencies do not change either).

Model metrics get few examples (``EXAMPLES``); the file runs in about a minute on 2 CPU cores.
Empty candidates warn (they score as pycocoevalcap scores them); the warnings are not checked here.
"""
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

import capkit.metrics
from capkit.metrics import score
from capkit.text import ptb_tokenize

SPECS = {s.name: s for s in capkit.metrics.registered()
         if s.offline and not (s.images or s.scenes)}
# examples per property; the rest get DEFAULT (one score takes ~1 ms there)
EXAMPLES = {"bertscore": 2, "meteor": 8, "spice_lite": 6, "i2ce": 8, "i2ce_mean": 6,
            "mean_glove": 12}
DEFAULT = 25
MODEL_TOLERANCE = {"bertscore": 1e-6, "i2ce": 1e-6, "i2ce_mean": 1e-6,   # batch-shape float noise
                   "leic": 1e-6, "leic_no_da": 1e-6, "leic_rc": 1e-6, "leic_mc": 1e-6,
                   "leic_world_caption": 1e-6}


def _settings(name: str):
    return settings(max_examples=EXAMPLES.get(name, DEFAULT), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@pytest.fixture(params=list(SPECS))
def name(request):
    return request.param


def _scored(name: str, cands, refs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")          # empty candidates warn; scored as pycocoevalcap
        return score(cands, refs, [name])[name]


def _in_range(name: str, s) -> None:
    """Finite and inside the spec's range; model metrics compute in float32, so a cosine of a
    text with itself may land a rounding step past 1 (BERTScore: 1.00000003 for "a a a a"
    against itself, found by this test in CI), within MODEL_TOLERANCE."""
    low, high = SPECS[name].score_range
    slack = MODEL_TOLERANCE.get(name, 0.0)
    values = np.append(s.per_caption, s.corpus)
    assert np.all(np.isfinite(values)), (name, s.per_caption, s.corpus)
    assert np.all((low - slack <= values) & (values <= high + slack)), (name, s.per_caption, s.corpus)


def _surrogate_free(text: str) -> str:
    return "".join(c for c in text if not 0xD800 <= ord(c) < 0xE000)


# ------------------------------------------------------------ generators

WORD = st.sampled_from("a the dog cat on in runs red big small of man two grass".split())
ODD = st.sampled_from([
    "\U0001F436", "\U0001F469\u200d\U0001F469\u200d\U0001F467", "\U0001F1EB\U0001F1F7",  # emoji
    "\u202e\u0627\u0644\u0643\u0644\u0628", "\u05e9\u05dc\u05d5\u05dd", "\u200f",      # RTL
    "e\u0301", "\u0915\u094d\u0937", "Z\u0351\u0358\u035c",                             # combining
    "\x00", "\x1b[31m", "\x7f", "\x85", "\u200b", "\ufeff", "\ufffd",                 # controls
    "\n", "\r\n", "\t", "\x0b", "\u2028", "\u2029", "\xa0", "\u3000",                 # breaks
    "\ud83d", "\udc36", "\udfff",                                                     # lone surrogates
    "...", "'90", "n't", ":)", "Dr.", "U.S.", "&amp;", "--", "5 1/2", "\u00bd", "Ⅻ", "ǅ", "ß",
])
TOKEN = st.one_of(WORD, WORD, ODD, st.text(max_size=6))   # st.text: all of Unicode, Cs included
CAPTION = st.lists(TOKEN, min_size=1, max_size=10).map(" ".join)
CANDIDATE = st.one_of(CAPTION, st.sampled_from(["", " ", "...", "\U0001F436", "\ud83d"]))
# references must be captions (an empty one is a clear ValueError, tested in test_metrics.py)
REFERENCE = CAPTION.filter(lambda t: _surrogate_free(t).strip())
ITEM = st.tuples(CANDIDATE, st.lists(REFERENCE, min_size=1, max_size=4))
# ids are text too; at least 2 of them, since CIDEr-D refuses a single image without given df
BATCH = st.dictionaries(st.text(max_size=4), ITEM, min_size=2, max_size=6)


def _split(batch: dict) -> tuple[dict, dict]:
    return {k: c for k, (c, _) in batch.items()}, {k: r for k, (_, r) in batch.items()}


def _closed(text: str) -> str:
    """``text`` ending in a plain word, so that no PTB token of it depends on the next caption.

    capkit's PTB tokenisation lexes captions as one stream, like pycocoevalcap, and the lexer
    looks past the end of a line for the LAST token of a caption only (``"the letter S."`` +
    ``"A dog"`` gives ``s``, + ``"a dog"`` gives ``s.``; the last caption of a stream has no next
    line). A caption whose last token is a plain word is lexed the same whatever follows, so
    reordering the ids reorders its tokens and changes nothing else
    (``test_ptb_tokens_of_closed_captions_do_not_depend_on_their_neighbours`` checks this).
    """
    return f"{text} end" if text.strip() else text


CLOSED_BATCH = BATCH.map(lambda b: {k: (_closed(c), [_closed(r) for r in rs])
                                    for k, (c, rs) in b.items()})


# ------------------------------------------------------------ properties

def test_any_unicode_scores_finite_in_range_and_the_same_twice(name):
    @_settings(name)
    @given(BATCH)
    @example({"0": ("a", ["a"]), "": ("a a a a", ["a a a a"])})   # float32 cosine just past 1
    def check(batch):
        cands, refs = _split(batch)
        first = _scored(name, cands, refs)
        _in_range(name, first)
        assert first.ids == tuple(str(k) for k in cands)
        assert _scored(name, cands, refs) == first

    check()


def test_per_id_scores_do_not_depend_on_the_order_of_the_ids(name):
    # CIDEr-D takes document frequencies from the whole scored set by design, but a set has no
    # order; every other metric scores each caption on its own
    tolerance = MODEL_TOLERANCE.get(name, 1e-12)

    @_settings(name)
    @given(CLOSED_BATCH, st.randoms(use_true_random=False))
    def check(batch, random):
        order = list(batch)
        random.shuffle(order)
        a = _scored(name, *_split(batch))
        b = _scored(name, *_split({k: batch[k] for k in order}))
        assert b.ids == tuple(str(k) for k in order)
        assert b.by_id() == pytest.approx(a.by_id(), rel=tolerance, abs=tolerance)
        assert b.corpus == pytest.approx(a.corpus, rel=tolerance, abs=tolerance)

    check()


# a caption's words: some common and odd ones, and 2,000 rare ones, so that a reference word
# matches a handful of a 5,000-token caption's words, as in real text (with 20 words it matches
# ~250, and METEOR's alignment search takes seconds per reference; the jar takes longer)
VOCAB = ("a the dog cat on in runs red big small of man two grass near street blue "
         "\U0001F436 \u05e9\u05dc\u05d5\u05dd e\u0301 \u00bd can't U.S. 5-year-old").split() + \
    [f"w{i}" for i in range(2000)]


def _long_case(seed: int, n_refs: int) -> tuple[dict, dict]:
    """A 5,000-token candidate with ``n_refs`` short references (duplicates among them), and a
    short candidate with a 5,000-token reference; every text ends in a plain word (``_closed``)."""
    rng = np.random.default_rng(seed)

    def text(n_words):
        return " ".join(rng.choice(VOCAB, n_words)) + " end"

    pool = [text(int(rng.integers(1, 20))) for _ in range(max(1, n_refs // 3))]
    refs = {"long": [pool[i] for i in rng.integers(0, len(pool), n_refs)],
            "short": [text(8), text(5000)]}
    return {"long": text(5000), "short": text(6)}, refs


# generated cases on top of the 100-reference one; the slow metrics run that one only (~5 s)
LONG_EXAMPLES = {"bertscore": 0, "meteor": 0, "spice_lite": 0, "i2ce": 2, "i2ce_mean": 1,
                 "mean_glove": 3}


def test_long_captions_many_duplicated_references_and_every_reference_twice(name):
    # METEOR aligns every candidate with every reference; two 5,000-token texts would take
    # minutes (so would the jar), so a long text always meets short ones
    tolerance = MODEL_TOLERANCE.get(name, 1e-12)
    n_examples = LONG_EXAMPLES.get(name, 5)
    phases = (Phase.explicit, Phase.generate) if n_examples else (Phase.explicit,)

    @settings(max_examples=max(n_examples, 1), phases=phases, deadline=None,
              suppress_health_check=[HealthCheck.too_slow])
    @given(st.integers(0, 2**32 - 1), st.integers(1, 100))
    @example(seed=0, n_refs=100)
    def check(seed, n_refs):
        cands, refs = _long_case(seed, n_refs)
        once = _scored(name, cands, refs)
        _in_range(name, once)
        twice = _scored(name, cands, {k: [r for r in rs for _ in (0, 1)] for k, rs in refs.items()})
        np.testing.assert_allclose(twice.per_caption, once.per_caption, rtol=tolerance,
                                   atol=tolerance)

    check()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(CAPTION, st.just("")), min_size=1, max_size=8), st.randoms())
def test_ptb_tokens_of_closed_captions_do_not_depend_on_their_neighbours(captions, random):
    closed = [_closed(c) for c in captions]
    alone = ptb_tokenize(closed, context="isolated")
    assert ptb_tokenize(closed) == alone
    order = list(range(len(closed)))
    random.shuffle(order)
    assert ptb_tokenize([closed[i] for i in order]) == [alone[i] for i in order]


# ------------------------------------------------------------ what the properties found

def test_rouge_l_when_no_candidate_has_a_token():
    # every candidate empty: ROUGE-L's bit masks were an empty float array, and & raised TypeError
    out = _scored("rouge_l", {"a": "", "b": "..."}, {"a": ["a dog"], "b": ["a cat"]})
    assert out.per_caption.tolist() == [0.0, 0.0]


def test_lone_surrogates_are_dropped_for_every_metric_as_the_ptb_tokenizer_drops_them(name):
    # spaCy (spice_lite) and the Hugging Face tokenizers (bertscore) cannot encode them
    cands = {"a": "a dog \ud83d runs on \udc36 the grass", "b": "\udfff", "c": "two cats"}
    refs = {"a": ["a dog runs \ud800", "the dog"], "b": ["a cat"], "c": ["two cats sleep"]}
    clean_cands = {k: _surrogate_free(v) for k, v in cands.items()}
    clean_refs = {k: [_surrogate_free(r) for r in rs] for k, rs in refs.items()}
    assert _scored(name, cands, refs) == _scored(name, clean_cands, clean_refs)
