"""The release as a user installs it: ``python -m build`` gives an sdist and a wheel, and in a
fresh virtual environment, from a folder outside the checkout, the installed wheel (not the
checkout's capkit) answers ``capkit --version``, fetches datasets with ``capkit data fetch``,
scores with ``capkit score`` and runs ``capkit bench``, with the same numbers as the checkout.

Run by ``make test-wheel`` (CI runs it after ``make test``; ``make test`` leaves this folder out).
It needs PyPI or a pip cache that holds capkit's dependencies (``make setup`` fills it), and
the data mirror (``../shared/data`` or $CAPKIT_SHARED_DATA), else the datasets ``make data``
fetched. The environment gets ``torch==2.13.0`` first, as ``make setup`` does: on the course
machines that is a local CPU wheel, and an unpinned torch would pull a multi-GB CUDA build.
Each step's time is printed (``pytest -s``).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MIRROR = Path(os.environ.get("CAPKIT_SHARED_DATA", REPO.parent / "shared" / "data"))
VERSION = re.search(r'^__version__ = "([^"]+)"$', (REPO / "capkit" / "__init__.py").read_text(),
                    flags=re.M).group(1)
TORCH = "torch==2.13.0"                 # as the Makefile's setup installs it, first
DATASETS = ["clipscore_example", "thumb"]   # 0.3 MB and 0.7 MB: thumb is the benchmark run
METRICS = "bleu_4,rouge_l,cider_d,meteor,spice_lite,mean_glove,bertscore,i2ce"


def _run(cmd, cwd, env=None, what="", timeout=1200) -> subprocess.CompletedProcess:
    start = time.perf_counter()
    out = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True,
                         text=True, timeout=timeout)
    print(f"\n[wheel test] {what or cmd[0]}: {time.perf_counter() - start:.1f} s", flush=True)
    assert out.returncode == 0, f"{what} failed ({out.returncode}):\n{out.stdout}\n{out.stderr}"
    return out


def _source_files() -> list[Path]:
    """The checkout's files as a clone has them: tracked or new, not ignored (no .venv, no
    build outputs); without git, everything but those folders."""
    try:
        listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO,
                                capture_output=True, text=True, check=True).stdout
        names = [n for n in listed.split("\0") if n]
    except (OSError, subprocess.CalledProcessError):
        skip = {".venv", ".git", "build", "dist", "__pycache__"}
        names = [p.relative_to(REPO).as_posix() for p in REPO.rglob("*")
                 if p.is_file() and not skip & set(p.relative_to(REPO).parts)]
    return [Path(n) for n in names if (REPO / n).is_file()]


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("wheel")
    assert not folder.resolve().is_relative_to(REPO), "the work folder must be outside the checkout"
    return folder


@pytest.fixture(scope="module")
def dists(work) -> dict[str, Path]:
    """``python -m build`` on a copy of the checkout (the build writes its egg-info and build/
    folders there, not into the checkout), in a virtual environment of its own."""
    source = work / "source"
    files = _source_files()
    for name in files:
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, source / name)
    tools = work / "build-env"
    _run([sys.executable, "-m", "venv", tools], work, what="venv for the build")
    _run([tools / "bin" / "python", "-m", "pip", "install", "-q", "--disable-pip-version-check",
          "build"], work, what="pip install build")
    _run([tools / "bin" / "python", "-m", "build", "--outdir", work / "dist", source], work,
         what="python -m build (sdist, then the wheel from the sdist)")
    return {"sdist": work / "dist" / f"capkit-{VERSION}.tar.gz",
            "wheel": work / "dist" / f"capkit-{VERSION}-py3-none-any.whl",
            "tracked": [n.as_posix() for n in files if n.parts[0] == "capkit"]}


@pytest.fixture(scope="module")
def env(work, dists) -> dict[str, str]:
    """A fresh virtual environment with ``torch==2.13.0``, then the wheel (not editable), and
    the environment variables of a user's shell: none of the checkout's, a data and a cache
    folder of the test's own, no hub downloads."""
    venv = work / "venv"
    _run([sys.executable, "-m", "venv", venv], work, what="fresh venv")
    pip = [venv / "bin" / "python", "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    _run([*pip, TORCH], work, what=f"pip install {TORCH}")
    _run([*pip, dists["wheel"]], work, what="pip install the wheel (dependencies from PyPI)")
    environ = {k: v for k, v in os.environ.items()
               if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME") and
               not k.startswith("CAPKIT_")}
    environ.update(PATH=f"{venv / 'bin'}{os.pathsep}{environ.get('PATH', '')}",
                   VIRTUAL_ENV=str(venv), CAPKIT_DATA_DIR=str(work / "data"),
                   CAPKIT_CACHE_DIR=str(work / "cache"), CAPKIT_PROGRESS="0", HF_HUB_OFFLINE="1")
    return environ


@pytest.fixture(scope="module")
def home(work) -> Path:
    """The user's working folder: outside the checkout, so ``import capkit`` cannot find it."""
    folder = work / "home"
    folder.mkdir()
    return folder


@pytest.fixture(scope="module")
def mirror(request) -> Path:
    return MIRROR if MIRROR.is_dir() else request.getfixturevalue("shared_data")


@pytest.fixture(scope="module")
def fetched(env, home, mirror) -> str:
    return _run(["capkit", "data", "fetch", *DATASETS, "--mirror", mirror, "--data-dir",
                 env["CAPKIT_DATA_DIR"]], home, env, what="capkit data fetch").stdout


# ---- what is built ------------------------------------------------------------------------------

def test_build_gives_an_sdist_and_a_wheel_holding_all_of_capkit(dists):
    assert dists["sdist"].is_file() and dists["wheel"].is_file()
    with zipfile.ZipFile(dists["wheel"]) as wheel:
        names = set(wheel.namelist())
        entry_points = wheel.read(f"capkit-{VERSION}.dist-info/entry_points.txt").decode()
    missing = [n for n in dists["tracked"] if n not in names]
    assert not missing, ("files of capkit/ left out of the wheel: declare them in pyproject.toml's "
                         f"[tool.setuptools.package-data]: {missing}")
    assert "capkit/data/manifest.json" in names
    tops = {n.split("/")[0] for n in names}
    assert tops == {"capkit", f"capkit-{VERSION}.dist-info"}, tops
    assert re.search(r"^capkit = capkit\.cli:entry$", entry_points, flags=re.M)


def test_the_wheel_size_in_the_docs_is_the_built_one(dists):
    """docs/install.md states the wheel's size (nearly all of it the shipped checkpoints)."""
    size_mb = dists["wheel"].stat().st_size / 1e6
    with zipfile.ZipFile(dists["wheel"]) as wheel:
        weights = sum(i.compress_size for i in wheel.infolist()
                      if i.filename.startswith("capkit/models/weights/")) / 1e6
    print(f"\n[wheel test] wheel {size_mb:.1f} MB, of which {weights:.1f} MB checkpoints")
    text = (REPO / "docs" / "install.md").read_text()
    stated = re.search(r"The wheel is about (\d+) MB; the shipped checkpoints are (\d+) MB", text)
    assert stated, "docs/install.md: the sentence 'The wheel is about N MB; the shipped " \
        "checkpoints are M MB ...'"
    assert abs(int(stated[1]) - size_mb) <= 1 and abs(int(stated[2]) - weights) <= 1, \
        f"docs/install.md says {stated[0]!r}: the wheel is {size_mb:.1f} MB, {weights:.1f} MB " \
        "of it checkpoints; update the page"


# ---- what is installed --------------------------------------------------------------------------

def test_the_installed_capkit_is_the_wheel_and_knows_its_version(env, home):
    code = "import capkit, sys; print(capkit.__file__); print(capkit.__version__)"
    where, version = _run(["python", "-c", code], home, env, what="import capkit").stdout.split()
    assert Path(where).resolve().is_relative_to(Path(env["VIRTUAL_ENV"]).resolve()), where
    assert version == VERSION
    out = _run(["capkit", "--version"], home, env, what="capkit --version").stdout
    assert out == f"capkit {VERSION}\n"


def test_data_fetch_from_the_mirror(env, home, fetched):
    for name in DATASETS:
        assert re.search(rf"^{name}: fetched \d+ files", fetched, flags=re.M), fetched
    listing = _run(["capkit", "data", "list"], home, env, what="capkit data list").stdout
    rows = {line.split()[0]: line.split()[-1] for line in listing.splitlines()[2:]
            if line.strip() and not line.startswith(("data folder", "fetch with"))}
    assert sorted(n for n, done in rows.items() if done == "yes") == sorted(DATASETS)


def test_score_gives_the_checkouts_numbers(env, home, work):
    cands = [{"image_id": 1, "caption": "A dog runs on the grass."},
             {"image_id": 2, "caption": "Two cats sleep on a sofa."},
             {"image_id": 3, "caption": "A man rides a red bike."}]
    refs = {"annotations": [
        {"image_id": 1, "caption": "A dog is running across the grass."},
        {"image_id": 1, "caption": "A brown dog runs outside."},
        {"image_id": 2, "caption": "Two cats are sleeping on a couch."},
        {"image_id": 3, "caption": "A man riding a bicycle."},
        {"image_id": 3, "caption": "Someone on a red bike."}]}
    (home / "cands.json").write_text(json.dumps(cands))
    (home / "refs.json").write_text(json.dumps(refs))
    argv = ["score", "--candidates", "cands.json", "--references", "refs.json", "--metrics",
            METRICS, "--format", "json"]
    installed = json.loads(_run(["capkit", *argv], home, env, what="capkit score").stdout)
    checkout = json.loads(_run([sys.executable, "-m", "capkit", *argv], home,
                               _checkout_env(env), what="capkit score (checkout)").stdout)
    assert set(installed["metrics"]) == set(METRICS.split(","))
    assert installed == checkout


def test_bench_gives_the_checkouts_numbers(env, home, fetched):
    argv = ["bench", "--benchmarks", "thumb", "--metrics", "bleu_4,cider_d,meteor,i2ce",
            "--n-boot", "200", "--format", "json"]
    installed = json.loads(_run(["capkit", *argv], home, env, what="capkit bench").stdout)
    checkout = json.loads(_run([sys.executable, "-m", "capkit", *argv], home,
                               _checkout_env(env), what="capkit bench (checkout)").stdout)
    assert installed == checkout
    assert "thumb" in json.dumps(installed["protocols"])


def _checkout_env(env: dict[str, str]) -> dict[str, str]:
    """The same shell, running the checkout's capkit (this test's interpreter, the checkout on
    its path) with a cache folder of its own, for comparison."""
    other = dict(env, PYTHONPATH=str(REPO), CAPKIT_CACHE_DIR=env["CAPKIT_CACHE_DIR"] + "-checkout")
    other.pop("VIRTUAL_ENV")
    other["PATH"] = os.pathsep.join(other["PATH"].split(os.pathsep)[1:])
    return other
