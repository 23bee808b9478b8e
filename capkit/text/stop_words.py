"""Stop-word lists: NLTK's English list (embedded: NLTK's data packages cannot be downloaded
offline), which MEAN (Zeng & Kwong) and Wang & Chan's LSA both name, and the others by name;
``is_stop`` reads PTB tokens against a list (B@1*, the LSA projection)."""
from __future__ import annotations

from collections.abc import Iterable

NLTK_ENGLISH = frozenset("""i me my myself we our ours ourselves you you're you've you'll you'd
your yours yourself yourselves he him his himself she she's her hers herself it it's its itself
they them their theirs themselves what which who whom this that that'll these those am is are was
were be been being have has had having do does did doing a an the and but if or because as until
while of at by for with about against between into through during before after above below to
from up down in out on off over under again further then once here there when where why how all
any both each few more most other some such no nor not only own same so than too very s t can
will just don don't should should've now d ll m o re ve y ain aren aren't couldn couldn't didn
didn't doesn doesn't hadn hadn't hasn hasn't haven haven't isn isn't ma mightn mightn't mustn
mustn't needn needn't shan shan't shouldn shouldn't wasn wasn't weren weren't won won't wouldn
wouldn't""".split())


def stop_words(name: str | Iterable[str] = "nltk") -> frozenset[str]:
    """A stop-word set by name (``nltk`` as the paper, ``spacy``, ``sklearn``, ``none``) or
    the words given."""
    if not isinstance(name, str):
        return frozenset(w.lower() for w in name)
    if name == "nltk":
        return NLTK_ENGLISH
    if name == "spacy":
        from spacy.lang.en.stop_words import STOP_WORDS
        return frozenset(STOP_WORDS)
    if name == "sklearn":
        from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS
        return frozenset(ENGLISH_STOP_WORDS)
    if name == "none":
        return frozenset()
    raise ValueError(f"unknown stop-word list {name!r}; use 'nltk' (the paper's), 'spacy', "
                     "'sklearn', 'none', or pass your own words")


def is_stop(token: str, stop: frozenset[str]) -> bool:
    """Whether a PTB token is a stop word: on the list, or a clitic whose letters are ("'s" ->
    "s", "'re" -> "re"), or "n't" when "not" is."""
    return token in stop or token.lstrip("'") in stop or (token == "n't" and "not" in stop)
