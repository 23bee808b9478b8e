"""Solutions to the exercises of notebooks/07_umic.ipynb.

Written by `make student` from the notebook's solution cells (the one source):
edit the notebook, then run `make student`; tests/test_notebook_exercises.py fails
when this file and the notebook disagree.
"""


# -------------------- Exercise 7.1 --------------------
# Exercise 7.1: UMIC's repeat-and-remove negative, seeded as capkit does it
def repeat_remove_by_hand(captions, gamma, seed):
    """Each caption with every sampled word repeated or removed (see the task above)."""
    out = []
    for i, caption in enumerate(captions):
        words = caption.split()
        rng = np.random.default_rng([seed, 3, i])
        draw, coin = rng.random(len(words)), rng.random(len(words))
        sampled = draw < gamma
        sampled[np.argmin(draw)] = True                  # at least one word changes
        repeat = sampled & (coin < 0.5)
        remove = sampled & ~repeat
        if remove.all():                                 # never remove every word
            remove[np.argmax(draw)], repeat[np.argmax(draw)] = False, True
        out.append(" ".join(w for w, rep, rem in zip(words, repeat, remove)
                            if not rem for _ in range(1 + rep)))
    return out


# -------------------- Exercise 7.2 --------------------
# Exercise 7.2: the UMIC score, sigmoid of the matching logit
def umic_by_hand(encoder, captions, images):
    """(N,) float64 sigmoid(rank_output logit) of each (caption, image) pair; no references."""
    with torch.no_grad():
        out = encoder.forward(encoder.encode_text(captions), encoder.pixels(images))
    return torch.sigmoid(out.logits[:, 0].double()).numpy()


# -------------------- Exercise 7.3 --------------------
# Exercise 7.3: UMIC's hinge ranking loss
def umic_hinge(s_pos, s_neg, valid=None, margin=0.2):
    """Mean of max(0, margin + s_neg[i][k] - s_pos[i]) over the valid pairs (i, k)."""
    total, count = 0.0, 0
    for i, positive in enumerate(s_pos):
        for k, negative in enumerate(s_neg[i]):
            if valid is None or valid[i][k]:
                total += max(0.0, margin + negative - positive)
                count += 1
    return total / max(count, 1)
