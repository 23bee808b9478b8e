"""Solutions to the exercises of notebooks/05_learned_critic.ipynb.

Written by `make student` from the notebook's solution cells (the one source):
edit the notebook, then run `make student`; tests/test_notebook_exercises.py fails
when this file and the notebook disagree.
"""


# -------------------- Exercise 5.1 --------------------
# Exercise 5.1: compact bilinear pooling as a Count Sketch
def cbp_sketch(c, s, D):
    """Count Sketch (length D) of the outer product of vectors `c` and `s`, the authors' hashes."""
    h1 = np.random.RandomState(1).randint(D, size=len(c))
    s1 = 2 * np.random.RandomState(3).randint(2, size=len(c)) - 1
    h2 = np.random.RandomState(5).randint(D, size=len(s))
    s2 = 2 * np.random.RandomState(7).randint(2, size=len(s)) - 1
    sketch = np.zeros(D)
    np.add.at(sketch, (h1[:, None] + h2[None, :]) % D, np.outer(c * s1, s * s2))
    return sketch


# -------------------- Exercise 5.2 --------------------
# Exercise 5.2: P(human) from the critic's two logits
def p_human(critic, reference, candidate):
    """P(human) of one (reference, candidate) pair from the critic's LSTM, context and head."""
    with torch.no_grad():
        ref_vec, cand_vec = critic.sentence_vectors([reference, candidate])   # (H,) each
        context = critic.model.context(ref_vec[None], None)                   # (1, H)
        y = critic.model.head(context, cand_vec[None])[0].double()            # (2,) logits
    return float(torch.sigmoid(y[0] - y[1]))                                  # softmax(y)[0]


# -------------------- Exercise 5.3 --------------------
# Exercise 5.3: the paper's mean over references and the code's random reference
def leic_both_rules(critic, candidate, references, seed):
    """{"mean": the paper's average P(human) over references, "random": the code's rule}."""
    per_reference = critic.score_pairs(list(references), [candidate] * len(references))
    pick = np.random.default_rng(seed).integers(len(references))
    return {"mean": float(per_reference.mean()), "random": float(per_reference[pick])}


# -------------------- Exercise 5.4 --------------------
# Exercise 5.4: the fake-caption mix of one training step
def fake_mix(kinds, has_machine, n_words):
    """{"system": p, "RC": p, "WP": p, "RW": p}: how often Negatives.draw makes each fake."""
    groups = (["system"] if "system" in kinds and has_machine else []) + \
             (["path"] if set(kinds) & {"RC", "WP", "RW"} else [])
    pathological = [k for k in ("RC", "WP", "RW") if k in kinds]
    mix = dict.fromkeys(("system", "RC", "WP", "RW"), 0.0)
    for group in groups:
        if group == "system":
            mix["system"] += 1 / len(groups)
            continue
        for kind in pathological:          # a reference under 3 words falls back to RC
            mix[kind if n_words >= 3 else "RC"] += 1 / len(groups) / len(pathological)
    return mix


# -------------------- Exercise 5.5 --------------------
# Exercise 5.5: the Monte Carlo experiment
def monte_carlo_experiment(seed, n_boot):
    """PRESET critics trained with and without MC fakes, all else equal, both benchmarked as LEIC
    on Flickr8k-Expert with a paired bootstrap of "without" against "with"."""
    runs = {name: train_leic(variant, PRESET, seed=seed, corpus=corpus, threads=1,
                             schedule=SCHEDULE)
            for name, variant in [("with", "leic_mc"), ("without", "leic")]}
    runs["bench"] = benchmark({name: functools.partial(leic, model=run.model)
                               for name, run in runs.items()}, "flickr8k_expert",
                              n_boot=n_boot, seed=seed, against="with")
    return runs

def verdict(comparison):
    """"MC fakes hurt" / "MC fakes help" / "no difference shown", from its 95% interval."""
    return ("MC fakes hurt" if comparison.low > 0 else
            "MC fakes help" if comparison.high < 0 else "no difference shown")
