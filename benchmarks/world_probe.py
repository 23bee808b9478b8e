"""What the world models' image states hold: linear probes of each object's shape and colour.

    .venv/bin/python benchmarks/world_probe.py [--train 3000] [--test 600] [--seed 0]

For every object of ``--train`` scenes of the world's train split, a linear classifier
(multinomial logistic regression, standardised features, full-batch Adam, 300 steps) learns the object's
shape (5 classes) and colour (6) from one feature vector; accuracy on the objects of ``--test``
scenes of the val split; and the same with one hidden layer of 256 ReLU units (MLP).
Features:

- raw pixels of the 8 x 8 patch under the object's centre (the patch world-CLIP and world-ViLT
  embed it in), of the 3 x 3 patches around it, and of a 16 x 16 window centred on the object
  (what a detector would crop);
- world-CLIP's vision tower at that patch: its patch embedding (layer 0) and its last layer;
- world-ViLT's image state at that patch after its last layer (caption "there is a shape",
  which names no shape or colour);
- both last layers' states of the 3 x 3 patches around that patch, concatenated (so a shape
  spread over neighbouring patches is not missed).

Why: UMIC and ViLBERTScore in the world see colours but not shapes (docs/learned_metrics.md).
These probes say where shape information is lost. Single-threaded; about five minutes.
"""
from __future__ import annotations

import argparse

import numpy as np

NEUTRAL = "there is a shape"


def _patch_index(obj, grid: int = 8) -> int:
    return min(int(obj.y * grid), grid - 1) * grid + min(int(obj.x * grid), grid - 1)


def features(scenes, size: int = 64, batch: int = 200) -> dict[str, np.ndarray]:
    """One row per object of ``scenes`` for every feature above, plus the labels."""
    import torch

    from capkit.models.world_clip import load_world_clip
    from capkit.models.world_vilt import load_world_vilt
    from capkit.world.scene import COLORS, SHAPES
    clip, vilt = load_world_clip(), load_world_vilt()
    rows: dict[str, list] = {k: [] for k in ("pixels 8x8 patch", "pixels 3x3 patches",
                                             "pixels 16x16 centred",
                                             "world-CLIP patch embedding",
                                             "world-CLIP last layer", "world-ViLT last layer",
                                             "world-CLIP last layer 3x3", "world-ViLT last layer 3x3",
                                             "shape", "colour")}
    for a in range(0, len(scenes), batch):
        part = scenes[a:a + batch]
        images = [s.render(size) for s in part]
        with torch.no_grad():
            px = torch.from_numpy(clip.preprocess.batch(images)[0])   # CLIP's normalisation
            hidden = clip.model.vision_model(pixel_values=px, output_hidden_states=True)
            first, last = hidden.hidden_states[0], hidden.hidden_states[-1]
            text = vilt.encode_text([NEUTRAL] * len(part))
            out = vilt.forward(text, vilt.pixels(images), hidden=True)
            joint = out.hidden_states[-1][:, text["input_ids"].shape[1]:]   # [CLS] + patches
        for b, (scene, image) in enumerate(zip(part, images)):
            pixels = np.asarray(image, dtype=np.float32) / 255
            padded = np.pad(pixels, ((8, 8), (8, 8), (0, 0)))
            for obj in scene.objects:
                k = _patch_index(obj)
                r, c = divmod(k, 8)
                cx, cy = int(round(obj.x * size)) + 8, int(round(obj.y * size)) + 8
                rows["pixels 8x8 patch"].append(pixels[8 * r:8 * r + 8, 8 * c:8 * c + 8].ravel())
                grid = np.pad(pixels, ((8, 8), (8, 8), (0, 0)))[8 * r:8 * r + 24, 8 * c:8 * c + 24]
                rows["pixels 3x3 patches"].append(grid.ravel())
                rows["pixels 16x16 centred"].append(padded[cy - 8:cy + 8, cx - 8:cx + 8].ravel())
                rows["world-CLIP patch embedding"].append(first[b, 1 + k].numpy())
                rows["world-CLIP last layer"].append(last[b, 1 + k].numpy())
                rows["world-ViLT last layer"].append(joint[b, 1 + k].numpy())
                around = [1 + 8 * min(max(r + i, 0), 7) + min(max(c + j, 0), 7)
                          for i in (-1, 0, 1) for j in (-1, 0, 1)]
                rows["world-CLIP last layer 3x3"].append(last[b, around].numpy().ravel())
                rows["world-ViLT last layer 3x3"].append(joint[b, around].numpy().ravel())
                rows["shape"].append(SHAPES.index(obj.shape))
                rows["colour"].append(COLORS.index(obj.color))
    return {k: np.array(v) for k, v in rows.items()}


def probe(x_train, y_train, x_test, y_test, seed: int, hidden: int = 0, steps: int = 300) -> float:
    """Test accuracy of a softmax classifier fitted on standardised ``x_train``: linear, or with
    one ReLU layer of ``hidden`` units."""
    import torch
    from torch import nn
    torch.manual_seed(seed)
    mu, sd = x_train.mean(0), x_train.std(0) + 1e-6
    xt = torch.tensor((x_train - mu) / sd, dtype=torch.float32)
    yt = torch.tensor(y_train)
    k = int(y_train.max()) + 1
    head = (nn.Sequential(nn.Linear(xt.shape[1], hidden), nn.ReLU(), nn.Linear(hidden, k))
            if hidden else nn.Linear(xt.shape[1], k))
    opt = torch.optim.Adam(head.parameters(), lr=1e-2)
    for _ in range(steps):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(head(xt), yt).backward()
        opt.step()
    with torch.no_grad():
        pred = head(torch.tensor((x_test - mu) / sd, dtype=torch.float32)).argmax(1).numpy()
    return float((pred == y_test).mean())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--train", type=int, default=3000, help="train-split scenes")
    parser.add_argument("--test", type=int, default=600, help="val-split scenes")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    import torch

    from capkit.world.splits import split_scenes
    torch.set_num_threads(1)
    train = features(split_scenes("train", args.train, args.seed))
    test = features(split_scenes("val", args.test, args.seed))
    print(f"{len(train['shape']):,} objects to fit, {len(test['shape']):,} to test "
          f"(seed {args.seed}); accuracy x 100")
    for target in ("shape", "colour"):
        counts = np.bincount(test[target])
        print(f"\n{target}: {len(counts)} classes, majority class "
              f"{100 * counts.max() / counts.sum():.1f}\n  {'features':28s} linear  MLP-256")
        for name in [k for k in train if k not in ("shape", "colour")]:
            accs = [probe(train[name], train[target], test[name], test[target], args.seed, h)
                    for h in (0, 256)]
            print(f"  {name:28s} {100 * accs[0]:6.1f}  {100 * accs[1]:7.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
