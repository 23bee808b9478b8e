"""Figures in the docs come from recorded benchmark runs (docs/measurements/*.json): a table
rendered from its record must stand in its page as rendered, so a page and its record never
disagree."""
import json
from pathlib import Path

from capkit.meta_eval.results import record_tables
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


def test_the_human_judgment_tables_are_their_record():
    """docs/benchmarks.md holds the tables rendered from one full `capkit bench --record` run,
    as rendered, and the README's excerpt of that command's output shows the same values."""
    from capkit.meta_eval import ALL
    record = json.loads((DOCS / "measurements" / "bench.json").read_text())
    assert record["command"].startswith("capkit bench ")
    assert {"date", "machine", "versions", "wall_seconds", "results"} <= record.keys()
    assert set(record["results"]["results"]) == set(ALL), "the record must cover every benchmark"
    page = (DOCS / "benchmarks.md").read_text()
    assert record_tables(record) in page, ("docs/benchmarks.md differs from "
                                           "docs/measurements/bench.json: paste the output of "
                                           "`python tests/test_docs_records.py`")
    assert f"{record['wall_seconds']:.0f} s" in page and record["date"][:10] in page
    readme = (DOCS.parent / "README.md").read_text()
    excerpt = [line.split() for line in readme.splitlines() if line.startswith("flickr8k_expert")]
    assert excerpt, "the README's excerpt of `capkit bench` is gone"
    for benchmark, metric, _, n, value, low, high, *_ in excerpt:
        cell = record["results"]["results"][benchmark][metric]
        assert (int(n), value, f"{low} {high}") == (cell["n"], f"{cell['value']:.1f}",
                                                     f"[{cell['ci95'][0]:.1f}, "
                                                     f"{cell['ci95'][1]:.1f}]"), metric


def test_the_leic_agreement_tables_are_their_record():
    """docs/learned_metrics.md's LEIC tables on the human-judgment benchmarks (real data) are
    those rendered from their `capkit bench --record` run, paired tests against CIDEr-D included."""
    from capkit.meta_eval import ALL
    record = json.loads((DOCS / "measurements" / "bench_leic.json").read_text())
    assert record["command"].startswith("capkit bench --metrics leic,leic_mc,leic_no_da ")
    assert set(record["results"]["results"]) == set(ALL)
    assert {c["against"] for c in record["results"]["comparisons"]} == {"cider_d"}
    page = (DOCS / "learned_metrics.md").read_text()
    assert record_tables(record, parts=("thumb",)) in page, (
        "docs/learned_metrics.md differs from docs/measurements/bench_leic.json: paste the "
        "output of `python tests/test_docs_records.py`")
    assert record["command"] in page


def test_the_leic_heads_tables_are_their_record():
    """docs/learned_metrics.md's heads-and-fake-sets table and its table of what the critics
    learned (real data) are those benchmarks/leic_heads.py renders from its record, and the
    record's training commands and P(human) are those of the shipped checkpoints."""
    import importlib.util

    from capkit.meta_eval import ALL
    from capkit.models.leic_critic import shipped_path
    path = DOCS.parent / "benchmarks" / "leic_heads.py"
    spec = importlib.util.spec_from_file_location("leic_heads", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    record = json.loads((DOCS / "measurements" / "leic_heads.json").read_text())
    assert set(record["results"]) == set(ALL)
    page = (DOCS / "learned_metrics.md").read_text()
    tables = module.render(record).split("\n\n")
    assert len(tables) == 2
    missing = [table.splitlines()[0] for table in tables if table not in page]
    assert not missing, (
        f"docs/learned_metrics.md differs from docs/measurements/leic_heads.json ({missing}): "
        "paste the output of `python benchmarks/leic_heads.py --render`")
    for name in record["training"]:
        if name != "rc_both":                      # trained for the run, not shipped
            assert record["training"][name] == module._training(shipped_path(name)), name


if __name__ == "__main__":
    for name, parts in (("bench.json", True), ("bench_leic.json", ("thumb",))):
        print(f"{name}:\n")
        print(record_tables(json.loads((DOCS / "measurements" / name).read_text()), parts), "\n")
