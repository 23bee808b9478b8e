"""BERTScore (Zhang et al. 2020), exactly as ``bert_score.score`` 0.3.13 computes it.

For a candidate x and a reference y, with unit-length contextual token vectors of one layer:

    P = sum_i w(x_i) max_j x_i . y_j / sum_i w(x_i)     (greedy matching, each candidate token)
    R = sum_j w(y_j) max_i x_i . y_j / sum_j w(y_j)     (each reference token)
    F = 2 P R / (P + R)

* Tokens: the encoder's own (WordPiece for MiniLM/BERT), with [CLS] and [SEP]; those two weigh 0
  but still take part in the max, as in bert_score. Texts are truncated at the tokenizer's limit.
* Weights: 1 (``idf=False``), or idf(t) = log((M + 1) / (df(t) + 1)) over M documents
  (``idf=True``: the references of the call, one document per (candidate, reference) pair, as
  bert_score flattens them; an unseen token gets log(M + 1)); or a precomputed ``IdfTable``
  (``idf_table(texts)``) from any corpus.
* Several references: P, R and F are each the maximum over the references, separately
  (bert_score; ``multi_ref="max"``), or all three from the reference with the best F
  (``multi_ref="best_f"``).
* Baseline rescaling: (s - b) / (1 - b) with b the layer's P/R/F on unrelated caption pairs. capkit
  ships b for its default model (``bertscore_baselines/minilm.csv``, made by
  ``python -m data_scripts.bertscore_baseline``); pass ``baseline=`` a file for other models
  (bert_score's own ``rescale_baseline/en/<hub name>.tsv`` reads as it is).
  The signature names the file and a hash of its content (``rescale:<name>#<sha256[:10]>``).
  A linear map: it changes readability, never a correlation.
* Corpus score: the mean F (bert_score has no corpus formula).
* Padding: bert_score multiplies the similarity matrix by the padding mask before taking the
  maxima, so in a padded batch a token whose best real cosine is negative gets 0 instead, and
  its scores depend on the batch (MiniLM layer 6, where cosines go negative: up to 2e-4 between
  batch_size=64 and 1 on Flickr8k-Expert). capkit takes the maxima over real tokens only: it
  equals bert_score with ``batch_size=1`` (no padding), whatever its own batch size.

Default model: all-MiniLM-L6-v2 (offline bundle), layer 5 of 6, following bert_score's choice
for 6-layer distilled models (distilbert-base-uncased, distilroberta-base: layer 5); the paper's
English default is roberta-large layer 17 (``model="roberta-large"``, online). Any other hub
name takes bert_score's layer for it (its ``model2layers`` table, shipped as
``bertscore_baselines/bert_score_layers.csv``); a model not in that table (a local folder, a new
name) takes its last layer, with a warning, where bert_score would ask for ``num_layers``.
Explained in notebooks/03_embedding_metrics.ipynb, section 3 "BERTScore".
"""
from __future__ import annotations

import math
import warnings
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from capkit.metrics.bertscore_tables import baseline_path, choose_layer, model_name, read_baseline
from capkit.metrics.inputs import align
from capkit.scores import Scores, content_hash, make_signature

MULTI_REF = ("max", "best_f")


@dataclass(frozen=True)
class IdfTable:
    """Inverse document frequencies of token ids: idf = log((n_docs + 1) / (df + 1))."""
    values: dict[int, float]
    n_docs: int
    model: str                            # signature of the tokenizer's model

    @property
    def default(self) -> float:
        """The idf of a token no document contains."""
        return math.log(self.n_docs + 1)

    def weights(self, ids: np.ndarray, specials: frozenset[int]) -> np.ndarray:
        w = np.array([self.values.get(int(t), self.default) for t in ids], np.float64)
        w[np.isin(ids, list(specials))] = 0.0
        return w


def idf_from_ids(docs: list[np.ndarray], model: str) -> IdfTable:
    df = Counter(t for doc in docs for t in set(int(x) for x in doc))
    m = len(docs)
    return IdfTable({t: math.log((m + 1) / (c + 1)) for t, c in df.items()}, m, model)


