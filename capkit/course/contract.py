"""A metric's contract (notebook 11, section 1): what every capkit metric keeps, checked on any
function ``fn(candidates, references)``.

``check_contract`` returns a printable ``ContractRecord`` of eight clauses (runs, one score per
candidate, ids kept, finite, deterministic, batch-size invariant, a ``ValueError`` with a message
on empty input, a signature) and never raises; ``batch_difference`` is the batch-size clause
alone (max |full batch - batches of k|). Corpus-level metrics (CIDEr-D takes its document
frequencies from the scored references) break the batch clause by design: the record says so.
"""
from __future__ import annotations

import dataclasses

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from capkit.scores import Scores

__all__ = ["ContractCheck", "ContractRecord", "batch_difference", "check_contract"]


@dataclass(frozen=True)
class ContractCheck:
    """One clause of the contract: its name, whether it held, and what was seen."""
    name: str
    passed: bool
    detail: str


@dataclass(frozen=True)
class ContractRecord:
    """What ``check_contract`` found; prints as one line per clause."""
    metric: str
    signature: str | None
    n: int                                   # candidates checked
    checks: tuple[ContractCheck, ...]

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)

    def __bool__(self) -> bool:
        return self.passed

    def __getitem__(self, name: str) -> ContractCheck:
        for c in self.checks:
            if c.name == name:
                return c
        raise KeyError(f"no clause {name!r}; clauses: {', '.join(c.name for c in self.checks)}")

    def failed(self) -> list[str]:
        return [c.name for c in self.checks if not c.passed]

    def __str__(self) -> str:
        verdict = "keeps the contract" if self.passed else f"breaks {len(self.failed())} clause(s)"
        lines = [f"contract of {self.metric} on {self.n} candidates: {verdict}"]
        lines += [f"  {'✓' if c.passed else '✗'} {c.name:24s} {c.detail}" for c in self.checks]
        lines.append(f"  signature: {self.signature}")
        return "\n".join(lines)

    __repr__ = __str__

    def to_dict(self) -> dict:
        return {"metric": self.metric, "signature": self.signature, "n": self.n,
                "passed": self.passed,
                "checks": [dataclasses.asdict(c) for c in self.checks]}


CLAUSES = ("runs", "one score per candidate", "ids kept", "finite", "deterministic",
           "batch-size invariant", "error on empty input", "signature")


def _metric_fn(fn) -> tuple[Callable, str]:
    """A callable fn(candidates, references) and its name, for a callable or a registered name."""
    if isinstance(fn, str):
        from capkit.metrics import score
        return (lambda c, r: score(c, r, [fn])[fn]), fn
    if not callable(fn):
        raise TypeError(f"a metric is a callable fn(candidates, references) or a registered "
                        f"name, got {fn!r}")
    inner = getattr(fn, "func", fn)
    return fn, getattr(inner, "__name__", type(fn).__name__)


def _values(result) -> np.ndarray:
    values = result.per_caption if isinstance(result, Scores) else result
    try:
        kind = np.asarray(values).dtype.kind      # strings ("0.5" too) and dicts are not numbers
        if kind not in "biuf":
            raise TypeError(kind)
        return np.asarray(values, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):        # a dict {id: score}, strings, ...: not one number each
        text = repr(result)
        raise TypeError(f"the metric returned a {type(result).__name__} "
                        f"({text if len(text) <= 40 else text[:37] + '...'}), not numbers: "
                        "return a capkit.scores.Scores with one score per candidate") from None


def _batched(fn: Callable, ids: list[str], cands: Mapping, refs: Mapping, k: int) -> np.ndarray:
    parts = [ids[i:i + k] for i in range(0, len(ids), k)]
    return np.concatenate([_values(fn({i: cands[i] for i in p}, {i: refs[i] for i in p}))
                           for p in parts])


def batch_difference(fn, candidates: Mapping[str, str], references: Mapping[str, Sequence[str]],
                     batch_size: int) -> float:
    """Largest |score in one batch - score in batches of ``batch_size``| over the candidates.

    The candidates are cut, in their order, into consecutive batches of ``batch_size`` (the last
    one shorter); 0.0 for a metric whose score of a caption does not depend on the others.
    """
    fn, _ = _metric_fn(fn)
    if batch_size < 1:
        raise ValueError(f"batch_size must be a positive number of candidates, got {batch_size}")
    ids = list(candidates)
    whole = _values(fn(dict(candidates), dict(references)))
    return float(np.max(np.abs(whole - _batched(fn, ids, candidates, references, batch_size))))


