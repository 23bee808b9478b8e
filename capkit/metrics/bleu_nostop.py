"""B@1* (Zeng & Kwong 2020, Table I): BLEU-1 after the stop words are removed.

The paper removes "non-significant stop words" before BLEU-1 to show how much of BLEU-1's
numerator is matched function words (COCO systems drop from ~0.75 to ~0.42). It names NLTK's
English list for its MEAN metric and, by the same section, for this one; capkit embeds that list
(179 words, ``capkit.text.stop_words.NLTK_ENGLISH``, since NLTK's data cannot be downloaded
offline). ``stopwords="spacy"`` / ``"sklearn"`` / your own words also work.

Computed on the metric's PTB tokens (``capkit.metrics.inputs.prepare``), so a token is a stop word
when it is on the list, or is a clitic whose letters are ("'s" -> "s", "'re" -> "re"), or is
"n't" ("not"): ``capkit.text.stop_words.is_stop``. Everything else is capkit's BLEU (``capkit.metrics.bleu``, pycocoevalcap's
formulas) on the filtered token lists: clipping, "closest" brevity penalty, pooled corpus score,
1e-15/1e-9 smoothing. A candidate made only of stop words scores ~0 (empty after filtering).
Explained in notebooks/06_intrinsic_i2ce.ipynb, section "Soft and hard matching".
"""
from __future__ import annotations

from collections.abc import Iterable

from capkit.metrics.bleu import bleu
from capkit.metrics.inputs import CaptionBatch, prepare
from capkit.scores import Scores, content_hash, make_signature
from capkit.text.stop_words import is_stop, stop_words


def remove_stop_words(batch: CaptionBatch, stop: frozenset[str]) -> CaptionBatch:
    """The same batch with every stop-word token removed from candidates and references."""
    def keep(tokens: list[str]) -> list[str]:
        return [t for t in tokens if not is_stop(t, stop)]
    return CaptionBatch([keep(c) for c in batch.candidates],
                        [[keep(r) for r in refs] for refs in batch.references],
                        batch.ids, batch.tokenizer)


def bleu_nostop(candidates, references=None, images=None, *, n: int = 1,
                stopwords: str | Iterable[str] = "nltk", tokenizer: str = "ptb") -> Scores:
    """BLEU-n on stop-word-free tokens (B@1* of the I2CE paper for n = 1); ``parts`` as
    ``bleu``'s. ``images`` is ignored."""
    stop = stop_words(stopwords)
    batch = remove_stop_words(prepare(candidates, references, tokenizer), stop)
    s = bleu(batch, n=n)
    stop_name = stopwords if isinstance(stopwords, str) else f"given#{content_hash(stop)}"
    sig = make_signature(f"bleu_{n}_nostop", n=n, stopwords=f"{stop_name}({len(stop)})",
                         bp="closest", smooth="1e-15/1e-9", corpus="pooled", tok=batch.tokenizer)
    return Scores(f"bleu_{n}_nostop", s.per_caption, s.corpus, sig, s.ids, s.parts)


def bleu_1_nostop(candidates, references=None, images=None, *,
                  stopwords: str | Iterable[str] = "nltk", tokenizer: str = "ptb") -> Scores:
    """B@1*: BLEU-1 without stop words (NLTK's list), as the paper's Table I."""
    return bleu_nostop(candidates, references, images, n=1, stopwords=stopwords,
                       tokenizer=tokenizer)
