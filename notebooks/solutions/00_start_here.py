"""Solutions to the exercises of notebooks/00_start_here.ipynb.

Written by `make student` from the notebook's solution cells (the one source):
edit the notebook, then run `make student`; tests/test_notebook_exercises.py fails
when this file and the notebook disagree.
"""


# -------------------- Exercise 0.1 --------------------
# Exercise 0.1: corpus BLEU from pooled counts
def corpus_bleu(parts, n=4):
    """Corpus BLEU-n from the per-caption counts in `bleu(...).parts` (pooled, formula once)."""
    correct = np.asarray(parts["correct"]).sum(axis=0)[:n]      # (n,) matches per order
    guess = np.asarray(parts["guess"]).sum(axis=0)[:n]          # (n,) candidate n-grams
    c, r = np.sum(parts["testlen"]), np.sum(parts["reflen"])    # corpus lengths
    bp = min(1.0, np.exp(1 - r / c))                            # brevity penalty, once
    return float(bp * np.exp(np.mean(np.log(correct / guess))))


# -------------------- Exercise 0.2 --------------------
# Exercise 0.2: Kendall's tau-c from its definition
def kendall_tau_c(x, y):
    """Kendall's tau-c of metric scores `x` and human scores `y` (sequences of equal length)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    n, m = len(x), min(len(np.unique(x)), len(np.unique(y)))
    # +1 concordant, -1 discordant, 0 tied; every pair appears twice in the (n, n) matrix
    s = np.sign(x[:, None] - x[None, :]) * np.sign(y[:, None] - y[None, :])
    return float(s.sum() / (n**2 * (m - 1) / m))


# -------------------- Exercise 0.3 --------------------
# Exercise 0.3: from items to ratings, the benchmark's number by hand
def expert_tau_c(item_scores, judgments):
    """100 x Kendall tau-c between one score per item and the human ratings of `judgments`."""
    rows = np.asarray(item_scores, dtype=float)[judgments.item_of_rating]   # (R,) one per rating
    return 100 * kendall_tau(rows, judgments.human, variant="c")
