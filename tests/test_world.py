"""capkit.world (#12): scenes, rendering, the grammar and its truth conditions, references.

The truth test checks ``check`` against a second implementation of the semantics written here on
another code path: captions are built from this file's own lexicon (not ``grammar.realise``) and
judged by brute force over assignments of objects to noun phrases.
"""
import itertools

import numpy as np
import pytest

from capkit.world import Scene, make_scenes
from capkit.world.render import RGB
from capkit.world.check import check
from capkit.world.describe import describe
from capkit.world.grammar import parse

SHAPES = ["circle", "square", "triangle", "star", "cross"]
COLORS = ["red", "green", "blue", "yellow", "purple", "white"]
PLURALS = {"circle": "circles", "square": "squares", "triangle": "triangles", "star": "stars",
           "cross": "crosses", None: "shapes"}
NUMBER = {1: "one", 2: "two", 3: "three", 4: "four"}
REL_WORDS = {"left": ["to the left of", "left of", "on the left of"],
             "right": ["to the right of", "right of", "on the right of"],
             "above": ["above", "over"], "below": ["below", "under", "beneath"]}


# ----------------------------------------------------------------------------- the oracle


def _match(attrs, obj):
    return all(v is None or obj[k] == v for k, v in attrs.items())


def _assignments(scene, n_slots):
    """Every way to give each slot an object, repeats included (filtered by the callers)."""
    return itertools.product(range(len(scene["objects"])), repeat=n_slots)


def oracle(scene, meaning):
    objs = scene["objects"]
    kind = meaning[0]
    if kind == "exists":
        return any(_match(meaning[1], objs[i]) for (i,) in _assignments(scene, 1))
    if kind == "and":
        parts = meaning[1]
        return any(len(set(a)) == len(a) and all(_match(p, objs[i]) for p, i in zip(parts, a))
                   for a in _assignments(scene, len(parts)))
    if kind == "count":
        n, attrs = meaning[1], meaning[2]
        for subset in itertools.combinations(range(len(objs)), n):
            inside = all(_match(attrs, objs[i]) for i in subset)
            outside = not any(_match(attrs, objs[i]) for i in range(len(objs)) if i not in subset)
            if inside and outside:
                return True
        return False
    _, a_attrs, rel, b_attrs = meaning
    for i, j in _assignments(scene, 2):
        if i == j or not (_match(a_attrs, objs[i]) and _match(b_attrs, objs[j])):
            continue
        a, b = objs[i], objs[j]
        if {"left": a["x"] < b["x"], "right": a["x"] > b["x"], "above": a["y"] < b["y"],
                "below": a["y"] > b["y"]}[rel]:
            return True
    return False


# ----------------------------------------------------------------------------- captions here


def _attrs(rng, shapes, colors):
    return {"shape": rng.choice(shapes + [None]), "color": rng.choice(colors + [None, None]),
            "size": rng.choice(["small", "big", None, None, None])}


def _words(attrs, rng, plural=False):
    size = {"small": ["small"], "big": ["big", "large"], None: []}[attrs["size"]]
    words = ([rng.choice(size)] if size else []) + ([attrs["color"]] if attrs["color"] else [])
    if plural:
        noun = PLURALS[attrs["shape"]] if attrs["shape"] else rng.choice(["shapes", "objects"])
    else:
        noun = attrs["shape"] or rng.choice(["shape", "object"])
    return words + [noun]


def _np(attrs, rng):
    words = _words(attrs, rng)
    return ("an " if words[0][0] in "aeiou" else "a ") + " ".join(words)


