"""Aligning, validating and tokenising the (candidates, references) pair every metric takes.

Metrics accept either mappings keyed by id (``{id: caption}``, ``{id: [refs]}``) or aligned
sequences (``[caption, ...]``, ``[[refs], ...]``). Both are checked the same way and turned into a
``CaptionBatch`` of token lists, so a set of metrics can share one tokenisation
(``capkit.metrics.score``).
"""
from __future__ import annotations

import collections
import re
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from capkit.metrics.lazy_tokens import DecodedReferences, DecodedSegments
from capkit.metrics.ngrams import (CandidateJoin, Encoded, NgramIndex, build_index, candidate_join,
                                   encode, encode_flat)
from capkit.text.flat_tokens import splits_apart, tokens_of

TOKENIZERS = ("ptb", "split")


@dataclass(frozen=True)
class CaptionBatch:
    """Candidates and references as token lists, aligned by position."""
    candidates: list[list[str]]            # (N,) tokens of each candidate
    references: list[list[list[str]]]      # (N,) tokens of each reference of each candidate
    ids: tuple[str, ...] | None            # candidate ids when the input was keyed
    tokenizer: str
    cache: dict = field(default_factory=dict, repr=False, compare=False)  # shared encodings

    @classmethod
    def from_encoded(cls, encoded: Encoded, n_refs: np.ndarray, ids: tuple[str, ...] | None,
                     tokenizer: str) -> CaptionBatch:
        """A batch of captions given as token ids: candidates first, then each candidate's
        references (``n_refs`` of them), as ``encoded`` lays them out. Its token lists are
        decoded only when read (the chunks of ``capkit.metrics.compact``)."""
        N = len(n_refs)
        first_ref = N + np.concatenate([[0], np.cumsum(n_refs)]).astype(np.int64)    # (N + 1,)
        batch = cls(DecodedSegments(encoded, np.arange(N)),
                    DecodedReferences(encoded, first_ref), ids, tokenizer)
        batch.cache["encoded"] = encoded
        batch.cache["n_refs"] = np.asarray(n_refs, dtype=np.int64)
        return batch

    def __len__(self) -> int:
        return len(self.candidates)

    def with_lists(self) -> CaptionBatch:
        """This batch with its token lists as lists (the references of a lazy batch split now,
        once), sharing its cache: what a user's token metric is handed, whatever path made
        the batch."""
        if isinstance(self.candidates, list) and isinstance(self.references, list):
            return self
        if "with_lists" not in self.cache:
            self.cache["with_lists"] = CaptionBatch(list(self.candidates), list(self.references),
                                                    self.ids, self.tokenizer, self.cache)
        return self.cache["with_lists"]

    @property
    def segments(self) -> list[list[str]]:
        """Candidates first, then every reference, in order: the layout of ``encoded``."""
        return list(self.candidates) + [r for rs in self.references for r in rs]

    @property
    def n_refs(self) -> np.ndarray:
        if "n_refs" not in self.cache:
            self.cache["n_refs"] = np.fromiter((len(r) for r in self.references),
                                               dtype=np.int64, count=len(self))
        return self.cache["n_refs"]

    @property
    def ref_owner(self) -> np.ndarray:
        """(R,) index of the candidate each reference belongs to."""
        return np.repeat(np.arange(len(self), dtype=np.int64), self.n_refs)

    def encoded(self) -> Encoded:
        if "encoded" not in self.cache:
            self.cache["encoded"] = encode(self.segments)
        return self.cache["encoded"]

    def ngrams(self, n: int) -> NgramIndex:
        """1..n-gram tables of all segments (computed once per batch and order)."""
        have = [k for k in self.cache if isinstance(k, tuple) and k[0] == "ngrams" and k[1] >= n]
        if have:
            return self.cache[have[0]]
        self.cache[("ngrams", n)] = build_index(self.encoded(), n)
        return self.cache[("ngrams", n)]

    def candidate_join(self, index: NgramIndex, k: int) -> CandidateJoin:
        """The (k + 1)-gram table of ``index`` (one of this batch's) split into candidate and
        reference rows and joined (made once per batch, for BLEU and CIDEr-D)."""
        key = ("join", k)
        if key not in self.cache or self.cache[key][0] is not index:
            self.cache[key] = index, candidate_join(index.tables[k], len(self), self.ref_owner)
        return self.cache[key][1]


def _check_caption(text: object, where: str, allow_empty: bool = False) -> str:
    if not isinstance(text, str):
        raise TypeError(f"{where} must be a string, got {type(text).__name__}: {text!r}")
    if not allow_empty and not text.strip():
        raise ValueError(f"{where} is empty or whitespace-only; remove it or give a real caption")
    return text


