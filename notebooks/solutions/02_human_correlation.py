"""Solutions to the exercises of notebooks/02_human_correlation.ipynb.

Written by `make student` from the notebook's solution cells (the one source):
edit the notebook, then run `make student`; tests/test_notebook_exercises.py fails
when this file and the notebook disagree.
"""


# -------------------- Exercise 2.1 --------------------
# Exercise 2.1: Kendall's tau-b and tau-c from the pairs
def my_kendall_tau(x, y, variant):
    """Kendall's tau-b (variant="b") or Stuart's tau-c (variant="c") of x and y."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    i, j = np.triu_indices(len(x), k=1)                  # every pair of rows once
    sx, sy = np.sign(x[i] - x[j]), np.sign(y[i] - y[j])
    c_minus_d = (sx * sy).sum()                          # ties in x or y contribute 0
    if variant == "b":
        return c_minus_d / np.sqrt((sx != 0).sum() * (sy != 0).sum())
    m = min(len(np.unique(x)), len(np.unique(y)))        # levels of the coarser variable
    return 2 * c_minus_d / (len(x) ** 2 * (m - 1) / m)


# -------------------- Exercise 2.2 --------------------
# Exercise 2.2: PASCAL-50S accuracy with half-credit ties
def pascal_accuracy(score_a, score_b, label, category):
    """Mean over categories of the share of pairs the metric orders as people did (tie = 1/2)."""
    a, b = np.asarray(score_a, dtype=float), np.asarray(score_b, dtype=float)
    label, category = np.asarray(label), np.asarray(category)
    credit = ((b > a) == (label == 1)).astype(float)    # 1: the metric agrees with people
    tie = np.abs(a - b) <= 1e-9 * np.maximum(np.abs(a), np.abs(b))   # equal up to last bits
    credit[tie] = 0.5                                    # a tie: half credit
    return float(np.mean([credit[category == c].mean() for c in np.unique(category)]))


# -------------------- Exercise 2.3 --------------------
# Exercise 2.3: a percentile bootstrap interval over images
def bootstrap_tau_c(metric, human, groups, n_boot, seed):
    """95% percentile bootstrap interval (low, high) of tau-c, resampling groups (images)."""
    names, codes = np.unique(groups, return_inverse=True)
    rows_of = [np.flatnonzero(codes == g) for g in range(len(names))]   # the rows of each image
    draws = np.random.default_rng(seed).integers(0, len(names), size=(n_boot, len(names)))
    taus = []
    for draw in draws:                                   # one resample of the images
        rows = np.concatenate([rows_of[g] for g in draw])
        taus.append(kendall_tau(metric[rows], human[rows], variant="c"))
    low, high = np.percentile(taus, [2.5, 97.5])
    return low, high


# -------------------- Exercise 2.4 --------------------
# Exercise 2.4: hard-negative accuracy per error type
def hard_negative_accuracy(score_pos, score_neg, types):
    """{"all": accuracy over all pairs, type: accuracy of its pairs} (a tie counts 1/2)."""
    pos, neg = np.asarray(score_pos, dtype=float), np.asarray(score_neg, dtype=float)
    types = np.asarray(types)
    tie = np.abs(pos - neg) <= 1e-9 * np.maximum(np.abs(pos), np.abs(neg))
    credit = np.where(tie, 0.5, (pos > neg).astype(float))
    out = {"all": float(credit.mean())}
    out.update({str(t): float(credit[types == t].mean()) for t in np.unique(types)})
    return out
