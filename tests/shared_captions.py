"""Every distinct caption string in the shared data folder, read straight from the raw files.

Used by the PTB-tokenizer parity test (tests/test_text.py). The root is
``$CAPKIT_SHARED_DATA`` if set, else ``../shared/data`` relative to the repository root.
Formats are described in ``<root>/INDEX.md`` and each folder's ``SOURCE.md``.
"""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


def shared_data_root(root: str | os.PathLike | None = None) -> Path:
    """The shared data folder: ``root``, else ``$CAPKIT_SHARED_DATA``, else ``../shared/data``."""
    if root is None:
        root = os.environ.get("CAPKIT_SHARED_DATA") or (REPO_ROOT.parent / "shared" / "data")
    return Path(root)


def _csv_column(path: Path, *columns: str) -> list[str]:
    with open(path, newline="", encoding="utf-8") as f:
        return [row[c] for row in csv.DictReader(f) for c in columns]


def _jsonl(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def _json(path: Path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def _pascal50s_mat_refs(path: Path) -> list[str]:
    import scipy.io

    refs = scipy.io.loadmat(str(path))["refs"]  # 1 x 1000 struct(image, sent{1x50})
    out = []
    for entry in refs[0]:
        for cell in entry["sent"].ravel():
            arr = cell.ravel()
            out.append(str(arr[0]) if arr.size else "")
    return out


def all_shared_captions(root: str | os.PathLike | None = None) -> list[str]:
    """Sorted distinct caption strings of every caption-bearing file in the shared data.

    Raises FileNotFoundError if the folder (or one of the files) is missing.
    """
    root = shared_data_root(root)
    if not root.is_dir():
        raise FileNotFoundError(f"shared data folder not found: {root}")
    caps: list[str] = []

    # Flickr8k: the token file holds every caption (Expert/CF judgments point into it by id).
    with open(root / "flickr8k" / "Flickr8k.token.txt", encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\r\n")
            if line:
                caps.append(line.split("\t", 1)[1])

    # Composite: judged candidates + references.
    caps += _csv_column(root / "composite" / "composite_correctness.csv", "candidate")
    for refs in _json(root / "composite" / "composite_references.json").values():
        caps += refs

    # PASCAL-50S: the pair CSV (two candidates + 5 refs as a JSON list) and the 50 refs per image.
    with open(root / "pascal50s" / "pascal50s_pairs.csv", newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            caps += [row["caption_a"], row["caption_b"], *json.loads(row["refs5"])]
    caps += _pascal50s_mat_refs(root / "pascal50s" / "pascal50S.mat")

    # THumB: hypotheses + references (JSON lines).
    caps += [r["hyp"] for r in _jsonl(root / "thumb" / "mscoco_THumB-1.0.jsonl")]
    for r in _jsonl(root / "thumb" / "mscoco_references.json"):
        caps += r["refs"]

    # Nebula: candidate (mt) + references.
    for r in _json(root / "nebula" / "nebula_test.json"):
        caps.append(r["mt"])
        caps += r["refs"]

    # CapEval1k: the approximate decode is the only text there is.
    caps += [r["decoded_text_approx"] for r in _jsonl(root / "capeval1k" / "capeval1k_umic_txtdb.jsonl")]

    # COCO Karpathy test: references + the 9 systems' captions.
    for refs in _json(root / "coco_karpathy_test" / "references_karpathy_test5k.json").values():
        caps += refs
    caps += _csv_column(root / "coco_karpathy_test" / "predictions.csv", "caption")

    # Flickr30k test: references + predictions.
    for refs in _json(root / "flickr30k_test" / "references_1k.json").values():
        caps += refs
    caps += _csv_column(root / "flickr30k_test" / "predictions.csv", "caption")

    # Diversity set: 10 sampled captions per image.
    for r in _json(root / "diversity_wang_chan" / "merge_results.json"):
        caps += r["captions"]

    return sorted(set(caps))