def candidate_texts(candidates) -> tuple[list[str], tuple[str, ...] | None]:
    """(captions, ids) of the candidates of a metric without references (CLIPScore, UMIC): a
    list of captions (ids None) or ``{id: caption}``; every caption a non-empty string."""
    if isinstance(candidates, Mapping):
        ids, texts = tuple(str(i) for i in candidates), list(candidates.values())
    elif isinstance(candidates, str) or not hasattr(candidates, "__len__"):
        raise TypeError("candidates must be a list of captions or a mapping {id: caption}")
    else:
        ids, texts = None, list(candidates)
    names = ids if ids is not None else [str(i) for i in range(len(texts))]
    return [_check_caption(t, f"candidate {n}") for n, t in zip(names, texts)], ids


_LONE_SURROGATES = re.compile("[\ud800-\udfff]")       # never valid text in a Python str


def _without_lone_surrogates(text: object) -> object:
    """Lone surrogates (e.g. half an emoji from a JSON ``"\\ud83d"`` escape) are not Unicode
    text: the PTB tokenizer drops them (the reference jar cannot read them), and so does every
    metric, since spaCy and the Hugging Face tokenizers cannot encode them."""
    if isinstance(text, str) and not text.isascii():
        return _LONE_SURROGATES.sub("", text)
    return text


def id_type_hint(unmatched_candidates, unmatched_references,
                 names: tuple[str, str] = ("candidates", "references"),
                 variables: tuple[str, str] | None = None) -> str:
    """What to do when unmatched candidate and reference ids are the same as text but of other
    types (COCO results' int ``image_id`` against a JSON file's str keys): ids are paired by key,
    as pycocoevalcap pairs them, and 391895 is not the key '391895'. "" when there are none.
    ``names``: the two sides as the error's reader knows them (plural nouns) and ``variables``
    their names in the code it suggests (default: ``names``); the pycocoevalcap drop-in says
    ``("results", "ground truths")`` and ``("res", "gts")``."""
    by_text = {str(k): k for k in unmatched_references}
    twins = sorted(((k, by_text[str(k)]) for k in unmatched_candidates if str(k) in by_text),
                   key=lambda pair: str(pair[0]))
    if not twins:
        return ""
    c_types = sorted({type(c).__name__ for c, _ in twins})
    r_types = sorted({type(r).__name__ for _, r in twins})
    cand, ref = names
    cand_var, ref_var = variables or names
    sides = [ref_var] if c_types == ["str"] else [cand_var]
    if c_types != ["str"] and r_types != ["str"]:
        sides = [cand_var, ref_var]
    convert = " and ".join(f"{x} = {{str(k): v for k, v in {x}.items()}}" for x in sides)
    c, r = twins[0]
    return (f"{len(twins)} of them {'is' if len(twins) == 1 else 'are'} the same id as text, "
            f"typed apart: the {cand}' ids are {'/'.join(c_types)}, the {ref}' "
            f"{'/'.join(r_types)} (e.g. {c!r} and "
            f"{r!r}), and ids are paired by key (as pycocoevalcap pairs them), not as text; give "
            f"both sides one type, e.g. {convert}")


