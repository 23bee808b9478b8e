"""Solutions to the exercises of notebooks/09_diversity.ipynb.

Written by `make student` from the notebook's solution cells (the one source):
edit the notebook, then run `make student`; tests/test_notebook_exercises.py fails
when this file and the notebook disagree.
"""


# -------------------- Exercise 9.1 --------------------
# Exercise 9.1: 1 - mBLEU, each caption against the rest of its set
def one_minus_mbleu(captions):
    """{"mbleu_1".."mbleu_4": 1 - mBLEU_n, "mbleu_mix": 1 - mean_n mBLEU_n} of one caption set."""
    others = [[c for j, c in enumerate(captions) if j != i] for i in range(len(captions))]
    parts = bleu(list(captions), others, n=4).parts
    mean = [float(np.mean(parts[f"bleu_{n}"])) for n in (1, 2, 3, 4)]     # mBLEU-1..4
    out = {f"mbleu_{n}": 1.0 - v for n, v in zip((1, 2, 3, 4), mean)}
    out["mbleu_mix"] = 1.0 - float(np.mean(mean))
    return out


# -------------------- Exercise 9.2 --------------------
# Exercise 9.2: LSA diversity of one caption set
def lsa_div(captions):
    """-log_m(r), r = sigma_1 / sum(sigma) of the (words x captions) count matrix."""
    tokens = [t.split() for t in ptb_tokenize(list(captions))]
    vocab = sorted({w for ws in tokens for w in ws})
    row = {w: k for k, w in enumerate(vocab)}
    M = np.zeros((len(vocab), len(tokens)))                           # (d, m)
    for i, ws in enumerate(tokens):
        for w in ws:
            M[row[w], i] += 1
    sigma = np.linalg.svd(M, compute_uv=False)
    return float(-np.log(sigma.max() / sigma.sum()) / np.log(len(tokens)))


# -------------------- Exercise 9.3 --------------------
# Exercise 9.3: sampling at a temperature
def sample_captions(captioner, images, m, temperature, seed):
    """m captions of each image (a list of lists), sampled from softmax(logits / temperature)."""
    net, generator = captioner.net, torch.Generator().manual_seed(seed)
    with torch.no_grad():
        grid, keys, h = (t.repeat_interleave(m, 0) for t in net.encode(pixels(images, 64)))
        word, drawn = torch.full((len(grid),), BOS), []
        for _ in range(captioner.cfg.max_len):
            logits, h = net.step(word, h, grid, keys)
            p = (logits / temperature).softmax(-1)
            word = torch.multinomial(p, 1, generator=generator)[:, 0]
            drawn.append(word)
    captions = []
    for row in torch.stack(drawn, 1).tolist():              # each caption up to its first <eos>
        row = row[:row.index(EOS)] if EOS in row else row
        captions.append(" ".join(captioner.words[i] for i in row))
    return [captions[k * m:(k + 1) * m] for k in range(len(images))]
