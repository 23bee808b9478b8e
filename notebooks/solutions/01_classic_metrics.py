"""Solutions to the exercises of notebooks/01_classic_metrics.ipynb.

Written by `make student` from the notebook's solution cells (the one source):
edit the notebook, then run `make student`; tests/test_notebook_exercises.py fails
when this file and the notebook disagree.
"""


# -------------------- Exercise 1.1 --------------------
# Exercise 1.1: BLEU-n of one caption, from scratch
def sentence_bleu(cand, refs, n=4):
    """BLEU-n of token list `cand` against the token lists `refs` (pycocoevalcap's smoothing)."""
    grams = lambda words, k: Counter(tuple(words[i:i + k]) for i in range(len(words) - k + 1))
    log_p = []
    for k in range(1, n + 1):
        best = Counter()
        for r in refs:
            best |= grams(r, k)                      # max count of each k-gram in one reference
        clipped = sum(min(c, best[g]) for g, c in grams(cand, k).items())
        log_p.append(np.log((clipped + 1e-15) / (max(len(cand) - k + 1, 0) + 1e-9)))
    r = min((abs(len(ref) - len(cand)), len(ref)) for ref in refs)[1]     # closest, then shorter
    return float(min(1.0, np.exp(1 - r / len(cand))) * np.exp(np.mean(log_p)))


# -------------------- Exercise 1.2 --------------------
# Exercise 1.2: ROUGE-L from the longest common subsequence
def rouge_l_one(cand, refs, beta=1.2):
    """{"lcs": LCS length with each reference, "f": ROUGE-L F} of token lists, as pycocoevalcap."""
    lcs = []
    for ref in refs:
        prev = [0] * (len(ref) + 1)                   # one row of the DP table
        for a in cand:
            row = [0]
            for j, b in enumerate(ref):
                row.append(prev[j] + 1 if a == b else max(prev[j + 1], row[j]))
            prev = row
        lcs.append(prev[-1])
    p = max(l / len(cand) for l in lcs)               # best precision and best recall,
    r = max(l / len(ref) for l, ref in zip(lcs, refs))  # each over the references on its own
    f = (1 + beta**2) * p * r / (r + beta**2 * p) if p and r else 0.0
    return {"lcs": lcs, "f": f}


# -------------------- Exercise 1.3 --------------------
# Exercise 1.3: CIDEr-D of one caption, with given document frequencies
def cider_d_one(cand, refs, df):
    """CIDEr-D of token list `cand` against token lists `refs`, with df from `document_frequencies`."""
    def vec(words, n):                                # tf-idf vector of the n-grams
        grams = Counter(tuple(words[i:i + n]) for i in range(len(words) - n + 1))
        return {g: c * (np.log(df.n_documents) - np.log(max(1.0, df.counts.get(g, 0.0))))
                for g, c in grams.items()}
    total = 0.0
    for n, r in ((n, r) for n in range(1, 5) for r in refs):
        vc, vr = vec(cand, n), vec(r, n)
        norm = np.sqrt(sum(w * w for w in vc.values()) * sum(w * w for w in vr.values()))
        dot = sum(min(vc.get(g, 0.0), w) * w for g, w in vr.items())         # clipped
        penalty = np.exp(-((len(cand) - 1) - (len(r) - 1)) ** 2 / (2 * 6.0**2))
        total += (dot / norm if norm else dot) * penalty
    return float(10 * total / (4 * len(refs)))


# -------------------- Exercise 1.4 --------------------
# Exercise 1.4: a wrong caption that BLEU-4 loves
def adversarial_caption():
    """A grammatical caption of GAME_SCENE that is FALSE, with BLEU-4 > 0.5 against GAME_REFS."""
    # keep a reference's words and most of its 4-grams, flip one relation word: the blue
    # triangle is to the LEFT of the white star
    return "An image with a blue triangle to the right of a white star."
