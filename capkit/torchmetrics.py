"""Any capkit metric as a ``torchmetrics.Metric``, exact under distributed evaluation.

    from capkit.torchmetrics import CaptionMetric

    cider = CaptionMetric("cider_d")            # a registered name, or "package.module:function"
    cider.update({"42": "a dog on a shoe rack"}, {"42": ["A dog sleeping on a shoe rack.", ...]})
    value = cider.compute()                     # tensor(float64): corpus CIDEr-D of ALL processes
    cider.scores                                # the capkit Scores behind it: per caption, parts

In a LightningModule: ``self.cider = CaptionMetric("cider_d")``, ``self.cider.update(...)`` in
``validation_step`` and ``self.log("val/cider_d", self.cider)``; Lightning calls ``compute()`` at
the end of the epoch and ``reset()`` after it.

What compute() returns
----------------------
Exactly ``capkit.metrics.Scorer([name]).score(all_candidates, all_references)[name]`` on the captions of
every update on every process (options go to that metric through the Scorer):
``compute()`` returns its corpus score as a 0-d float64 tensor (the torchmetrics convention, so
``self.log`` takes it) and keeps the whole ``Scores`` in ``metric.scores``. Corpus scores are the
metric's own: BLEU pools n-gram counts over all processes' captions, CIDEr-D takes document
frequencies from all processes' references, METEOR sums the statistics of all captions.

Why the processes gather text, not sufficient statistics
--------------------------------------------------------
BLEU could sync summed counts, but CIDEr-D's tf-idf weights need the document frequencies of the
whole reference set before any caption can be weighted, and METEOR, BERTScore, SPICE or a user's
metric have no small summable state at all. Gathering the captions is exact for every metric and
keeps one implementation per metric (the functional one). The cost is the text itself, gathered
once per ``compute()``: 1.7 MB for the 5,000 images of COCO Karpathy test with 5 references each
(~0.3 KB per image); then every process scores the whole set (on one CPU core, 5,000 captions:
BLEU, ROUGE-L or CIDEr-D under 1 s, METEOR about 3 s).

How the text travels
--------------------
Each ``update`` appends one uint8 tensor to a list state (``dist_reduce_fx="cat"``): an 8-byte
little-endian length, then JSON ``[ids or null, candidates, references]`` (ASCII-escaped, so any
string comes back identical). torchmetrics' own gather collects the lists of all processes,
uneven sizes included. A process that saw no data still joins the gather (``sync`` gives it an
empty record). The tensors live on the metric's device, as a NCCL gather requires.

Order and ids
-------------
``scores`` lists the captions rank by rank (process 0's updates in order, then process 1's, ...),
which is not the dataset order under a ``DistributedSampler``: look captions up with
``scores.by_id()``. Give ids (mappings ``{id: caption}``, ``{id: [refs]}`` or ``ids=``) in every
update or in none. With ids, an id seen twice (across updates or processes) is an error naming it:
``DistributedSampler`` pads the last batches by repeating samples, which would count them twice.
Without ids nothing can be checked; duplicates are then scored twice.

torchmetrics settings
---------------------
``full_state_update = False``: the state of a batch simply extends the global list, so
``forward`` (``metric(cands, refs)``) runs ``update`` once and returns the metric on that batch
alone (for corpus metrics, e.g. CIDEr-D with that batch's document frequencies); its ``Scores``
are in ``metric.batch_scores``. A batch that cannot be scored alone (empty, or one image for
CIDEr-D, whose document frequencies need several) gives NaN with a warning; it is accumulated
all the same, and a malformed batch is refused before anything accumulated is touched. Scoring
every batch costs time: call ``update`` if you only want the epoch value. ``merge_state(other)``
puts ``other``'s captions first (torchmetrics' order for list states). ``compute_on_cpu``
stays False by default: the bytes are small, and a NCCL
gather needs them on the GPU. Keyword arguments named like torchmetrics' (``METRIC_KWARGS``) go to
``torchmetrics.Metric``; every other one is an option of the capkit metric.

compute() with no captions at all (on any process) raises ValueError rather than returning NaN:
a NaN in the logs hides a wiring bug (``update`` never called), and since every process sees the
same gathered state, all of them raise together and none is left waiting in a collective. After
such an error each process holds its own captions again (torchmetrics leaves the gathered state
in place when ``compute`` raises; ``CaptionMetric`` restores it), so ``reset`` and ``update`` work.

``update`` checks a batch as the functional call would (every reference list non-empty, no id
twice), so a bad batch fails where it is given, not at the end of the epoch.
Ids are compared as text (``7`` and ``"7"`` are one id, so giving both is an error), but a
mapping update pairs each candidate with the references under the same key, as the functional
call and pycocoevalcap do: ``{7: ...}`` with ``{"7": [...]}`` is refused, naming the types.
Tensor ids (a DataLoader's collated ``image_id``) are read with ``tolist()``, so
``tensor([42, 43])`` gives ``"42"``, ``"43"`` on any device.
"""
from __future__ import annotations

