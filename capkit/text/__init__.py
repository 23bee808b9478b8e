"""Caption text: the Stanford PTB tokenizer exactly as pycocoevalcap 1.2 runs it, in pure Python.

``ptb.py`` holds the tokenizer (lexer driver, Java lower-casing), ``ptb_fast.py`` its fast path
for plain captions; ``ptb_rules.py`` holds the lexer's grammar tables rebuilt from CoreNLP
3.4.1, ``ptb_lexer.py`` compiles them into one regex over a shrunk alphabet, and
``pattern_cache.py`` keeps that regex's compiled program between processes. Explained in
notebooks/01_classic_metrics.ipynb, section "Tokenisation".
"""
from capkit.text.ptb import CONTEXTS, PUNCTUATIONS, ptb_tokenize

__all__ = ["CONTEXTS", "PUNCTUATIONS", "ptb_tokenize"]
