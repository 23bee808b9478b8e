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
