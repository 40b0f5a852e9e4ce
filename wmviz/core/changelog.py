"""The changelog kinds of an operator's output rows, as Flink's `RowKind` prints them."""

from __future__ import annotations

from enum import Enum


class RowKind(Enum):
    """A changelog row's kind. The interval join emits +I, -U and +U; SQL's operators may also
    retract a row outright (-D), as a row-time deduplication keeping the last row does."""

    INSERT = "+I"
    UPDATE_BEFORE = "-U"
    UPDATE_AFTER = "+U"
    DELETE = "-D"