def random_caption(rng, shapes, colors):
    """(caption, meaning) of a random form, built with this file's own lexicon."""
    kind = rng.choice(["exists", "and", "count", "relation"])
    if kind == "exists":
        a = _attrs(rng, shapes, colors)
        return rng.choice(["", "there is ", "a picture of "]) + _np(a, rng), ("exists", a)
    if kind == "and":
        parts = [_attrs(rng, shapes, colors) for _ in range(int(rng.integers(2, 4)))]
        nps = [_np(p, rng) for p in parts]
        text = ", ".join(nps[:-1]) + " and " + nps[-1]
        return rng.choice(["", "there is ", "an image with "]) + text, ("and", parts)
    if kind == "count":
        n, a = int(rng.integers(1, 5)), _attrs(rng, shapes, colors)
        text = " ".join([rng.choice(["", "exactly"]), NUMBER[n]] + _words(a, rng, n > 1)).strip()
        verb = "there is " if n == 1 else "there are "
        return rng.choice(["", verb]) + text, ("count", n, a)
    a, b = _attrs(rng, shapes, colors), _attrs(rng, shapes, colors)
    rel = rng.choice(list(REL_WORDS))
    verb = rng.choice(["", "is "])
    return f"{_np(a, rng)} {verb}{rng.choice(REL_WORDS[rel])} {_np(b, rng)}", ("rel", a, rel, b)


def crowded_scene(rng):
    """A scene with few attribute values so that counts and distinctness matter (sizes stay
    make_scenes' own, small and big at random: a bigger object could overlap its neighbour)."""
    base = make_scenes(1, int(rng.integers(10**6)))[0].to_dict()
    for o in base["objects"]:
        o.update(shape=rng.choice(["circle", "square"]), color=rng.choice(["red", "blue"]))
    return base


def _styled(caption, rng):
    if rng.random() < 0.5:
        caption = caption[0].upper() + caption[1:]
    return caption + rng.choice(["", ".", " ."])


@pytest.mark.parametrize("seed", range(4))
def test_check_agrees_with_a_brute_force_oracle(seed):
    rng = np.random.default_rng(seed)
    n_true = 0
    for _ in range(300):
        scene = crowded_scene(rng)
        crowded = rng.random() < 0.7
        shapes = ["circle", "square"] if crowded else SHAPES
        colors = ["red", "blue"] if crowded else COLORS
        caption, meaning = random_caption(rng, shapes, colors)
        caption = _styled(caption, rng)
        record = check(Scene.from_dict(scene), caption)
        assert record.grammatical, caption
        assert record.true == oracle(scene, meaning), (caption, scene)
        n_true += record.true
    assert 30 < n_true < 270           # both outcomes are exercised


def test_the_distinct_objects_rule_and_exact_counts():
    one = Scene.from_dict({"objects": [dict(shape="circle", color="red", size="big", x=.2, y=.2)]})
    assert not check(one, "a red circle and a circle").true
    assert not check(one, "a circle to the left of a shape").true
    assert check(one, "a red circle").true and check(one, "one circle").true
    three = Scene.from_dict({"objects": [dict(shape="circle", color="red", size="big", x=x, y=x)
                                         for x in (.2, .5, .8)]})
    assert not check(three, "two red circles").true
    assert check(three, "There are three red circles.").true
    assert check(three, "a red circle is above a red circle").true
    assert check(three, "a red circle to the right of a red circle").true
    assert not check(three, "four shapes").true


def test_above_means_smaller_y():
    scene = Scene.from_dict({"objects": [dict(shape="circle", color="red", size="big", x=.2, y=.2),
                                         dict(shape="square", color="blue", size="big", x=.8,
                                              y=.8)]})
    assert check(scene, "a red circle above a blue square").true
    assert check(scene, "a blue square is below a red circle").true
    assert check(scene, "a red circle to the left of a blue square").true
    assert not check(scene, "a red circle is to the right of a blue square").true


@pytest.mark.parametrize("caption", [
    "", "circle red a", "a red circles", "an red circle", "a object", "there are one circle",
    "there is two circles", "a red circle and", "a red a circle", "five circles",
    "a picture of a red circle is above a square", "a dog on a skateboard", "red", "!!!",
    "a red circle a red circle a red circle", "a red red circle"])
def test_ungrammatical_captions_are_records_not_exceptions(caption):
    scene = make_scenes(1, 0)[0]
    record = check(scene, caption)
    assert not record.grammatical and record.true is None and record.form is None
    assert record.coverage == 0.0 and record.rating == 1