import collections
import inspect
import json
import sys
import warnings
from collections.abc import Mapping, Sequence

import numpy as np

try:
    import torch
    from torchmetrics import Metric   # the installed package: imports are absolute
    from torchmetrics.utilities.data import dim_zero_cat
except ImportError as err:
    raise ImportError("capkit.torchmetrics needs torchmetrics (and torch): pip install "
                      "torchmetrics, or pip install 'capkit[distributed]'") from err

from capkit.scores import Scores

# keyword arguments of torchmetrics.Metric itself; every other keyword is a capkit metric option
METRIC_KWARGS = ("compute_on_cpu", "dist_sync_on_step", "process_group", "dist_sync_fn",
                 "distributed_available_fn", "sync_on_compute", "compute_with_cache")
_HEADER = 8   # bytes of the little-endian record length


# ---- the one place that calls capkit's metric API: the registry and the one Scorer ---------------

def _check_metric(name: str, options: dict) -> None:
    """Refuse ``name`` with ``options`` now if the Scorer would refuse it at compute(), as far as
    that is cheap to know."""
    from capkit.metrics import get_spec
    if not isinstance(name, str):
        raise TypeError(_not_a_name(name))
    spec = get_spec(name)       # ValueError listing the registered names
    if spec.images or spec.scenes:
        raise ValueError(f"metric {name!r} scores captions against images; CaptionMetric gathers "
                         "only text, so use a reference-based metric or score images directly")
    from capkit.metrics.inputs import CaptionBatch
    from capkit.metrics.scorer import metric_arguments
    # the arguments the Scorer passes, so that only an option the metric lacks is refused; the
    # spec's bound options are keywords of spec.function, which the Scorer's options override
    args = metric_arguments(spec, (["c"], [["r"]], None),
                            CaptionBatch([["c"]], [[["r"]]], None, "split"))
    try:
        inspect.signature(spec.function).bind(*args, **options)
    except TypeError as err:
        raise ValueError(f"metric {name!r} does not take the options {sorted(options)} ({err}); "
                         "see its docstring for the options it has") from None
    if "classic" in spec.suites and options:
        # array code on two tiny captions: bad values (bleu_4 with n=5) fail here, not at compute
        _score(name, options, None, ["a dog", "a cat"], [["a dog"], ["a cat"]])


def _not_a_name(metric) -> str:
    """Why CaptionMetric takes a metric's name, not a function or a spec, and which name to give:
    every process must resolve the metric the same way (a DDP spawn pickles the CaptionMetric, a
    lambda or a script's function cannot be), and ``compute()`` names the result by it."""
    from capkit.metrics import MetricSpec, registered
    why = (f"CaptionMetric takes a metric's name, a registered name or 'package.module:function',"
           f" which every process resolves to the same metric; got {metric!r:.80} (of type "
           f"{type(metric).__name__})")
    if isinstance(metric, MetricSpec):
        if metric in registered():
            return f"{why}: give its name, CaptionMetric({metric.name!r})"
        return (f"{why}: register it in every process (capkit.metrics.register(spec) at import "
                f"time), then CaptionMetric({metric.name!r})")
    if not callable(metric):
        return why
    fn, options = getattr(metric, "func", metric), getattr(metric, "keywords", {})  # a partial
    module, qualname = getattr(fn, "__module__", None), getattr(fn, "__qualname__", None)
    if module not in (None, "__main__") and isinstance(qualname, str) \
            and getattr(sys.modules.get(module), qualname, None) is fn:
        opts = "".join(f", {k}={v!r}" for k, v in options.items())
        return f"{why}: here CaptionMetric({module + ':' + qualname!r}{opts})"
    return (f"{why}: a lambda, a nested function or one defined in the script has no such name; "
            "define it in an importable module and give 'module:function', or register it in "
            "every process (capkit.metrics.register(fn, name='mine') at import time) and give "
            "CaptionMetric('mine')")


def _score(name: str, options: dict, ids, candidates: list, references: list) -> Scores:
    """What the functional call on the whole data gives (``capkit.metrics.Scorer``)."""
    from capkit.metrics import Scorer
    if ids is not None:
        candidates, references = dict(zip(ids, candidates)), dict(zip(ids, references))
    scorer = Scorer([name], options={name: options} if options else None)
    return scorer.score(candidates, references)[name]

# -------------------------------------------------------------------------------------------------


