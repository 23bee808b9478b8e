"""Scene-graph tuples from a spaCy dependency parse: SPICE's rules, re-expressed for spaCy.

SPICE (Anderson et al. 2016) parses a caption with Stanford CoreNLP 3.6.0 (collapsed,
CC-processed Universal Dependencies) and reads tuples off it with Semgrex rules
(``SpiceParser``: subject-predicate-object triplets, ``acl`` verbs, copulas, adjectival
modifiers and predicates, prepositional and possessive modifiers, numeric modifiers of plural
nouns, compound nouns as noun + attribute, every other noun as an object). Here the same rules
read a spaCy parse (``en_core_web_sm``, ClearNLP labels: ``prep`` + ``pobj`` instead of
``nmod:<prep>``, ``be`` as the root of copulas, no collapsed conjunctions). The proposed tuples
have SPICE's shapes: ``(object,)``, ``(object, attribute)``, ``(subject, object, relation)``.

Deliberate differences (documented in ``spice_lite``): subjects and objects are propagated
through noun conjunctions and to ``xcomp``/``advcl`` verbs explicitly (CoreNLP's CC processing
does this in the parse); ``acl``/``relcl`` verbs without an object give a (noun, verb)
attribute; "in front of", "on top of", "next to"... become one relation; no pronoun resolution.

Explained in notebooks/01_classic_metrics.ipynb, section "SPICE".
"""
from __future__ import annotations

NOUN_TAGS = frozenset({"NN", "NNS", "NNP", "NNPS"})
PLURAL_TAGS = frozenset({"NNS", "NNPS"})
SUBJECTS = frozenset({"nsubj", "nsubjpass"})
OBJECTS = frozenset({"dobj", "dative", "oprd"})
PHRASE_NOUNS = frozenset({"front", "top", "middle", "side", "back", "edge", "bottom", "center",
                          "centre", "rest", "end"})     # "in front of X" -> (_, in front of, X)
ADVERB_PREPS = frozenset({"next", "close", "near", "out", "away", "up", "down"})  # "next to"


def is_noun(tok) -> bool:
    return tok.tag_ in NOUN_TAGS


def lemma(tok) -> str:
    return tok.lemma_.strip().lower()


def with_conjuncts(tok) -> list:
    """A noun and the nouns coordinated with it ("a cat and a dog")."""
    out = [tok]
    for c in tok.conjuncts:
        if is_noun(c):
            out.append(c)
    return out


def _prep_phrase(prep):
    """(relation words, object noun) for a ``prep`` token, collapsing "in front of X"."""
    words = [prep.lower_]
    obj = next((c for c in prep.children if c.dep_ == "pobj"), None)
    if obj is None:                                      # "next to": prep under an adverb
        return None
    if obj.lower_ in PHRASE_NOUNS:
        inner = next((c for c in obj.children if c.dep_ == "prep" and c.lower_ == "of"), None)
        if inner is not None:
            sub = _prep_phrase(inner)
            if sub is not None and is_noun(sub[1]):
                return " ".join([*words, obj.lower_, *sub[0].split()]), sub[1]
    return " ".join(words), obj


def prep_phrases(head):
    """(relation, object noun) of the prepositional phrases attached to ``head``."""
    out = []
    for child in head.children:
        if child.dep_ == "prep":
            found = _prep_phrase(child)
        elif child.dep_ == "advmod" and child.lower_ in ADVERB_PREPS:
            prep = next((c for c in child.children if c.dep_ == "prep"), None)
            found = None if prep is None else _prep_phrase(prep)
            if found is not None:
                found = (f"{child.lower_} {found[0]}", found[1])
        else:
            continue
        if found is not None and is_noun(found[1]):
            out.append(found)
    return out


