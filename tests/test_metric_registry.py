"""The registry seen from outside (#17): `capkit metrics` prints it, and a user's metric enters
through the same door as a built-in, whether registered in Python or named as module:function."""
import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import capkit.metrics
from capkit.cli import main
from capkit.metrics import MetricSpec, get_spec, register, registered, score, suite, unregister

REPO = Path(__file__).resolve().parents[1]
USER_MODULE = '''
def shared_words(candidates, references):
    """Share of the candidate's words found in any of its references."""
    out = []
    for cand, refs in zip(candidates, references):
        seen = {w for r in refs for w in r.lower().split()}
        words = cand.lower().split()
        out.append(sum(w in seen for w in words) / max(len(words), 1))
    return out
'''
CANDS = {"1": "A dog runs on the grass.", "2": "Two cats sleep on a sofa."}
REFS = {"1": ["A dog is running across the grass.", "A brown dog runs outside."],
        "2": ["Two cats are sleeping on a couch."]}


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    (tmp_path / "capkit_test_user_metric.py").write_text(USER_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path, "capkit_test_user_metric:shared_words"


def _listed(capsys, *args) -> list[str]:
    assert main(["metrics", "--format", "csv", *args]) == 0
    rows = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    assert rows[0][:2] == ["metric", "needs"]
    return [row[0] for row in rows[1:]]


def test_capkit_metrics_prints_every_registered_metric(capsys):
    assert _listed(capsys) == [s.name for s in registered()]
    for name in ("classic", "systems", "bench"):
        assert _listed(capsys, "--suite", name) == list(suite(name))
    assert main(["metrics"]) == 0
    table = capsys.readouterr().out
    assert all(s.name in table for s in registered()) and "module:function" in table


def test_a_registered_metric_is_listed_by_the_cli_too(capsys):
    register(lambda candidates, references: [1.0] * len(candidates), name="always_one_test")
    try:
        assert _listed(capsys)[-1] == "always_one_test"
    finally:
        unregister("always_one_test")
    assert "always_one_test" not in _listed(capsys)


def test_register_and_module_function_are_one_door(user_module):
    _, target = user_module
    spec = get_spec(target)
    assert isinstance(spec, MetricSpec) and spec.name == target and not spec.builtin
    assert spec.needs == "text, references"
    fn = spec.function
    registered_spec = register(target, name="shared_words_test")
    try:
        assert get_spec("shared_words_test").function is fn
        by_path = score(CANDS, REFS, [target])[target]
        by_name = score(CANDS, REFS, "shared_words_test")["shared_words_test"]
        by_callable = score(CANDS, REFS, {"f": fn})["f"]
        assert by_path.per_caption.tolist() == by_name.per_caption.tolist() == \
            by_callable.per_caption.tolist() == fn(list(CANDS.values()), list(REFS.values()))
        assert registered_spec in registered() and registered_spec.target == target
    finally:
        unregister("shared_words_test")
    # a built-in's own function by path keeps what its spec says it needs (one tokenisation)
    rouge = get_spec("capkit.metrics.rouge:rouge_l")
    assert rouge.tokens and rouge.builtin and rouge.score_range == get_spec("rouge_l").score_range
    assert score(CANDS, REFS, ["capkit.metrics.rouge:rouge_l", "rouge_l"]).keys() == \
        {"capkit.metrics.rouge:rouge_l", "rouge_l"}
    with pytest.raises(ValueError, match="cannot import metric"):
        get_spec("capkit_test_user_metric:no_such_function")


def test_cli_scores_a_module_function_metric_found_on_pythonpath(user_module, tmp_path):
    folder, target = user_module
    cands, refs = tmp_path / "cands.json", tmp_path / "refs.json"
    cands.write_text(json.dumps(CANDS))
    refs.write_text(json.dumps(REFS))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(folder), str(REPO)])}
    done = subprocess.run([sys.executable, "-m", "capkit", "score", "--candidates", str(cands),
                           "--references", str(refs), "--metrics", f"bleu_1,{target}",
                           "--format", "json"], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    lib = score(CANDS, REFS, ["bleu_1", target])
    for name, s in lib.items():
        assert out["metrics"][name]["per_caption"] == pytest.approx(s.by_id(), abs=1e-12)
        assert out["signature"][name] == s.signature
    assert capkit.metrics.get_spec(target).name == target


def test_seen_data_note_names_the_metrics_whose_checkpoint_saw_the_dataset():
    from capkit.metrics import resolve
    from capkit.metrics.registry import seen_data_note
    specs = resolve(["bleu_4", "i2ce", "leic_mc", "leic_world", "umic_world"])
    note = seen_data_note(specs, "coco_karpathy_test")
    assert note.startswith("i2ce, leic_mc: the shipped checkpoint was trained on the captions")
    assert seen_data_note(specs, "flickr30k_test") is None
    assert seen_data_note(resolve(["bleu_4", "cider_d"]), "coco_karpathy_test") is None


def test_real_data_checkpoints_say_which_dataset_they_saw():
    # every real-data learned metric trained by capkit.training.corpus saw Karpathy-test
    # captions: the registry must say so, or `capkit systems`/`robustness` give no note
    from capkit.metrics import registered
    real = {s.name for s in registered() if s.trained and "world" not in s.name}
    assert real == {"i2ce", "i2ce_mean", "leic", "leic_no_da", "leic_mc", "leic_rc"}
    assert all(get_spec(n).trained_on == {"coco_karpathy_test"} for n in real)


def test_trained_on_given_as_one_string_is_refused():
    with pytest.raises(ValueError, match="collection of dataset names"):
        MetricSpec("mine", lambda c, r: [0.0] * len(c), trained_on="coco_karpathy_test")


def _char_lengths(candidates, references):
    """A user's metric that walks its inputs as the docs promise: aligned lists of texts."""
    assert isinstance(candidates, list) and isinstance(references, list), type(candidates)
    return [float(len(c)) for c, _ in zip(candidates, references)]


def test_a_users_function_gets_plain_texts_through_every_door(user_module):
    # a MetricSpec a user builds is not "built-in" (which hands {id: caption} dicts to capkit's
    # own functions): whether a spec is built-in is read from its function's module
    import dataclasses
    import functools
    expected = [float(len(c)) for c in CANDS.values()]
    specs = {"by_fn": register(_char_lengths, name="lengths_fn_test"),
             "by_spec": register(MetricSpec("lengths_spec_test", _char_lengths)),
             "by_spec_and_name": register(MetricSpec("x", _char_lengths), "lengths_named_test"),
             "direct": MetricSpec("lengths_direct", _char_lengths),
             "partial": MetricSpec("lengths_partial", functools.partial(_char_lengths)),
             "a_builtins_copy": dataclasses.replace(get_spec("rouge_l"), target=_char_lengths,
                                                    tokens=False)}
    try:
        assert not any(s.builtin for s in specs.values())
        out = score(CANDS, REFS, specs)
        assert {k: s.per_caption.tolist() for k, s in out.items()} == \
            {k: expected for k in specs}
        assert not get_spec(user_module[1]).builtin
    finally:
        for name in ("lengths_fn_test", "lengths_spec_test", "lengths_named_test"):
            unregister(name)
    with pytest.raises(TypeError):                 # read from the function, never given
        MetricSpec("mine", _char_lengths, builtin=True)


def test_capkits_own_functions_are_built_in_whoever_names_them():
    import functools

    from capkit.metrics.catalog import BUILTIN
    from capkit.metrics.rouge import rouge_l
    assert all(spec.builtin for spec in BUILTIN)
    assert MetricSpec("r", rouge_l, tokens=True).builtin
    assert MetricSpec("r", functools.partial(rouge_l, beta=2.0), tokens=True).builtin
    assert MetricSpec("b2", "capkit.metrics.bleu:bleu", {"n": 2}, tokens=True).builtin
    assert not MetricSpec("u", "capkit_metrics_elsewhere:fn").builtin      # not capkit.metrics


def test_a_module_function_is_read_again_after_the_module_is_reloaded(tmp_path, monkeypatch):
    # the Jupyter loop: edit the module, importlib.reload it, score again by "module:function"
    import importlib
    path = tmp_path / "capkit_test_reloaded_metric.py"
    path.write_text("def fn(candidates, references):\n    return [1.0] * len(candidates)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    target = "capkit_test_reloaded_metric:fn"
    try:
        assert score(CANDS, REFS, [target])[target].per_caption.tolist() == [1.0, 1.0]
        module = importlib.import_module("capkit_test_reloaded_metric")
        path.write_text("def fn(candidates, references):\n    return [2.5] * len(candidates)\n")
        importlib.reload(module)
        assert score(CANDS, REFS, [target])[target].per_caption.tolist() == [2.5, 2.5]
        assert get_spec(target).function is module.fn
    finally:
        sys.modules.pop("capkit_test_reloaded_metric", None)
    for bad, says in ((":fn", "give 'module:function'"), ("capkit_test_no_module:fn", "No module"),
                      ("capkit_test_reloaded_metric:", "give 'module:function'")):
        with pytest.raises(ValueError, match=says):
            get_spec(bad)


def _f_beta(batch, alpha=1.0, weights=None):
    """A user's token metric with a setting that changes its numbers."""
    out = []
    for cand, refs in zip(batch.candidates, batch.references):
        best = 0.0
        for ref in refs:
            common = len(set(cand) & set(ref))
            if common:
                p, r = common / len(set(cand)), common / len(set(ref))
                best = max(best, (1 + alpha ** 2) * p * r / (alpha ** 2 * p + r))
        out.append(best)
    return out


def _pooled_length(candidates, references, pooled=True):
    """A user's metric that returns its own Scores, named and signed its own way."""
    import numpy as np

    from capkit.scores import Scores, make_signature
    per = np.array([len(c.split()) / len(rs[0].split()) for c, rs in zip(candidates, references)])
    return Scores("len_ratio", per, float(per.mean()), make_signature("len_ratio", pooled=pooled))


def test_a_users_signature_records_the_settings_it_was_called_with():
    import functools

    from capkit import __version__
    from capkit.metrics import Scorer
    v = f"capkit:{__version__}"
    specs = {"f": MetricSpec("f", _f_beta, tokens=True),
             "f_a3": MetricSpec("f_a3", _f_beta, {"alpha": 3.0}, tokens=True),
             "f_partial": MetricSpec("f_partial", functools.partial(_f_beta, alpha=3.0),
                                     tokens=True)}
    sig = {k: s.signature for k, s in Scorer(specs).score(CANDS, REFS).items()}
    assert sig == {"f": f"f|source:user|tok:ptb|{v}",
                   "f_a3": f"f_a3|source:user|alpha:3.0|tok:ptb|{v}",
                   "f_partial": f"f_partial|source:user|alpha:3.0|tok:ptb|{v}"}
    # the Scorer's options win over the bound ones, as in the call; the tokenizer is recorded
    called = Scorer(specs, tokenizer="split", options={"f_a3": {"alpha": 0.5}}).score(CANDS, REFS)
    assert called["f"].signature == f"f|source:user|tok:split|{v}"
    assert called["f_a3"].signature == f"f_a3|source:user|alpha:0.5|tok:split|{v}"
    # data and functions: stable, readable, and apart when they differ
    def with_weights(w):
        return Scorer([specs["f"]], options={"f": {"weights": w}}).score(CANDS, REFS)["f"]
    a, b = with_weights({"dog": 2.0}), with_weights({"dog": 3.0})
    assert a.signature == with_weights({"dog": 2.0}).signature != b.signature
    assert a.signature.startswith("f|source:user|weights:dict#")
    assert with_weights(len).signature == f"f|source:user|weights:builtins.len|tok:ptb|{v}"
    # a plain-text metric with no settings keeps its signature
    assert score(CANDS, REFS, {"u": _char_lengths})["u"].signature == f"u|source:user|{v}"


def test_a_users_own_scores_get_the_registered_name_and_the_missing_settings():
    from capkit import __version__
    register(_pooled_length, name="lenr_test")
    try:
        out = score(CANDS, REFS, ["lenr_test"])["lenr_test"]
        assert out.metric == "lenr_test" and list(out.to_frame()) == ["lenr_test"]
        assert out.signature == f"len_ratio|pooled:True|capkit:{__version__}"    # its own
        given = score(CANDS, REFS, ["lenr_test"], options={"lenr_test": {"pooled": False}})
        assert given["lenr_test"].signature == f"len_ratio|pooled:False|capkit:{__version__}"
    finally:
        unregister("lenr_test")
    spec = MetricSpec("lenr_b", lambda c, r, scale=1: _pooled_length(c, r), {"scale": 2})
    assert score(CANDS, REFS, [spec])["lenr_b"].signature == \
        f"len_ratio|pooled:True|scale:2|capkit:{__version__}"


_SIGNATURE_IN_A_NEW_PROCESS = """
import functools, sys
sys.path.insert(0, sys.argv[1])
from test_metric_registry import CANDS, REFS, MetricSpec, _f_beta
from capkit.metrics import score
class Model:
    def __call__(self, x):
        return x
weigh = functools.partial(max, key=lambda x: x, default=Model())
print(score(CANDS, REFS, [MetricSpec("f", _f_beta, {"weights": weigh}, tokens=True)])["f"]
      .signature)
"""


def test_a_users_signature_is_the_same_in_every_process_and_marks_what_it_cannot_hash(tmp_path):
    """Review of b914291: a partial's bindings were hashed by repr, memory addresses included
    (another signature in every run); objects, lambdas and models collided silently; run-only
    options (progress, device) made the command line's signature differ from the library's;
    paths were shown whole; a tensor was hashed by its elided repr."""
    import subprocess
    import sys

    import torch

    from capkit import __version__
    from capkit.metrics import Scorer
    v = f"capkit:{__version__}"
    here = str(Path(__file__).resolve().parent)
    runs = {subprocess.run([sys.executable, "-c", _SIGNATURE_IN_A_NEW_PROCESS, here],
                           capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONHASHSEED": seed}).stdout
            for seed in ("1", "2")}
    assert len(runs) == 1
    same = runs.pop().strip()
    assert same.startswith("f|source:user|weights:builtins.max(default=__m...#")
    assert same.endswith(f"~unhashed|tok:ptb|{v}")         # long: cut, but still marked
    def f_runs(batch, weights=None, progress=None, device=None, batch_size=None):
        return _f_beta(batch, weights=weights)
    spec = MetricSpec("f", f_runs, tokens=True)

    def sig(**options):
        return Scorer([spec], options={"f": options}).score(CANDS, REFS)["f"].signature
    # how it runs is not what it computes, as for the built-ins
    assert sig(progress="auto", device="cpu", batch_size=8) == sig() == f"f|source:user|tok:ptb|{v}"
    # a tensor by all its values (its repr elides the middle)
    a, b = torch.zeros(2000), torch.zeros(2000)
    b[1000] = 1
    assert sig(weights=a) != sig(weights=b) and "weights:Tensor#" in sig(weights=a)
    # a file by its name and a digest of its size and time, not its folder
    (tmp_path / "secret").mkdir()
    idf = tmp_path / "secret" / "idf.json"
    idf.write_text("{}")
    assert "|weights:local=idf.json#" in sig(weights=idf) and "secret" not in sig(weights=idf)
    # what a returned Scores' own signature records inside a field is not added again
    from capkit.scores import with_settings
    own = f"blend|soft:soft_f(beta=1.0,floor=0.5)|{v}"
    assert with_settings(own, {"beta": "1.0", "floor": "0.5", "weight": "2"}) == \
        f"blend|soft:soft_f(beta=1.0,floor=0.5)|weight:2|{v}"


def test_builtin_scores_keep_their_own_name_and_signature():
    from capkit.metrics import bleu, prepare
    direct = bleu(prepare(CANDS, REFS), n=4)
    out = score(CANDS, REFS, {"b4": "bleu_4", "bleu_4": "bleu_4"})
    assert out["b4"] == out["bleu_4"] == direct and out["b4"].metric == "bleu_4"