class CaptionMetric(Metric):
    """A capkit metric accumulated over batches and processes; see the module docstring for what
    ``compute()`` returns and how it syncs. ``name``: a registered name or
    ``"package.module:function"`` (as ``capkit.metrics.get_metric`` takes them), which every
    process resolves alike; a function or ``MetricSpec`` object is refused with the name to give."""

    is_differentiable = False
    higher_is_better = True        # every built-in caption metric (assumed for a user's too)
    full_state_update = False      # a batch's state just extends the list (see module docstring)

    def __init__(self, name: str, **options) -> None:
        metric_kwargs = {k: options.pop(k) for k in METRIC_KWARGS if k in options}
        _check_metric(name, options)
        super().__init__(**metric_kwargs)
        self.metric_name = name
        self.options = options
        self.add_state("records", default=[], dist_reduce_fx="cat")
        self._scores: Scores | None = None
        self.batch_scores: Scores | None = None    # the last forward()'s batch
        self._in_forward = False

    def update(self, candidates, references, ids: Sequence | None = None) -> None:
        """One batch: lists ``[caption]``, ``[[refs]]`` (optionally ``ids``), or mappings
        ``{id: caption}``, ``{id: [refs]}``. An empty batch is allowed and adds nothing."""
        ids, candidates, references = _as_lists(candidates, references, ids)
        self._scores = None
        if not candidates:
            return
        payload = json.dumps([ids, candidates, references], separators=(",", ":")).encode("ascii")
        record = len(payload).to_bytes(_HEADER, "little") + payload
        self.records.append(torch.from_numpy(np.frombuffer(record, dtype=np.uint8).copy())
                            .to(self.device))

    def compute(self) -> torch.Tensor:
        """Corpus score of every caption of every process, as a 0-d float64 tensor."""
        dtype = torch.float32 if self.device.type == "mps" else torch.float64  # mps has no f64
        try:
            ids, candidates, references = _whole_set(_decode(self.records))
            self._scores = _score(self.metric_name, self.options, ids, candidates, references)
        except BaseException as err:
            if self._in_forward and isinstance(err, ValueError):   # the batch alone: NaN
                warnings.warn(f"{self.metric_name}: this batch cannot be scored on its own "
                              f"({err}); forward() returns NaN for it. The batch is accumulated "
                              "and counts in compute().", stacklevel=4)
                self._scores = None
                return torch.tensor(float("nan"), dtype=dtype, device=self.device)
            self._local_state_back()
            raise
        return torch.tensor(self._scores.corpus, dtype=dtype, device=self.device)

    def _local_state_back(self) -> None:
        """This process's own captions back after a failed compute(): torchmetrics' sync_context
        restores them only when compute returns, and would leave the gathered state (a tensor,
        on which reset and update fail)."""
        if self._is_synced and self._cache is not None:
            self.unsync()

    @property
    def scores(self) -> Scores:
        """The full capkit ``Scores`` of the last ``compute()`` (per caption, in rank order)."""
        if self._scores is None:
            raise RuntimeError("no Scores yet: call compute() (on every process) after the last "
                               "update; metric.scores then holds them")
        return self._scores

    def reset(self) -> None:
        super().reset()
        self._scores = None

    def forward(self, candidates, references, ids: Sequence | None = None) -> torch.Tensor:
        """Accumulate the batch and return the metric on this batch alone (NaN, with a warning,
        for a batch that cannot be scored alone; a malformed batch raises before anything
        accumulated is touched)."""
        _as_lists(candidates, references, ids)      # torchmetrics resets the state, then updates
        self._in_forward = True
        try:
            value = super().forward(candidates, references, ids=ids)
        finally:
            self._in_forward = False
        self.batch_scores, self._scores = self._scores, None
        return value

    def merge_state(self, incoming_state) -> None:
        super().merge_state(incoming_state)
        self._computed, self._scores = None, None   # (torchmetrics would keep the old value)

    def sync(self, *args, **kwargs) -> None:
        # a process with no update still has to send a uint8 tensor to the gather: torchmetrics'
        # stand-in for an empty list state is a float tensor, and gloo aborts on the mismatch
        if isinstance(self.records, list) and not self.records:
            self.records.append(torch.zeros(0, dtype=torch.uint8, device=self.device))
        super().sync(*args, **kwargs)

    def extra_repr(self) -> str:
        opts = "".join(f", {k}={v!r}" for k, v in self.options.items())
        return f"{self.metric_name!r}{opts}"


