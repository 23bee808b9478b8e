"""Which world-ViLT to ship: pre-training variants compared on validation foils only.

    .venv/bin/python benchmarks/world_vilt_choice.py NAME=FOLDER [NAME=FOLDER ...] \\
        [--out docs/measurements/world_vilt_choice.json] [--n-boot 1000]

Each ``FOLDER`` is written by ``capkit train world-vilt`` (e.g. ``--replace-pool same-tag`` and
``--replace-pool same-tag+relation``). Every number comes from ``world_foil_val`` (World-FOIL's
construction on validation scenes, ``capkit.meta_eval.protocols.VALIDATION``), never from a
world test benchmark. Per variant: UMIC-C (the matching head UMIC starts from) and ViLBERTScore
at every layer, with the image and with it masked, by foil type; the paired bootstrap of the
image against the mask at each layer.

The rule, fixed before any variant was scored: ship the variant with the higher mean of UMIC-C's
accuracy and ViLBERTScore's (default layer, with the image); a difference under 1 point keeps
the first variant named (the recipe already shipped). Writes one JSON record.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

RULE = ("the higher mean of UMIC-C's and ViLBERTScore's (default layer, with the image) "
        "world_foil_val accuracy; under 1 point apart, the first variant named")


def specs(name: str, folder: str, layers: int) -> list:
    from capkit.metrics.registry import MetricSpec
    out = [MetricSpec(f"{name}/umic_c", "capkit.metrics.umic:umic_c", {"model": folder},
                      images=True, score_range=(0.0, 1.0))]
    for k in range(1, layers + 1):
        for image in (True, False):
            out.append(MetricSpec(f"{name}/vilbertscore_l{k}_{'image' if image else 'masked'}",
                                  "capkit.metrics.vilbertscore:vilbertscore",
                                  {"model": folder, "layer": k, "with_image": image},
                                  images=True, score_range=(-1.0, 1.0)))
    return out


def render(record: dict) -> str:
    """The Markdown table of a record: per variant, UMIC-C and ViLBERTScore (each layer, with the
    image and masked) on world_foil_val by foil type, the image's paired gain, and the rule's
    criterion; docs/learned_metrics.md shows it (tests/test_docs_records.py checks it)."""
    types = ("color", "shape", "count", "relation")
    lines = ["| variant | metric | all | " + " | ".join(types) + " | image - masked |",
             "|---|---|---|" + "---|" * len(types) + "---|"]
    for name, row in record["variants"].items():
        for metric, s in row["scores"].items():
            gain = ""
            if metric.endswith("_image"):
                g = row["image_vs_masked"][f"layer {metric.split('_l')[1].split('_')[0]}"]
                gain = (f"{g['difference']:+.1f} [{g['ci'][0]:+.1f}, {g['ci'][1]:+.1f}], "
                        f"p = {g['p_one_sided']:.3f}")
            lines.append(f"| {name} | {metric} | {s['value']:.1f} | "
                         + " | ".join(f"{s['categories'][k]:.1f}" for k in types)
                         + f" | {gain} |")
    lines += ["", "| variant | criterion | chosen |", "|---|---|---|"]
    lines += [f"| {name} | {row['criterion']:.2f} | {'yes' if name == record['chosen'] else ''} |"
              for name, row in record["variants"].items()]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("variants", nargs="+", help="NAME=FOLDER, the shipped recipe first")
    parser.add_argument("--out", default="docs/measurements/world_vilt_choice.json")
    parser.add_argument("--n-boot", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    import torch

    from capkit.meta_eval import benchmark
    from capkit.models.world_vilt import checkpoint_sha256, read_meta
    torch.set_num_threads(1)
    start = time.perf_counter()
    variants = dict(v.split("=", 1) for v in args.variants)
    record = {"what": "world-ViLT pre-training variants on world_foil_val (validation scenes)",
              "rule": RULE, "n_boot": args.n_boot, "seed": args.seed, "variants": {}}
    for name, folder in variants.items():
        meta = read_meta(folder)
        layers = int(meta["config"]["layers"])
        all_specs = specs(name, folder, layers)
        row = {"folder_sha256": checkpoint_sha256(folder), "command": meta["command"],
               "held_out_foils": {k: v for k, v in meta["history"][-1].items()
                                  if k.startswith("foil_")},
               "default_layer": layers, "scores": {}, "image_vs_masked": {}}
        runs = [(all_specs[:1], None)] + [(all_specs[1 + 2 * k:3 + 2 * k], all_specs[2 + 2 * k].name)
                                          for k in range(layers)]
        for k, (group, against) in enumerate(runs):
            res = benchmark(group, ["world_foil_val"], n_boot=args.n_boot, seed=args.seed,
                            against=against, progress=False)
            for metric, r in res["world_foil_val"].items():
                row["scores"][metric.split("/", 1)[1]] = {
                    "value": round(r.value, 2), "ci": [round(r.ci95[0], 2), round(r.ci95[1], 2)],
                    "categories": {c: round(v, 1) for c, v in r.categories.items()}}
            if against is not None:
                c = res.comparisons["world_foil_val", group[0].name, against]
                row["image_vs_masked"][f"layer {k}"] = {
                    "difference": round(c.difference, 2), "ci": [round(c.low, 2), round(c.high, 2)],
                    "p_one_sided": round(c.p_value, 4)}
        s = row["scores"]
        row["criterion"] = round((s["umic_c"]["value"]
                                  + s[f"vilbertscore_l{layers}_image"]["value"]) / 2, 2)
        record["variants"][name] = row
        print(f"{name}: criterion {row['criterion']:.2f}; " + "; ".join(
            f"{m} {v['value']:.1f} {v['categories']}" for m, v in s.items()))
        print(f"{name}: image - masked {row['image_vs_masked']}")
    names = list(record["variants"])
    best = max(names, key=lambda n: record["variants"][n]["criterion"])
    if record["variants"][best]["criterion"] - record["variants"][names[0]]["criterion"] < 1:
        best = names[0]
    record["chosen"] = best
    record["seconds"] = round(time.perf_counter() - start, 1)
    Path(args.out).write_text(json.dumps(record, indent=1) + "\n")
    print(f"chosen: {best} ({RULE})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
