"""Large inputs in chunks (capkit.metrics.chunked / compact): the same scores as in memory.

The chunked path tokenises into compact int arrays, takes CIDEr-D's document frequencies from all
references in a first pass, pools BLEU's counts over the chunks and streams the command line's
output. Every test compares it with the in-memory path on inputs cut into several chunks (and
several tokenizer blocks); the time and memory at 1M candidates are measured by
benchmarks/scale.py, not here.
"""
import io
import json
import random

import numpy as np
import pytest

from capkit.cli import main
from capkit.metrics import Scorer, document_frequencies, get_spec, register, unregister
from capkit.metrics import compact as compact_module
from capkit.metrics.chunked import CHUNK_SIZE, CHUNKED
from capkit.metrics.cider import DocumentFrequencies, corpus_document_frequencies
from capkit.metrics.compact import _tokenised_blocks, compact
from capkit.metrics.inputs import align, prepare, tokenized_text
from capkit.metrics.ngrams import GramCounts, GramCountsView, pack_grams, unpack_grams
from capkit.report import format_table, write_scores_csv, write_scores_json

TOL = 1e-12
CLASSIC = ["bleu_1", "bleu_4", "rouge_l", "cider_d"]
WORDS = ("a the dog cat man woman on in with red big small runs sits near of table tree two "
         "people street bike").split()
SPECIAL = [
    "", "   ", "...",                                 # empty, blank, no tokens after PTB
    "a cake with 5 1/2 candles",                      # PTB keeps "5\u00a01/2": ROUGE-L's split
    "a man holding the letter t.",                    # last token depends on the next caption
    "Mr. Smith's dog can't run, it's gonna sleep",    # clitics, abbreviation, assimilation
    " ".join(["dog", "cat", "a", "red"] * 20),        # over 64 tokens: ROUGE-L's Python path
    "Ein Café in São Paulo — “quoted” (yes)",
]


def _caption(rng: random.Random) -> str:
    text = " ".join(rng.choices(WORDS, k=rng.randint(2, 13)))
    return (text.capitalize() if rng.random() < 0.5 else text) + rng.choice(["", ".", " ."])


BLOCK = 250                                           # tokenizer block of these tests


def synthetic(n: int, seed: int = 0) -> tuple[dict, dict]:
    """n candidates keyed by int, repeating a pool of captions (duplicates), some perturbed by
    one appended word, with the special captions sprinkled over every chunk and block."""
    rng = random.Random(seed)
    pool = [_caption(rng) for _ in range(200)]
    ref_pool = [_caption(rng) for _ in range(300)]
    cands, refs = {}, {}
    for i in range(n):
        c = rng.choice(SPECIAL) if rng.random() < 0.05 else rng.choice(pool)
        if rng.random() < 0.2:
            c = f"{c} {rng.choice(WORDS)}"
        if i % BLOCK == BLOCK - 1:          # the last caption of a tokenizer block, whose
            c = SPECIAL[4]                  # last token depends on the next block's first
        elif i % BLOCK == 0:
            c = rng.choice(["A dog runs", "a dog runs"])
        cands[1000 + 7 * i] = c
        refs[1000 + 7 * i] = [rng.choice(SPECIAL[3:]) if rng.random() < 0.03 else
                              rng.choice(ref_pool) + (f" {rng.choice(WORDS)}"
                                                      if rng.random() < 0.2 else "")
                              for _ in range(rng.randint(1, 6))]
    return cands, refs


def _assert_same(a: dict, b: dict) -> None:
    assert list(a) == list(b)
    for name in a:
        assert a[name].corpus == pytest.approx(b[name].corpus, abs=TOL, rel=0), name
        np.testing.assert_allclose(a[name].per_caption, b[name].per_caption, rtol=0, atol=TOL,
                                   err_msg=name)
        assert a[name].ids == b[name].ids and a[name].signature == b[name].signature, name
        # stronger than asked: the same floating-point sums, so every part to the last bit
        assert a[name] == b[name], name


@pytest.fixture(scope="module")
def data():
    return synthetic(3000)


@pytest.fixture()
def small_blocks(monkeypatch):
    monkeypatch.setattr(compact_module, "TOKENIZE_BLOCK", BLOCK)   # several tokenizer blocks