def align(candidates, references, *, strict: bool = False
          ) -> tuple[list[str], list[list[str]], tuple[str, ...] | None]:
    """Check and align raw inputs; return (candidates, references, ids).

    An empty candidate is accepted (pycocoevalcap scores it 0 on BLEU, ROUGE-L, CIDEr-D and
    METEOR; ``prepare`` warns once), and so is an empty reference (pycocoevalcap scores it: it
    matches nothing), with one warning; ``strict=True`` raises instead. A candidate with no
    references at all is an error. Lone surrogates are dropped from every text.
    """
    if isinstance(candidates, Mapping):
        if not isinstance(references, Mapping):
            raise TypeError("candidates are keyed by id, so references must be a mapping "
                            "{id: [reference, ...]} too")
        cand_ids, ref_ids = set(candidates), set(references)
        if cand_ids != ref_ids:
            missing = sorted(map(str, cand_ids - ref_ids))
            extra = sorted(map(str, ref_ids - cand_ids))
            typed_apart = id_type_hint(cand_ids - ref_ids, ref_ids - cand_ids)
            advice = "score only the ids present in both, or fix the files"
            raise ValueError(
                "candidate and reference ids must match exactly: "
                f"{len(missing)} candidate id(s) have no references (first: {missing[:5]}), "
                f"{len(extra)} reference id(s) have no candidate (first: {extra[:5]}); "
                + (advice if not typed_apart else typed_apart if missing == extra else
                   f"{typed_apart}; for the others, {advice}"))
        ids = tuple(candidates)
        cands = [candidates[i] for i in ids]
        refs = [references[i] for i in ids]
        ids = tuple(str(i) for i in ids)
        if len(set(ids)) < len(ids):       # 7 and "7": one id as text, two keys of the mapping
            same = sorted(i for i, n in collections.Counter(ids).items() if n > 1)
            raise ValueError(f"{len(same)} id(s) occur as two different keys, e.g. 7 and '7' "
                             f"(first: {same[:5]}); scores are keyed by id as text, so give "
                             "every id in one form (all str or all int)")
    else:
        if isinstance(candidates, str) or not isinstance(candidates, Sequence):
            raise TypeError("candidates must be a list of captions or a mapping {id: caption}")
        if references is None or isinstance(references, (str, Mapping)) \
                or not isinstance(references, Sequence):
            raise TypeError("references must be a list (one list of references per candidate)")
        if len(candidates) != len(references):
            raise ValueError(f"got {len(candidates)} candidates but {len(references)} reference "
                             "lists; they must be aligned one to one")
        ids, cands, refs = None, list(candidates), list(references)
    if _plain(cands, refs):                # the common case, checked in bulk
        return cands, [list(r) for r in refs], ids
    cands = [_without_lone_surrogates(c) for c in cands]
    refs = [[_without_lone_surrogates(r) for r in rs]
            if isinstance(rs, Sequence) and not isinstance(rs, str) else rs for rs in refs]
    names = ids if ids is not None else [str(i) for i in range(len(cands))]
    empty = [name for name, cand in zip(names, cands) if isinstance(cand, str) and not cand.strip()]
    if empty and not strict:
        warnings.warn(f"{len(empty)} candidate(s) are empty (first: {empty[:5]}); they are scored "
                      "as the reference tools score them (0 on BLEU, ROUGE-L, CIDEr-D, METEOR, "
                      "BERTScore); strict=True (capkit score --strict) raises instead",
                      stacklevel=3)
    empty_refs = []
    for name, cand, rs in zip(names, cands, refs):
        _check_caption(cand, f"candidate {name}", allow_empty=not strict)
        if isinstance(rs, str) or not isinstance(rs, Sequence) or len(rs) == 0:
            raise ValueError(f"candidate {name} has no references (got {rs!r}); every candidate "
                             "needs a non-empty list of reference captions")
        for j, r in enumerate(rs):
            where = f"reference {j} of candidate {name}"
            if _check_caption(r, where, allow_empty=not strict).strip() == "":
                empty_refs.append(where)
    if empty_refs:
        warnings.warn(f"{len(empty_refs)} reference(s) are empty (first: {empty_refs[:3]}); they "
                      "are scored as the reference tools score them (an empty reference matches "
                      "nothing); strict=True (capkit score --strict) raises instead", stacklevel=3)
    return cands, [list(r) for r in refs], ids


def _plain(cands: list, refs: list) -> bool:
    """Whether every candidate and reference is an ASCII string that is not blank and every
    reference list is a non-empty list or tuple: then ``align``'s checks, one caption at a
    time, would pass and change nothing (``str.isascii`` and ``str.isspace`` run in C)."""
    if not (set(map(type, cands)) <= {str} and set(map(type, refs)) <= {list, tuple}
            and all(refs)):
        return False
    flat = [r for rs in refs for r in rs]
    return (set(map(type, flat)) <= {str} and all(map(str.isascii, cands))
            and all(map(str.isascii, flat)) and all(cands) and all(flat)
            and not any(map(str.isspace, cands)) and not any(map(str.isspace, flat)))


def tokenized_text(texts: list[str], tokenizer: str, memo: dict | None = None) -> list[str]:
    """Space-joined tokens. ``"ptb"`` lexes ``texts`` as one stream, in order, as pycocoevalcap
    does (``memo``: see ``ptb_tokenize``)."""
    if tokenizer == "ptb":
        from capkit.text import ptb_tokenize
        return ptb_tokenize(texts, memo=memo)
    if tokenizer == "split":
        return [" ".join(t.split()) for t in texts]
    raise ValueError(f"unknown tokenizer {tokenizer!r}; choose one of {TOKENIZERS}")


def tokenize(texts: list[str], tokenizer: str) -> list[list[str]]:
    return [t.split() for t in tokenized_text(texts, tokenizer)]