def idf_table(texts, model: object = "minilm", *, device: str | None = None) -> IdfTable:
    """Idf weights from a corpus of texts (a list, or lists of references, flattened)."""
    from capkit.models.presets import load_model
    enc = load_model(model, "text", device=device)
    flat = [t for x in texts for t in ([x] if isinstance(x, str) else x)]
    if not flat:
        raise ValueError("idf_table needs at least one text to count document frequencies")
    return idf_from_ids([np.asarray(x) for x in enc.tokenize(flat)], enc.signature)


def _spans(off: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Token indices of texts ``rows``, concatenated, and where each text starts in them."""
    lengths = off[rows + 1] - off[rows]
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    return np.repeat(off[rows] - starts, lengths) + np.arange(lengths.sum()), starts


def pair_scores(states, weights: np.ndarray, cand_rows: np.ndarray, ref_rows: np.ndarray,
                owner: np.ndarray, specials: frozenset[int]) -> np.ndarray:
    """(R, 3) P, R, F of every (candidate, reference) pair.

    ``states``: token states of distinct texts; ``weights``: per token, summing to 1 within each
    text (NaN where a text has no weight); ``cand_rows[i]`` / ``ref_rows[r]``: the text of
    candidate i / reference r; ``owner[r]``: the candidate of reference r (sorted); ``specials``:
    the tokenizer's special token ids (a text of nothing else is empty). Candidates that share
    their reference list (the captions of one image) are matched in one product.
    """
    from threadpoolctl import threadpool_limits
    off = states.offsets
    unit = states.states / np.linalg.norm(states.states, axis=1, keepdims=True)  # (T, D) f32
    out = np.zeros((len(owner), 3))
    first = np.searchsorted(owner, np.arange(len(cand_rows)))
    counts = np.bincount(owner, minlength=len(cand_rows))
    groups: dict[tuple, list[int]] = {}
    for i in range(len(cand_rows)):
        groups.setdefault(tuple(ref_rows[first[i]:first[i] + counts[i]]), []).append(i)
    with threadpool_limits(limits=1, user_api="blas"):   # many small products: threads only wait
        _match_groups(unit, weights, off, cand_rows, groups, first, out)
    # a candidate equal to its reference: P = R = 1 exactly, as in exact arithmetic (bert_score:
    # 1 +- a few ulps, which differ from one CPU to another and broke THumB's ties between its
    # human captions, which are in their references, differently on each); the rules below
    # still zero an empty or weightless text
    out[cand_rows[owner] == ref_rows, :2] = 1.0
    # as bert_score: an empty text ([CLS] [SEP] only) scores its pairs P = R = 0 (its [CLS]
    # still resembles the other text's tokens); a text whose tokens all weigh 0 (idf 0: in every
    # document) gets its own side 0, P for a candidate, R for a reference (bert_score: NaN);
    # either way F = 0
    lengths = np.diff(off)
    unweighted = np.ones(len(lengths), bool)
    unweighted[lengths > 0] = np.isnan(weights[off[:-1][lengths > 0]])
    words = np.zeros(len(lengths), np.int64)          # tokens other than the special ones
    if (lengths > 0).any():
        plain = ~np.isin(states.ids, list(specials))
        words[lengths > 0] = np.add.reduceat(plain, off[:-1][lengths > 0])
    empty = words == 0
    c_none, r_none = unweighted[cand_rows][owner], unweighted[ref_rows]
    both = empty[cand_rows][owner] | empty[ref_rows]
    out[c_none | both, 0] = 0.0
    out[r_none | both, 1] = 0.0
    p, r = out[:, 0], out[:, 1]
    with np.errstate(invalid="ignore", divide="ignore"):
        out[:, 2] = np.where(p + r != 0, 2 * p * r / (p + r), 0.0)
    return np.nan_to_num(out, nan=0.0)


def _match_groups(unit, weights, off, cand_rows, groups, first, out) -> None:
    """Fill ``out[:, :2]`` with P and R, one similarity product per group of candidates.

    A text twice in a group (PASCAL-50S pairs two systems' identical captions) is matched once:
    in one product, a row's last bits can depend on its place (matrix kernels of CPUs without
    AVX-512), and the same caption against the same references must score the same, a tie."""
    for refs, members in groups.items():
        members = np.asarray(members)
        texts = cand_rows[members].tolist()
        slot = {t: i for i, t in enumerate(dict.fromkeys(texts))}
        inverse = np.array([slot[t] for t in texts], np.int64)
        c_take, c_starts = _spans(off, np.fromiter(slot, np.int64, len(slot)))   # first-seen order
        r_take, r_starts = _spans(off, np.asarray(refs))
        sim = unit[c_take] @ unit[r_take].T                                  # (sum Tc, sum Tr)
        best_ref = np.maximum.reduceat(sim, r_starts, axis=1)                # (sum Tc, n_refs)
        prec = np.add.reduceat(best_ref * weights[c_take, None], c_starts, axis=0)
        best_cand = np.maximum.reduceat(sim, c_starts, axis=0)               # (n_c, sum Tr)
        rec = np.add.reduceat(best_cand * weights[r_take], r_starts, axis=1)  # (n_c, n_refs)
        rows = first[members][:, None] + np.arange(len(refs))                # (n_c, n_refs)
        out[rows, 0], out[rows, 1] = prec[inverse], rec[inverse]


def token_weights(states, table: IdfTable | None, specials: frozenset[int]) -> np.ndarray:
    """(T,) weight of every token, normalised to sum 1 within its text (NaN if it sums to 0):
    1 per token, or its idf; [CLS] / [SEP] (``specials``) weigh 0."""
    ids = states.ids
    w = table.weights(ids, specials) if table is not None else \
        (~np.isin(ids, list(specials))).astype(np.float64)
    totals = np.add.reduceat(w, states.offsets[:-1]) if len(w) else np.zeros(0)
    n_empty = int((totals == 0).sum())
    if n_empty:
        warnings.warn(f"{n_empty} text(s) have no token with weight > 0 (nothing but special "
                      "tokens, or only tokens that every idf document contains); their pairs "
                      "score F = 0 as in bert_score (P and R 0 for an empty text; else that "
                      "text's side, P or R, 0 where bert_score gives NaN)", stacklevel=3)
    with np.errstate(invalid="ignore", divide="ignore"):
        return w / np.repeat(totals, states.lengths)


def best_reference(pairs: np.ndarray, owner: np.ndarray, n: int, multi_ref: str):
    """(N, 3) P/R/F per candidate and (N,) index (within its references) of the best F."""
    starts = np.searchsorted(owner, np.arange(n))
    f = pairs[:, 2]
    fmax = np.maximum.reduceat(f, starts)
    hits = np.flatnonzero(f == np.repeat(fmax, np.bincount(owner, minlength=n)))
    best = hits[np.unique(owner[hits], return_index=True)[1]] - starts    # first best F
    if multi_ref == "max":
        return np.maximum.reduceat(pairs, starts, axis=0), best
    return pairs[starts + best], best


@dataclass(frozen=True)
class TokenMatch:
    """BERTScore's greedy matching of one candidate and one reference, laid open for teaching."""
    candidate_tokens: list[str]
    reference_tokens: list[str]
    similarity: np.ndarray          # (Tc, Tr) cosines, [CLS] / [SEP] included
    candidate_weights: np.ndarray   # (Tc,) normalised, 0 for [CLS] / [SEP]
    reference_weights: np.ndarray   # (Tr,)
    prf: tuple[float, float, float]


def token_match(candidate: str, reference: str, model: object = "minilm",
                layer: int | None = None, idf: IdfTable | None = None) -> TokenMatch:
    """The similarity matrix and weights behind ``bertscore([candidate], [[reference]])``."""
    from capkit.models.presets import load_model
    from capkit.models.text_encoders import encode_tokens
    enc = load_model(model, "text")
    layer = choose_layer(model, enc, layer)
    states = encode_tokens(enc, [candidate, reference], layer)
    w = token_weights(states, idf, enc.special_ids())
    ci, ri = states[0][0], states[1][0]                                     # token ids
    unit = states.states / np.linalg.norm(states.states, axis=1, keepdims=True)
    sim = unit[:len(ci)] @ unit[len(ci):].T
    p = float(w[:len(ci)] @ sim.max(axis=1))
    r = float(w[len(ci):] @ sim.max(axis=0))
    names = enc.tokenizer.convert_ids_to_tokens
    return TokenMatch(names([int(i) for i in ci]), names([int(i) for i in ri]), sim,
                      w[:len(ci)], w[len(ci):], (p, r, 2 * p * r / (p + r) if p + r else 0.0))


def bertscore(candidates, references=None, images=None, *, model: object = "minilm",
              layer: int | None = None, idf: bool | IdfTable = False,
              rescale_with_baseline: bool = False, baseline: str | Path | None = None,
              multi_ref: str = "max", batch_size: int = 64, device: str | None = None,
              cache: object = False, progress: bool | str = "auto") -> Scores:
    """BERTScore F per caption (P, R, F in ``parts``), as ``bert_score.score``.

    ``model``: a preset (``"minilm"``, ``"tiny-bert"``...), a Hugging Face name or folder, or a
    loaded text encoder. ``cache``: True / a folder / a ``FeatureCache`` keeps token states on
    disk between runs. ``images`` is ignored (text-only metric).
    """
    from capkit.models.feature_cache import resolve_cache
    from capkit.models.presets import load_model
    from capkit.models.text_encoders import encode_tokens
    if multi_ref not in MULTI_REF:
        raise ValueError(f"multi_ref must be one of {MULTI_REF}, got {multi_ref!r}")
    if not isinstance(idf, (bool, IdfTable)):
        raise ValueError(f"idf must be True, False or an IdfTable (see idf_table), got {idf!r}")
    cands, refs, ids = align(candidates, references)
    if rescale_with_baseline and isinstance(model, str):
        baseline_path(model, baseline)          # a missing baseline: before loading the model
    enc = load_model(model, "text", device=device)
    layer = choose_layer(model, enc, layer)
    flat = [r for rs in refs for r in rs]
    owner = np.repeat(np.arange(len(cands)), [len(rs) for rs in refs])
    texts = list(dict.fromkeys(cands + flat))             # each distinct text encoded once
    where = {t: i for i, t in enumerate(texts)}
    cand_rows = np.array([where[c] for c in cands], np.int64)
    ref_rows = np.array([where[r] for r in flat], np.int64)
    states = encode_tokens(enc, texts, layer, cache=resolve_cache(cache),
                           batch_size=batch_size, progress=progress)
    if idf is True:       # one document per (candidate, reference) pair, as bert_score
        table = idf_from_ids([states[r][0] for r in ref_rows], enc.signature)
        idf_name = f"refs({table.n_docs})"
    elif isinstance(idf, IdfTable):
        table, idf_name = idf, f"given({idf.n_docs})#{content_hash([idf.n_docs, idf.values])}"
    else:
        table, idf_name = None, "no"
    specials = enc.special_ids()
    weights = token_weights(states, table, specials)
    pairs = pair_scores(states, weights, cand_rows, ref_rows, owner, specials)
    prf, best = best_reference(pairs, owner, len(cands), multi_ref)
    rescale = "no"
    if rescale_with_baseline:
        path, name = baseline_path(model_name(model, enc), baseline)
        b = read_baseline(path, layer)
        rescale = f"{name}#{content_hash(path.read_bytes())}"                # the file
        prf = (prf - b) / (1 - b)
    parts: dict[str, object] = {"P": prf[:, 0], "R": prf[:, 1], "F": prf[:, 2],
                                "best_reference": best, "layer": layer}
    for k, j in (("P", 0), ("R", 1), ("F", 2)):
        parts[f"corpus_{k}"] = float(prf[:, j].mean()) if len(prf) else float("nan")
    import transformers
    sig = make_signature("bertscore", model=enc.signature, layer=layer, idf=idf_name,
                         rescale=rescale, multi_ref=multi_ref, corpus="mean_F",
                         hf=transformers.__version__)
    return Scores("bertscore", prf[:, 2], parts["corpus_F"], sig, ids, parts)

