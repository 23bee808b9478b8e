"""capkit.plots.playground: notebook 01's metric playground and adversarial-caption game.

The playground's numbers are the metric functions' numbers (compared directly), its figure draws
without raising on what a text box can hold, and the game's rule is decided by capkit.world.check
and BLEU-4, so a true, an ungrammatical or a low-BLEU caption never wins.
"""
import matplotlib
import numpy as np
import pytest

from capkit.metrics import bleu, cider_d, document_frequencies, rouge_l
from capkit.metrics.meteor import explain_meteor, meteor
from capkit.metrics.spice import spice_lite
from capkit.plots.playground import (METRICS, best_meteor_alignment, caption_game,
                                     draw_playground, playground_scores, score_bars)
from capkit.world import Scene, check, describe

matplotlib.use("agg")

CAPTION = "a man riding a horse on the beach"
REFS = ["A person rides a horse along the shore.", "a man on a horse at the beach",
        "A horse and its rider near the sea."]
CORPUS = {"1": REFS, "2": ["two dogs play in the snow", "dogs running through snow"],
          "3": ["a red bus on a city street", "a bus parked by the road"]}


@pytest.fixture(scope="module")
def df():
    return document_frequencies(CORPUS, name="test")


def test_scores_equal_the_metric_functions(df):
    got = playground_scores(CAPTION, REFS, document_frequency=df)
    assert list(got) == list(METRICS)
    c, r = {"x": CAPTION}, {"x": REFS}
    b = bleu(c, r)
    want = {**{f"bleu_{k}": b.parts[f"bleu_{k}"][0] for k in range(1, 5)},
            "rouge_l": rouge_l(c, r).per_caption[0],
            "cider_d": cider_d(c, r, document_frequency=df).per_caption[0],
            "meteor": meteor(c, r).per_caption[0], "spice_lite": spice_lite(c, r).per_caption[0]}
    for name, value in want.items():
        assert got[name] == pytest.approx(float(value), abs=1e-12), name
    assert got["bleu_4"] == pytest.approx(bleu(c, r, n=4).per_caption[0], abs=1e-12)


def test_without_document_frequencies_cider_is_left_out_and_spice_is_optional():
    got = playground_scores(CAPTION, REFS, spice=False)
    assert "cider_d" not in got and "spice_lite" not in got and "meteor" in got


def test_blank_references_are_dropped_and_empty_inputs_say_what_to_type():
    assert playground_scores(CAPTION, ["", *REFS, "  "], spice=False) == \
        playground_scores(CAPTION, REFS, spice=False)
    with pytest.raises(ValueError, match="candidate is empty"):
        playground_scores("  ", REFS)
    with pytest.raises(ValueError, match="no references"):
        playground_scores(CAPTION, ["", " "])
    with pytest.raises(ValueError, match="splitlines"):
        playground_scores(CAPTION, "a man\na horse")


def test_the_alignment_shown_is_the_one_meteor_keeps():
    best = best_meteor_alignment(CAPTION, REFS)
    scores = [explain_meteor(CAPTION, r).score for r in REFS]
    assert best.score == max(scores) == pytest.approx(
        meteor({"x": CAPTION}, {"x": REFS}).per_caption[0], abs=1e-12)
    assert best.reference == explain_meteor(CAPTION, REFS[int(np.argmax(scores))]).reference


def test_figures_draw_and_return_their_axes(df):
    import matplotlib.pyplot as plt
    ax = score_bars({"bleu_4": 0.25, "cider_d": 3.0, "meteor": 0.5})
    assert [t.get_text() for t in ax.get_yticklabels()] == ["BLEU-4", "CIDEr-D / 10", "METEOR"]
    assert [round(p.get_width(), 3) for p in ax.patches] == [0.25, 0.3, 0.5]
    bars, align = draw_playground(CAPTION, REFS, document_frequency=df, spice=False)
    assert len(bars.patches) == 7 and align.get_title().startswith("METEOR")
    bars, _ = draw_playground("", REFS)            # an emptied text box: a note, no exception
    assert "candidate is empty" in bars.texts[0].get_text()
    plt.close("all")


SCENE = Scene.from_dict({"objects": [
    {"shape": "triangle", "color": "blue", "size": "big", "x": 0.45, "y": 0.43},
    {"shape": "cross", "color": "white", "size": "small", "x": 0.88, "y": 0.14},
    {"shape": "star", "color": "white", "size": "big", "x": 0.62, "y": 0.72}]})
GAME_REFS = ["An image with a blue triangle to the left of a white star.",
             "A white star beneath a triangle.", "A small white cross is above a blue triangle."]


@pytest.mark.parametrize("caption, won, why", [
    ("An image with a blue triangle to the right of a white star.", True, "FALSE in the scene"),
    ("An image with a blue triangle to the left of a white star.", False, "TRUE"),
    ("An image with a blue triangle to the left star white.", False, "grammar"),
    ("A red circle.", False, "only"),
    ("", False, "empty"),
])
def test_the_game_needs_a_false_grammatical_caption_with_high_bleu(caption, won, why):
    ok, message = caption_game(SCENE, GAME_REFS, caption)
    assert ok is won and why in message
    if caption:
        b4 = bleu({"x": caption}, {"x": GAME_REFS}).per_caption[0]
        assert f"{b4:.3f}" in message
        assert won == (check(SCENE, caption).true is False and b4 > 0.5)


def test_the_game_threshold_is_strict():
    caption = "An image with a blue triangle to the right of a white star."
    b4 = float(bleu({"x": caption}, {"x": GAME_REFS}).per_caption[0])
    assert caption_game(SCENE, GAME_REFS, caption, threshold=b4)[0] is False
    assert caption_game(SCENE, GAME_REFS, caption, threshold=b4 - 1e-6)[0] is True


def test_true_references_never_win():
    refs = describe(SCENE, n=5, seed=0)
    assert not any(caption_game(SCENE, refs, r)[0] for r in refs)
