"""Solutions to the exercises of notebooks/08_vilbertscore.ipynb.

Written by `make student` from the notebook's solution cells (the one source):
edit the notebook, then run `make student`; tests/test_notebook_exercises.py fails
when this file and the notebook disagree.
"""


# -------------------- Exercise 8.1 --------------------
# Exercise 8.1: greedy matching, P, R and F from two token-state matrices
def greedy_match(c, r):
    """(P, R, F) of candidate states `c` (Tc, D) against reference states `r` (Tr, D)."""
    cu = c / np.linalg.norm(c, axis=1, keepdims=True)
    ru = r / np.linalg.norm(r, axis=1, keepdims=True)
    sim = cu @ ru.T                                                   # (Tc, Tr) cosines
    p, rec = sim.max(axis=1).mean(), sim.max(axis=0).mean()
    return p, rec, (2 * p * rec / (p + rec) if p + rec else 0.0)


# -------------------- Exercise 8.2 --------------------
# Exercise 8.2: greedy matching from a padded batch
def padded_prf(hidden, mask, i, j):
    """(P, R, F) of caption i against caption j; padding, <bos> and <eos> left out."""
    def tokens(row):
        n = int(mask[row].sum())                  # real positions: <bos> w_1 .. w_m <eos>
        return hidden[row, 1:n - 1]
    return greedy_prf(tokens(i), tokens(j))


# -------------------- Exercise 8.3 --------------------
# Exercise 8.3: ViLBERTScore F, the mean over references
def vilbert_f(encoder, candidate, references, image, with_image):
    """F of `candidate`, greedy-matched with each reference (same image), averaged."""
    texts = [candidate] + list(references)
    encoded = encoder.token_states(texts, [image] * len(texts), encoder.num_layers,
                                   with_image=with_image)
    per_reference = [greedy_prf(encoded[0][1], r) for _, r in encoded[1:]]   # (P, R, F) each
    return float(np.mean(per_reference, axis=0)[2])