@pytest.mark.filterwarnings("ignore:.*candidate")
@pytest.mark.parametrize("tokenizer", ["ptb", "split"])
def test_chunked_scores_equal_in_memory(data, small_blocks, tokenizer):
    cands, refs = data
    whole = Scorer(CLASSIC, tokenizer=tokenizer, chunk_size=None).score(cands, refs)
    chunked = Scorer(CLASSIC, tokenizer=tokenizer, chunk_size=350).score(cands, refs)
    _assert_same(whole, chunked)
    assert chunked["cider_d"].parts["n_empty_candidates"] > 0
    assert chunked["bleu_4"].ids[0] == "1000"                        # int ids become strings


@pytest.mark.filterwarnings("ignore:.*are empty")
def test_chunks_warn_and_refuse_like_the_in_memory_path(data):
    cands, refs = data
    with pytest.warns(UserWarning, match="no tokens after ptb"):
        Scorer(["bleu_4"], chunk_size=1000).score(cands, refs)
    kept = [k for k, v in cands.items() if v.strip()]
    with pytest.raises(ValueError, match="no tokens after ptb"):
        Scorer(["bleu_4"], chunk_size=1000, strict=True).score(
            {k: cands[k] for k in kept}, {k: refs[k] for k in kept})


@pytest.mark.filterwarnings("ignore:.*candidate")
def test_options_given_df_and_in_memory_metrics_mix(data, tmp_path):
    cands, refs = data
    df = document_frequencies(list(refs.values())[:500], tokenizer="split", name="part")
    register(lambda c, r: [float(len(x)) for x in c], name="chars", replace_existing=True)
    try:
        metrics = ["bleu_2", "cider_d", "chars", "rouge_l"]
        opts = {"cider_d": {"sigma": 3.0}, "rouge_l": {"beta": 2.0}}
        a = Scorer(metrics, options=opts, chunk_size=None).score(cands, refs,
                                                                 document_frequency=df)
        b = Scorer(metrics, options=opts, chunk_size=700).score(cands, refs,
                                                                document_frequency=df)
    finally:
        unregister("chars")
    _assert_same(a, b)
    assert "df:part#" in b["cider_d"].signature and "sigma:3.0" in b["cider_d"].signature


def test_corpus_document_frequencies_are_those_of_all_references(data):
    cands, refs = data
    texts = align({k: v for k, v in cands.items() if v.strip()},
                  {k: refs[k] for k in cands if cands[k].strip()})
    captions = compact(*texts, tokenizer="split")
    chunked = corpus_document_frequencies(captions.chunks(400))
    whole = document_frequencies(texts[1], tokenizer="split")
    assert chunked.n_documents == whole.n_documents == len(texts[1])
    assert dict(chunked.counts) == whole.counts
    assert chunked.counts[("a", "dog")] == whole.counts[("a", "dog")]


@pytest.mark.filterwarnings("ignore:.*candidate")
def test_compact_chunks_hold_the_tokens_of_prepare(data, small_blocks):
    cands, refs = data
    texts = align({k: v for k, v in cands.items() if v.strip()},
                  {k: refs[k] for k in cands if cands[k].strip()})
    batch = prepare(*texts[:2], ids=texts[2], checked=True)
    captions = compact(*texts)
    assert captions.nbytes < 40 * sum(map(len, batch.candidates))   # a few bytes per token
    chunk = captions.batch(100, 900)
    assert chunk.candidates[:] == batch.candidates[100:900]
    assert chunk.references[:] == batch.references[100:900]
    assert list(chunk.n_refs) == list(batch.n_refs[100:900])
    view, whole_view = chunk.cache["rouge_view"], batch.cache["rouge_view"]
    assert view.candidates[:] == whole_view.candidates[100:900]
    assert view.references[:] == whole_view.references[100:900]


def test_block_tokenisation_equals_one_stream():
    rng = random.Random(3)
    texts = [rng.choice(["a man holding the letter t.", "A dog runs", "a dog runs",
                         "with a t.", "5 1/2 cats", _caption(rng)]) for _ in range(2000)]
    memo: dict = {}
    blocks = [t for block in _tokenised_blocks(texts, "ptb", 37, memo) for t in block]
    assert blocks == tokenized_text(texts, "ptb")
    assert "with a t" in blocks and "with a t." in blocks            # context did matter