def verb_subjects(verb) -> list:
    """Nouns acting as the subject of ``verb`` (own subject, noun it modifies, or inherited)."""
    own = [c for c in verb.children if c.dep_ in SUBJECTS and is_noun(c)]
    if own:
        return own
    if verb.dep_ in ("acl", "relcl") and is_noun(verb.head):
        return [verb.head]
    if verb.dep_ in ("xcomp", "advcl", "conj") and verb.head is not verb:
        return verb_subjects(verb.head) if verb.head.pos_ in ("VERB", "AUX") else []
    return []


def predicate(verb) -> str:
    """Verb lemma plus its particle ("pick up"), as ``SpiceParser.getPredicate``."""
    prt = next((c for c in verb.children if c.dep_ == "prt"), None)
    return lemma(verb) if prt is None else f"{lemma(verb)} {prt.lower_}"


def _verb_tuples(verb, out: list) -> None:
    subjects = [n for s in verb_subjects(verb) for n in with_conjuncts(s)]
    if not subjects:
        return
    be = lemma(verb) == "be"
    pred = predicate(verb)
    targets = []
    for child in verb.children:
        if child.dep_ in OBJECTS and is_noun(child):
            targets += [(pred, o) for o in with_conjuncts(child)]
        elif child.dep_ == "agent":                       # "a ball thrown by a boy"
            agent = next((c for c in child.children if c.dep_ == "pobj" and is_noun(c)), None)
            if agent is not None:
                out += [(a.i, s.i, pred) for s in subjects for a in with_conjuncts(agent)]
                return
        elif child.dep_ == "acomp" and be:                # "the man is tall"
            out += [(s.i, ("attr", child)) for s in subjects]
        elif child.dep_ == "attr" and is_noun(child) and be:   # "the man is a rider"
            out += [(s.i, ("attr", child)) for s in subjects]
    for rel, obj in prep_phrases(verb):
        rel = rel if be else f"{pred} {rel}"
        targets += [(rel, o) for o in with_conjuncts(obj)]
    for rel, obj in targets:
        out += [(s.i, obj.i, rel) for s in subjects]
    if not targets and not be and verb.tag_ != "MD":      # "a woman is smiling"
        out += [(s.i, ("attr", verb)) for s in subjects]


def proposed_tuples(doc) -> list[tuple[str, ...]]:
    """SPICE-style tuples of one parsed caption, in rule order, with repeats."""
    raw: list = []
    compound_parts = set()
    for tok in doc:
        if tok.pos_ in ("VERB", "AUX") or tok.tag_.startswith("VB"):
            _verb_tuples(tok, raw)
        if not is_noun(tok):
            continue
        for child in tok.children:
            if child.dep_ == "amod" or (child.dep_ == "conj" and child.tag_.startswith("JJ")
                                        and tok.dep_ == "amod"):
                raw.append((tok.i, ("attr", child)))
                raw += [(tok.i, ("attr", c)) for c in child.conjuncts if c.tag_.startswith("JJ")]
            elif child.dep_ == "nummod" and tok.tag_ in PLURAL_TAGS and child.i < tok.i:
                raw.append((tok.i, ("num", child)))
            elif child.dep_ == "compound" and is_noun(child):
                compound_parts.add(child.i)
                raw.append((tok.i, ("attr", child)))
            elif child.dep_ == "poss" and is_noun(child):
                raw.append((child.i, tok.i, "have"))
        for rel, obj in prep_phrases(tok):
            raw += [(n.i, o.i, rel) for n in with_conjuncts(tok) for o in with_conjuncts(obj)]
    for tok in doc:
        if is_noun(tok) and tok.i not in compound_parts:
            raw.append((tok.i,))
    return [_as_words(doc, t) for t in raw]


def _as_words(doc, t) -> tuple[str, ...]:
    if len(t) == 1:
        return (lemma(doc[t[0]]),)
    if len(t) == 2:
        kind, tok = t[1]
        value = tok.lower_ if kind == "num" else lemma(tok)
        return lemma(doc[t[0]]), value
    return lemma(doc[t[0]]), lemma(doc[t[1]]), t[2]
