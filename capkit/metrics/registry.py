"""What a metric is, in one place: a ``MetricSpec`` per name, built-ins and users' alike.

A spec says what the metric needs (a tokenised batch or plain text, references, images, scenes),
which corpus statistics it accepts, what it downloads or was trained with, the range of its
scores, its paper and notebook section, and the suites it runs in by default (``"classic"``: what
``capkit score`` and ``capkit robustness`` run; ``"systems"``: ``capkit systems``; ``"bench"``:
``capkit bench`` and ``make demo``). The one scorer (``capkit.metrics.scorer``) reads nothing else.

The function behind a built-in spec is named as ``"module:function"`` and imported on first use,
so reading the registry (``capkit metrics``, argument defaults) imports no model code.

    >>> from capkit.metrics import register, get_spec
    >>> register(my_metric, name="mine", score_range=(0, 1), paper="me 2026")   # doctest: +SKIP
    >>> get_spec("bleu_4").needs                                                # doctest: +SKIP
    'tokens, references'
"""
from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace

from capkit.scores import ReadOnlyDict

SUITES = ("classic", "systems", "bench")
BUILTIN_PACKAGE = "capkit.metrics"      # where capkit's own metric functions live


@dataclass(frozen=True)
class MetricSpec:
    name: str
    target: str | Callable                 # "package.module:function", imported on first use
    options: Mapping[str, object] = field(default_factory=dict)   # bound, e.g. {"n": 4}
    tokens: bool = False                   # takes a tokenised CaptionBatch (one tokenisation)
    references: bool = True                # False: reference-free (scores captions vs images)
    images: bool = False                   # needs one image per candidate
    scenes: bool = False                   # needs one world scene per candidate
    document_frequency: bool = False       # accepts document_frequency=... (corpus statistics)
    downloads: str | None = None           # what it fetches from the network on first use
    trained: str | None = None             # how its shipped checkpoint is made again
    trained_on: frozenset[str] = frozenset()   # datasets whose captions of some images it saw
    score_range: tuple[float, float] = (0.0, 1.0)
    paper: str = ""
    notebook: str = ""
    suites: frozenset[str] = frozenset()
    # capkit's own function (its module is under capkit.metrics), read from the target, never
    # given: built-ins get {id: caption} when the input has ids, a user's function plain lists
    builtin: bool = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "builtin", _is_capkit_metric(self.target))
        object.__setattr__(self, "options", ReadOnlyDict(self.options))
        object.__setattr__(self, "suites", frozenset(self.suites))
        if isinstance(self.trained_on, str):      # frozenset("coco") would be its letters
            raise ValueError(f"metric {self.name!r}: trained_on is a collection of dataset "
                             f"names, e.g. {{{self.trained_on!r}}}, not one string")
        object.__setattr__(self, "trained_on", frozenset(self.trained_on))
        unknown = set(self.suites) - set(SUITES)
        if unknown:
            raise ValueError(f"metric {self.name!r}: unknown suite(s) {sorted(unknown)}; "
                             f"choose from {SUITES}")
        low, high = self.score_range
        if not low <= high:
            raise ValueError(f"metric {self.name!r}: score_range {self.score_range} is empty")

    @property
    def function(self) -> Callable:
        """The callable with the spec's options bound."""
        fn = _import_target(self.target) if isinstance(self.target, str) else self.target
        return functools.partial(fn, **self.options) if self.options else fn

    @property
    def offline(self) -> bool:
        return self.downloads is None

    @property
    def needs(self) -> str:
        """'tokens, references, images' ...: what the scorer must hand over."""
        parts = ["tokens" if self.tokens else "text"]
        parts += [k for k in ("references", "images", "scenes") if getattr(self, k)]
        return ", ".join(parts)


def _import_target(target: str) -> Callable:
    """The function a ``"module:function"`` target names now. Not cached: ``import_module``
    caches the module, and the attribute is read on every call, so after a user edits their
    module and ``importlib.reload``s it the new function is scored."""
    module, _, attr = target.partition(":")
    if not module or not attr:
        raise ValueError(f"cannot import metric {target!r}; give 'module:function', e.g. "
                         "'my_metrics:word_overlap'")
    try:
        fn = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as err:
        raise ValueError(f"cannot import metric {target!r} ({err}); give 'module:function' "
                         "with the module importable (e.g. on PYTHONPATH)") from err
    except Exception as err:            # the module's own code failed while it was imported
        raise ValueError(f"importing {module!r} for the metric {target!r} failed: "
                         f"{type(err).__name__}: {err} (python -c 'import {module}' shows "
                         "where)") from err
    if not callable(fn):
        raise ValueError(f"{target!r} is not callable; a metric is a function "
                         "fn(candidates, references) -> Scores or 1-d array")
    return fn


def _is_capkit_metric(target: str | Callable) -> bool:
    """Whether ``target`` is one of capkit's metric functions (a module under capkit.metrics),
    told from its module, so that no spec a user writes can make their function "built-in"."""
    if isinstance(target, str):
        module = target.partition(":")[0]
    else:
        while isinstance(target, functools.partial):
            target = target.func
        module = getattr(target, "__module__", None) or type(target).__module__
    return isinstance(module, str) and module.startswith(BUILTIN_PACKAGE + ".")


