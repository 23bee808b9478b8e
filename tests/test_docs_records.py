"""Figures in the docs come from recorded benchmark runs (docs/measurements/*.json): a table
rendered from its record must stand in its page as rendered, so a page and its record never
disagree."""
import json
from pathlib import Path

from capkit.speed import speed_table

DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_the_speed_page_shows_its_record():
    record = json.loads((DOCS / "measurements" / "bench_speed.json").read_text())
    assert record["command"].startswith("capkit bench-speed --whole-process")
    assert {"date", "machine", "versions", "results"} <= record.keys()
    assert speed_table(record) in (DOCS / "speed.md").read_text()
    ratio = record["results"]["whole_process"]["ratio"]
    readme = (DOCS.parent / "README.md").read_text()
    assert f"**{ratio:.1f}x**" in readme and "docs/measurements/bench_speed.json" in readme


def test_the_sugarcrepe_tables_are_their_record():
    import importlib.util
    path = DOCS.parent / "benchmarks" / "sugarcrepe_run.py"
    spec = importlib.util.spec_from_file_location("sugarcrepe_run", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    record = json.loads((DOCS / "measurements" / "sugarcrepe.json").read_text())
    tables = module.render(record)
    page = (DOCS / "benchmarks.md").read_text()
    rows = [line for line in tables.splitlines() if line.startswith("| ")]
    assert len(rows) >= 12
    missing = [line for line in rows if line not in page]
    assert not missing, f"docs/benchmarks.md differs from its record: {missing[:3]}"
