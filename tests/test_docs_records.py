"""Figures in the docs come from recorded benchmark runs (docs/measurements/*.json): a table
rendered from its record must stand in its page as rendered, so a page and its record never
disagree."""
import json
from pathlib import Path

import pytest

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



WORLD_RECORDS = {"world_bench.json": ("world_foil",), "world_umic_claim.json": False,
                 "world_vilbertscore_claim.json": ("world_foil",)}


@pytest.mark.parametrize("name", WORLD_RECORDS)
def test_the_world_benchmark_tables_are_their_records(name):
    """docs/learned_metrics.md's world tables (World-Expert, World-FOIL by foil type,
    World-Systems and the papers' two paired claims) are those rendered from their runs, made
    with the shipped world checkpoints (the signatures in the record name them)."""
    from capkit.models import world_clip, world_vilt
    record = json.loads((DOCS / "measurements" / name).read_text())
    page = (DOCS / "learned_metrics.md").read_text()
    assert record_tables(record, WORLD_RECORDS[name]) in page, (
        f"docs/learned_metrics.md differs from docs/measurements/{name}: paste the output of "
        "`python tests/test_docs_records.py`")
    assert record["command"] in page
    shipped = {f"world-clip@{world_clip.checkpoint_sha256(world_clip.SHIPPED)[:12]}",
               f"world-vilt@{world_vilt.checkpoint_sha256(world_vilt.SHIPPED)[:12]}",
               f"umic-world@{world_vilt.checkpoint_sha256(world_vilt.WEIGHTS_DIR / 'umic_world')[:12]}"}
    models = {part.split("~")[0][len("model:"):]
              for bench in record["results"]["results"].values() for cell in bench.values()
              for part in cell["signature"].split("|") if part.startswith("model:")}
    world = {m for m in models if m.startswith(("world-", "umic-"))}
    assert world and world <= shipped, f"{name} was made with other checkpoints: {world - shipped}"


def test_the_world_vilt_choice_table_is_its_record():
    """The pre-training recipe was chosen on validation foils by the rule written in the script;
    the page shows the record's table, and the shipped world-ViLT is the chosen variant."""
    import importlib.util

    from capkit.models import world_vilt
    path = DOCS.parent / "benchmarks" / "world_vilt_choice.py"
    spec = importlib.util.spec_from_file_location("world_vilt_choice", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    record = json.loads((DOCS / "measurements" / "world_vilt_choice.json").read_text())
    assert record["rule"] == module.RULE
    names = list(record["variants"])
    best = max(names, key=lambda n: record["variants"][n]["criterion"])
    gap = record["variants"][best]["criterion"] - record["variants"][names[0]]["criterion"]
    assert record["chosen"] == (best if gap >= 1 else names[0])
    assert module.render(record) in (DOCS / "learned_metrics.md").read_text()
    chosen = record["variants"][record["chosen"]]
    assert chosen["folder_sha256"] == world_vilt.checkpoint_sha256(world_vilt.SHIPPED)


if __name__ == "__main__":
    for name, parts in (("bench.json", True), ("bench_leic.json", ("thumb",)),
                        *WORLD_RECORDS.items()):
        print(f"{name}:\n")
        print(record_tables(json.loads((DOCS / "measurements" / name).read_text()), parts), "\n")