def seen_data_note(specs: Mapping[str, MetricSpec], dataset: str) -> str | None:
    """A note for a command that scores ``dataset`` with metrics whose shipped checkpoint was
    trained on captions of some of its images (``MetricSpec.trained_on``); None if none was."""
    seen = [name for name, spec in specs.items() if dataset in spec.trained_on]
    if not seen:
        return None
    return (f"{', '.join(seen)}: the shipped checkpoint was trained on the captions of part "
            f"of {dataset}'s images (those outside every benchmark, capkit.training.corpus), "
            "so these scores mix images it has seen with held-out ones. Held-out numbers: "
            "`capkit bench`, whose benchmarks' images were kept out of training.")


_REGISTRY: dict[str, MetricSpec] = {}


def register(metric: MetricSpec | Callable | str, name: str | None = None, *,
             replace_existing: bool = False, **fields) -> MetricSpec:
    """Add a metric: a ``MetricSpec``, or a function / ``"module:function"`` plus spec fields.

    A user's metric receives plain texts ``fn(candidates, references)`` unless ``tokens=True``.
    Registering a taken name is an error unless ``replace_existing=True``.
    """
    if isinstance(metric, MetricSpec):
        spec = replace(metric, **fields) if fields else metric
        if name is not None and name != spec.name:
            spec = replace(spec, name=name)
    else:
        if name is None:
            name = metric.partition(":")[2] if isinstance(metric, str) else _name_of(metric)
        spec = MetricSpec(name, metric, **fields)
    if not spec.name or not isinstance(spec.name, str):
        raise ValueError(f"a metric needs a name, got {spec.name!r}")
    if spec.name in _REGISTRY and not replace_existing and _REGISTRY[spec.name] != spec:
        raise ValueError(f"a metric named {spec.name!r} is registered already; pick another "
                         "name or pass replace_existing=True")
    _REGISTRY[spec.name] = spec
    return spec


def unregister(name: str) -> None:
    _REGISTRY.pop(name, None)


def _name_of(fn: Callable) -> str:
    inner = getattr(fn, "func", fn)          # functools.partial
    return getattr(inner, "__name__", None) or type(fn).__name__


def get_spec(metric: str | Callable | MetricSpec) -> MetricSpec:
    """The spec of a registered name, of ``"module:function"``, or of a plain callable."""
    if isinstance(metric, MetricSpec):
        return metric
    if callable(metric):
        return MetricSpec(_name_of(metric), metric, score_range=(-1e300, 1e300))
    if not isinstance(metric, str):
        raise TypeError(f"a metric is a name, 'module:function' or a callable, got {metric!r}")
    if metric in _REGISTRY:
        return _REGISTRY[metric]
    if ":" in metric:
        _import_target(metric)               # fail now, with the import error, not later
        for spec in _REGISTRY.values():      # a built-in's own function: keep what it needs
            if spec.target == metric and not spec.options:
                return replace(spec, name=metric)
        return MetricSpec(metric, metric, score_range=(-1e300, 1e300))
    import difflib
    close = difflib.get_close_matches(metric.lower(), _REGISTRY, n=3, cutoff=0.6)
    hint = f"did you mean {' or '.join(map(repr, close))}? " if close else ""
    raise ValueError(f"unknown metric {metric!r}; {hint}registered: {', '.join(_REGISTRY)}; or "
                     "give your own as 'module:function' (or capkit.metrics.register(fn, "
                     "name=...))")


def registered(suite: str | None = None) -> tuple[MetricSpec, ...]:
    """Every registered spec (in registration order), or those of one suite."""
    if suite is not None and suite not in SUITES:
        raise ValueError(f"unknown suite {suite!r}; choose from {SUITES}")
    return tuple(s for s in _REGISTRY.values() if suite is None or suite in s.suites)


def suite(name: str) -> tuple[str, ...]:
    """The metric names a suite runs by default, e.g. ``suite("classic")``."""
    return tuple(s.name for s in registered(name))


def resolve(metrics: str | Callable | MetricSpec | Iterable | Mapping) -> dict[str, MetricSpec]:
    """``{name: spec}`` from one name (a bare string is ONE name), a list, or ``{name: metric}``."""
    if isinstance(metrics, (str, MetricSpec)) or callable(metrics):
        metrics = [metrics]
    if isinstance(metrics, Mapping):
        pairs = [(str(k), get_spec(v)) for k, v in metrics.items()]
        pairs = [(k, s if s.name == k else replace(s, name=k)) for k, s in pairs]
    else:
        pairs = [(s.name, s) for s in map(get_spec, metrics)]
    out: dict[str, MetricSpec] = {}
    for name, spec in pairs:
        if name in out:
            raise ValueError(f"the metric {name!r} is given twice; give each metric once (to "
                             "score one metric with two settings, name them apart with a dict "
                             "{name: metric})")
        out[name] = spec
    if not out:
        raise ValueError("no metric given; e.g. ['bleu_4', 'cider_d']")
    return out