def _regroup(flat: list, refs: list[list[str]]) -> list[list]:
    out, pos = [], 0
    for rs in refs:
        out.append(flat[pos:pos + len(rs)])
        pos += len(rs)
    return out


def prepare(candidates, references=None, tokenizer: str = "ptb", *, strict: bool = False,
            ids: tuple[str, ...] | None = None, checked: bool = False) -> CaptionBatch:
    """Validate, align and tokenise once. A ``CaptionBatch`` passes through unchanged.

    ``checked=True``: ``candidates`` and ``references`` are aligned lists that ``align`` already
    accepted (with ``ids``), so they are not checked again.
    """
    if isinstance(candidates, CaptionBatch):
        if references is not None:
            raise ValueError("a CaptionBatch already holds its references; pass references=None")
        return candidates
    if tokenizer not in TOKENIZERS:
        raise ValueError(f"unknown tokenizer {tokenizer!r}; choose one of {TOKENIZERS}")
    if checked:
        cands, refs = list(candidates), [list(r) for r in references]
    else:
        cands, refs, ids = align(candidates, references, strict=strict)
    if not cands:
        raise ValueError("no candidates: give at least one caption to score")
    # two streams, like pycocoevalcap's two tokenizer runs (results, then ground truth)
    cand_text = tokenized_text(cands, tokenizer)
    flat_refs = [r for rs in refs for r in rs]
    ref_text = tokenized_text(flat_refs, tokenizer)
    apart = splits_apart(cand_text) or splits_apart(ref_text)
    encoded, cand_toks, ref_toks = None, None, None
    if not apart:
        cand_flat, cand_lengths = _tokens_of(cand_text)
        ref_flat, ref_lengths = _tokens_of(ref_text)
        if cand_flat is not None and ref_flat is not None:
            # one numbering of candidates then references (first appearance), as encode gives
            encoded = encode_flat(cand_flat + ref_flat, np.concatenate([cand_lengths, ref_lengths]))
            cand_toks = _segments(cand_flat, cand_lengths)
            # slices of one list: each token string is made once
            ref_toks = _regroup(_segments(ref_flat, ref_lengths), refs)
    if cand_toks is None:
        cand_toks = [t.split() for t in cand_text]
        ref_toks = _regroup([t.split() for t in ref_text], refs)
    # empty ones were reported by align; here the ones that tokenise to nothing ("...")
    no_tokens([ids[i] if ids else str(i) for i, t in enumerate(cand_toks)
               if not t and cands[i].strip()], tokenizer, strict)
    batch = CaptionBatch(cand_toks, ref_toks, ids, tokenizer)
    batch.cache["n_refs"] = np.fromiter(map(len, refs), dtype=np.int64, count=len(refs))
    if encoded is not None:
        batch.cache["encoded"] = encoded
    if apart:
        # the PTB tokenizer keeps a no-break space inside "5 1/2" and phone numbers; BLEU and
        # CIDEr-D split it apart (str.split()), pycocoevalcap's ROUGE-L does not (split(" "))
        batch.cache["rouge_view"] = CaptionBatch(
            [t.split(" ") for t in cand_text], _regroup([t.split(" ") for t in ref_text], refs),
            ids, tokenizer)
    return batch


def _segments(flat: list[str], lengths: np.ndarray) -> list[list[str]]:
    """``flat`` cut into consecutive lists of ``lengths`` tokens."""
    bounds = np.cumsum(lengths).tolist()
    return [flat[a:b] for a, b in zip([0] + bounds, bounds)]


def no_tokens(names: list[str], tokenizer: str, strict: bool) -> None:
    """Warn about the (non-empty) candidates ``names`` that tokenise to nothing, or raise."""
    if names and strict:
        raise ValueError(f"{len(names)} candidate(s) have no tokens after {tokenizer} "
                         f"tokenisation (first: {names[:5]}); give real captions, or score them "
                         "as pycocoevalcap does (0) with strict=False")
    if names:
        warnings.warn(f"{len(names)} candidate(s) have no tokens after {tokenizer} "
                      f"tokenisation (first: {names[:5]}); they score 0 on BLEU, ROUGE-L, "
                      "CIDEr-D and METEOR, as in pycocoevalcap (strict=True, capkit score "
                      "--strict, raises instead)", stacklevel=4)


def _tokens_of(texts: list[str]) -> tuple[list[str] | None, np.ndarray | None]:
    """``flat_tokens.tokens_of`` with the counts as an int64 array; (None, None) when the texts
    are not single-spaced."""
    found = tokens_of(texts)
    if found is None:
        return None, None
    flat, lengths = found
    return flat, np.frombuffer(lengths, dtype=np.intc).astype(np.int64)
