"""Caption text: the Stanford PTB tokenizer exactly as pycocoevalcap 1.2 runs it, in pure Python.

``ptb.py`` holds the tokenizer (lexer driver, Java lower-casing), ``ptb_fast.py`` its fast path
for plain captions; ``ptb_rules.py`` holds the lexer's grammar tables rebuilt from CoreNLP
3.4.1, ``ptb_lexer.py`` compiles them into one regex over a shrunk alphabet; ``flat_tokens.py``
holds the checks and the word numbering of tokenised captions as one flat list. Explained in
notebooks/01_classic_metrics.ipynb, section "Tokenisation".
"""
from capkit.text.ptb import CONTEXTS, PUNCTUATIONS, ptb_tokenize

__all__ = ["CONTEXTS", "PUNCTUATIONS", "ptb_tokenize"]
