"""Every capkit name the README and docs/usage.md show a user still imports (issue #11: public
names unchanged)."""
import importlib
import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
USAGE = (ROOT / "docs" / "usage.md").read_text(encoding="utf-8")
IMPORTS = sorted(set(re.findall(r"^\s*from (capkit[\w.]*) import ([\w, ]+)", README + "\n" + USAGE,
                                re.M)))
METRICS_ROW = next(line for line in USAGE.splitlines() if line.startswith("| `capkit.metrics`"))


@pytest.mark.parametrize("module, names", IMPORTS)
def test_readme_imports_work(module, names):
    mod = importlib.import_module(module)
    for name in (n.strip() for n in names.split(",")):
        assert hasattr(mod, name), f"README.md or docs/usage.md imports {name} from {module}: gone"


def test_readme_lists_imports_at_all():
    assert len(IMPORTS) >= 3      # the pattern above still finds the pages' examples


def test_metrics_named_in_the_module_table_are_public():
    import capkit.metrics as M
    names = {n for n in re.findall(r"`(\w+)`", METRICS_ROW) if not n.startswith("capkit")}
    # a name is a public function, or a module of the package: that one is an
    # attribute only once something imported it, so whether it exists is asked of the importer
    missing = sorted(n for n in names if not hasattr(M, n)
                     and importlib.util.find_spec(f"capkit.metrics.{n}") is None)
    assert not missing, f"capkit.metrics lacks {missing}, which docs/usage.md's module table names"
    # meteor and spice are subpackages too: the package attribute must be the function
    assert callable(M.meteor) and callable(M.spice) and callable(M.spice_lite)
