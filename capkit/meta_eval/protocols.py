"""The benchmarks and their exact protocols (docs/benchmarks.md): the seven human-judgment sets,
the world's three, and SugarCrepe's hard negatives with 4 and with 1 reference.

A ``Protocol`` names the loader and its options (the literature's row and reference rules, spelled
out even where they are the loader's defaults), the statistic, and the expected number of rows, so
``benchmark()`` can say exactly what a number means. To try a variant, copy an entry:

>>> import dataclasses
>>> keep = dataclasses.replace(PROTOCOLS["composite"], name="composite_keep_rated",
...                            options={"remove_rated_from_refs": False}, n_rows=11985)
"""
from __future__ import annotations

from dataclasses import dataclass, field

STATISTICS = ("kendall_tau_b", "kendall_tau_c", "pairwise_accuracy", "system_kendall_tau_b",
              "system_pearson")
PAIR_SCORING = ("joint", "systems")


@dataclass(frozen=True)
class Protocol:
    name: str                           # benchmark name (results key)
    loader: str                         # capkit.data.load name
    options: dict = field(default_factory=dict)   # loader options: the protocol's rules
    statistic: str = "kendall_tau_c"    # kendall_tau_b | kendall_tau_c | pairwise_accuracy
    #                                     | system_kendall_tau_b | system_pearson (per "system")
    n_rows: int = 0                     # rows the statistic is computed over (ratings or pairs)
    rows: str = ""                      # what one row is
    references: str = ""                # which references each candidate is scored against
    target: str = ""                    # the human judgment
    description: str = ""               # one line for tables and plots
    categories: tuple[str, ...] = ()    # pairwise benchmarks: accuracy per category, value = mean
    ties: str = "half"                  # pairwise benchmarks: how a metric tie counts
    system_level: bool = False          # also correlate per-system means (THumB)
    human_system: str | None = None     # system level is also given without this system
    by: str | None = None               # item_extra field to break the statistic down by
    average: str = "categories"         # pairwise: value = mean of the categories, or of "pairs"
    # pairwise: "joint" scores a and b captions in one call; "systems" scores the a captions and
    # the b captions as two systems against the same references (pycocoevalcap's corpus
    # statistics, e.g. CIDEr-D's document frequencies, from those references once per pair)
    pair_scoring: str = "joint"
    group: str | None = None            # a name that runs this protocol with its siblings
    images_hint: str = ""               # which images an image metric needs, for the skip note

    def __post_init__(self):
        if self.statistic not in STATISTICS:
            raise ValueError(f"statistic {self.statistic!r} of protocol {self.name!r} is not one "
                             f"of {STATISTICS}")
        if self.pair_scoring not in PAIR_SCORING:
            raise ValueError(f"pair_scoring {self.pair_scoring!r} of protocol {self.name!r} is "
                             f"not one of {PAIR_SCORING}")

    def to_dict(self) -> dict:
        """Every rule as JSON-ready values (what ``results.json`` records beside the numbers)."""
        import dataclasses
        return dataclasses.asdict(self)


