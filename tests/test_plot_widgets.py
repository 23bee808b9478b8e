"""capkit.plots.widgets.drawn: interact gets the same controls, and no Axes repr to show."""
import inspect

from capkit.plots.widgets import drawn


def test_drawn_keeps_the_signature_calls_the_plot_and_returns_nothing():
    calls = []

    def plot(candidate, layer=3, ax=None):
        calls.append((candidate, layer))
        return "an Axes"

    wrapped = drawn(plot)
    assert inspect.signature(wrapped) == inspect.signature(plot)
    assert wrapped("a dog", layer=5) is None and calls == [("a dog", 5)]


def test_interact_builds_one_control_per_parameter():
    from ipywidgets import fixed, interactive
    w = interactive(drawn(lambda candidate, layer, ax: None), candidate="a dog", layer=(0, 6),
                    ax=fixed(None))
    assert [c.description for c in w.children[:-1]] == ["candidate", "layer"]


def test_checked_scene_titles_the_verdict_of_check(capsys):
    import matplotlib
    matplotlib.use("agg")
    from capkit.plots.world import checked_scene
    from capkit.world import Scene, check
    scene = Scene.from_dict({"objects": [
        {"shape": "circle", "color": "red", "size": "big", "x": 0.2, "y": 0.3},
        {"shape": "square", "color": "blue", "size": "small", "x": 0.7, "y": 0.7}]})
    assert checked_scene(scene, "a red circle").get_title() == "TRUE, covers 50% of the objects"
    assert str(check(scene, "a red circle")) in capsys.readouterr().out
    assert checked_scene(scene, "two red circles").get_title().startswith("FALSE")
    assert checked_scene(scene, "circle the red").get_title() == "not grammatical"
