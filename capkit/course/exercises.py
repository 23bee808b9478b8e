"""Check cells for the notebooks' exercises (notebooks' "Exercise N.k" sections).

An exercise cell defines a function whose body lies between nbgrader's ``### BEGIN SOLUTION`` and
``### END SOLUTION`` markers; the student version (``make student``) replaces the body with
``raise NotImplementedError()``. The check cell that follows calls :func:`check` (a function
compared with the library on a list of cases) or :func:`check_value` (an answer accepted by a
rule, e.g. "a false caption with BLEU-4 above 0.5"). Both print one line and return a
:class:`Check`; neither raises, so an unfinished or wrong exercise never stops the rest of the
notebook. In the instructors' notebooks the check cells are ``# NBVAL_CHECK_OUTPUT`` cells, so
``make test`` fails when a solution stops matching the library. For nbgrader's autograder, the
check cell's hidden test calls :func:`require_passed`, which does raise on anything but a pass
(``capkit.course.grading``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from capkit.course.copies import Copies

__all__ = ["Check", "check", "check_value", "require_passed"]

_LAST: dict[str, "Check"] = {}     # exercise number ("5.1") -> its latest check in this kernel


@dataclass(frozen=True)
class Check:
    """The outcome of one check cell: ``done`` (the stub no longer raises) and ``passed``."""
    title: str
    done: bool
    passed: bool
    message: str

    def __bool__(self) -> bool:
        return self.passed

    def _ipython_display_(self) -> None:
        """Nothing: the check already printed its line (a check cell ends in ``check(...)``)."""


def _same(got: Any, want: Any, rtol: float, atol: float) -> bool:
    """Equal up to floating-point tolerance, through nested mappings and sequences."""
    if isinstance(want, dict):
        return isinstance(got, dict) and set(got) == set(want) and \
            all(_same(got[k], want[k], rtol, atol) for k in want)
    if isinstance(want, str) or isinstance(got, str):
        return got == want
    if isinstance(want, (bool, np.bool_)):
        return bool(got) == bool(want)
    if isinstance(want, (int, float, np.integer, np.floating)) and not isinstance(got, (list, tuple)):
        try:
            g, w = float(got), float(want)
        except (TypeError, ValueError):
            return False
        return (math.isnan(g) and math.isnan(w)) or math.isclose(g, w, rel_tol=rtol, abs_tol=atol)
    try:
        g, w = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
    except (TypeError, ValueError):
        return got == want
    return g.shape == w.shape and bool(np.allclose(g, w, rtol=rtol, atol=atol, equal_nan=True))


def _short(value: Any, width: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= width else text[:width - 3] + "..."


def _name(fn: Callable) -> str:
    return getattr(fn, "__name__", "your function")


def _report(title: str, done: bool, passed: bool, message: str) -> Check:
    mark = "✓" if passed else ("✗" if done else "…")
    print(f"{mark} Exercise {title}: {message}")
    result = Check(title, done, passed, message)
    _LAST[(title.split() or [""])[0]] = result
    return result


def require_passed(number: str) -> None:
    """AssertionError unless the latest check of exercise ``number`` ("0.1") in this kernel
    passed: the autograder's test, hidden from students (``capkit.course.grading``)."""
    result = _LAST.get(str(number))
    if result is None:
        raise AssertionError(f"exercise {number} was not checked: run its check cell")
    if not result.passed:
        raise AssertionError(f"exercise {number}: {result.message}")


def check(title: str, answer: Callable, expected: Callable, cases: Iterable[Sequence[Any]], *,
          rtol: float = 1e-7, atol: float = 1e-9, against: str = "the library") -> Check:
    """Compare ``answer(*case)`` with ``expected(*case)`` on every case; print one line.

    ``cases`` are argument tuples. Numbers, arrays and nested lists/dicts are compared with
    ``rtol``/``atol``; strings exactly. ``against`` names what ``expected`` is, for the message.
    A stub that raises ``NotImplementedError`` reports "not done yet"; any other exception, or
    the first differing case, is reported with its input, never raised.

    ``answer`` and ``expected`` each get their own copies of the cases' containers, arrays and
    dataclasses (:mod:`capkit.course.copies`), so the caller's objects are never changed and
    the expected value is computed on the input as given. A function that changes its input in
    place fails, with a message that says so (a model or other object in a case is shared, not
    copied, and a change to it goes unseen).
    """
    cases = [tuple(c) for c in cases]
    if not cases:
        raise ValueError("check() needs at least one case to compare on")
    theirs, ours = Copies(), Copies()       # one copy per object for all cases: see copies.py
    for i, case in enumerate(cases):
        where = f"case {i + 1} of {len(cases)}"
        want = expected(*map(ours.copy, case))
        try:
            got = answer(*map(theirs.copy, case))
        except NotImplementedError:
            return _report(title, False, False,
                           f"not done yet: write the body of `{_name(answer)}` above, then run "
                           "this cell again")
        except Exception as err:          # the student's bug, shown rather than raised
            return _report(title, True, False, _changed(cases, i + 1, ours, theirs, against)
                           or f"{where} raised {type(err).__name__}: {err} "
                              f"(input {_short(case)})")
        if not _same(got, want, rtol, atol):
            return _report(title, True, False, _changed(cases, i + 1, ours, theirs, against)
                           or f"{where} differs from {against}: yours {_short(got)}, expected "
                              f"{_short(want)} (input {_short(case)})")
    changed = _changed(cases, len(cases), ours, theirs, against)
    return _report(title, True, changed is None,
                   changed or f"correct on {len(cases)} cases, equal to {against}")


def _changed(cases: list[tuple], run: int, ours: Copies, theirs: Copies,
             against: str) -> str | None:
    """What changed its input in place in the first ``run`` cases, said for the check's line;
    None if nothing did.

    Checked once, when the check is about to end (a copy serves every case that holds its
    object, so a change shows whenever it happened): before a differing case's message, since
    a changed input may be what made that case differ.
    """
    if (hit := ours.first_changed(cases[:run])) is not None:      # not the student: the check cell
        i, k = hit
        return (f"computing the expected value ({against}) changed argument {k} of case {i + 1} "
                "in place: a function given in the cases may change its input; fix it, then "
                "run this cell again")
    if (hit := theirs.first_changed(cases[:run])) is not None:
        i, k = hit
        return (f"case {i + 1} of {len(cases)}: your function changed its input in place "
                f"(argument {k}, {_short(cases[i][k - 1], 40)}); work on a copy instead "
                "(sorted(x), not x.sort(); x + [y], not x.append(y)), then run this cell again")
    return None


def check_value(title: str, produce: Callable[[], Any],
                accept: Callable[[Any], tuple[bool, str]]) -> Check:
    """Check an answer that is a value, not a function: ``accept(produce())`` -> (ok, why).

    ``produce`` is a function of no arguments that computes the student's answer (so an
    unfinished stub inside it reports "not done yet"); ``why`` is printed either way.
    """
    try:
        value = produce()
    except NotImplementedError:
        return _report(title, False, False, "not done yet: fill in the answer above, then run "
                       "this cell again")
    except Exception as err:
        return _report(title, True, False, f"computing your answer raised "
                       f"{type(err).__name__}: {err}")
    ok, why = accept(value)
    return _report(title, True, bool(ok), why)
