"""Which tests may skip (#17.8): only those that need an optional thing capkit cannot install.

A broken install must fail the test run, not pass it as skips. Everything the tests use is a
dependency (``pip install -e ".[dev]"``, which ``make setup`` runs) or data (``make data``),
except the four things in ``ALLOWED``. A test that needs one of them skips with a reason that
starts with its name and a colon (``"java: no `java` on PATH"``); ``needs_java`` and
``needs_corenlp`` below do that. Any other skip, an ``importorskip`` of a dependency, missing data
or a wrong version, is turned into a failure that says what to install.

tests/conftest.py registers the hooks; tests/test_skip_policy.py runs them on a sample suite.
"""
from __future__ import annotations

import shutil

import pytest

ALLOWED = {
    "java": "a Java runtime (the reference tools: pycocoevalcap's PTB tokenizer, the METEOR "
            "and SPICE jars)",
    "corenlp": "Stanford CoreNLP 3.6.0 for the official SPICE "
               "(`python -m data_scripts.spice_corenlp`)",
    "hub": "model weights from the Hugging Face hub (online only: CLIP, BLIP, ViLT, BERT)",
    "gpu": "a CUDA GPU",
}
INSTALL = ("every other dependency is required: run `make setup` (pip install -e "
           "\".[notebooks,dev]\") and `make data`, or install what the reason names")

HAS_JAVA = shutil.which("java") is not None
needs_java = pytest.mark.skipif(not HAS_JAVA, reason="java: no `java` on PATH")


def needs_corenlp() -> None:
    """Skip (reason ``corenlp:``) unless CoreNLP 3.6.0 is installed for the official SPICE."""
    from capkit.metrics.spice.official import find_corenlp
    try:
        find_corenlp()
    except FileNotFoundError as err:
        pytest.skip(f"corenlp: {err}")


def allowed(reason: str) -> bool:
    """Whether a skip reason starts with one of the ALLOWED names and a colon."""
    reason = reason.removeprefix("Skipped: ").strip()
    name, colon, _ = reason.partition(":")
    return bool(colon) and name.strip() in ALLOWED


def _reason(report) -> str:
    longrepr = report.longrepr
    return str(longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else longrepr)


def _forbid(report, where: str) -> None:
    reason = _reason(report).removeprefix("Skipped: ")
    report.outcome = "failed"
    report.longrepr = (f"{where} skipped ({reason}), but a test may skip only when one of these "
                       f"is missing: {', '.join(ALLOWED)} (its reason starting with the name "
                       f"and a colon); {INSTALL}")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.skipped and not hasattr(report, "wasxfail") and not allowed(_reason(report)):
        _forbid(report, item.nodeid)


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    report = outcome.get_result()
    if report.skipped and not allowed(_reason(report)):       # a module-level importorskip
        _forbid(report, collector.nodeid)


def pytest_terminal_summary(terminalreporter):
    skipped = [r for r in terminalreporter.stats.get("skipped", [])
               if not hasattr(r, "wasxfail")]
    by_name: dict[str, int] = {}
    for r in skipped:
        name = _reason(r).removeprefix("Skipped: ").partition(":")[0].strip()
        by_name[name] = by_name.get(name, 0) + 1
    detail = "".join(f"; {name}: {n}" for name, n in sorted(by_name.items()))
    terminalreporter.write_line(f"skipped: {len(skipped)} (allowed: {', '.join(ALLOWED)})"
                                f"{detail}")
