"""SPICE (Anderson et al. 2016): the official jar's wrapper and capkit's Java-free approximation.

| module | what it holds |
|---|---|
| ``official`` | ``spice()``: the SPICE 1.0 jar with Stanford CoreNLP 3.6.0 (Java needed) |
| ``lite`` | ``spice_lite()``: SPICE's tuple rules and matching on spaCy parses; not SPICE itself |
| ``parse`` | the dependency-parse rules that propose (object, attribute, relation) tuples |
"""
from capkit.metrics.spice.lite import (
    SceneGraph, SpiceExplanation, caption_tuples, explain_spice_lite, spice_f1, spice_lite,
)
from capkit.metrics.spice.official import corenlp_dir, find_corenlp, spice

__all__ = ["SceneGraph", "SpiceExplanation", "caption_tuples", "corenlp_dir", "explain_spice_lite",
           "find_corenlp", "spice", "spice_f1", "spice_lite"]
