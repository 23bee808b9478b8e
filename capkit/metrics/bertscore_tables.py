"""The tables BERTScore reads besides the model: bert_score's default layer per model and the
rescaling baselines (capkit's shipped ones, a given file, or bert_score's own), with the name
each goes by in a signature. Used by :mod:`capkit.metrics.bertscore`."""
from __future__ import annotations

import csv
import functools
import warnings
from importlib import resources
from pathlib import Path

import numpy as np

# capkit's presets (bert-base = bert-base-uncased); hub names: bert_score's table, LAYER_TABLE
DEFAULT_LAYERS = {"minilm": 5, "bert-base": 9}
LAYER_TABLE = "bert_score_layers.csv"   # bert_score 0.3.13's model2layers (MIT), copied
BASELINES = {"minilm": "minilm.csv"}     # shipped under capkit/metrics/bertscore_baselines/
BERT_SCORE_PIN = "bert-score==0.3.13"    # its rescale_baseline/en/*.tsv read as baseline= files


def read_baseline(path: str | Path, layer: int) -> np.ndarray:
    """(3,) baseline P, R, F of ``layer`` from a bert_score-style CSV (LAYER,P,R,F)."""
    with open(path, newline="") as f:
        rows = {int(r["LAYER"]): r for r in csv.DictReader(f)}
    if layer not in rows:
        raise ValueError(f"baseline file {path} has no row for layer {layer} (it has "
                         f"{sorted(rows)}); compute one for this layer with "
                         "`python -m data_scripts.bertscore_baseline`")
    return np.array([float(rows[layer][k]) for k in ("P", "R", "F")])


def baseline_table(model: str = "minilm", baseline: str | Path | None = None) -> np.ndarray:
    """(L + 1, 3) baseline P, R, F of every layer (the shipped file for ``model``, or
    ``baseline``)."""
    path, _ = baseline_path(model, baseline)
    with open(path, newline="") as f:
        rows = sorted(csv.DictReader(f), key=lambda r: int(r["LAYER"]))
    return np.array([[float(r[k]) for k in ("P", "R", "F")] for r in rows])


def baseline_path(model: object, baseline) -> tuple[Path, str]:
    if baseline is not None:
        path = Path(baseline).expanduser()
        if not path.is_file():
            raise FileNotFoundError(f"baseline file {str(path)!r} does not exist; make one with "
                                    "`python -m data_scripts.bertscore_baseline`")
        return path, path.name
    if isinstance(model, str) and model in BASELINES:
        ref = resources.files("capkit.metrics") / "bertscore_baselines" / BASELINES[model]
        return Path(str(ref)), f"capkit-{BASELINES[model]}"
    theirs = bert_score_baseline(model)
    if theirs:
        hint = f"bert_score ships one for it (English): pass baseline={str(theirs)!r}; or "
    else:
        hint = (f"bert_score (`pip install {BERT_SCORE_PIN}`) ships English ones for the hub "
                "models it knows, as bert_score/rescale_baseline/en/<hub name>.tsv: pass that "
                "file as baseline=; or ")
    raise ValueError(f"capkit ships a rescaling baseline only for {sorted(BASELINES)}, not for "
                     f"model {model!r}: {hint}compute one with `python -m "
                     f"data_scripts.bertscore_baseline --model {model or '...'}` and pass "
                     "baseline=<file>, or set rescale_with_baseline=False")


def bert_score_baseline(model: object) -> Path | None:
    """bert_score's own English baseline file for a hub name (or capkit's preset of it), when
    bert_score is installed and has one (``rescale_baseline/en/<name>.tsv``, LAYER,P,R,F)."""
    import importlib.util

    from capkit.models.presets import PRESETS
    if not isinstance(model, str):
        return None
    name = PRESETS[model].target if model in PRESETS else model
    spec = importlib.util.find_spec("bert_score")
    if not name or spec is None or not spec.submodule_search_locations:
        return None
    for root in spec.submodule_search_locations:
        path = Path(root) / "rescale_baseline" / "en" / f"{name}.tsv"
        if path.is_file():
            return path
    return None


def model_name(model: object, enc) -> str | None:
    """The preset or hub name behind ``model`` (a name, or a loaded encoder's ``name``)."""
    return model if isinstance(model, str) else getattr(enc, "name", None)


@functools.lru_cache(maxsize=1)
def bert_score_layers() -> dict[str, int]:
    """bert_score's default layer of each hub model it knows (``model2layers``)."""
    ref = resources.files("capkit.metrics") / "bertscore_baselines" / LAYER_TABLE
    with ref.open(newline="") as f:
        return {r["MODEL"]: int(r["LAYER"]) for r in csv.DictReader(f)}


def choose_layer(model: object, enc, layer: int | None) -> int:
    """``layer``, else capkit's preset layer or bert_score's for the model name, else the last
    layer (with a warning, except for capkit's untrained ``tiny-*`` presets)."""
    if layer is None:
        name = model_name(model, enc)
        layer = DEFAULT_LAYERS.get(name, bert_score_layers().get(name))
        if layer is None:
            layer = enc.num_layers
            if not str(name).startswith("tiny-"):
                warnings.warn(f"bert_score has no default layer for {name!r}, so BERTScore uses "
                              f"its last layer ({layer}); bert_score picks a middle layer per "
                              "model (e.g. 17 of 24 for roberta-large): pass layer= to choose "
                              "one, and report it", stacklevel=3)
    return enc.check_layer(layer)
