"""Readers for the file formats the datasets come in, with errors that name the file and line.

Every loader reads through these, so a malformed or truncated file always fails the same way: a
``ValueError`` that says which file, where, and what to do (refetch with ``--force``).
"""
from __future__ import annotations

import csv
import json
import math
from pathlib import Path

from capkit.caption_files import DuplicateKeyError, unique_keys

REFETCH = "refetch it with `capkit data fetch {dataset} --force --mirror ../shared/data`"


def _dataset_of(path: Path) -> str:
    return path.parent.name


def malformed(path: Path, where: str, what: str) -> ValueError:
    """A ValueError for a malformed data file, telling the user how to get a clean copy."""
    hint = REFETCH.format(dataset=_dataset_of(path))
    return ValueError(f"Malformed data file {path} ({where}): {what}. If the file was edited or "
                      f"truncated, {hint}.")


def _open(path: Path):
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing although its dataset is marked complete; "
                                + REFETCH.format(dataset=_dataset_of(path)) + ".")
    return open(path, encoding="utf-8", newline="")


def read_json(path: Path):
    with _open(path) as f:
        try:
            return json.load(f, object_pairs_hook=unique_keys)
        except DuplicateKeyError as e:
            raise malformed(path, "an object", f"the key {e.key!r} appears twice") from None
        except json.JSONDecodeError as e:
            raise malformed(path, f"line {e.lineno}", f"invalid JSON ({e.msg})") from None


def read_jsonl(path: Path) -> list[dict]:
    """JSON lines, one object each; blank lines are skipped."""
    rows = []
    with _open(path) as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line, object_pairs_hook=unique_keys))
            except DuplicateKeyError as e:
                raise malformed(path, f"line {n}", f"the key {e.key!r} appears twice") from None
            except json.JSONDecodeError as e:
                raise malformed(path, f"line {n}", f"invalid JSON ({e.msg})") from None
            if not isinstance(rows[-1], dict):
                raise malformed(path, f"line {n}", "expected a JSON object")
    return rows


def read_csv(path: Path, columns: tuple[str, ...]) -> list[dict[str, str]]:
    """CSV with a header that must contain ``columns``; every row must have every field."""
    with _open(path) as f:
        reader = csv.DictReader(f)
        missing = [c for c in columns if c not in (reader.fieldnames or [])]
        if missing:
            raise malformed(path, "header", f"missing columns {missing}")
        rows = []
        for row in reader:
            if None in row or any(row[c] is None for c in columns):
                raise malformed(path, f"line {reader.line_num}", "wrong number of fields")
            rows.append(row)
    return rows


def read_tsv(path: Path, n_columns: int) -> list[tuple[int, list[str]]]:
    """Tab-separated lines with exactly ``n_columns`` fields: (line number, fields) pairs."""
    rows = []
    with _open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\r\n")
            if not line:
                continue
            fields = line.split("\t")
            if len(fields) != n_columns:
                raise malformed(path, f"line {n}",
                                f"expected {n_columns} tab-separated fields, got {len(fields)}")
            rows.append((n, fields))
    return rows


def to_float(value, path: Path, where: str, low: float = -math.inf,
             high: float = math.inf) -> float:
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise malformed(path, where, f"{value!r} is not a number") from None
    if not low <= x <= high:  # also rejects NaN
        raise malformed(path, where, f"{x} is outside [{low}, {high}]")
    return x


def check_text(value, path: Path, where: str) -> str:
    if not isinstance(value, str):
        raise malformed(path, where, f"expected a caption string, got {type(value).__name__}")
    return value


def check_references(refs, path: Path, where: str) -> list[str]:
    """A non-empty list of non-empty reference strings."""
    if not isinstance(refs, list) or not refs:
        raise malformed(path, where, "expected a non-empty list of references")
    for r in refs:
        if not isinstance(r, str) or not r.strip():
            raise malformed(path, where, f"reference {r!r} is not a non-empty string")
    return list(refs)
