"""Solutions to the exercises of notebooks/04_robustness.ipynb.

Written by `make student` from the notebook's solution cells (the one source):
edit the notebook, then run `make student`; tests/test_notebook_exercises.py fails
when this file and the notebook disagree.
"""


# -------------------- Exercise 4.1 --------------------
# Exercise 4.1: word permutation (WP) of strength gamma
def word_permute(caption, gamma, seed=0):
    """WP (Cui et al. eq. 8): k = round-half-up(gamma * n) words (2 <= k <= n; 0 at gamma 0)
    move along one random cycle. `caption`: words joined by single spaces; returns the same."""
    words = caption.split()
    n = len(words)
    k = 0 if gamma == 0 else min(n, max(2, int(np.floor(gamma * n + 0.5))))
    if k < 2:
        return caption
    chosen = np.random.default_rng(seed).permutation(n)[:k]
    out = list(words)
    for src, dst in zip(chosen, np.roll(chosen, -1)):    # position i's word -> position i + 1
        out[dst] = words[src]
    return " ".join(out)


# -------------------- Exercise 4.2 --------------------
# Exercise 4.2: the normalised curve, a ratio of means
def ratio_of_means(per_image):
    """s(gamma) = mean_i score[gamma, i] / mean_i score[0, i] for a (G, I) array -> (G,)."""
    means = np.asarray(per_image, dtype=float).mean(axis=1)     # (G,)
    return means / means[0]


# -------------------- Exercise 4.3 --------------------
# Exercise 4.3: the area under the curve, trapezoidal rule
def trapezoid_auc(gamma, score):
    """Area under score(gamma) over an increasing grid gamma, by the trapezoidal rule."""
    g, s = np.asarray(gamma, dtype=float), np.asarray(score, dtype=float)
    return float(np.sum(np.diff(g) * (s[1:] + s[:-1]) / 2))
