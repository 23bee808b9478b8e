"""The built-in metrics' specs: one ``MetricSpec`` each, registered when ``capkit.metrics`` loads.

A new built-in metric gets one entry here (see ARCHITECTURE.md, "Where a new metric goes").
Targets are strings, so this table imports no metric code.
"""
from __future__ import annotations

from capkit.metrics.registry import MetricSpec, register

_CLASSIC_PAPERS = {
    1: "Papineni et al. 2002 (BLEU)", 2: "Papineni et al. 2002 (BLEU)",
    3: "Papineni et al. 2002 (BLEU)", 4: "Papineni et al. 2002 (BLEU)",
}
NB01 = "01_classic_metrics.ipynb"
NB03 = "03_embedding_metrics.ipynb"
NB06 = "06_intrinsic_i2ce.ipynb"
NB10 = "10_captioned_world.ipynb"
NB05 = "05_learned_critic.ipynb"
NB07 = "07_umic.ipynb"
NB08 = "08_vilbertscore.ipynb"
# The real-data checkpoints saw the captions of the Karpathy-test images outside every benchmark
# (capkit.training.corpus: I2CE's stage 2, the critic's COCO folds).
_COCO_TEST = frozenset({"coco_karpathy_test"})

BUILTIN = [
    *(MetricSpec(f"bleu_{n}", "capkit.metrics.bleu:bleu", {"n": n}, tokens=True,
                 paper=_CLASSIC_PAPERS[n], notebook=f"{NB01} BLEU",
                 suites={"classic", "systems", "bench"}) for n in (1, 2, 3, 4)),
    MetricSpec("rouge_l", "capkit.metrics.rouge:rouge_l", tokens=True, paper="Lin 2004 (ROUGE)",
               notebook=f"{NB01} ROUGE-L", suites={"classic", "systems", "bench"}),
    MetricSpec("cider_d", "capkit.metrics.cider:cider_d", tokens=True, document_frequency=True,
               score_range=(0.0, 10.0), paper="Vedantam et al. 2015 (CIDEr)",
               notebook=f"{NB01} CIDEr-D", suites={"classic", "systems", "bench"}),
    MetricSpec("meteor", "capkit.metrics.meteor:meteor", tokens=True,
               paper="Denkowski & Lavie 2014 (METEOR 1.5)", notebook=f"{NB01} METEOR",
               suites={"systems", "bench"}),
    MetricSpec("bleu_1_nostop", "capkit.metrics.bleu_nostop:bleu_1_nostop", tokens=True,
               paper="Zeng & Kwong (I2CE), B@1*", notebook=f"{NB06} Soft and hard matching",
               suites={"systems", "bench"}),
    MetricSpec("spice_lite", "capkit.metrics.spice:spice_lite",
               paper="Anderson et al. 2016 (SPICE), approximated on spaCy parses",
               notebook=f"{NB01} SPICE", suites={"bench"}),
    MetricSpec("spice", "capkit.metrics.spice:spice", downloads="Stanford CoreNLP 3.6.0 "
               "(python -m data_scripts.spice_corenlp) and Java",
               paper="Anderson et al. 2016 (SPICE)", notebook=f"{NB01} SPICE"),
    MetricSpec("mean_glove", "capkit.metrics.mean_glove:mean_glove", score_range=(-1.0, 1.0),
               paper="Zeng & Kwong (I2CE), MEAN baseline", notebook=f"{NB03} MEAN",
               suites={"bench"}),
    MetricSpec("bertscore", "capkit.metrics.bertscore:bertscore", score_range=(-1.0, 1.0),
               paper="Zhang et al. 2020 (BERTScore), all-MiniLM-L6-v2 layer 5",
               notebook=f"{NB03} BERTScore"),
    MetricSpec("bertscore_roberta_large", "capkit.metrics.bertscore:bertscore",
               {"model": "roberta-large"}, score_range=(-1.0, 1.0),
               downloads="roberta-large from the Hugging Face hub",
               paper="Zhang et al. 2020 (BERTScore), as in the CLIPScore paper",
               notebook=f"{NB03} BERTScore"),
    MetricSpec("i2ce", "capkit.metrics.i2ce:i2ce", score_range=(-1.0, 1.0),
               trained="capkit train i2ce --preset small (shipped checkpoint)",
               trained_on=_COCO_TEST,
               paper="Zeng & Kwong (I2CE)", notebook=f"{NB06} The I2CE score", suites={"bench"}),
    MetricSpec("i2ce_mean", "capkit.metrics.i2ce:i2ce", {"aggregate": "mean"},
               score_range=(-1.0, 1.0),
               trained="capkit train i2ce --preset small (shipped checkpoint)",
               trained_on=_COCO_TEST,
               paper="Zeng & Kwong (I2CE), mean over references",
               notebook=f"{NB06} The I2CE score"),
    MetricSpec("clipscore", "capkit.metrics.clipscore:clipscore", references=False, images=True,
               score_range=(0.0, 2.5), downloads="openai/clip-vit-base-patch32 from the hub "
               "(or $CAPKIT_CLIP_MODEL)", paper="Hessel et al. 2021 (CLIPScore)",
               notebook=f"{NB03} CLIPScore"),
    MetricSpec("refclipscore", "capkit.metrics.clipscore:refclipscore", images=True,
               score_range=(0.0, 2.5), downloads="openai/clip-vit-base-patch32 from the hub "
               "(or $CAPKIT_CLIP_MODEL)", paper="Hessel et al. 2021 (RefCLIPScore)",
               notebook=f"{NB03} CLIPScore"),
    *(MetricSpec(f"{name}_world", f"capkit.metrics.clipscore:{name}", {"model": "world-clip"},
                 references=name == "refclipscore", images=True, score_range=(0.0, 2.5),
                 trained="capkit train world-clip (shipped checkpoint)",
                 paper=f"Hessel et al. 2021 ({label}) on capkit's world, with world-CLIP",
                 notebook=f"{NB10} World-CLIP: an image metric trained in this world")
      for name, label in (("clipscore", "CLIPScore"), ("refclipscore", "RefCLIPScore"))),
    MetricSpec("leic", "capkit.metrics.leic:leic",
               trained="capkit train leic --variant leic (shipped checkpoint)",
               trained_on=_COCO_TEST,
               paper="Cui et al. 2018 (LEIC), caption context, with augmentation",
               notebook=f"{NB05} Scoring a caption"),
    MetricSpec("leic_no_da", "capkit.metrics.leic:leic", {"model": "leic_no_da"},
               trained="capkit train leic --variant leic_no_da (shipped checkpoint)",
               trained_on=_COCO_TEST,
               paper="Cui et al. 2018 (LEIC), caption context, no augmentation",
               notebook=f"{NB05} Scoring a caption"),
    MetricSpec("leic_mc", "capkit.metrics.leic:leic", {"model": "leic_mc"},
               trained="capkit train leic --variant leic_mc (shipped checkpoint)",
               trained_on=_COCO_TEST,
               paper="Cui et al. 2018 (LEIC), caption context, the paper's full augmentation: "
                     "machine, Monte Carlo (a caption language model) and RC/WP/RW fakes",
               notebook=f"{NB05} Scoring a caption"),
    MetricSpec("leic_rc", "capkit.metrics.leic:leic", {"model": "leic_rc"},
               trained="capkit train leic --variant leic_rc (shipped checkpoint)",
               trained_on=_COCO_TEST,
               paper="Cui et al. 2018 (LEIC), caption context, RC negatives only (its Flickr8k "
                     "critic)", notebook=f"{NB05} Scoring a caption"),
    *(MetricSpec(name, "capkit.metrics.leic:leic", {"model": name}, images=True,
                 trained=f"capkit train leic --variant {variant} --world (shipped checkpoint)",
                 paper=f"Cui et al. 2018 (LEIC) on capkit's world, image + caption context, "
                       f"{label}", notebook=f"{NB05} System level and the world")
      for name, variant, label in (("leic_world", "leic", "with augmentation"),
                                   ("leic_world_no_da", "leic_no_da", "no augmentation"))),
    MetricSpec("leic_world_caption", "capkit.metrics.leic:leic", {"model": "leic_world_caption"},
               trained="capkit train leic --variant leic --world --context caption (shipped "
                       "checkpoint)",
               paper="Cui et al. 2018 (LEIC) on capkit's world, caption context only (no image), "
                     "with augmentation: the control of leic_world",
               notebook=f"{NB05} System level and the world"),
    MetricSpec("umic_world", "capkit.metrics.umic:umic", {"model": "umic-world"},
               references=False, images=True,
               trained="capkit train world-vilt, then capkit train umic (shipped checkpoint)",
               paper="Lee et al. 2021 (UMIC) on capkit's world, with world-ViLT",
               notebook=f"{NB07} The score and the ranking loss"),
    MetricSpec("umic_c_world", "capkit.metrics.umic:umic_c", {"model": "world-vilt"},
               references=False, images=True,
               trained="capkit train world-vilt (shipped checkpoint)",
               paper="Lee et al. 2021 (UMIC-C: the pre-trained matching head) on capkit's world",
               notebook=f"{NB07} Does contrastive fine-tuning help"),
    *(MetricSpec(f"vilbertscore_world{tag}", "capkit.metrics.vilbertscore:vilbertscore",
                 {"model": "world-vilt", "with_image": tag == ""}, images=True,
                 score_range=(-1.0, 1.0), trained="capkit train world-vilt (shipped checkpoint)",
                 paper=f"Lee et al. 2020 (ViLBERTScore F) on capkit's world, with world-ViLT"
                       f"{note}", notebook=f"{NB08} P, R and F from scratch")
      for tag, note in (("", ""), ("_noimage", "; text-only control, image masked out"))),
]


def register_builtins() -> None:
    for spec in BUILTIN:
        register(spec)
