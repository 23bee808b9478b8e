"""capkit.torchmetrics: captions accumulated over batches and gathered over processes score
exactly like one functional call on the whole data (real COCO Karpathy-test captions)."""
import datetime
import pickle
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

from capkit.metrics import cider_d, document_frequencies, score
from capkit.torchmetrics import CaptionMetric

METRICS = ("bleu_4", "cider_d", "rouge_l", "meteor")
SYSTEM = "updown_paddle"


@pytest.fixture(scope="module")
def coco(shared_data):
    """(ids, candidates, references) of one system on the first 2,000 Karpathy-test images."""
    from capkit.data import load
    d = load("coco_karpathy_test")
    caps = d.systems[SYSTEM]
    ids = [i for i in d.references if i in caps][:2000]
    return ids, [caps[i] for i in ids], [d.references[i] for i in ids]


def _keyed(ids, cands, refs):
    return dict(zip(ids, cands)), dict(zip(ids, refs))


def _batches(n, sizes):
    """Consecutive slices of range(n) with the given sizes, cycled."""
    start, k = 0, 0
    while start < n:
        yield slice(start, start + sizes[k % len(sizes)])
        start += sizes[k % len(sizes)]
        k += 1


def _assert_same(got, want):
    """Corpus within 1e-12, per caption by id within 1e-12, same settings."""
    assert got.signature == want.signature
    assert abs(got.corpus - want.corpus) <= 1e-12
    g, w = got.by_id(), want.by_id()
    assert g.keys() == w.keys()
    assert max(abs(g[i] - w[i]) for i in w) <= 1e-12


# ---- one process ---------------------------------------------------------------------------------

@pytest.mark.parametrize("name", METRICS)
def test_batches_equal_one_functional_call(coco, name):
    ids, cands, refs = (x[:300] for x in coco)
    metric = CaptionMetric(name)
    for s in _batches(300, [7, 64, 1, 100]):
        metric.update(*_keyed(ids[s], cands[s], refs[s]))
    value = metric.compute()
    want = score(*_keyed(ids, cands, refs), [name])[name]
    assert value.dtype.is_floating_point and value.ndim == 0
    assert value.item() == want.corpus
    assert metric.scores.ids == want.ids
    np.testing.assert_array_equal(metric.scores.per_caption, want.per_caption)


def test_lists_without_ids_keep_their_order(coco):
    ids, cands, refs = (x[:300] for x in coco)
    metric = CaptionMetric("cider_d")
    for s in _batches(300, [50, 13]):
        metric.update(cands[s], refs[s])
    metric.compute()
    want = score(cands, refs, ["cider_d"])["cider_d"]
    assert metric.scores.ids is None
    np.testing.assert_array_equal(metric.scores.per_caption, want.per_caption)


def test_ids_argument_equals_mappings(coco):
    ids, cands, refs = (x[:100] for x in coco)
    metric = CaptionMetric("bleu_4")
    metric.update(cands[:60], refs[:60], ids=ids[:60])
    metric.update(*_keyed(ids[60:], cands[60:], refs[60:]))
    metric.compute()
    _assert_same(metric.scores, score(*_keyed(ids, cands, refs), ["bleu_4"])["bleu_4"])


def test_forward_gives_the_batch_value_and_accumulates(coco):
    ids, cands, refs = (x[:200] for x in coco)
    metric = CaptionMetric("cider_d")
    for s in _batches(200, [120, 80]):
        batch = _keyed(ids[s], cands[s], refs[s])
        value = metric(*batch)
        want = score(*batch, ["cider_d"])["cider_d"]
        assert value.item() == want.corpus and metric.batch_scores.ids == want.ids
    with pytest.raises(RuntimeError, match="call compute"):
        metric.scores
    whole = score(*_keyed(ids, cands, refs), ["cider_d"])["cider_d"]
    assert metric.compute().item() == whole.corpus


