"""Reading the candidate and reference files that `capkit score` accepts.

Candidates: ``{id: caption}`` JSON, or a COCO results list ``[{"image_id": ..., "caption": ...}]``.
References: ``{id: [caption, ...]}`` JSON, or a COCO annotations file
(``{"annotations": [{"image_id": ..., "caption": ...}], ...}``).
Ids are compared as strings, so ``42`` in a results list matches ``"42"`` in a mapping.
"""
from __future__ import annotations

import json
from pathlib import Path


def _read_json(path: str | Path, what: str):
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{what} file {str(path)!r} does not exist")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise ValueError(f"{what} file {str(path)!r} is not valid JSON: {err}") from err


def read_candidates(path: str | Path) -> dict[str, str]:
    data = _read_json(path, "candidates")
    if isinstance(data, dict):
        return {str(k): v for k, v in data.items()}
    if isinstance(data, list):
        out: dict[str, str] = {}
        for i, row in enumerate(data):
            if not isinstance(row, dict) or "image_id" not in row or "caption" not in row:
                raise ValueError(f"candidates entry {i} must be an object with 'image_id' and "
                                 f"'caption' (COCO results format), got {row!r}")
            key = str(row["image_id"])
            if key in out:
                raise ValueError(f"candidates have two captions for image_id {key}; a COCO results "
                                 "file holds one caption per image")
            out[key] = row["caption"]
        return out
    raise ValueError("candidates must be {id: caption} or a COCO results list "
                     "[{'image_id': ..., 'caption': ...}]")


def read_references(path: str | Path) -> dict[str, list[str]]:
    data = _read_json(path, "references")
    if isinstance(data, dict) and "annotations" in data:
        out: dict[str, list[str]] = {}
        for i, row in enumerate(data["annotations"]):
            if not isinstance(row, dict) or "image_id" not in row or "caption" not in row:
                raise ValueError(f"annotation {i} must have 'image_id' and 'caption' "
                                 "(COCO annotations format)")
            out.setdefault(str(row["image_id"]), []).append(row["caption"])
        return out
    if isinstance(data, dict):
        out = {}
        for k, v in data.items():
            if isinstance(v, str):
                v = [v]
            if not isinstance(v, list):
                raise ValueError(f"references of id {k} must be a list of captions, got {v!r}")
            out[str(k)] = v
        return out
    raise ValueError("references must be {id: [captions]} or a COCO annotations file "
                     "({'annotations': [{'image_id': ..., 'caption': ...}]})")
