"""Solutions to the exercises of notebooks/06_intrinsic_i2ce.ipynb.

Written by `make student` from the notebook's solution cells (the one source):
edit the notebook, then run `make student`; tests/test_notebook_exercises.py fails
when this file and the notebook disagree.
"""


# -------------------- Exercise 6.1 --------------------
# Exercise 6.1: Bahdanau (additive) attention with a padding mask
def additive_attention(att, s, h, mask):
    """a_j = softmax_j(v . tanh(W_k h_j + W_q s + b_q)) over real words, c = sum_j a_j h_j;
    s (B, H), h (B, S, H), mask (B, S) -> context (B, H), weights (B, S)."""
    query = s @ att.query.weight.T + att.query.bias                         # (B, A)
    scores = torch.tanh(h @ att.keys.weight.T + query[:, None, :]) @ att.v.weight[0]  # (B, S)
    weights = torch.softmax(scores.masked_fill(~mask, -torch.inf), dim=-1)  # (B, S)
    return (weights[:, :, None] * h).sum(dim=1), weights                    # (B, H), (B, S)


# -------------------- Exercise 6.2 --------------------
# Exercise 6.2: I2CE, the cosine of intrinsic vectors, three aggregations
def i2ce_by_hand(encoder, candidate, references):
    """{"max", "mean", "centroid"} of the cosines of I(candidate) with I(reference)."""
    vectors = encoder.encode([candidate, *references])                 # (1 + R, H)
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    cos = unit[1:] @ unit[0]                                           # (R,)
    centre = unit[1:].mean(axis=0)
    return {"max": float(cos.max()), "mean": float(cos.mean()),
            "centroid": float(centre @ unit[0] / np.linalg.norm(centre))}


# -------------------- Exercise 6.3 --------------------
# Exercise 6.3: the attention experiment
def attention_experiment(seed, n_boot):
    """PRESET trained with and without attention, all else equal, both benchmarked as I2CE on
    Flickr8k-Expert with a paired bootstrap of "without" against "with"."""
    runs = {name: training.train_i2ce(PRESET, seed=seed, corpus=corpus, threads=1,
                                      model_config=change)
            for name, change in [("with", None), ("without", {"attention": 0})]}
    runs["bench"] = benchmark({name: functools.partial(i2ce, model=run.model)
                               for name, run in runs.items()}, "flickr8k_expert",
                              n_boot=n_boot, seed=seed, against="with")
    return runs

def verdict(comparison):
    """"attention hurts" / "attention helps" / "no difference shown", from its 95% interval."""
    return ("attention hurts" if comparison.low > 0 else
            "attention helps" if comparison.high < 0 else "no difference shown")
