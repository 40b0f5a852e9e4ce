"""One trace row's cells, read as typed values with every problem reported for that row.

Split from `validate` to keep each module short; `TraceBuilder` is the only user.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from wmviz.core.types import fits_long
from wmviz.trace.errors import IssueCollector
from wmviz.trace.timefmt import parse_time_ms, show

_CANONICAL_INT = re.compile(r"-?(0|[1-9]\d*)")
_INT = re.compile(r"[+-]?\d+")


def text_value(cell: str) -> str | int | float:
    """A CSV `value` cell: a number if the text is exactly how that number is written, else the text.

    CSV has no types, so `12` and `1.5` are read as numbers; text such as `007`, `1e3` or ` 12`
    stays a string, because turning it into a number would change what is shown.
    """
    if _CANONICAL_INT.fullmatch(cell):
        return int(cell)
    try:
        number = float(cell)
    except ValueError:
        return cell
    return number if math.isfinite(number) and repr(number) == cell else cell


class RowCells:
    """One row's standard cells with typed accessors that report problems for that row."""

    def __init__(self, collector: IssueCollector, row: int, std: dict[str, Any], labels: Mapping[str, str]):
        self.collector = collector
        self.row = row
        self.std = std
        self.labels = labels
        self.bad = False

    def issue(self, column: str, reason: str) -> None:
        self.bad = True
        self.collector.add(self.row, self.labels.get(column, column), reason)

    def integer(self, column: str, minimum: int | None = None) -> int | None:
        value = self.std.get(column)
        if value is None:
            return None
        result: int | None = None
        if isinstance(value, int) and not isinstance(value, bool):
            result = value
        elif isinstance(value, float) and value.is_integer() and abs(value) <= 2**53:
            result = int(value)
        elif isinstance(value, str) and _INT.fullmatch(value.strip()):
            result = int(value.strip())
        if result is None:
            self.issue(column, f"{show(value)} is not an integer")
        elif not fits_long(result):
            self.issue(column, f"{result} is outside the signed 64-bit range of Flink's long")
        elif minimum is not None and result < minimum:
            self.issue(column, f"{result} must be >= {minimum}")
        else:
            return result
        return None

    def text(self, column: str) -> str | None:
        value = self.std.get(column)
        if value is None or isinstance(value, str):
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
        if isinstance(value, float) and value.is_integer() and abs(value) <= 2**53:
            return str(int(value))  # a Parquet integer column with nulls arrives as float64
        self.issue(column, f"{show(value)} is not a string")
        return None

    def time(self, column: str, sentinels: bool = False) -> int | None:
        value = self.std.get(column)
        if value is None:
            return None
        try:
            return parse_time_ms(value, sentinels=sentinels)
        except ValueError as exc:
            self.issue(column, str(exc))
            return None

    def enum(self, column: str, names: str, by_name: Mapping[str, Any]) -> Any:
        """A case-insensitive enum cell; `by_name` maps lower-case names to members."""
        value = self.std.get(column)
        if value is None:
            return None
        member = by_name.get(value.strip().lower()) if isinstance(value, str) else None
        if member is None:
            self.issue(column, f"{show(value)} is not one of {names}")
        return member
