"""A rows-file cell read as Flink reads a column of its type (docs/sql.md, "Replay").

A `TIMESTAMP(p)` cell is text `YYYY-MM-DD HH:MM:SS[.fff]`, the wall-clock reading (its number the
reading taken as if UTC, as Flink keeps it); a `TIMESTAMP_LTZ(p)` cell is the same text read in
`table.local-time-zone`, or an epoch-ms number; a number column holds a JSON integer. The
representation is `wmviz.core.sql_expr`'s, so the expression evaluates the value directly.
"""

from __future__ import annotations

import re

from wmviz.core.sql_expr import TypeKind, columns_read, instant_of_local_ms
from wmviz.sql.model import SourceTable
from wmviz.sql.rows import InputRow, RowsFileError
from wmviz.trace.quote import show
from wmviz.trace.timecells import parse_time_ms

_TIMESTAMP_TEXT = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}[ T][0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]{1,3})?)?")


def event_ms_of(path: str, line: InputRow, source: SourceTable, zone: str) -> int:
    """The value of the column a table's watermark expression reads, for one row."""
    assert source.expression is not None
    (column,) = set(columns_read(source.expression))
    if column not in line.values:
        raise RowsFileError(
            path, line.line, "row", f"has no column {column!r} (table {source.table}'s watermark reads it)"
        )
    kind = source.column_kinds.get(column, "TIMESTAMP")
    try:
        return cell_ms(line.values[column], kind, zone)
    except ValueError as exc:
        raise RowsFileError(path, line.line, f"row.{column}", str(exc)) from None


def cell_ms(value: object, kind: TypeKind, zone: str) -> int:
    """One cell in the millisecond representation of its column's type."""
    if kind == "NUMBER":
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{show(value)} is not a whole number (the column is a number)")
        return value
    if isinstance(value, int) and not isinstance(value, bool) and kind == "TIMESTAMP_LTZ":
        return value  # an instant given as epoch milliseconds
    if not isinstance(value, str) or not _TIMESTAMP_TEXT.fullmatch(value.strip()):
        raise ValueError(f"{show(value)} is not a timestamp 'YYYY-MM-DD HH:MM:SS[.fff]'")
    local_ms = parse_time_ms(value.strip(), sentinels=False)
    return local_ms if kind == "TIMESTAMP" else instant_of_local_ms(local_ms, zone)
