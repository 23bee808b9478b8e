"""The skip policy of tests/skip_policy.py (#17.8), run on a sample suite in a fresh pytest."""
import os
import subprocess
import sys
from pathlib import Path

import skip_policy

SAMPLE = '''
import pytest

def test_passes():
    pass

@pytest.mark.skipif(True, reason="java: no `java` on PATH")
def test_needs_java():
    pass

def test_needs_corenlp():
    pytest.skip("corenlp: no CoreNLP 3.6.0")

def test_imports_a_dependency():
    pytest.importorskip("capkit_no_such_module")

@pytest.mark.skipif(True, reason="needs spaCy")
def test_skipif_without_an_allowed_name():
    pass

def test_a_prefix_is_a_whole_name():
    pytest.skip("javanese: not java")

@pytest.fixture
def data():
    pytest.skip("datasets not fetched")

def test_fixture_skips(data):
    pass

@pytest.mark.xfail(reason="known")
def test_xfail_is_not_a_skip():
    assert False
'''


def _run(tmp_path, files: dict[str, str]):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "conftest.py").write_text(
        "from skip_policy import (pytest_make_collect_report, pytest_runtest_makereport,\n"
        "                         pytest_terminal_summary)\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(Path(skip_policy.__file__).parent), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "pytest", "-rfEs", "-p", "no:cacheprovider",
                           "-p", "no:randomly", str(tmp_path)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    return done.returncode, done.stdout + done.stderr


def test_only_the_listed_optional_things_may_skip(tmp_path):
    code, out = _run(tmp_path, {"test_sample.py": SAMPLE})
    assert code == 1, out
    last = out.strip().splitlines()[-1]
    assert "2 failed, 1 passed, 2 skipped, 1 xfailed, 2 errors" in last, out
    assert "skipped: 2 (allowed: java, corenlp, hub, gpu); corenlp: 1; java: 1" in out
    for name in ("test_imports_a_dependency", "test_a_prefix_is_a_whole_name"):
        assert f"FAILED test_sample.py::{name}" in out
    for name in ("test_skipif_without_an_allowed_name", "test_fixture_skips"):
        assert f"ERROR test_sample.py::{name}" in out
    assert "capkit_no_such_module" in out and "make setup" in out


def test_a_module_level_importorskip_fails_the_collection(tmp_path):
    code, out = _run(tmp_path, {"test_module.py": 'import pytest\n'
                                'pytest.importorskip("capkit_no_such_module")\n'
                                'def test_x():\n    pass\n'})
    assert code != 0 and "capkit_no_such_module" in out and "make setup" in out, out
    assert "skipped: 0 (allowed: java, corenlp, hub, gpu)" in out


def test_reasons():
    assert skip_policy.allowed("java: no java") and skip_policy.allowed("Skipped: gpu: none")
    assert not skip_policy.allowed("needs Java") and not skip_policy.allowed("javanese: x")
    assert not skip_policy.allowed("could not import 'torch': No module named 'torch'")
