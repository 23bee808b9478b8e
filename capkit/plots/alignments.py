"""Figures for one caption at a time: a METEOR alignment, a SPICE-lite scene graph.

Each helper takes ``ax=None``, returns the axes, never calls ``show()`` or changes global style.
"""
from __future__ import annotations

MODULE_COLORS = {"exact": "tab:blue", "stem": "tab:green", "synonym": "tab:orange",
                 "paraphrase": "tab:purple"}


def _words(ax, words, y, va):
    for k, w in enumerate(words):
        ax.text(k, y, w, ha="center", va=va, fontsize=10,
                bbox={"boxstyle": "round,pad=0.2", "fc": "white", "ec": "0.7"})


def meteor_alignment(explanation, ax=None, show_candidates: bool = True):
    """Caption (top) and reference (bottom); kept matches as coloured bands by module,
    the other candidate matches as thin grey lines."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch, Polygon

    from capkit.metrics.meteor.align import MODULES

    e = explanation
    if ax is None:
        width = max(len(e.caption), len(e.reference), 4)
        _, ax = plt.subplots(figsize=(0.9 * width + 1, 2.6))
    kept = set(e.chosen)
    if show_candidates:
        for ms in e.candidates.values():
            for m in ms:
                if m not in kept:
                    x1 = m.match_start + (m.match_length - 1) / 2
                    x2 = m.start + (m.length - 1) / 2
                    ax.plot([x1, x2], [0.9, 0.1], color="0.75", lw=0.8, ls="--", zorder=1)
    for m in e.chosen:
        top = (m.match_start - 0.4, m.match_start + m.match_length - 0.6)
        bottom = (m.start - 0.4, m.start + m.length - 0.6)
        ax.add_patch(Polygon([(top[0], 0.9), (top[1], 0.9), (bottom[1], 0.1), (bottom[0], 0.1)],
                             closed=True, alpha=0.35, color=MODULE_COLORS[MODULES[m.module]],
                             zorder=2))
    _words(ax, e.caption, 0.92, "bottom")
    _words(ax, e.reference, 0.08, "top")
    ax.set_xlim(-0.8, max(len(e.caption), len(e.reference)) - 0.2)
    ax.set_ylim(-0.25, 1.25)
    ax.axis("off")
    ax.legend(handles=[Patch(color=c, alpha=0.5, label=n) for n, c in MODULE_COLORS.items()],
              loc="upper center", bbox_to_anchor=(0.5, 0.02), ncol=4, frameon=False, fontsize=8)
    ax.set_title(f"METEOR {e.score:.3f}  (P {e.precision:.2f}, R {e.recall:.2f}, "
                 f"penalty {e.penalty:.2f}, chunks {int(e.stats[20])})", fontsize=10)
    return ax


def scene_graph(explanation, ax=None):
    """SPICE-lite scene graph of a caption: objects (boxes; green if matched), their attributes
    underneath, relations as labelled arcs above."""
    import matplotlib.pyplot as plt

    e = explanation
    g = e.graph
    if ax is None:
        _, ax = plt.subplots(figsize=(max(2.2 * len(g.nodes), 4), 3))
    matched = dict(zip(e.tuples, e.matched))
    x = {id(n): 2.0 * k for k, n in enumerate(g.nodes)}
    for n in g.nodes:
        ok = matched.get(f"({n.obj})", False)
        ax.text(x[id(n)], 0, str(n.obj), ha="center", va="center", fontsize=10,
                bbox={"boxstyle": "round,pad=0.3", "fc": "#cdeccd" if ok else "#f3d0d0"})
        for k, a in enumerate(n.attributes):
            ok = matched.get(f"({n.obj}, {a})", False)
            ax.annotate(str(a), (x[id(n)], -0.1), (x[id(n)], -0.6 - 0.45 * k), ha="center",
                        va="center", fontsize=9, color="darkgreen" if ok else "darkred",
                        arrowprops={"arrowstyle": "-", "color": "0.6"})
    for k, (s, d, r) in enumerate(g.relations):
        ok = matched.get(f"({s.obj}, {r}, {d.obj})", False)
        x1, x2 = x[id(s)], x[id(d)]
        height = 0.5 + 0.25 * (k % 3)
        ax.annotate("", (x2, 0.15), (x1, 0.15), arrowprops={
            "arrowstyle": "->", "color": "darkgreen" if ok else "darkred",
            "connectionstyle": f"arc3,rad={-0.4 if x2 >= x1 else 0.4}"})
        ax.text((x1 + x2) / 2, height, str(r), ha="center", fontsize=9,
                color="darkgreen" if ok else "darkred")
    n_attr = max((len(n.attributes) for n in g.nodes), default=0)
    ax.set_xlim(-1.2, 2.0 * max(len(g.nodes), 1) - 0.8)
    ax.set_ylim(-0.9 - 0.45 * n_attr, 1.3)
    ax.axis("off")
    ax.set_title(f"SPICE-lite F1 {e.f1:.3f} (P {e.precision:.2f}, R {e.recall:.2f}); "
                 "green: matched in the references", fontsize=10)
    return ax