_ENTRIES = [
    Protocol(
        name="flickr8k_expert", loader="flickr8k_expert", options={"drop_self": True},
        statistic="kendall_tau_c", n_rows=16992,
        rows=("5,822 (image, candidate) rows minus the 158 whose candidate is one of the judged "
              "image's own captions = 5,664 pairs x 3 expert scores, not averaged"),
        references="the 5 captions of the judged image",
        target="expert score 1-4",
        description="Flickr8k-Expert: Kendall tau-c over 16,992 expert ratings"),
    Protocol(
        name="flickr8k_cf", loader="flickr8k_cf", options={"remove_judged_from_refs": True},
        statistic="kendall_tau_b", n_rows=47830,
        rows="all 47,830 (image, candidate) rows",
        references=("the image's 5 captions minus every caption of that image that is itself a "
                    "judged candidate (removed from the image's whole reference list)"),
        target="fraction of 'yes' votes",
        description="Flickr8k-CF: Kendall tau-b over 47,830 crowd ratings"),
    Protocol(
        name="composite", loader="composite", options={"remove_rated_from_refs": True},
        statistic="kendall_tau_c", n_rows=11985,
        rows="11,985 candidates (997 Flickr8k + 991 Flickr30k + 2,007 COCO images x 3), pooled",
        references=("dataset captions of the image with the rated human caption removed "
                    "(candidate_in_refs)"),
        target="correctness 1-5",
        description="Composite: Kendall tau-c over 11,985 correctness ratings",
        by="subset"),
    Protocol(
        name="pascal50s", loader="pascal50s", options={},
        statistic="pairwise_accuracy", n_rows=4000,
        rows="4,000 caption pairs, 1,000 each HC / HI / HM / MM",
        references="5 references per pair (refs5, the fixed draw of PAC-S / Polos / FLEUR)",
        target="which of the two candidates people prefer (label_consensus)",
        description="PASCAL-50S: pairwise accuracy, mean of HC / HI / HM / MM",
        categories=("HC", "HI", "HM", "MM"), ties="half"),
    Protocol(
        name="thumb", loader="thumb", options={"include_human": True, "references": "thumb"},
        statistic="kendall_tau_c", n_rows=2500,
        rows="2,500 captions: 500 COCO Karpathy-test images x 5 systems incl. Human",
        references="the 4 references of mscoco_references.json",
        target="human_score = (P + R) / 2 + Fl + Con + Inc",
        description="THumB 1.0: Kendall tau-c over 2,500 captions; system level over 5 systems",
        system_level=True, human_system="Human"),
    Protocol(
        name="nebula", loader="nebula", options={},
        statistic="kendall_tau_c", n_rows=3298,
        rows="3,298 captions of the Nebula test split",
        references="the entry's refs (5-10)",
        target="score in [0, 1]",
        description="Nebula (test): Kendall tau-c over 3,298 captions"),
    Protocol(
        name="capeval1k", loader="capeval1k", options={"exact_only": True},
        statistic="kendall_tau_b", n_rows=700,
        rows=("the 700 of 1,000 captions (250 COCO images x 4 models) whose word-piece ids decode "
              "exactly to text"),
        references="COCO Karpathy-test references of the image",
        target="human score 0-1",
        description="CapEval1k: Kendall tau-b (as UMIC) over the 700 exactly decoded captions"),
]
PROTOCOLS: dict[str, Protocol] = {p.name: p for p in _ENTRIES}
ALL: tuple[str, ...] = tuple(PROTOCOLS)

# generated from capkit.world (capkit/data/world.py): truth known, images rendered, nothing to fetch
_WORLD_ENTRIES = [
    Protocol(
        name="world_expert", loader="world_expert", options={"n_scenes": 150, "seed": 0},
        statistic="kendall_tau_c", n_rows=2100,
        rows="150 scenes x 14 captions (10 rule-based systems, 3 checkpoints of the trained world "
             "captioner, 1 held-out reference), one rating each",
        references="5 describe() references of the scene",
        target=("rubric 1-4: 4 true, names every object; 3 true, misses one or more; "
                "2 false; 1 ungrammatical"),
        description="World-Expert: Kendall tau-c over 2,100 rubric ratings (as Flickr8k-Expert)"),
    Protocol(
        name="world_foil", loader="world_foil", options={"n_scenes": 150, "seed": 0},
        statistic="pairwise_accuracy", n_rows=520,
        rows="520 (true caption, one-word foil) pairs of 150 scenes",
        references="5 describe() references (never the true caption)",
        target="the true caption", categories=("color", "count", "relation", "shape"),
        description="World-FOIL: pairwise accuracy, mean over colour / count / relation / shape "
                    "foils (as FOIL-COCO)"),
    Protocol(
        name="world_systems", loader="world_systems", options={"n_scenes": 60, "seed": 0},
        statistic="system_kendall_tau_b", n_rows=1860,
        rows="60 scenes x 31 systems (correct + 9 errors x rates 0.3 / 0.6 / 0.9 + 3 checkpoints "
             "of the trained world captioner)",
        references="5 describe() references of the scene",
        target="truth of each caption; system level: mean metric vs mean truth",
        description="World-Systems: system-level Kendall tau-b over 31 systems' mean truth",
        system_level=True),
]
WORLD: dict[str, Protocol] = {p.name: p for p in _WORLD_ENTRIES}
# validation: the same construction on validation scenes, for choices (a layer, a checkpoint)
# that a world test must not see; never reported as a result
VALIDATION: dict[str, Protocol] = {p.name: p for p in [
    Protocol(
        name="world_foil_val", loader="world_foil_val", options={"n_scenes": 150, "seed": 0},
        statistic="pairwise_accuracy",
        n_rows=514,
        rows="514 (true caption, one-word foil) pairs of 150 validation scenes (val, 5,000 on)",
        references="5 describe() references (never the true caption)",
        target="the true caption", categories=("color", "count", "relation", "shape"),
        description="World-FOIL on validation scenes: for choices, never a reported result")]}

