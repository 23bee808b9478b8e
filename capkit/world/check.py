"""``check(scene, caption)``: is a caption grammatical, is it true, how much of the scene it covers.

GTD's three questions (Xie et al. 2019) with capkit's own closed grammar standing in for the
English Resource Grammar: grammatical = ``grammar.parse`` finds a logical form; true = the form
holds in the scene (``forms.evaluate``); coverage = the fraction of objects the caption names
(``forms.coverage``). A caption outside the grammar is a record with ``grammatical=False``,
never an exception.
"""
from __future__ import annotations

from dataclasses import dataclass

from capkit.world.forms import Form, coverage, evaluate, to_dict
from capkit.world.grammar import parse
from capkit.world.scene import Scene


@dataclass(frozen=True)
class Check:
    caption: str
    grammatical: bool
    true: bool | None               # None when the caption does not parse
    coverage: float                 # in [0, 1]; 0.0 when it does not parse
    form: Form | None               # the parsed logical form

    @property
    def rating(self) -> int:
        """The world_expert rubric: 4 true and names every object; 3 true, misses one or more
        ("there is a shape" in a scene of four); 2 grammatical but false; 1 ungrammatical."""
        if not self.grammatical:
            return 1
        if not self.true:
            return 2
        return 4 if self.coverage == 1.0 else 3

    def to_dict(self) -> dict:
        form = None if self.form is None else to_dict(self.form)
        return {"caption": self.caption, "grammatical": self.grammatical, "true": self.true,
                "coverage": self.coverage, "form": form}


def check(scene: Scene, caption: str) -> Check:
    """Parse ``caption`` with the world grammar and evaluate it in ``scene``."""
    if not isinstance(scene, Scene):
        raise ValueError(f"check needs a capkit.world.Scene, not {type(scene).__name__}: build one "
                         "with Scene.from_dict or make_scenes")
    if not isinstance(caption, str):
        raise ValueError(f"a caption is a string, not {type(caption).__name__}")
    form = parse(caption)
    if form is None:
        return Check(caption, False, None, 0.0, None)
    return Check(caption, True, evaluate(form, scene), coverage(form, scene), form)