def test_forward_on_a_batch_that_cannot_be_scored_alone_keeps_the_epoch(coco):
    ids, cands, refs = (x[:6] for x in coco)
    metric = CaptionMetric("cider_d")
    metric.update(*_keyed(ids[:5], cands[:5], refs[:5]))
    with pytest.warns(UserWarning, match="cannot be scored on its own.*accumulated"):
        one = metric(*_keyed(ids[5:], cands[5:], refs[5:]))   # CIDEr-D needs several images
    with pytest.warns(UserWarning, match="cannot be scored on its own"):
        empty = metric({}, {})
    assert np.isnan(one.item()) and np.isnan(empty.item()) and metric.batch_scores is None
    whole = score(*_keyed(ids, cands, refs), ["cider_d"])["cider_d"]
    assert metric.compute().item() == whole.corpus
    _assert_same(metric.scores, whole)


def test_forward_with_a_malformed_batch_keeps_the_epoch(coco):
    ids, cands, refs = (x[:5] for x in coco)
    metric = CaptionMetric("bleu_4")
    metric.update(*_keyed(ids, cands, refs))
    with pytest.raises(ValueError, match="has no references"):
        metric(["a dog"], [[]])
    assert metric.compute().item() == score(*_keyed(ids, cands, refs), ["bleu_4"])["bleu_4"].corpus


def test_tensor_ids_are_read_as_numbers():
    import torch
    metric = CaptionMetric("bleu_1")
    metric.update(["a dog", "a cat"], [["a dog"], ["a cat"]], ids=torch.tensor([42, 43]))
    metric.compute()
    assert metric.scores.ids == ("42", "43") and list(metric.scores.by_id()) == ["42", "43"]
    with pytest.raises(TypeError, match="ids must be a list"):
        metric.update(["a dog"], [["a dog"]], ids=5)


def test_merge_state_after_compute_gives_the_merged_value(coco):
    ids, cands, refs = (x[:20] for x in coco)
    a, b = CaptionMetric("bleu_4"), CaptionMetric("bleu_4")
    a.update(*_keyed(ids[:10], cands[:10], refs[:10]))
    b.update(*_keyed(ids[10:], cands[10:], refs[10:]))
    a.compute()
    a.merge_state(b)                  # b's captions first: torchmetrics' order for list states
    want = score(*_keyed(ids[10:] + ids[:10], cands[10:] + cands[:10], refs[10:] + refs[:10]),
                 ["bleu_4"])["bleu_4"]
    assert a.compute().item() == want.corpus and a.scores.ids == want.ids


def test_reset_starts_over(coco):
    ids, cands, refs = coco
    metric = CaptionMetric("bleu_4")
    metric.update(*_keyed(ids[:50], cands[:50], refs[:50]))
    metric.compute()
    metric.reset()
    with pytest.raises(RuntimeError, match="call compute"):
        metric.scores
    metric.update(*_keyed(ids[50:90], cands[50:90], refs[50:90]))
    metric.compute()
    _assert_same(metric.scores, score(*_keyed(ids[50:90], cands[50:90], refs[50:90]),
                                      ["bleu_4"])["bleu_4"])


def test_options_reach_the_metric(coco):
    ids, cands, refs = (x[:100] for x in coco)
    df = document_frequencies(coco[2], name="karpathy_2000")
    metric = CaptionMetric("cider_d", document_frequency=df)
    metric.update(*_keyed(ids[:1], cands[:1], refs[:1]))   # one caption is fine with a given df
    metric.update(*_keyed(ids[1:], cands[1:], refs[1:]))
    metric.compute()
    want = cider_d(*_keyed(ids, cands, refs), document_frequency=df)
    _assert_same(metric.scores, want)
    assert "df:karpathy_2000" in metric.scores.signature


def test_torchmetrics_keywords_go_to_torchmetrics():
    metric = CaptionMetric("bleu_2", compute_on_cpu=True, sync_on_compute=False)
    assert metric.compute_on_cpu and not metric.sync_on_compute and metric.options == {}


