"""Scoring whole captioning systems on a corpus with references (system-level tables)."""
from __future__ import annotations

from collections.abc import Sequence

from capkit.data.schema import SystemCaptions
from capkit.metrics import Scorer
from capkit.scores import Scores


def score_systems(corpus: SystemCaptions, metrics: Sequence[str] | None = None,
                  tokenizer: str = "ptb") -> dict[str, dict[str, Scores]]:
    """``{system: {metric: Scores}}``; each system is scored on the images it has captions for.

    CIDEr-D's document frequencies therefore come from those images' references, exactly as
    when pycocoevalcap is run on that system's results file.
    """
    scorer = Scorer(metrics, tokenizer=tokenizer)          # default: the "classic" suite
    out = {}
    for system, captions in corpus.systems.items():
        refs = {image: corpus.references[image] for image in captions}
        out[system] = scorer.score(captions, refs)
    return out
