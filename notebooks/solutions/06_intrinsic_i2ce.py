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
# Exercise 6.2: the teacher-forced reconstruction loss
def reconstruction_loss(model, ids):
    """Mean cross-entropy of w_1..w_n <eos> given <bos> w_1..w_n and the encoded caption, over
    the real target tokens of a batch of captions given as lists of word ids."""
    src, lengths = pad_batch(ids)                                      # (B, S), (B,)
    B = len(ids)
    tgt = torch.cat([src, torch.full((B, 1), PAD)], dim=1)             # (B, S + 1)
    tgt[torch.arange(B), lengths] = EOS                                # w_1 .. w_n <eos>
    tgt_in = torch.cat([torch.full((B, 1), BOS), src], dim=1)          # <bos> w_1 .. w_n
    states, _ = model(src, lengths, tgt_in)                            # (B, S + 1, H)
    logits = model.decoder.out(states)                                 # (B, S + 1, n_out)
    return float(torch.nn.functional.cross_entropy(
        logits.reshape(-1, logits.size(-1)), model.targets(tgt).reshape(-1), ignore_index=PAD))


# -------------------- Exercise 6.3 --------------------
# Exercise 6.3: I2CE, the cosine of intrinsic vectors, three aggregations
def i2ce_by_hand(encoder, candidate, references):
    """{"max", "mean", "centroid"} of the cosines of I(candidate) with I(reference)."""
    vectors = encoder.encode([candidate, *references])                 # (1 + R, H)
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    cos = unit[1:] @ unit[0]                                           # (R,)
    centre = unit[1:].mean(axis=0)
    return {"max": float(cos.max()), "mean": float(cos.mean()),
            "centroid": float(centre @ unit[0] / np.linalg.norm(centre))}