# hard negatives (no human ratings): does a metric prefer a true caption over the same caption
# with one thing made wrong? Not in ALL: `capkit bench --benchmarks sugarcrepe` runs both
_SUGARCREPE_TYPES = ("add_att", "add_obj", "replace_att", "replace_obj", "replace_rel",
                     "swap_att", "swap_obj")
_HARD_NEGATIVE_ENTRIES = [
    Protocol(
        name=f"sugarcrepe_{refs}", loader="sugarcrepe", options={"references": refs},
        statistic="pairwise_accuracy", n_rows=7511,
        rows=("7,511 (COCO val2017 caption, hard negative) pairs: add_att 692, add_obj 2,062, "
              "replace_att 788, replace_obj 1,652, replace_rel 1,406, swap_att 666, swap_obj 245"),
        references=("the image's val2017 captions in annotation-id order minus every caption "
                    "equal to the positive (lower-cased, white space collapsed, ends stripped, "
                    "one final full stop dropped); "
                    + ("all that remain (4 for 7,459 pairs, 5 for 47, 2-3 for 5)"
                       if refs == "refs4" else "the first that remains")),
        target="the positive caption (label 0 = caption_a, on every pair)",
        description=(f"SugarCrepe ({refs[-1]} reference{'s' if refs == 'refs4' else ''}): "
                     "accuracy over 7,511 (positive, negative) pairs, a tie counting one half"),
        categories=_SUGARCREPE_TYPES, ties="half", average="pairs", pair_scoring="systems",
        group="sugarcrepe",
        images_hint="COCO val2017: the 5,000 images of val2017.zip from cocodataset.org")
    for refs in ("refs4", "refs1")]
HARD_NEGATIVES: dict[str, Protocol] = {p.name: p for p in _HARD_NEGATIVE_ENTRIES}
GROUPS: dict[str, tuple[str, ...]] = {"sugarcrepe": tuple(HARD_NEGATIVES)}


def expand(benchmarks) -> list[str | Protocol]:
    """Benchmark names with every group name (``"sugarcrepe"``) replaced by its protocols."""
    out: list[str | Protocol] = []
    for b in benchmarks:
        out.extend(GROUPS[b] if isinstance(b, str) and b in GROUPS else [b])
    return out


def get_protocol(benchmark: str | Protocol) -> Protocol:
    """A protocol by benchmark name (or the protocol itself)."""
    if isinstance(benchmark, Protocol):
        return benchmark
    if benchmark in WORLD:
        return WORLD[benchmark]
    if benchmark in VALIDATION:
        return VALIDATION[benchmark]
    if benchmark in HARD_NEGATIVES:
        return HARD_NEGATIVES[benchmark]
    if benchmark in GROUPS:
        raise ValueError(f"{benchmark!r} names the protocols {', '.join(GROUPS[benchmark])}: "
                         "benchmark() runs them all; give one of them here")
    if benchmark not in PROTOCOLS:
        names = [*ALL, *WORLD, *VALIDATION, *GROUPS, *HARD_NEGATIVES]
        raise ValueError(f"unknown benchmark {benchmark!r}; choose from {', '.join(names)}, "
                         "or pass a Protocol (see capkit.meta_eval.protocols)")
    return PROTOCOLS[benchmark]


def variant(benchmark: str | Protocol, *, statistic: str | None = None,
            **options) -> Protocol:
    """A protocol with some rules changed, named after the change, to see what a detail does.

    >>> variant("flickr8k_expert", drop_self=False).name
    'flickr8k_expert[drop_self=False]'

    The expected row count is cleared (a changed rule may change it) and the benchmark keeps no
    published value: the literature's number belongs to the unchanged protocol.
    """
    import dataclasses
    base = get_protocol(benchmark)
    changes = {**({"statistic": statistic} if statistic else {}), **options}
    if not changes:
        return base
    tag = ",".join(f"{k}={v}" for k, v in changes.items())
    return dataclasses.replace(base, name=f"{base.name}[{tag}]",
                               options={**base.options, **options},
                               statistic=statistic or base.statistic, n_rows=0)
