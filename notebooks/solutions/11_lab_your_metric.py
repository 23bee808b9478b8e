"""Solutions to the exercises of notebooks/11_lab_your_metric.ipynb.

Written by `make student` from the notebook's solution cells (the one source):
edit the notebook, then run `make student`; tests/test_notebook_exercises.py fails
when this file and the notebook disagree.
"""


# -------------------- Exercise 11.1 --------------------
# Exercise 11.1: the batch-size invariance clause
def batch_difference(fn, candidates, references, batch_size):
    """Largest |score in one batch - score in batches of `batch_size`| over the candidates."""
    ids = list(candidates)
    whole = np.asarray(fn(candidates, references).per_caption)
    parts = []
    for start in range(0, len(ids), batch_size):
        batch = ids[start:start + batch_size]
        scores = fn({i: candidates[i] for i in batch}, {i: references[i] for i in batch})
        parts.append(scores.per_caption)
    return float(np.max(np.abs(whole - np.concatenate(parts))))


# -------------------- Exercise 11.2 --------------------
# Exercise 11.2: a seeded dev/test split by image
def split_images(images, seed=0, fraction=0.5):
    """(dev, test) sets of image keys: a seeded random share `fraction` of the distinct images
    is dev, the rest test; the same for any order or repetition of the rows."""
    distinct = sorted(set(images))
    order = np.random.default_rng(seed).permutation(len(distinct))
    k = round(fraction * len(distinct))
    return {distinct[i] for i in order[:k]}, {distinct[i] for i in order[k:]}


# -------------------- Exercise 11.3 --------------------
# Exercise 11.3: the paired bootstrap test over images
def paired_test(a, b, human, groups, n_boot, seed):
    """(tau_c(a) - tau_c(b), one-sided p-value) from a paired bootstrap over the groups."""
    names, codes = np.unique(groups, return_inverse=True)
    members = [np.flatnonzero(codes == g) for g in range(len(names))]
    diff = lambda rows: (kendall_tau(a[rows], human[rows], variant="c")
                         - kendall_tau(b[rows], human[rows], variant="c"))
    d = diff(np.arange(len(a)))
    draws = np.random.default_rng(seed).integers(0, len(names), size=(n_boot, len(names)))
    d_star = np.array([diff(np.concatenate([members[g] for g in draw])) for draw in draws])
    return d, (1 + int(np.sum(d_star - d >= d))) / (1 + n_boot)