def test_random_word_salad_never_raises():
    rng = np.random.default_rng(0)
    vocab = "a an and is there 's are the of to left right above circle circles red two , .".split()
    scene = make_scenes(1, 3)[0]
    for _ in range(500):
        caption = " ".join(rng.choice(vocab, size=int(rng.integers(0, 9))))
        record = check(scene, caption)
        assert record.grammatical == (record.form is not None)
        assert (record.true is None) == (not record.grammatical)
    assert check(scene, "\u2028\x00 A circle!").grammatical      # PTB drops controls, like capkit


def test_paraphrases_parse_to_one_form():
    forms = {parse(c) for c in ["a red circle", "A red circle.", "There is a red circle.",
                                "there's a red circle", "a picture of a red circle",
                                "an image with a red circle", "a red circle in the picture"]}
    assert len(forms) == 1 and None not in forms


def test_coverage_counts_named_objects():
    scene = Scene.from_dict({"objects": [
        dict(shape="circle", color="red", size="big", x=.2, y=.2),
        dict(shape="square", color="blue", size="big", x=.5, y=.5),
        dict(shape="star", color="red", size="small", x=.8, y=.8),
        dict(shape="cross", color="white", size="small", x=.3, y=.65)]})
    assert check(scene, "a red circle").coverage == 0.25
    assert check(scene, "a red circle and a blue square").coverage == 0.5
    assert check(scene, "two red shapes").coverage == 0.5
    assert check(scene, "there are four shapes").coverage == 1.0
    record = check(scene, "a red circle, a blue square, a star and a white cross")
    assert record.true and record.coverage == 1.0 and record.rating == 4


# ----------------------------------------------------------------------------- references


def test_describe_gives_n_different_true_parsed_references():
    for i, scene in enumerate(make_scenes(150, 7)):
        refs = describe(scene, n=5, seed=i)
        assert len(refs) == 5 and len({r.lower().rstrip(".") for r in refs}) == 5
        for r in refs:
            record = check(scene, r)
            assert record.grammatical and record.true, (r, scene)
        assert refs == describe(scene, n=5, seed=i)


@pytest.mark.parametrize("a, b", [((.5, .2), (.5, .8)), ((.2, .5), (.8, .5))])
def test_true_relations_and_foil_pairs_are_true_when_centres_tie(a, b):
    """A hand-made scene may put two centres on one vertical (or horizontal) line: neither is
    left of the other, so a "true" relation must come from the other axis."""
    from capkit.world.describe import true_form
    from capkit.world.foils import foil_pair
    from capkit.world.forms import evaluate
    scene = Scene.from_dict({"objects": [dict(shape="circle", color="red", size="big", x=a[0],
                                              y=a[1]),
                                         dict(shape="square", color="blue", size="big", x=b[0],
                                              y=b[1])]})
    rng = np.random.default_rng(0)
    assert all(evaluate(true_form(scene, "relation", rng), scene) for _ in range(100))
    for seed in range(20):
        true, foil = foil_pair(scene, "relation", np.random.default_rng(seed))
        assert check(scene, true).true and check(scene, foil).true is False, (true, foil)

# ----------------------------------------------------------------------------- scenes, pixels


def test_make_scenes_is_spaced_non_overlapping_and_deterministic():
    from capkit.world.scene import HALF_EXTENT
    scenes = make_scenes(400, 0)
    assert scenes == make_scenes(400, 0) and scenes[:50] == make_scenes(50, 0)
    assert scenes != make_scenes(400, 1)
    assert {len(s.objects) for s in scenes} == {1, 2, 3, 4}
    assert {s.background for s in scenes} == {"plain", "noise"}
    for s in scenes:
        for a, b in itertools.combinations(s.objects, 2):
            dx, dy = abs(a.x - b.x), abs(a.y - b.y)
            assert dx >= 0.15 and dy >= 0.15
            reach = HALF_EXTENT[a.size] + HALF_EXTENT[b.size]
            assert dx >= reach or dy >= reach                   # boxes do not overlap
        for o in s.objects:
            m = HALF_EXTENT[o.size]
            assert m <= o.x <= 1 - m and m <= o.y <= 1 - m       # inside the image


