"""Scoring whole captioning systems on a corpus with references (system-level tables)."""
from __future__ import annotations

from collections.abc import Sequence

from capkit.data.schema import SystemCaptions
from capkit.metrics import Scorer
from capkit.scores import Scores


def score_systems(corpus: SystemCaptions, metrics: Sequence[str] | None = None,
                  tokenizer: str = "ptb", progress: bool | str = "auto"
                  ) -> dict[str, dict[str, Scores]]:
    """``{system: {metric: Scores}}``; each system is scored on the images it has captions for.

    CIDEr-D's document frequencies therefore come from those images' references, exactly as
    when pycocoevalcap is run on that system's results file. ``progress``: a bar over the
    systems (``capkit.progress``: "auto" shows one in Jupyter and on a terminal).
    """
    from capkit.progress import bar
    scorer = Scorer(metrics, tokenizer=tokenizer)          # default: the "classic" suite
    out = {}
    for system, captions in bar(corpus.systems.items(), total=len(corpus.systems),
                                desc="systems", progress=progress):
        refs = {image: corpus.references[image] for image in captions}
        out[system] = scorer.score(captions, refs)
    return out
