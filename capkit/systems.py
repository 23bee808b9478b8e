"""Scoring whole captioning systems on a corpus with references (system-level tables)."""
from __future__ import annotations

from collections.abc import Sequence

from capkit.data.schema import SystemCaptions
from capkit.metrics import CLASSIC, score
from capkit.scores import Scores


def score_systems(corpus: SystemCaptions, metrics: Sequence[str] = CLASSIC,
                  tokenizer: str = "ptb") -> dict[str, dict[str, Scores]]:
    """``{system: {metric: Scores}}``; each system is scored on the images it has captions for.

    CIDEr-D's document frequencies therefore come from those images' references, exactly as
    when pycocoevalcap is run on that system's results file.
    """
    out = {}
    for system, captions in corpus.systems.items():
        refs = {image: corpus.references[image] for image in captions}
        out[system] = score(captions, refs, metrics, tokenizer)
    return out
