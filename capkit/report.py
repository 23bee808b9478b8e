"""Plain-text, Markdown and CSV tables for the command line (no third-party dependency)."""
from __future__ import annotations

import csv
import io
from collections.abc import Sequence


def _cell(value: object, digits: int) -> str:
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return "" if value is None else str(value)


def format_table(headers: Sequence[str], rows: Sequence[Sequence[object]], fmt: str = "table",
                 digits: int = 4, left: int = 1) -> str:
    """Render rows as an aligned text table, a Markdown table or CSV (``left``: how many leading
    columns are text, aligned left; the rest are aligned right)."""
    cells = [[_cell(v, digits) for v in row] for row in rows]
    if fmt == "csv":
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(headers)
        writer.writerows(cells)
        return buf.getvalue().rstrip("\n")
    if fmt == "markdown":
        lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
        lines += ["| " + " | ".join(r) + " |" for r in cells]
        return "\n".join(lines)
    if fmt != "table":
        raise ValueError(f"unknown table format {fmt!r}; choose table, markdown or csv")
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h)
              for i, h in enumerate(headers)]
    def line(values):
        return "  ".join(v.ljust(w) if i < left else v.rjust(w)
                         for i, (v, w) in enumerate(zip(values, widths)))
    return "\n".join([line(headers), line(["-" * w for w in widths]), *map(line, cells)])
