"""Reading the candidate and reference files that `capkit score` accepts.

Candidates: ``{id: caption}`` JSON, or a COCO results list ``[{"image_id": ..., "caption": ...}]``.
References: ``{id: [caption, ...]}`` JSON, or a COCO annotations file
(``{"annotations": [{"image_id": ..., "caption": ...}], ...}``).
Ids are compared as strings, so ``42`` in a results list matches ``"42"`` in a mapping.

An id given twice is an error, in every form: ``{"1": "a dog", "1": "a cat"}`` is valid JSON,
and a plain JSON reader keeps the last value silently, so one caption would be scored as the
other. Every JSON file capkit reads from a user goes through ``unique_keys`` for that.
"""
from __future__ import annotations

import contextlib
import gc
import json
import sys
from pathlib import Path


class DuplicateKeyError(ValueError):
    """A JSON object gives one key twice (raised by ``unique_keys``; ``.key`` is the key)."""

    def __init__(self, key: str):
        super().__init__(f"the key {key!r} appears twice in one JSON object")
        self.key = key


def unique_keys(pairs: list[tuple[str, object]]) -> dict:
    """``object_pairs_hook`` for ``json.load(s)``: a key given twice in one object raises
    ``DuplicateKeyError`` instead of the last value silently winning."""
    out: dict = {}
    for key, value in pairs:
        if key in out:
            raise DuplicateKeyError(key)
        out[key] = value
    return out


@contextlib.contextmanager
def paused_gc():
    """Pause Python's cycle collector while millions of acyclic objects (strings, lists of them)
    are made: otherwise it walks the growing heap again and again (halves the time of reading
    and tokenising a million captions). Reference counting still frees everything."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _read_json(path: str | Path, what: str):
    """The JSON of ``path``: a file, a pipe (``/dev/stdin``, ``<(...)``) or ``-`` (standard
    input), UTF-8 with or without a byte-order mark."""
    path = Path(path)
    if str(path) != "-" and path.is_dir():
        raise ValueError(f"{what} file {str(path)!r} is a folder; give the JSON file itself")
    if str(path) != "-" and not path.exists():
        raise FileNotFoundError(f"{what} file {str(path)!r} does not exist")
    try:
        data = sys.stdin.buffer.read() if str(path) == "-" else path.read_bytes()
        with paused_gc():
            return json.loads(data.decode("utf-8-sig"), object_pairs_hook=unique_keys)
    except UnicodeDecodeError as err:
        raise ValueError(f"{what} file {str(path)!r} is not UTF-8 text ({err.reason} at byte "
                         f"{err.start}); save it as UTF-8 JSON") from None
    except PermissionError as err:
        raise ValueError(f"{what} file {str(path)!r} cannot be read ({err.strerror}); check its "
                         "permissions") from None
    except DuplicateKeyError as err:
        raise ValueError(f"{what} file {str(path)!r} gives the id (or key) {err.key!r} twice in "
                         "one object; a JSON reader would keep only the last one silently: give "
                         "each id once") from None
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