@pytest.mark.parametrize("base", [12, 60_000])        # 4-grams as int64, then as (hi, lo) pairs
def test_packed_gram_keys_are_exact_and_sort_like_the_rows(base):
    rng = np.random.default_rng(0)
    codes = rng.integers(0, base, size=(5000, 4))
    codes[:3] = [[base - 1] * 4, [0, 0, 0, 1], [0] * 4]
    keys = pack_grams(codes, base)
    assert keys.dtype == (np.int64 if base**4 < 2**63 else np.complex128)
    np.testing.assert_array_equal(unpack_grams(keys, base, 4), codes)
    order = np.argsort(keys, kind="stable")
    np.testing.assert_array_equal(order, np.lexsort(codes.T[::-1]))
    assert len(np.unique(keys)) == len(np.unique(codes, axis=0))


def test_gram_counts_read_as_the_mapping_they_came_from():
    counts = {("a",): 3.0, ("a", "dog"): 2.0, ("the", "red", "dog"): 1.0, ("dog",): 5.0}
    table = GramCounts.from_mapping(counts)
    view = GramCountsView(table)
    assert dict(view) == counts and len(view) == 4 and ("a", "cat") not in view
    given = DocumentFrequencies(counts, 7, "x")
    assert DocumentFrequencies(view, 7, "x").fingerprint == given.fingerprint


@pytest.mark.filterwarnings("ignore:.*candidate")
def test_a_vocabulary_too_large_for_int64_keys():
    # over 55,108 words a 4-gram no longer fits one int64 key: the table keys are pairs
    rng = random.Random(1)
    words = [f"w{i}" for i in range(80_000)]
    cands = {i: " ".join(rng.choices(words[:50], k=8)) for i in range(2500)}
    refs = {i: [" ".join(rng.choices(words[:50], k=6) + rng.choices(words, k=30))
                for _ in range(3)] for i in cands}
    texts = align(cands, refs)
    df = corpus_document_frequencies(compact(*texts, tokenizer="split").chunks(600))
    assert df.table.keys[3].dtype == np.complex128
    a = Scorer(["bleu_4", "cider_d"], tokenizer="split", chunk_size=None).score(cands, refs)
    b = Scorer(["bleu_4", "cider_d"], tokenizer="split", chunk_size=600).score(cands, refs)
    _assert_same(a, b)


def test_chunk_size_is_checked_and_auto_means_large_inputs_only():
    for bad in (0, -5, True, "big", 2.5):
        with pytest.raises(ValueError, match="chunk_size must be a positive number"):
            Scorer(["bleu_4"], chunk_size=bad)
    auto = Scorer(["bleu_4"])
    assert auto.chunk_size_for(CHUNK_SIZE) is None and auto.chunk_size_for(CHUNK_SIZE + 1) == CHUNK_SIZE
    assert Scorer(["bleu_4"], chunk_size=None).chunk_size_for(10**9) is None
    assert Scorer(["bleu_4"], chunk_size=10).chunk_size_for(10) is None     # one chunk: in memory
    assert get_spec("meteor").target not in CHUNKED                      # meteor: in memory


def test_streamed_outputs_equal_json_dumps_and_format_table(data):
    cands, refs = data
    cands = {f'id "{k}" é' if k % 3 else k: v for k, v in cands.items()}   # ids to escape
    refs = {f'id "{k}" é' if k % 3 else k: v for k, v in refs.items()}
    with pytest.warns(UserWarning):
        results = Scorer(["bleu_4", "rouge_l"]).score(cands, refs)
    out = io.StringIO()
    write_scores_json(results, out, block=128)
    expected = {"metrics": {n: {"corpus": s.corpus, "per_caption": s.by_id()}
                            for n, s in results.items()},
                "signature": {n: s.signature for n, s in results.items()}}
    assert out.getvalue() == json.dumps(expected, indent=1) + "\n"
    out = io.StringIO()
    write_scores_csv(results, out, block=128)
    per = {n: s.by_id() for n, s in results.items()}
    rows = [[i, *(per[n][i] for n in results)] for i in per["bleu_4"]]
    rows.append(["<corpus>", *(s.corpus for s in results.values())])
    rows.append(["<signature>", *(s.signature for s in results.values())])
    assert out.getvalue() == format_table(["id", *results], rows, "csv") + "\n"


