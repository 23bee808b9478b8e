"""Solutions to the exercises of notebooks/03_embedding_metrics.ipynb.

Written by `make student` from the notebook's solution cells (the one source):
edit the notebook, then run `make student`; tests/test_notebook_exercises.py fails
when this file and the notebook disagree.
"""


# -------------------- Exercise 3.1 --------------------
# Exercise 3.1: MEAN from GloVe vectors
def mean_score(candidate, references):
    """MEAN of one candidate: mean over references of cos(centroid(candidate), centroid(ref))."""
    def centroid(text):
        words = content_words(text, glove.index, NLTK_ENGLISH)
        if not words:
            return np.zeros(glove.dim)                   # no content word: cosine 0
        v = np.mean([glove.vector(w) for w in words], axis=0)
        return v / np.linalg.norm(v)

    c = centroid(candidate)
    return float(np.mean([c @ centroid(r) for r in references]))


# -------------------- Exercise 3.2 --------------------
# Exercise 3.2: BERTScore's greedy matching, with several references
def bertscore_prf(candidate, references):
    """[P, R, F] of BERTScore (MiniLM layer 5, no idf), each the maximum over the references."""
    best = np.full(3, -np.inf)
    for ref in references:
        m = token_match(candidate, ref)
        p = m.candidate_weights @ m.similarity.max(axis=1)   # each candidate token's best match
        r = m.reference_weights @ m.similarity.max(axis=0)   # each reference token's best match
        best = np.maximum(best, [p, r, 2 * p * r / (p + r)])
    return best


# -------------------- Exercise 3.3 --------------------
# Exercise 3.3: CLIP-S and RefCLIP-S from the paper's equations
def clip_scores(caption, references, image):
    """(CLIP-S, RefCLIP-S) of one caption with the notebook's `clip` model (paper's definitions)."""
    unit = lambda x: x / np.linalg.norm(x, axis=1, keepdims=True)
    c = unit(clip.embed_texts(["A photo depicts " + caption]).astype(float))[0]
    v = unit(clip.embed_images([image]).astype(float))[0]
    r = unit(clip.embed_texts(["A photo depicts " + x for x in references]).astype(float))
    clip_s = 2.5 * max(float(c @ v), 0.0)
    ref_cos = max(float((r @ c).max()), 0.0)
    if clip_s + ref_cos == 0:
        return clip_s, 0.0
    return clip_s, 2 * clip_s * ref_cos / (clip_s + ref_cos)
