"""The LEIC critic in capkit's captioned-image world: image + caption context, world systems as
machine captions, training scenes only from the ``train`` split.

    corpus = world_corpus(seed=0)                  # CriticCorpus with world-CLIP image features
    train_leic("leic", "small", corpus=corpus, model_config={"context": "both"})

is what ``capkit train leic --world`` runs. The pieces, all from ``capkit.world``:

* scenes: ``split_scenes("train", n_train)`` to train on and ``split_scenes("val", n_val)`` held
  out; the world benchmarks draw their scenes from other random streams (``capkit.world.splits``),
  so no benchmark scene is ever seen;
* human captions: ``describe(scene, n=5)``, five true references per scene, as COCO's five;
* machine captions: every rule-based system of ``capkit.world.captioners`` except ``correct``
  (whose captions are true, like the references), one caption per scene each: the world's
  "generators", each making one named kind of error;
* image feature: the image tower of the shipped world-CLIP (``capkit.models.world_clip``, trained
  on ``train``-split scenes too) on each scene's 64-pixel rendering: the paper's fixed, pooled
  image feature (ResNet-152 there).

Explained in notebooks/05_learned_critic.ipynb, section "System level and the world".
"""
from __future__ import annotations

import numpy as np

from capkit.training.leic_data import CriticCorpus

IMAGE_SIZE = 64


def world_image_features(scenes, encoder=None, image_size: int = IMAGE_SIZE) -> np.ndarray:
    """(N, F) world-CLIP image features of the scenes' renderings (the shipped model by
    default)."""
    from capkit.models.vision_language import encode_images
    from capkit.models.world_clip import load_world_clip
    encoder = encoder or load_world_clip()
    return encode_images(encoder, [s.render(image_size) for s in scenes]).astype(np.float32)


def world_corpus(seed: int = 0, n_train: int = 3000, n_val: int = 300,
                 encoder=None) -> CriticCorpus:
    """The world critic's corpus (see the module docstring); image keys ``<split>/<index>``."""
    from capkit.world import describe
    from capkit.world.captioners import SYSTEMS, run_system
    from capkit.world.splits import split_scenes
    if n_train < 2 or n_val < 1:
        raise ValueError(f"need at least 2 training scenes and 1 held-out scene, got "
                         f"n_train={n_train}, n_val={n_val}")
    parts, systems, features = {}, {}, {}
    for split, n in (("train", n_train), ("val", n_val)):
        scenes = split_scenes(split, n, seed)
        keys = [f"{split}/{i:05d}" for i in range(n)]
        offset = 0 if split == "train" else 500_000
        parts[split] = {k: describe(s, n=5, seed=seed * 1_000_003 + offset + i)
                        for i, (k, s) in enumerate(zip(keys, scenes))}
        made = {name: run_system(name, scenes, seed) for name in SYSTEMS if name != "correct"}
        for i, k in enumerate(keys):
            systems[k] = {name: checks[i].caption for name, checks in made.items()}
        features.update(zip(keys, world_image_features(scenes, encoder)))
    protocol = {"scenes": f"train split ({n_train}, seed {seed}); held out: val split ({n_val})",
                "human": "describe(scene, n=5): five true references",
                "systems": ", ".join(s for s in SYSTEMS if s != "correct"),
                "image": "world-CLIP image tower on 64-px renderings",
                "image_encoder": "world-clip"}
    return CriticCorpus(parts["train"], parts["val"], systems, protocol, features)