def test_user_metric_by_module_and_function(tmp_path, monkeypatch, coco):
    (tmp_path / "my_tm_metric.py").write_text(
        "def length_ratio(candidates, references, scale=1.0):\n"
        "    return [scale * len(c) / len(r[0]) for c, r in zip(candidates, references)]\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    ids, cands, refs = (x[:30] for x in coco)
    for options in ({}, {"scale": 2.0}):
        metric = CaptionMetric("my_tm_metric:length_ratio", **options)
        metric.update(*_keyed(ids[:10], cands[:10], refs[:10]))
        metric.update(*_keyed(ids[10:], cands[10:], refs[10:]))
        metric.compute()
        want = [options.get("scale", 1.0) * len(c) / len(r[0]) for c, r in zip(cands, refs)]
        assert metric.scores.ids == tuple(ids)
        np.testing.assert_allclose(metric.scores.per_caption, want, rtol=0, atol=1e-15)


def _n_tokens(batch):                       # a user's token metric: fn(batch), no option
    return np.array([float(len(c)) for c in batch.candidates])


def _weighted_overlap(batch, alpha=1.0):    # a user's token metric with an option
    return np.array([alpha * len(set(c) & {w for r in rs for w in r}) / max(len(set(c)), 1)
                     for c, rs in zip(batch.candidates, batch.references)])


@pytest.fixture
def token_metrics():
    from capkit.metrics import register, unregister
    register(_n_tokens, name="n_tokens_tm_test", tokens=True)
    register(_weighted_overlap, name="overlap_tm_test", tokens=True)
    register(_weighted_overlap, name="overlap_a3_tm_test", tokens=True, options={"alpha": 3.0})
    yield
    for name in ("n_tokens_tm_test", "overlap_tm_test", "overlap_a3_tm_test"):
        unregister(name)


@pytest.mark.parametrize("name, options", [
    ("n_tokens_tm_test", {}), ("overlap_tm_test", {}), ("overlap_tm_test", {"alpha": 3.0}),
    ("overlap_a3_tm_test", {}), ("overlap_a3_tm_test", {"alpha": 0.5})])
def test_user_token_metrics_are_taken_as_the_scorer_calls_them(token_metrics, name, options):
    """The Scorer calls a token metric fn(batch, **options), spec-bound options first: its
    options are checked that way, and compute() equals the functional call."""
    cands, refs = ["a dog runs", "a cat sits on a mat"], [["a dog running"], ["the cat sat"]]
    metric = CaptionMetric(name, **options)
    metric.update(cands[:1], refs[:1])
    metric.update(cands[1:], refs[1:])
    metric.compute()
    want = score(cands, refs, [name], options={name: options} if options else None)[name]
    np.testing.assert_array_equal(metric.scores.per_caption, want.per_caption)


def test_a_token_metric_is_refused_only_an_option_it_lacks(token_metrics):
    for name in ("n_tokens_tm_test", "overlap_tm_test", "overlap_a3_tm_test"):
        with pytest.raises(ValueError, match=rf"'{name}' does not take the options \['beta'\] "
                                             r"\(got an unexpected keyword argument 'beta'\)"):
            CaptionMetric(name, beta=2.0)


# ---- errors --------------------------------------------------------------------------------------

def test_unknown_name_lists_the_registered_ones():
    with pytest.raises(ValueError, match=r"unknown metric 'bleu'.*bleu_4.*cider_d"):
        CaptionMetric("bleu", n=4)


def test_bad_options_fail_at_construction():
    with pytest.raises(ValueError, match="BLEU order n must be 1, 2, 3 or 4"):
        CaptionMetric("bleu_4", n=5)
    with pytest.raises(ValueError, match=r"does not take the options \['sigmaa'\]"):
        CaptionMetric("cider_d", sigmaa=6.0)


def test_a_function_or_spec_is_refused_with_the_name_to_give(tmp_path, monkeypatch):
    """Not accepted, then a KeyError at compute(): CaptionMetric takes a name every process
    resolves alike, and the refusal says which one."""
    import functools
    from capkit.metrics import MetricSpec, get_spec
    (tmp_path / "my_tm_callable.py").write_text(
        "def ones(candidates, references, scale=1.0):\n    return [scale] * len(candidates)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    from my_tm_callable import ones
    for metric, give in [
            (ones, r"CaptionMetric\('my_tm_callable:ones'\)"),
            (functools.partial(ones, scale=2.0), r"CaptionMetric\('my_tm_callable:ones', "
                                                 r"scale=2.0\)"),
            (lambda c, r: [1.0] * len(c), "define it in an importable module"),
            (get_spec("bleu_4"), r"give its name, CaptionMetric\('bleu_4'\)"),
            (MetricSpec("mine", ones), r"register it in every process")]:
        with pytest.raises(TypeError, match="takes a metric's name.*" + give):
            CaptionMetric(metric)
    metric = CaptionMetric("my_tm_callable:ones", scale=2.0)     # what the message says works
    metric.update(["a dog"], [["a dog runs"]])
    assert metric.compute().item() == 2.0


def test_image_metrics_are_refused():
    with pytest.raises(ValueError, match="against images"):
        CaptionMetric("clipscore")


def test_compute_with_no_captions_says_what_to_do():
    metric = CaptionMetric("bleu_4")
    with pytest.warns(UserWarning, match="before the ``update``"), \
            pytest.raises(ValueError, match="no captions to score: call update"):
        metric.compute()
    metric.update([], [])             # an empty batch is allowed and adds nothing
    metric.update({}, {})
    with pytest.raises(ValueError, match="no captions to score"):
        metric.compute()


def test_duplicate_ids_are_named():
    metric = CaptionMetric("bleu_4")
    metric.update({"7": "a dog", "8": "a cat"}, {"7": ["a dog"], "8": ["a cat"]})
    metric.update({"7": "a dog"}, {"7": ["a dog"]})
    with pytest.raises(ValueError, match=r"more than once.*\['7'\].*DistributedSampler"):
        metric.compute()


def test_ids_in_some_updates_only():
    metric = CaptionMetric("bleu_4")
    metric.update({"7": "a dog"}, {"7": ["a dog"]})
    metric.update(["a cat"], [["a cat"]])
    with pytest.raises(ValueError, match="some updates gave ids and some did not"):
        metric.compute()


@pytest.mark.parametrize("cands, refs, ids, match", [
    (["a dog"], [["a dog"], ["a cat"]], None, "aligned one to one"),
    (["a dog"], [["a dog"]], ["1", "2"], "2 ids for 1 candidates"),
    ({"1": "a dog"}, {"2": ["a dog"]}, None, r"no references for \['1'\], no candidate for "
                                             r"\['2'\]$"),
    ({7: "a dog"}, {"7": ["a dog"]}, None, r"no references for \[7\].*the candidates' ids are "
                                           r"int, the references' str.*candidates = \{str\(k\)"),
    ({"1": "a dog"}, {"1": ["a dog"]}, ["1"], "keyed by id already"),
    (["a dog", "a cat"], [["a dog"], []], None, "candidate at position 1 of this batch has no"),
    (["a dog", "a cat"], [["a dog"], ["a cat"]], [7, "7"], r"more than once in this batch.*'7'"),
])
def test_malformed_batches_fail_at_update(cands, refs, ids, match):
    with pytest.raises(ValueError, match=match):
        CaptionMetric("bleu_4").update(cands, refs, ids=ids)


def test_wrong_types_fail_at_update():
    with pytest.raises(TypeError, match="list of strings"):
        CaptionMetric("bleu_4").update(["a dog"], ["a dog"])
    with pytest.raises(TypeError, match="mapping"):
        CaptionMetric("bleu_4").update({"1": "a dog"}, [["a dog"]])


def test_any_text_survives_the_byte_state():
    weird = ["naïve café ½ 😀", "tab\tand\nnewline", "quote \" back\\slash",
             "lone \ud800 surrogate"]
    metric = CaptionMetric("bleu_1")
    metric.update(weird, [[w] for w in weird], ids=range(4))
    from capkit.torchmetrics import _decode
    assert _decode(metric.records) == [[["0", "1", "2", "3"], weird, [[w] for w in weird]]]


# ---- packaging -----------------------------------------------------------------------------------

def test_the_base_class_is_the_installed_torchmetrics():
    assert CaptionMetric.__mro__[1].__module__ == "torchmetrics.metric"


def test_importing_capkit_does_not_import_torchmetrics():
    code = "import sys, capkit, capkit.metrics, capkit.cli; print('torchmetrics' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_missing_torchmetrics_says_what_to_install():
    code = ("import sys; sys.modules['torchmetrics'] = None\n"
            "try:\n    import capkit.torchmetrics\nexcept ImportError as err:\n    print(err)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "pip install torchmetrics" in out.stdout


# ---- two processes on gloo -----------------------------------------------------------------------

def _rank_main(rank, world, init, shards, out_dir):
    """One process: score its own shard, then the edge cases; write what compute() gave."""
    import torch.distributed as dist
    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=60))
    try:
        ids, cands, refs = shards[rank]
        out = {}
        for name in METRICS:
            metric = CaptionMetric(name)
            for s in _batches(len(ids), [100, 37] if rank == 0 else [64]):
                metric.update(*_keyed(ids[s], cands[s], refs[s]))
            value = metric.compute()
            out[name] = (value.item(), value.dtype, metric.scores)
        lone = CaptionMetric("bleu_4")           # process 1 never calls update
        if rank == 0:
            lone.update(*_keyed(ids, cands, refs))
        out["lone"] = lone.compute().item()
        for case in ("nothing", "dup"):
            metric = CaptionMetric("bleu_4")
            if case == "dup":                     # process 1 also gets shard 0's first image
                batch = [x[:3] for x in (ids, cands, refs)]
                if rank == 1:
                    batch = [first[:1] + x for first, x in zip(shards[0], batch)]
                metric.update(*_keyed(*batch))
            try:
                metric.compute()
            except ValueError as err:
                out[case] = str(err)
            metric.reset()                        # usable again after the error
            metric.update(*_keyed(*[x[:3] for x in (ids, cands, refs)]))
            out[case + "_then"] = metric.compute().item()
        with open(out_dir / f"rank{rank}.pkl", "wb") as f:
            pickle.dump(out, f)
    finally:
        dist.destroy_process_group()


def _spawn(fn, args, nprocs, deadline_s):
    """torch.multiprocessing.spawn that gives up (and kills the processes) after deadline_s."""
    import torch.multiprocessing as mp
    ctx = mp.start_processes(fn, args=args, nprocs=nprocs, join=False, start_method="spawn")
    end = time.monotonic() + deadline_s
    while not ctx.join(timeout=1):
        if time.monotonic() > end:
            for p in ctx.processes:
                p.kill()
            pytest.fail(f"the {nprocs} processes did not finish within {deadline_s} s")


def test_two_processes_on_gloo_equal_one_functional_call(coco, tmp_path, monkeypatch):
    ids, cands, refs = coco
    order = np.random.default_rng(0).permutation(len(ids))      # interleaved, uneven shards
    shards = [tuple([x[i] for i in part] for x in (ids, cands, refs))
              for part in (order[:1234], order[1234:])]
    if "lo" in [name for _, name in socket.if_nameindex()]:
        monkeypatch.setenv("GLOO_SOCKET_IFNAME", "lo")          # loopback only
    init = f"file://{tmp_path / 'rendezvous'}"
    _spawn(_rank_main, (2, init, shards, tmp_path), nprocs=2, deadline_s=150)

    out = [pickle.loads((tmp_path / f"rank{r}.pkl").read_bytes()) for r in range(2)]
    whole = score(*_keyed(ids, cands, refs), METRICS)
    for name in METRICS:
        for rank in range(2):
            value, dtype, scores = out[rank][name]
            assert abs(value - whole[name].corpus) <= 1e-12, (name, rank)
            assert str(dtype) == "torch.float64"
            _assert_same(scores, whole[name])
            assert list(scores.ids) == shards[0][0] + shards[1][0]   # rank-major order
    assert out[0]["bleu_4"][0] == whole["bleu_4"].corpus             # pooled counts: exact
    alone = score(*_keyed(*shards[0]), ["bleu_4"])["bleu_4"].corpus
    assert out[0]["lone"] == out[1]["lone"] == alone
    first3 = score(*_keyed(*[x[:3] + y[:3] for x, y in zip(*shards)]), ["bleu_4"])["bleu_4"]
    for rank in range(2):
        assert "no captions to score" in out[rank]["nothing"]
        assert f"['{shards[0][0][0]}']" in out[rank]["dup"]
        assert out[rank]["nothing_then"] == out[rank]["dup_then"] == first3.corpus
