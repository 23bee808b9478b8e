"""Plain-text, Markdown and CSV tables for the command line (no third-party dependency), and
per-caption scores written as JSON or CSV a block at a time."""
from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Mapping, Sequence
from typing import TextIO


def _cell(value: object, digits: int | None) -> str:
    """A table cell: floats with ``digits`` decimals, or (``digits=None``, for CSV) as the
    shortest text that reads back as the same float (a BLEU-4 of 9.47e-09 stays 9.47e-09)."""
    if isinstance(value, float):
        return repr(float(value)) if digits is None else f"{value:.{digits}f}"
    return "" if value is None else str(value)


def format_table(headers: Sequence[str], rows: Sequence[Sequence[object]], fmt: str = "table",
                 digits: int = 4, left: int = 1) -> str:
    """Render rows as an aligned text table, a Markdown table or CSV (``left``: how many leading
    columns are text, aligned left; the rest are aligned right). CSV floats are exact (see
    ``_cell``); ``digits`` is for the two tables people read."""
    cells = [[_cell(v, None if fmt == "csv" else digits) for v in row] for row in rows]
    if fmt == "csv":
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(headers)
        writer.writerows(cells)
        return buf.getvalue().rstrip("\n")
    if fmt == "markdown":       # a "|" inside a cell (signatures have them) would split it
        def row(values):
            return "| " + " | ".join(v.replace("|", "\\|") for v in values) + " |"
        return "\n".join([row(headers), "|" + "---|" * len(headers), *map(row, cells)])
    if fmt != "table":
        raise ValueError(f"unknown table format {fmt!r}; choose table, markdown or csv")
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h)
              for i, h in enumerate(headers)]
    def line(values):
        return "  ".join(v.ljust(w) if i < left else v.rjust(w)
                         for i, (v, w) in enumerate(zip(values, widths)))
    return "\n".join([line(headers), line(["-" * w for w in widths]), *map(line, cells)])


def _caption_ids(result) -> list[str]:
    return list(result.ids) if result.ids is not None else [str(i) for i in range(len(result))]


def _json_number(value: float) -> str:
    return repr(float(value)) if math.isfinite(value) else json.dumps(float(value))


def write_scores_json(results: Mapping[str, object], file: TextIO, block: int = 20_000) -> None:
    """``{"metrics": {name: {"corpus", "per_caption": {id: score}}}, "signature": {name: ...}}``
    written as ``json.dumps(..., indent=1)`` writes it, a block of captions at a time, so that a
    million rows never exist as one string (``results``: ``{name: Scores}``)."""
    names = list(results)
    file.write('{\n "metrics": {\n')
    for m, name in enumerate(names):
        s = results[name]
        ids = [json.encoder.encode_basestring_ascii(i) for i in _caption_ids(s)]
        file.write(f'  {json.dumps(name)}: {{\n   "corpus": {_json_number(s.corpus)},\n'
                   '   "per_caption": {\n')
        values = s.per_caption
        for start in range(0, len(ids), block):
            chunk = values[start:start + block].tolist()        # (float64: Python floats)
            numbers = map(float.__repr__ if all(map(math.isfinite, chunk)) else _json_number,
                          chunk)
            text = ",\n    ".join(map(": ".join, zip(ids[start:start + block], numbers)))
            file.write("    " + text + (",\n" if start + block < len(ids) else "\n"))
        file.write("   }\n  }" + (",\n" if m < len(names) - 1 else "\n"))
    file.write(' },\n "signature": {\n')
    file.write(",\n".join(f"  {json.dumps(n)}: {json.dumps(results[n].signature)}"
                          for n in names))
    file.write("\n }\n}\n")


def write_scores_csv(results: Mapping[str, object], file: TextIO, block: int = 20_000) -> None:
    """One row per caption (id, then each metric), then ``<corpus>`` and ``<signature>`` (each
    metric's settings, UNTRAINED stand-ins included): the CSV of ``format_table``, written a
    block of rows at a time (``results``: ``{name: Scores}``)."""
    names = list(results)
    writer = csv.writer(file, lineterminator="\n")
    writer.writerow(["id", *names])
    ids = _caption_ids(results[names[0]])
    for start in range(0, len(ids), block):
        columns = [results[n].per_caption[start:start + block].tolist() for n in names]
        writer.writerows([[i, *(_cell(v, None) for v in row)]
                          for i, *row in zip(ids[start:start + block], *columns)])
    writer.writerow(["<corpus>", *(_cell(results[n].corpus, None) for n in names)])
    writer.writerow(["<signature>", *(results[n].signature for n in names)])