def test_render_is_deterministic_rgb_and_antialiased():
    scene = make_scenes(3, 5)[2]
    a, b = scene.render(64), scene.render(64)
    assert a.mode == "RGB" and a.size == (64, 64) and a.tobytes() == b.tobytes()
    assert Scene.from_dict(scene.to_dict()).render(64).tobytes() == a.tobytes()
    assert scene.render(128).size == (128, 128)
    plain = Scene.from_dict({"objects": [dict(shape="circle", color="red", size="big", x=.5,
                                              y=.5)]})
    levels = {tuple(px) for px in np.asarray(plain.render(64)).reshape(-1, 3)}
    assert len(levels) > 3                     # edge pixels blend: antialiased, not 2 colours
    with pytest.raises(ValueError, match="8 pixels or more"):
        scene.render(0)


def test_background_is_darker_than_every_colour_in_its_strongest_channel():
    from capkit.world.render import background
    greys = max(int(np.asarray(background(s, 64)).max()) for s in make_scenes(300, 4))
    assert greys <= 120 < min(max(rgb) for rgb in RGB.values())
    luma = {c: 0.299 * r + 0.587 * g + 0.114 * b for c, (r, g, b) in RGB.items()}
    assert min(luma.values()) < greys        # so "darker" holds per channel, not in brightness


def test_scene_dict_round_trip():
    for scene in make_scenes(20, 2):
        assert Scene.from_dict(scene.to_dict()) == scene


@pytest.mark.parametrize("change, message", [
    ({"shape": "hexagon"}, "unknown shape 'hexagon': use one of circle, square"),
    ({"color": "magenta"}, "unknown color 'magenta': use one of red, green"),
    ({"size": "huge"}, "unknown size 'huge': use one of small, big"),
    ({"x": 1.5}, r"outside the image: centres are numbers in \[0, 1\]"),
    ({"y": -0.1}, r"outside the image"),
    ({"x": "left"}, r"outside the image"),
])
def test_from_dict_rejects_bad_objects(change, message):
    obj = {"shape": "circle", "color": "red", "size": "big", "x": 0.5, "y": 0.5, **change}
    with pytest.raises(ValueError, match=message):
        Scene.from_dict({"objects": [obj]})


def test_from_dict_rejects_empty_crowded_and_malformed_scenes():
    obj = {"shape": "circle", "color": "red", "size": "big", "x": 0.5, "y": 0.5}
    with pytest.raises(ValueError, match="1 to 4 objects, not 0"):
        Scene.from_dict({"objects": []})
    with pytest.raises(ValueError, match="1 to 4 objects, not 5"):
        Scene.from_dict({"objects": [obj] * 5})
    with pytest.raises(ValueError, match='needs "objects"'):
        Scene.from_dict({"shapes": [obj]})
    with pytest.raises(ValueError, match="lacks size"):
        Scene.from_dict({"objects": [{k: v for k, v in obj.items() if k != "size"}]})
    with pytest.raises(ValueError, match="unknown background"):
        Scene.from_dict({"objects": [obj], "background": "sky"})
    with pytest.raises(ValueError, match="needs a capkit.world.Scene"):
        check({"objects": [obj]}, "a circle")
    for bad in (5, "ab", [1]):
        with pytest.raises(ValueError, match="dict"):
            Scene.from_dict({"objects": bad})
    for seed in ("x", -5, 1.5, True):
        with pytest.raises(ValueError, match="background_seed"):
            Scene.from_dict({"objects": [obj], "background_seed": seed})
    with pytest.raises(ValueError, match="of type int, not Obj"):
        Scene((1, 2))
    with pytest.raises(ValueError, match="x=True is outside the image"):
        Scene.from_dict({"objects": [{**obj, "x": True}]})


