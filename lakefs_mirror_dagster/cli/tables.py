"""Aligned text tables, what a person reads (``--json`` is what a script reads)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = ["format_table"]


def _cell(value: Any) -> str:
    if value is None or value == "":
        return "-"
    return " ".join(str(value).split())  # one line per row, whatever the value holds


def format_table(rows: Iterable[Mapping[str, Any]], columns: Sequence[str]) -> str:
    """``columns`` (keys of each row) as upper-case headers over left-aligned cells; an empty table is its
    header alone, so a person sees that nothing matched."""
    cells = [[_cell(row.get(column)) for column in columns] for row in rows]
    header = [column.upper().replace("_", " ") for column in columns]
    widths = [max(len(line[i]) for line in [header, *cells]) for i in range(len(columns))]
    return "\n".join(
        "  ".join(text.ljust(width) for text, width in zip(line, widths, strict=True)).rstrip()
        for line in [header, *cells]
    )