def check_contract(fn, candidates, references, *, batch_size: int | None = None,
                   rtol: float = 1e-6, atol: float = 1e-6) -> ContractRecord:
    """Run the contract of a capkit metric on ``fn`` and record each clause (never raises).

    ``fn``: a callable ``fn(candidates, references) -> Scores`` (or a registered metric name).
    ``candidates``: ``{id: caption}`` (or a list: ids "0", "1", ... are given to it);
    ``references``: ``{id: [captions]}`` (or a list of lists). The clauses: it runs on a mapping;
    one score per candidate; the ids of the mapping come back in its order; every score is
    finite; a second call gives the same scores exactly; scores in batches of ``batch_size``
    (default: half the candidates) equal those of one batch within ``rtol``/``atol`` (float32
    models differ in the last bits with the batch shape); an empty input raises ``ValueError``
    with a message; the result is a ``Scores`` with a signature of its settings.
    """
    fn, name = _metric_fn(fn)
    if not isinstance(candidates, Mapping):
        candidates = {str(i): c for i, c in enumerate(candidates)}
        references = {str(i): list(r) for i, r in enumerate(references)}
    cands, refs = dict(candidates), {k: list(v) for k, v in references.items()}
    ids, n = list(cands), len(cands)
    if n < 2:
        raise ValueError("check_contract needs at least 2 candidates (one batch against several)")
    checks: list[ContractCheck] = []
    try:
        first = fn(cands, refs)
    except Exception as err:                       # the student's bug: recorded, not raised
        checks.append(ContractCheck("runs", False, f"raised {type(err).__name__}: {err}"))
        return ContractRecord(name, None, n, tuple(checks))
    checks.append(ContractCheck("runs", True, f"returned {type(first).__name__}"))
    try:
        values = _values(first)
    except TypeError as err:                      # no numbers: the other clauses cannot be run
        checks.append(ContractCheck("one score per candidate", False, str(err)))
        return ContractRecord(name, None, n, tuple(checks))
    checks.append(ContractCheck("one score per candidate", len(values) == n,
                                f"{len(values)} scores for {n} candidates"))
    got = getattr(first, "ids", None)
    checks.append(ContractCheck(
        "ids kept", got is not None and list(got) == ids,
        "no ids in the result" if got is None else
        ("the candidates' ids, in order" if list(got) == ids else
         f"ids differ from the candidates' (first: {list(got)[:2]} vs {ids[:2]})")))
    finite = np.isfinite(values)
    checks.append(ContractCheck("finite", bool(finite.all()),
                                "every score finite" if finite.all() else
                                f"{int((~finite).sum())} NaN or infinite score(s)"))
    checks.append(_deterministic(fn, cands, refs, values))
    checks.append(_batch_invariant(fn, ids, cands, refs, values, batch_size or max(1, n // 2),
                                   rtol, atol))
    checks.append(_empty_input(fn))
    sig = first.signature if isinstance(first, Scores) else None
    checks.append(ContractCheck("signature", bool(sig),
                                "a Scores with a signature" if sig else
                                "return a capkit.scores.Scores with make_signature(...)"))
    return ContractRecord(name, sig, n, tuple(checks))


def _deterministic(fn, cands, refs, values) -> ContractCheck:
    try:
        again = _values(fn(cands, refs))
    except Exception as err:
        return ContractCheck("deterministic", False, f"a second call raised {err!r}")
    same = again.shape == values.shape and np.array_equal(again, values, equal_nan=True)
    return ContractCheck("deterministic", bool(same), "a second call gives the same scores"
                         if same else "a second call gives other scores (seed every draw)")


def _batch_invariant(fn, ids, cands, refs, values, k, rtol, atol) -> ContractCheck:
    try:
        parts = _batched(fn, ids, cands, refs, k)
    except Exception as err:
        return ContractCheck("batch-size invariant", False, f"batches of {k} raised {err!r}")
    if parts.shape != values.shape:
        return ContractCheck("batch-size invariant", False,
                             f"batches of {k} gave {len(parts)} scores for {len(values)}")
    close = np.isclose(parts, values, rtol=rtol, atol=atol, equal_nan=True)
    both = np.isfinite(parts) & np.isfinite(values)
    worst = float(np.abs(parts - values)[both].max()) if both.any() else 0.0
    return ContractCheck("batch-size invariant", bool(close.all()),
                         f"batches of {k}: max |diff| {worst:.2g}" + (
                             "" if close.all() else f" (first at id {ids[int(np.argmin(close))]})"))


def _empty_input(fn) -> ContractCheck:
    try:
        fn({}, {})
    except ValueError as err:
        return ContractCheck("error on empty input", bool(str(err)),
                             f"ValueError: {str(err)[:60]}" if str(err) else
                             "ValueError without a message")
    except Exception as err:
        return ContractCheck("error on empty input", False,
                             f"{type(err).__name__} instead of ValueError: {str(err)[:50]}")
    return ContractCheck("error on empty input", False, "returned a result for no candidates")
