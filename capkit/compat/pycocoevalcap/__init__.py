"""pycocoevalcap 1.2, module for module, computed by capkit: change one import, keep the script.

    from capkit.compat.pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer
    from capkit.compat.pycocoevalcap.bleu.bleu import Bleu    # meteor, rouge, cider, spice
    from capkit.compat.pycocoevalcap.eval import COCOEvalCap
    from capkit.compat.pycocoevalcap import Bleu, Cider, CiderD, Meteor, Rouge, PTBTokenizer
    from capkit.compat.pycocoevalcap.bleu.bleu_scorer import BleuScorer   # and CiderScorer

Same constructors, ``compute_score(gts, res)`` signatures, return types and ``method()`` names
as pycocoevalcap 1.2, the same numbers (within 1e-9; ``tests/test_compat_pycocoevalcap.py``),
and no Java except for SPICE. Extras: ``Cider(df=...)`` / ``CiderD(df=...)`` take training-corpus
document frequencies for self-critical training, saved and loaded with
``save_document_frequencies`` / ``load_document_frequencies`` (JSON, never pickle).

Inputs are checked as the original's ``assert`` statements check them, raising ``InputError``
(a ``ValueError`` that is also an ``AssertionError``). Empty candidates score 0, as in the
original.
"""
from capkit.compat.pycocoevalcap.bleu.bleu import Bleu
from capkit.compat.pycocoevalcap.bleu.bleu_scorer import BleuScorer
from capkit.compat.pycocoevalcap.cider.cider import Cider, CiderD
from capkit.compat.pycocoevalcap.cider.cider_scorer import CiderScorer
from capkit.compat.pycocoevalcap.cider.document_frequency import (
    load_document_frequencies,
    save_document_frequencies,
)
from capkit.compat.pycocoevalcap.eval import COCOEvalCap
from capkit.compat.pycocoevalcap.inputs import InputError
from capkit.compat.pycocoevalcap.meteor.meteor import Meteor
from capkit.compat.pycocoevalcap.rouge.rouge import Rouge
from capkit.compat.pycocoevalcap.spice.spice import Spice
from capkit.compat.pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer

__all__ = ["Bleu", "BleuScorer", "COCOEvalCap", "Cider", "CiderD", "CiderScorer", "InputError",
           "Meteor", "PTBTokenizer", "Rouge", "Spice", "load_document_frequencies",
           "save_document_frequencies"]
