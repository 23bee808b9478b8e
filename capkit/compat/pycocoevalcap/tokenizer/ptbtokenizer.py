"""pycocoevalcap's ``PTBTokenizer`` without Java: ``capkit.text.ptb_tokenize`` behind the same API.

Like the original, all captions of one ``tokenize`` call are lexed as one stream in the dict's
order (``context="stream"``), so the output equals the jar's token for token. One deliberate
difference: a ``\\r``, U+2028 or other line break inside a caption acts as a space, where the
original would shift every later caption onto the wrong id (it replaces only ``\\n``).
"""
from __future__ import annotations

from capkit.text import ptb_tokenize

# the tokens the original removes after tokenising (capkit.text applies the same filter)
PUNCTUATIONS = ["''", "'", "``", "`", "-LRB-", "-RRB-", "-LCB-", "-RCB-",
                ".", "?", "!", ",", ":", "-", "--", "...", ";"]


class PTBTokenizer:
    """Stanford PTBTokenizer 3.4.1 (``-lowerCase``) plus pycocoevalcap's punctuation filter."""

    def tokenize(self, captions_for_image: dict) -> dict:
        """``{id: [{"caption": text, ...}, ...]}`` -> ``{id: [tokenised text, ...]}``.

        Ids with an empty list are left out of the result, as the original does.
        """
        image_id = [k for k, v in captions_for_image.items() for _ in range(len(v))]
        texts = [c["caption"] for v in captions_for_image.values() for c in v]
        out: dict = {}
        for k, line in zip(image_id, ptb_tokenize(texts, context="stream")):
            out.setdefault(k, []).append(line)
        return out