def _as_lists(candidates, references, ids) -> tuple[list[str] | None, list[str], list[list[str]]]:
    """Check one batch's shape and turn it into (ids or None, candidates, references)."""
    if isinstance(candidates, Mapping):
        if ids is not None:
            raise ValueError("candidates are keyed by id already; do not pass ids= as well")
        if not isinstance(references, Mapping):
            raise TypeError("candidates are keyed by id, so references must be a mapping "
                            "{id: [reference, ...]} too")
        missing = [k for k in candidates if k not in references]
        extra = [k for k in references if k not in candidates]
        if missing or extra:
            from capkit.metrics.inputs import id_type_hint
            typed_apart = id_type_hint(missing, extra)
            raise ValueError(f"candidate and reference ids must match: no references for "
                             f"{missing[:5]}, no candidate for {extra[:5]}"
                             + (f"; {typed_apart}" if typed_apart else ""))
        keys = list(candidates)
        ids, candidates, references = keys, [candidates[k] for k in keys], \
            [references[k] for k in keys]
    elif isinstance(candidates, str) or not isinstance(candidates, Sequence):
        raise TypeError("candidates must be a list of captions or a mapping {id: caption}")
    elif isinstance(references, (str, Mapping)) or not isinstance(references, Sequence):
        raise TypeError("references must be a list with one list of references per candidate")
    elif len(candidates) != len(references):
        raise ValueError(f"got {len(candidates)} candidates but {len(references)} reference "
                         "lists; they must be aligned one to one")
    else:
        ids = _id_list(ids)
        if ids is not None and len(ids) != len(candidates):
            raise ValueError(f"got {len(ids)} ids for {len(candidates)} candidates")
    ids = None if ids is None else [str(i) for i in ids]
    names = ids or [f"at position {i} of this batch" for i in range(len(candidates))]
    refs = []
    for name, c, rs in zip(names, candidates, references):
        if not isinstance(c, str) or isinstance(rs, str) or not isinstance(rs, Sequence) \
                or not all(isinstance(r, str) for r in rs):
            raise TypeError(f"each candidate must be a string and each reference list a list of "
                            f"strings; got {c!r} with {rs!r}")
        if not rs:       # (what the functional call refuses, refused here, not at compute())
            raise ValueError(f"candidate {name} has no references; every candidate needs a "
                             "non-empty list of reference captions")
        refs.append(list(rs))
    if ids is not None and len(set(ids)) < len(ids):
        twice = [i for i, n in collections.Counter(ids).items() if n > 1]
        raise ValueError(f"{len(twice)} caption id(s) appear more than once in this batch "
                         f"(first: {twice[:5]}; ids are compared as text, so 7 and '7' are one "
                         "id): give every caption its own id")
    return ids, list(candidates), refs


def _id_list(ids) -> list | None:
    """``ids=`` as a list: a tensor or array (a DataLoader's collated ids) through ``tolist()``,
    so that ``tensor([42])`` is the id ``"42"`` on any device."""
    if ids is None:
        return None
    if hasattr(ids, "tolist"):
        ids = ids.tolist()
    if isinstance(ids, (str, bytes)) or not isinstance(ids, (Sequence, range)):
        raise TypeError(f"ids must be a list (or a tensor) with one id per candidate, got "
                        f"{type(ids).__name__}: {ids!r:.80}")
    return list(ids)


def _decode(state) -> list[list]:
    """The records ``[ids, candidates, references]`` in a byte state (a list, or a tensor after
    a sync concatenated the processes' lists in rank order)."""
    if isinstance(state, list):
        if not state:
            return []
        state = dim_zero_cat(state)
    blob = state.to(device="cpu", dtype=torch.uint8).numpy().tobytes()
    records, pos = [], 0
    while pos < len(blob):
        size = int.from_bytes(blob[pos:pos + _HEADER], "little")
        records.append(json.loads(blob[pos + _HEADER:pos + _HEADER + size]))
        pos += _HEADER + size
    return records


def _whole_set(records: list[list]) -> tuple[list[str] | None, list[str], list[list[str]]]:
    """Join the records; check ids are given everywhere or nowhere, and never twice."""
    candidates = [c for _, cs, _ in records for c in cs]
    if not candidates:
        raise ValueError("no captions to score: call update() with at least one caption (on any "
                         "process) before compute()")
    references = [r for _, _, rs in records for r in rs]
    keyed = {ids is not None for ids, _, _ in records}
    if keyed == {False}:
        return None, candidates, references
    if len(keyed) > 1:
        raise ValueError("some updates gave ids and some did not; give ids (or mappings) in every "
                         "update on every process, or in none")
    ids = [i for ids, _, _ in records for i in ids]
    twice = [i for i, n in collections.Counter(ids).items() if n > 1]
    if twice:
        raise ValueError(
            f"{len(twice)} caption id(s) were given more than once across updates and processes "
            f"(first: {twice[:5]}). A DistributedSampler pads the last batches by repeating "
            "samples: use a sampler that does not repeat them, or drop the repeats before update()")
    return ids, candidates, references
