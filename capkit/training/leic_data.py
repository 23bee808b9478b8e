"""What the LEIC critic trains on: human captions by image, machine captions, fake candidates.

``critic_corpus(seed, fold)`` takes the images ``capkit.training.corpus`` allows (every benchmark
image and every image with a caption equal to a benchmark text removed; see that module) and
keeps them by image:

* Flickr8k: the official train split is always trained on; its dev split is held out;
* COCO Karpathy test (the images no benchmark uses): split in two folds by image (seeded);
  ``fold=0`` trains on the first half and holds out the second, ``fold=1`` the reverse,
  ``fold=None`` trains on both. The folds borrow the paper's two-fold split (section 3.5), not its
  whole protocol: the paper trains a critic per captioning system on one fold and scores the
  other, then swaps; capkit ships one critic per variant, trained on fold 0 with all 9 systems'
  captions, and scores every benchmark with it (notebook 05 says so where it reports system
  level);
* machine captions: the 9 COCO Karpathy-test systems' captions of those COCO images (a caption
  equal to a benchmark text is dropped), the paper's "generator" negatives.

``Negatives`` draws the fake candidate of a training pair as the authors' ``train()`` does: a
kind uniformly among the enabled ones (a system's caption of this image; a Monte Carlo sample;
or a pathological transform: RC, WP or RW with equal odds), with the code's word counts (RW/WP change n words,
n uniform in [min(2, L - 1), L - 1], L the caption's length) and capkit.transforms' word-level
kernels (``permute_words``: the chosen words move along one cycle; ``replace_words``: each
chosen word becomes another vocabulary word). RC takes a human caption of another random
training image (uniform, as the code; the robustness study's RC picks near neighbours instead).
The Monte Carlo negatives ("MC") are samples of a caption language model fitted to the training
captions (``capkit.models.caption_lm``), drawn uniformly from a seeded pool; the authors sampled
theirs from their captioner, per image, and did not release them.
Tested in tests/test_leic.py; explained in notebooks/05_learned_critic.ipynb, "Training data".
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

SALT_FOLD = 1305           # seeds the two-fold split of the COCO images with the user's seed
PATHOLOGICAL = ("RC", "WP", "RW")
KINDS = ("system", "MC") + PATHOLOGICAL


@dataclass(frozen=True)
class CriticCorpus:
    """Human captions by image key ("flickr8k:<file>" / "coco:<id>") and machine captions."""
    train: dict[str, list[str]]                    # image -> human captions
    val: dict[str, list[str]]
    systems: dict[str, dict[str, str]]             # image -> system -> caption (COCO only)
    protocol: dict[str, str] = field(default_factory=dict)
    features: dict[str, np.ndarray] | None = None  # image -> feature (image-context critics)

    def summary(self) -> str:
        def count(part):
            from collections import Counter
            by = Counter(k.partition(":")[0] if ":" in k else "world" for k in part)
            return f"{len(part):,} images ({', '.join(f'{n:,} {s}' for s, n in by.items())})"
        n_sys = sum(len(v) for v in self.systems.values())
        return (f"train {count(self.train)}; held out {count(self.val)}; "
                f"machine captions {n_sys:,} ({len({s for v in self.systems.values() for s in v})}"
                " systems)")


def critic_corpus(seed: int = 0, fold: int | None = 0) -> CriticCorpus:
    """The leakage-free corpus of the critic (see the module docstring)."""
    from capkit.data import load
    from capkit.data.flickr8k import read_captions
    from capkit.data.paths import require
    from capkit.training.corpus import benchmark_texts, normalise, training_corpus
    if fold not in (0, 1, None):
        raise ValueError(f"fold is 0 or 1 (which half of the COCO images to train on) or None "
                         f"(both), got {fold!r}")
    base = training_corpus(seed)
    flickr = read_captions(require("flickr8k"))
    coco = load("coco_karpathy_test")
    f_train = {f"flickr8k:{i}": list(flickr[i].values()) for i in base.images["stage1"]["train"]}
    f_val = {f"flickr8k:{i}": list(flickr[i].values()) for i in base.images["stage1"]["val"]}
    keys = sorted(base.images["stage2"]["train"] + base.images["stage2"]["val"], key=int)
    order = np.random.default_rng([int(seed), SALT_FOLD]).permutation(len(keys))
    halves = [sorted((keys[i] for i in order[:len(keys) // 2]), key=int),
              sorted((keys[i] for i in order[len(keys) // 2:]), key=int)]
    c_train = halves[0] + halves[1] if fold is None else halves[fold]
    c_val = [] if fold is None else halves[1 - fold]
    texts = benchmark_texts()
    systems = {}
    for k in c_train + c_val:
        caps = {s: coco.systems[s][k] for s in coco.systems
                if k in coco.systems[s] and normalise(coco.systems[s][k]) not in texts}
        if caps:
            systems[f"coco:{k}"] = caps
    train = {**f_train, **{f"coco:{k}": list(coco.references[k]) for k in c_train}}
    val = {**f_val, **{f"coco:{k}": list(coco.references[k]) for k in c_val}}
    protocol = {"flickr8k": "official train split trained on, dev split held out",
                "coco": ("Karpathy-test images outside every benchmark, two folds by image "
                         f"(seed {seed}); trained on {'both' if fold is None else f'fold {fold}'}"),
                "systems": ", ".join(coco.systems),
                "removed": base.protocol["removed"]}
    return CriticCorpus(train, val, systems, protocol)


class Negatives:
    """Fake candidates as word-id lists (see the module docstring)."""

    def __init__(self, human: list[list[list[int]]], systems: list[list[list[int]]],
                 vocab_size: int, kinds: tuple[str, ...], max_words: int,
                 monte_carlo: list[list[int]] | None = None):
        unknown = set(kinds) - set(KINDS)
        if unknown or not kinds:
            raise ValueError(f"negative kinds must be a non-empty subset of {KINDS}, got {kinds}")
        if ("MC" in kinds) != bool(monte_carlo):
            raise ValueError("Monte Carlo negatives (kind MC) need a non-empty monte_carlo pool, "
                             "and a pool needs the kind MC")
        from capkit.models.i2ce_vocab import SPECIALS
        self.human, self.systems, self.kinds = human, systems, tuple(kinds)
        self.monte_carlo = monte_carlo or []
        self.words = list(range(len(SPECIALS), vocab_size))   # the code: ids in [4, V)
        self.index = {w: i for i, w in enumerate(self.words)}
        self.max_words = max_words

    def groups(self, image: int) -> list[str]:
        """The kinds this image can draw: "system" if it has machine captions; "MC"; "path"."""
        out = ["system"] if "system" in self.kinds and self.systems[image] else []
        out += ["MC"] if "MC" in self.kinds else []
        return out + (["path"] if set(self.kinds) & set(PATHOLOGICAL) else [])

    def usable(self, image: int) -> bool:
        return bool(self.groups(image)) and len(self.human[image]) >= 2

    def draw(self, image: int, ref: list[int], rng: np.random.Generator) -> tuple[str, list[int]]:
        """(kind, word ids) of one fake candidate for ``image`` whose human caption is ``ref``."""
        group = self.groups(image)[rng.integers(len(self.groups(image)))]
        if group == "system":
            caps = self.systems[image]
            return "system", caps[rng.integers(len(caps))]
        if group == "MC":
            return "MC", self.monte_carlo[rng.integers(len(self.monte_carlo))]
        kinds = [k for k in PATHOLOGICAL if k in self.kinds]
        return self.pathological(kinds[rng.integers(len(kinds))], image, ref, rng)

    def pathological(self, kind: str, image: int, ref: list[int], rng: np.random.Generator):
        from capkit.transforms.permutation import permute_words
        from capkit.transforms.random_words import replace_words
        words = list(ref[:self.max_words])
        if kind == "RC" or len(words) < 3:           # too short to permute or replace 2 words
            other = (image + 1 + rng.integers(len(self.human) - 1)) % len(self.human)
            caps = self.human[other]
            return "RC", caps[rng.integers(len(caps))]
        n = int(rng.integers(min(2, len(words) - 1), len(words)))     # the code's word count
        if kind == "WP":
            return "WP", permute_words(words, n, rng)
        return "RW", replace_words(words, n, self.words, self.index, rng)
