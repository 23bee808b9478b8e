"""SS, the synonym switch of Wang & Chan (2019, section 4.1) as a transform of strength gamma.

The switch itself is ``capkit.diversity.synonym_switch`` (each word replaced, with probability
p, by one of its 10 nearest GloVe neighbours, drawn by similarity); here p = gamma. A caption that
the draw left unchanged at gamma > 0 gets exactly one switched word, chosen at random among the
words that have GloVe neighbours, so the transform never returns the original caption when a
switch is possible (the generator alone leaves about (1 - gamma)^n of n-word captions as they
were). Words without neighbours (not in GloVe) stay.

Explained in notebooks/04_robustness.ipynb, section 1, "Eight ways to break a caption".
"""
from __future__ import annotations

from collections.abc import Sequence

from capkit.transforms.strength import caption_rng, check_gamma
from capkit.transforms.words import caption_words

SALT_SS = 5


def switch_synonyms(captions: Sequence[str], gamma: float, *, glove=None,
                    seed: int = 0) -> list[str]:
    """SS: ``synonym_switch`` with p = gamma, plus one forced switch where nothing changed."""
    from capkit.diversity.generators import synonym_switch
    gamma = check_gamma(gamma)
    words = caption_words(captions)
    texts = [" ".join(ws) for ws in words]
    if gamma == 0.0:
        return texts
    out = synonym_switch(texts, gamma, glove=glove, seed=seed)
    same = [i for i, (a, b) in enumerate(zip(out, texts)) if a == b]
    if not same:
        return out
    # one forced switch per unchanged caption: every word of those captions switched alone
    vocab = sorted({w for i in same for w in words[i]})
    switched = dict(zip(vocab, synonym_switch(vocab, 1.0, glove=glove, seed=seed)))
    for i in same:
        rng = caption_rng(seed, SALT_SS, i)
        for p in rng.permutation(len(words[i])):
            if switched[words[i][p]] != words[i][p]:
                new = list(words[i])
                new[p] = switched[words[i][p]]
                out[i] = " ".join(new)
                break
    return out