@pytest.fixture()
def files(tmp_path, data):
    cands, refs = data
    c, r = tmp_path / "results.json", tmp_path / "captions.json"
    # COCO formats: int image ids, a results list and an annotations list
    c.write_text(json.dumps([{"image_id": k, "caption": v} for k, v in cands.items()]))
    r.write_text(json.dumps({"annotations": [{"image_id": k, "caption": x}
                                             for k, rs in refs.items() for x in rs]}))
    return c, r


@pytest.mark.filterwarnings("ignore:.*candidate")
@pytest.mark.parametrize("fmt", ["json", "csv", "table"])
def test_cli_chunked_output_is_identical(files, capsys, fmt):
    c, r = files
    outs = []
    for size in ("0", "450"):
        assert main(["score", "--candidates", str(c), "--references", str(r), "--metrics",
                     "bleu_4,rouge_l,cider_d", "--format", fmt, "--chunk-size", size]) == 0
        outs.append(capsys.readouterr().out)
    assert outs[0] == outs[1]
    if fmt == "json":
        assert len(json.loads(outs[1])["metrics"]["cider_d"]["per_caption"]) == 3000


@pytest.mark.parametrize("size, match", [("-3", "cannot be negative"),
                                         ("lots", "give a number of candidates or 'auto'")])
def test_cli_rejects_a_bad_chunk_size(files, capsys, size, match):
    c, r = files
    with pytest.raises(SystemExit):
        main(["score", "--candidates", str(c), "--references", str(r), "--chunk-size", size])
    assert match in capsys.readouterr().err


def test_errors_of_the_chunk_machinery():
    with pytest.raises(ValueError, match="too large to key n-grams"):
        pack_grams(np.zeros((1, 4), dtype=np.int64), 10**8)
    one = compact(["a dog", "a cat"], [["a dog runs"], ["the cat"]], tokenizer="split")
    other = compact(["a dog", "a cat"], [["a dog runs"], ["the cat"]], tokenizer="split")
    with pytest.raises(ValueError, match="share one vocabulary"):
        corpus_document_frequencies([one.batch(0, 1), other.batch(1, 2)])


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:.*candidate")
def test_chunked_equals_in_memory_on_replicated_karpathy_test(shared_data, monkeypatch):
    """20,000 candidates: the 9 systems' captions replicated under new ids, a fifth of them and
    of the references perturbed by one appended word, plus the special captions."""
    from capkit.data import load
    monkeypatch.setattr(compact_module, "TOKENIZE_BLOCK", 1500)
    coco = load("coco_karpathy_test")
    pairs = [(img, cap) for system in coco.systems.values() for img, cap in system.items()]
    rng = random.Random(0)
    vocab = sorted({w for rs in coco.references.values() for r in rs for w in r.split()})
    cands, refs = {}, {}
    for i in range(20_000):
        img, cap = pairs[(i * 7919) % len(pairs)]
        cap = rng.choice(SPECIAL) if rng.random() < 0.01 else cap
        cands[i] = f"{cap} {rng.choice(vocab)}" if rng.random() < 0.2 else cap
        refs[i] = [f"{x} {rng.choice(vocab)}" if rng.random() < 0.2 else x
                   for x in coco.references[img]]
    whole = Scorer(CLASSIC, chunk_size=None).score(cands, refs)
    chunked = Scorer(CLASSIC, chunk_size=3000).score(cands, refs)
    _assert_same(whole, chunked)


def test_streamed_json_writes_nan_and_infinity_as_json_dumps_does():
    from capkit.scores import Scores
    s = Scores("odd", np.array([0.25, np.nan, np.inf, -np.inf, 1e-300]), float("nan"),
               "odd|x", ("a", "b", "c", "d", "e"))
    out = io.StringIO()
    write_scores_json({"odd": s}, out, block=2)
    expected = {"metrics": {"odd": {"corpus": s.corpus, "per_caption": s.by_id()}},
                "signature": {"odd": s.signature}}
    assert out.getvalue() == json.dumps(expected, indent=1) + "\n"
    assert "NaN" in out.getvalue() and "-Infinity" in out.getvalue()
