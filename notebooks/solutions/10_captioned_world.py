"""Solutions to the exercises of notebooks/10_captioned_world.ipynb.

Written by `make student` from the notebook's solution cells (the one source):
edit the notebook, then run `make student`; tests/test_notebook_exercises.py fails
when this file and the notebook disagree.
"""


# -------------------- Exercise 10.1 --------------------
# Exercise 10.1: the truth of a relation caption, by brute force
def relation_is_true(scene, caption):
    """True when some object matching the subject stands in the relation to some OTHER object
    matching the object phrase (`caption` parses to a capkit.world.Relation)."""
    form = parse(caption)
    def fits(d, o):                          # an unsaid attribute (None) matches anything
        return all(want in (None, have) for want, have in
                   ((d.shape, o.shape), (d.color, o.color), (d.size, o.size)))
    def stands(a, b):                        # image coordinates: above = smaller y
        return {"left": a.x < b.x, "right": a.x > b.x,
                "above": a.y < b.y, "below": a.y > b.y}[form.relation]
    objs = scene.objects
    return any(fits(form.subject, a) and fits(form.object, b) and stands(a, b)
               for i, a in enumerate(objs) for j, b in enumerate(objs) if i != j)


# -------------------- Exercise 10.2 --------------------
# Exercise 10.2: coverage, the share of the objects a caption names
def caption_coverage(scene, caption):
    """Fraction of the scene's objects named by the caption's noun phrases, each object by at
    most one phrase and each phrase naming at most one object (0.0 if it does not parse)."""
    form = parse(caption)
    if form is None:
        return 0.0
    slots, objs = form.slots(), scene.objects
    for r in range(min(len(slots), len(objs)), 0, -1):        # the most objects first
        for some in itertools.combinations(slots, r):
            for pick in itertools.permutations(objs, r):
                if all(d.matches(o) for d, o in zip(some, pick)):
                    return r / len(objs)
    return 0.0


# -------------------- Exercise 10.3 --------------------
# Exercise 10.3: every one-word colour foil of a true caption
def color_foils(scene, caption):
    """Captions with one colour word of `caption` swapped for another colour, kept when
    capkit.world.check finds them grammatical and false in `scene`, each listed once."""
    words, found = caption.split(), []
    for k, w in enumerate(words):
        core = w.lower().rstrip(".,")
        if core not in COLORS:
            continue
        for other in COLORS:
            new = other.capitalize() if w[0].isupper() else other
            foil = " ".join(words[:k] + [new + w[len(core):]] + words[k + 1:])
            if other != core and world.check(scene, foil).true is False and foil not in found:
                found.append(foil)
    return found


# -------------------- Exercise 10.4 --------------------
# Exercise 10.4: pairwise accuracy on World-FOIL, a tie counts half
def foil_accuracy(score_a, score_b, label):
    """Share of pairs where the true caption (label 0: a, 1: b) scores higher; a tie is 1/2."""
    a, b, label = np.asarray(score_a, float), np.asarray(score_b, float), np.asarray(label)
    true, foil = np.where(label == 0, a, b), np.where(label == 0, b, a)
    return float(np.mean((true > foil) + 0.5 * (true == foil)))
