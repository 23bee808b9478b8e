"""A candidate world-CLIP (the convolutional stem and object annotations: the backbone) against
the plain world-CLIP it replaced, on validation scenes only: the measurement that chose it.

    .venv/bin/python benchmarks/world_backbone_eval.py --backbone FOLDER --reference FOLDER \\
        [--out docs/measurements/world_backbone_val.json] [--n-boot 1000]

``--backbone`` is a folder written by ``capkit train world-clip``; ``--reference`` the plain
world-CLIP (8 x 8 patches, CLIP's loss with foils, no annotations), whose folder is in git:
``git archive 271a6a3010e9 capkit/models/weights/world_clip | tar -x -C DIR`` (its checkpoint
digest c187f0670392). Two measurements, both on scenes of
the world's ``val`` split that neither model chose anything on (``split_scenes("val")`` scenes
1,000 onwards; the training runs read scenes 0-499), and never on a benchmark's scenes
(World-FOIL, World-Expert, ... each have their own random stream, ``capkit.world.splits``):

- **foils**: for scenes 1,000-2,999, one (true caption, one-word foil) pair of each type the scene
  allows (colour, shape, count, relation; ``capkit.world.foils.foil_pair``); a model is right when
  the cosine of image and true caption (with CLIPScore's prompt) beats the foil's. Accuracy by
  type with a 95% bootstrap interval over scenes, and the paired difference backbone - world-CLIP
  (same pairs) with its interval and a one-sided bootstrap p-value;
- **probes**: ``benchmarks/world_probe.py``'s linear and MLP probes of each object's shape and
  colour from each layer's state at the object's patch (train scenes 0-2,999 to fit, val scenes
  1,000-1,599 to test), for every layer of both vision towers.

Writes one JSON record. Single-threaded; a few minutes.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
REPORT = (1000, 3000)          # val scenes for the foils
PROBE_TEST = (1000, 1600)      # val scenes for the probes' test objects


def foil_hits(model, tokenizer, images, texts) -> dict[str, np.ndarray]:
    """Per foil type: (scene index, hit) rows, one per pair."""
    import torch

    from capkit.training.world_clip import embed, pixels, tokens
    from capkit.world.foils import FOIL_TYPES
    rows: dict[str, list] = {t: [] for t in FOIL_TYPES}
    with torch.no_grad():
        img = torch.cat([embed(model, pixels(images[a:a + 250]))[0]
                         for a in range(0, len(images), 250)])
        for k, t in enumerate(texts):
            if not t["pairs"]:
                continue
            _, e = embed(model, None, tokens(tokenizer, [x for p in t["pairs"] for x in p]))
            s = (e @ img[k]).view(-1, 2)
            for kind, (good, bad) in zip(t["types"], s.tolist()):
                rows[kind].append((k, good > bad))
    return {k: np.array(v, dtype=np.int64).reshape(-1, 2) for k, v in rows.items()}


def _boot(hits_a, hits_b, n_scenes: int, n_boot: int, seed: int) -> dict:
    """Accuracy of a and b, the paired difference a - b, intervals by resampling scenes."""
    rng = np.random.default_rng(seed)
    scene = hits_a[:, 0]
    a, b = hits_a[:, 1].astype(float), hits_b[:, 1].astype(float)
    sums = [np.bincount(scene, w, n_scenes) for w in (a, b, np.ones_like(a))]
    draws = rng.integers(n_scenes, size=(n_boot, n_scenes))
    counts = np.stack([np.bincount(d, minlength=n_scenes) for d in draws])  # (n_boot, scenes)
    sa, sb, n = (counts @ x for x in sums)
    acc_a, acc_b = sa / n, sb / n
    ci = lambda x: [round(100 * float(v), 1) for v in np.percentile(x, [2.5, 97.5])]  # noqa
    return {"n": int(len(a)), "backbone": round(100 * a.mean(), 1), "backbone_ci": ci(acc_a),
            "world_clip": round(100 * b.mean(), 1), "world_clip_ci": ci(acc_b),
            "difference": round(100 * (a.mean() - b.mean()), 1), "difference_ci": ci(acc_a - acc_b),
            "p_one_sided": float(np.mean(acc_a - acc_b <= 0))}


def foils(backbone, clip, seed: int, n_boot: int) -> dict:
    from capkit.training.world_clip import scene_texts
    from capkit.world.foils import FOIL_TYPES
    from capkit.world.splits import split_scenes
    scenes = split_scenes("val", 3000, seed)[REPORT[0]:REPORT[1]]
    images = [np.asarray(s.render(64)) for s in scenes]
    texts = scene_texts(scenes, seed, offset=20_000_000 + REPORT[0])
    a = foil_hits(backbone[0], backbone[1], images, texts)
    b = foil_hits(clip.model, clip.tokenizer, images, texts)
    out = {t: _boot(a[t], b[t], len(scenes), n_boot, seed) for t in FOIL_TYPES}
    out["all"] = _boot(np.concatenate([a[t] for t in FOIL_TYPES]),
                       np.concatenate([b[t] for t in FOIL_TYPES]), len(scenes), n_boot, seed)
    return out


def layer_features(model, scenes, name: str) -> dict[str, np.ndarray]:
    """Each vision layer's state at each object's 8 x 8 patch, and the labels."""
    import torch

    from capkit.training.world_clip import pixels
    from capkit.world.scene import COLORS, SHAPES
    from world_probe import _patch_index
    rows: dict[str, list] = {"shape": [], "colour": []}
    for a in range(0, len(scenes), 200):
        part = scenes[a:a + 200]
        with torch.no_grad():
            hidden = model.vision_model(pixel_values=pixels([np.asarray(s.render(64))
                                                             for s in part]),
                                        output_hidden_states=True).hidden_states
        for b, scene in enumerate(part):
            for obj in scene.objects:
                k = 1 + _patch_index(obj)
                for layer, h in enumerate(hidden):
                    rows.setdefault(f"{name} layer {layer}", []).append(h[b, k].numpy())
                rows["shape"].append(SHAPES.index(obj.shape))
                rows["colour"].append(COLORS.index(obj.color))
    return {k: np.array(v) for k, v in rows.items()}


def probes(backbone, clip, seed: int) -> dict:
    from capkit.world.splits import split_scenes
    from world_probe import probe
    train_scenes = split_scenes("train", 3000, seed)
    test_scenes = split_scenes("val", 1600, seed)[PROBE_TEST[0]:PROBE_TEST[1]]
    out = {}
    for name, model in (("world-CLIP", clip.model), ("world-backbone", backbone[0])):
        tr, te = layer_features(model, train_scenes, name), layer_features(model, test_scenes, name)
        for key in [k for k in tr if k not in ("shape", "colour")]:
            out[key] = {f"{target} {kind}": round(100 * probe(tr[key], tr[target], te[key],
                                                             te[target], seed, h), 1)
                        for target in ("shape", "colour") for kind, h in (("linear", 0),
                                                                          ("MLP", 256))}
        out["objects"] = {"fit": int(len(tr["shape"])), "test": int(len(te["shape"]))}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backbone", required=True, help="folder of capkit train world-clip")
    parser.add_argument("--reference", required=True, help="the plain world-CLIP's folder")
    parser.add_argument("--out", default="docs/measurements/world_backbone_val.json")
    parser.add_argument("--n-boot", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-probes", action="store_true")
    args = parser.parse_args(argv)

    import torch

    from capkit.models.world_clip import checkpoint_sha256, load_world_clip, read_meta
    torch.set_num_threads(1)
    start = time.perf_counter()
    candidate, clip = load_world_clip(args.backbone), load_world_clip(args.reference)
    backbone = (candidate.model, candidate.tokenizer)
    recipe = read_meta(args.backbone)
    record = {"what": "world backbone vs plain world-CLIP on val scenes (never a benchmark's)",
              "backbone_sha256": checkpoint_sha256(args.backbone),
              "world_clip": clip.signature, "seed": args.seed, "n_boot": args.n_boot,
              "foil_scenes": f"split_scenes('val') {REPORT[0]}..{REPORT[1] - 1}",
              "probe_scenes": f"fit: split_scenes('train') 0..2999; test: split_scenes('val') "
                              f"{PROBE_TEST[0]}..{PROBE_TEST[1] - 1}",
              "recipe": {k: recipe.get(k) for k in ("command", "config", "schedule", "history")},
              "foils": foils(backbone, clip, args.seed, args.n_boot)}
    if not args.no_probes:
        record["probes"] = probes(backbone, clip, args.seed)
    record["seconds"] = round(time.perf_counter() - start, 1)
    Path(args.out).write_text(json.dumps(record, indent=1) + "\n")
    for kind, r in record["foils"].items():
        print(f"{kind:9s} n={r['n']:5d} backbone {r['backbone']:5.1f} {r['backbone_ci']}  "
              f"world-CLIP {r['world_clip']:5.1f} {r['world_clip_ci']}  diff "
              f"{r['difference']:+5.1f} {r['difference_ci']} p={r['p_one_sided']:.3f}")
    for key, r in record.get("probes", {}).items():
        print(f"{key:26s} {r}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