def test_hand_made_scenes_hide_and_clip_nothing():
    """A caption's truth is the truth of the picture only if every object it talks about is
    drawn whole: boxes that overlap (one object hides another) or reach over the edge (the
    drawing is clipped) are refused, with the rule in the message."""
    red = {"shape": "circle", "color": "red", "size": "big", "x": 0.5, "y": 0.5}
    with pytest.raises(ValueError, match="overlap.*at least 0.2 apart"):   # four drawn as one
        Scene.from_dict({"objects": [red] * 4})
    square = {"shape": "square", "color": "blue", "size": "small", "x": 0.62, "y": 0.45}
    with pytest.raises(ValueError, match="overlap"):       # a corner of each box in the other
        Scene.from_dict({"objects": [red, square]})
    Scene.from_dict({"objects": [{**red, "x": 0.54}, {**square, "x": 0.7}]})  # 0.7 - 0.54 < 0.16
    touching = {**square, "x": 0.66}                        # 0.1 + 0.06 apart in x: allowed
    scene = Scene.from_dict({"objects": [red, touching]})
    pixels = np.asarray(scene.render(100)).reshape(-1, 3).tolist()
    assert pixels.count(list(RGB["blue"])) >= 10 * 10       # the 12 x 12 px square is whole
    with pytest.raises(ValueError, match=r"reaches over the edge.*\[0.1, 0.9\]"):
        Scene.from_dict({"objects": [{**red, "x": 0.95}]})
    with pytest.raises(ValueError, match="reaches over the edge"):
        Scene.from_dict({"objects": [{**square, "y": 0.02}]})
    Scene.from_dict({"objects": [{**square, "x": 0.94, "y": 0.06}]})   # flush with the corner
    scenes = make_scenes(50, 0)
    assert all(Scene(s.objects, s.background, s.background_seed) == s for s in scenes)
    assert Scene(list(scenes[0].objects)) == Scene(scenes[0].objects)    # a list is a tuple


def test_scene_grid_draws_every_scene_and_says_what_to_do():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from capkit.plots.world import scene_grid
    scenes = make_scenes(3, seed=0)
    axes = scene_grid(scenes, [describe(s, n=2) for s in scenes], columns=2, image_size=32)
    assert len(axes) == 4 and [len(a.images) for a in axes] == [1, 1, 1, 0]
    assert axes[0].get_title() == "scene 0" and axes[0].texts
    _, ax = plt.subplots()
    with pytest.raises(ValueError, match="one list"):
        scene_grid(scenes, [["a circle"]])
    with pytest.raises(ValueError, match="axes"):
        scene_grid(scenes, axes=ax)
    plt.close("all")


def test_bad_arguments_get_errors_that_name_them():
    from capkit.world import Count, Description, Relation, realise, render
    from capkit.world.foils import foil_pair
    scene = make_scenes(1, 0)[0]
    cases = [
        (lambda: make_scenes("3"), r"n='3': ask for zero or more scenes"),
        (lambda: make_scenes(2.5), r"n=2.5"),
        (lambda: make_scenes(1, seed=-1), r"seed=-1: give a whole number >= 0"),
        (lambda: make_scenes(1, seed=None), r"seed=None"),
        (lambda: describe(scene, n=-1), r"n=-1: ask for zero or more references"),
        (lambda: describe(scene, n=2.0), r"n=2.0"),
        (lambda: describe(scene.to_dict()), r"describe needs a capkit.world.Scene, not dict"),
        (lambda: describe(scene, seed=-1), r"seed=-1"),
        (lambda: render(scene.to_dict()), r"render needs a capkit.world.Scene"),
        (lambda: render(scene, 64.0), r"size=64.0: render at a whole number of 8 pixels"),
        (lambda: Count(0, Description("circle")), r"n=0: a count says one to 4"),
        (lambda: Count(5, Description("circle")), r"n=5: a count says one to 4"),
        (lambda: Relation(Description(), "near", Description()), r"unknown relation 'near'"),
        (lambda: Description("hexagon"), r"unknown shape 'hexagon': use one of .*or None"),
        (lambda: realise("a circle", np.random.default_rng(0)), r"not a logical form"),
        (lambda: parse(5), r"a caption is a string, not int"),
        (lambda: foil_pair(scene, "color", 0), r"pass np.random.default_rng"),
    ]
    for call, message in cases:
        with pytest.raises(ValueError, match=message):
            call()
    assert describe(scene, n=0) == []
    assert describe(scene, n=np.int64(2), seed=np.int64(3)) == describe(scene, n=2, seed=3)
    assert render(scene, np.int64(32)).tobytes() == render(scene, 32).tobytes()
