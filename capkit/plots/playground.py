"""The metric playground and the adversarial-caption game of notebooks/01_classic_metrics.ipynb
(sections 9 "A metric playground" and 10 "The adversarial caption game").

Pure functions that the notebook's widgets call (the widgets add nothing but controls):

* ``playground_scores``: every classic metric of one candidate against its references;
* ``score_bars`` and ``draw_playground``: those scores as bars, over METEOR's alignment of the
  candidate with the reference METEOR keeps (its best);
* ``caption_game``: the game's rule, decided exactly in capkit's captioned world
  (``capkit.world``): a caption wins when it is grammatical, false in the scene, and still rated
  above a BLEU-4 threshold by the scene's true references.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

# the order of the bars; CIDEr-D (0-10) is drawn divided by 10 so one axis holds all of them
METRICS = ("bleu_1", "bleu_2", "bleu_3", "bleu_4", "rouge_l", "cider_d", "meteor", "spice_lite")
LABELS = {"bleu_1": "BLEU-1", "bleu_2": "BLEU-2", "bleu_3": "BLEU-3", "bleu_4": "BLEU-4",
          "rouge_l": "ROUGE-L", "cider_d": "CIDEr-D / 10", "meteor": "METEOR",
          "spice_lite": "SPICE-lite"}


def _inputs(candidate: str, references) -> tuple[str, list[str]]:
    """The candidate and the non-blank references, or a ValueError that says what to type."""
    if not isinstance(candidate, str) or not candidate.strip():
        raise ValueError("the candidate is empty: type a caption to score")
    if isinstance(references, str):
        raise ValueError("references must be a list of captions (one string per reference): "
                         "split a text box with .splitlines()")
    refs = [r for r in references if isinstance(r, str) and r.strip()]
    if not refs:
        raise ValueError("no references: give at least one non-empty reference caption")
    return candidate, refs


def playground_scores(candidate: str, references: Sequence[str], document_frequency=None, *,
                      spice: bool = True) -> dict[str, float]:
    """Every classic metric of ``candidate`` against ``references`` (blank ones dropped).

    Keys in ``METRICS`` order: BLEU-1..4, ROUGE-L, CIDEr-D (only with ``document_frequency``: one
    caption alone has no document frequencies, see ``capkit.metrics.cider_d``), METEOR and,
    with ``spice=True``, SPICE-lite. Each value equals the metric function's per-caption score.
    """
    from capkit.metrics import bleu, cider_d, rouge_l
    from capkit.metrics.meteor import meteor
    from capkit.metrics.spice import spice_lite

    candidate, refs = _inputs(candidate, references)
    cands, ref_map = {"0": candidate}, {"0": refs}
    b = bleu(cands, ref_map)
    out = {f"bleu_{k}": float(b.parts[f"bleu_{k}"][0]) for k in range(1, 5)}
    out["rouge_l"] = float(rouge_l(cands, ref_map).per_caption[0])
    if document_frequency is not None:
        out["cider_d"] = float(cider_d(cands, ref_map,
                                       document_frequency=document_frequency).per_caption[0])
    out["meteor"] = float(meteor(cands, ref_map).per_caption[0])
    if spice:
        out["spice_lite"] = float(spice_lite(cands, ref_map).per_caption[0])
    return out


def best_meteor_alignment(candidate: str, references: Sequence[str]):
    """``explain_meteor`` of the candidate with the reference METEOR keeps: its best score
    (the first such reference on a tie), as the per-caption METEOR score is that maximum."""
    from capkit.metrics.meteor import explain_meteor

    candidate, refs = _inputs(candidate, references)
    explained = [explain_meteor(candidate, r) for r in refs]
    return max(explained, key=lambda e: e.score)       # max keeps the first of equal scores


def score_bars(scores: Mapping[str, float], ax=None):
    """Horizontal bars of ``playground_scores``' values on one 0-1 axis, each labelled with its
    value (CIDEr-D's bar is its score / 10, its label the score itself). Returns the axes."""
    import matplotlib.pyplot as plt

    names = [m for m in METRICS if m in scores] + [m for m in scores if m not in METRICS]
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 0.35 * len(names) + 0.8))
    values = [scores[m] / 10 if m == "cider_d" else scores[m] for m in names]
    y = range(len(names))
    ax.barh(y, values, color=["tab:blue" if m.startswith("bleu") else "tab:orange"
                              for m in names], alpha=0.8)
    for k, m in enumerate(names):
        ax.text(min(max(values[k], 0.0), 1.0) + 0.01, k, f"{scores[m]:.3f}", va="center",
                fontsize=9)
    ax.set_yticks(list(y), [LABELS.get(m, m) for m in names], fontsize=9)
    ax.invert_yaxis()
    ax.set_xlim(0, 1.12)
    ax.set_xlabel("score (CIDEr-D divided by 10)", fontsize=9)
    ax.spines[["top", "right"]].set_visible(False)
    return ax


def draw_playground(candidate: str, references: Sequence[str], document_frequency=None, *,
                    spice: bool = True, axes=None):
    """The scores as bars (left) and METEOR's alignment with its best reference (right).

    ``axes``: two axes, or None for a new figure. An empty candidate or no reference draws a
    note saying what to type instead of raising (the widget's text boxes may be empty).
    Returns the two axes.
    """
    import matplotlib.pyplot as plt

    from capkit.plots.alignments import meteor_alignment

    if axes is None:
        _, axes = plt.subplots(1, 2, figsize=(13, 3.4), width_ratios=(1, 2.2))
    bars, align = axes
    try:
        scores = playground_scores(candidate, references, document_frequency, spice=spice)
    except ValueError as err:
        for ax in axes:
            ax.axis("off")
        bars.text(0, 0.5, str(err), fontsize=10, va="center", transform=bars.transAxes)
        return axes
    score_bars(scores, ax=bars)
    meteor_alignment(best_meteor_alignment(candidate, references), ax=align)
    return axes


def caption_game(scene, references: Sequence[str], caption: str, *,
                 threshold: float = 0.5) -> tuple[bool, str]:
    """The adversarial-caption game's verdict: (won, why).

    ``caption`` wins when the world grammar parses it, it is FALSE in ``scene``
    (``capkit.world.check``) and its BLEU-4 against ``references`` (``capkit.metrics.bleu``) is
    above ``threshold``. ``why`` states the verdict and the BLEU-4.
    """
    from capkit.metrics import bleu
    from capkit.world import check

    if not isinstance(caption, str) or not caption.strip():
        return False, "the caption is empty: write a false caption of the scene"
    record = check(scene, caption)
    b4 = float(bleu({"0": caption}, {"0": list(references)}).per_caption[0])
    if not record.grammatical:
        return False, (f"{caption!r} is outside the world's grammar, so it is neither true nor "
                       f"false (BLEU-4 {b4:.3f}): write a caption the grammar parses")
    if record.true:
        return False, (f"{caption!r} is TRUE in the scene (BLEU-4 {b4:.3f}): the game needs a "
                       "wrong caption")
    if b4 <= threshold:
        return False, (f"{caption!r} is false, but BLEU-4 is only {b4:.3f} (needs > "
                       f"{threshold}): keep more of the references' 4-grams")
    return True, f"{caption!r} is FALSE in the scene, yet BLEU-4 = {b4:.3f} > {threshold}"
