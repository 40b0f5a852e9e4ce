"""SQL's aggregate calls as wmviz models them: COUNT(*), COUNT, SUM, SUM0, MIN, MAX and AVG over one column.

Written once for every SQL operator that aggregates (window TVFs, SESSION, OVER). An accumulator is
a small immutable tuple, so a two-phase aggregation can keep a partial per slice and merge it
later, as Flink's local and global window aggregates do. Types follow Flink's: COUNT is a BIGINT
(never null); SUM, MIN, MAX and AVG of no non-null value are NULL; AVG of an integer column is an
integer (the sum divided by the count, truncated toward zero as Java's `/` does); NULLs are skipped.
SUM0 is the planner's `$SUM0`, a SUM that is 0 rather than NULL over no value: an OVER aggregation
computes SUM as `CASE WHEN COUNT(x) > 0 THEN $SUM0(x) ELSE NULL END` in the projection after it.

A config spells a call as SQL does, with the output field after AS: `"COUNT(*) AS orders"`,
`"sum(paid) as paid"` (`parse_call`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from wmviz.core.errors import BadInputError
from wmviz.core.sql_value import SqlValue

Function = Literal["count_star", "count", "sum", "sum0", "min", "max", "avg"]
FUNCTIONS: tuple[str, ...] = ("COUNT", "SUM", "SUM0", "MIN", "MAX", "AVG")

Accumulator = tuple[int, SqlValue]
"""(how many non-null values were taken (rows, for COUNT(*)), the running sum / min / max)."""

_CALL = re.compile(
    r"^\s*(?P<fn>[A-Za-z][A-Za-z0-9]*)\s*\(\s*(?P<arg>\*|[A-Za-z_][A-Za-z0-9_$]*)\s*\)"
    r"(?:\s+AS\s+(?P<name>[A-Za-z_][A-Za-z0-9_$]*))?\s*$",
    re.IGNORECASE,
)


class AggregateError(BadInputError, ValueError):
    """A call wmviz cannot read; the message says what it expected."""


class AggregateValueError(AggregateError):
    """A value a call cannot take (text under SUM, a number beside a text under MIN); `column`
    names the column, and the operator that met it names the row (a ScenarioError)."""

    def __init__(self, column: str, reason: str) -> None:
        super().__init__(reason)
        self.column = column


@dataclass(frozen=True, slots=True)
class AggregateCall:
    """One aggregate call: its function, the column it reads (None for COUNT(*)) and its output field."""

    function: Function
    column: str | None
    name: str

    def spelled(self) -> str:
        """The call as a config writes it (`COUNT(*) AS orders`)."""
        fn = "COUNT" if self.function == "count_star" else self.function.upper()
        return f"{fn}({self.column or '*'}) AS {self.name}"

    def empty(self) -> Accumulator:
        return (0, None)

    def add(self, acc: Accumulator, columns: Mapping[str, SqlValue]) -> Accumulator:
        """The accumulator after one more input row."""
        taken, value = acc
        if self.function == "count_star":
            return (taken + 1, None)
        assert self.column is not None
        item = columns.get(self.column)
        if item is None:
            return acc  # SQL's aggregates skip NULLs
        if self.function == "count":
            return (taken + 1, None)
        if self.function in ("sum", "sum0", "avg") and not _number(item):
            raise AggregateValueError(self.column, f"{item!r} is not a number, which {self.spelled()} needs")
        if not (_number(item) or isinstance(item, str)):
            raise AggregateValueError(self.column, f"{item!r} is neither a number nor a text")
        return (taken + 1, item if value is None else self.fold(value, item))

    def merge(self, left: Accumulator, right: Accumulator) -> Accumulator:
        """Two partial accumulators as one (a local pre-aggregate reaching the global one)."""
        if right[0] == 0:
            return left
        if left[0] == 0:
            return right
        if self.function in ("count_star", "count"):
            return (left[0] + right[0], None)
        assert left[1] is not None and right[1] is not None
        return (left[0] + right[0], self.fold(left[1], right[1]))

    def fold(self, value: SqlValue, item: SqlValue) -> SqlValue:
        """Two values of the call as one; a number met by a text is an AggregateValueError."""
        try:
            return _fold(self.function, value, item)
        except TypeError:
            raise AggregateValueError(
                self.column or "", f"{item!r} cannot be compared with {value!r} (a number and a text)"
            ) from None

    def result(self, acc: Accumulator) -> SqlValue:
        """The call's value for everything taken."""
        taken, value = acc
        if self.function in ("count_star", "count"):
            return taken
        if taken == 0:
            return 0 if self.function == "sum0" else None
        if self.function == "avg":
            assert isinstance(value, int | float)
            if isinstance(value, int):
                quotient = abs(value) // taken
                return quotient if value >= 0 else -quotient  # Java's `/` truncates toward zero
            return value / taken
        return value


def _number(value: SqlValue) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _fold(function: Function, value: SqlValue, item: SqlValue) -> SqlValue:
    if function in ("sum", "sum0", "avg"):
        return value + item  # type: ignore[operator]  # both numbers: `add` let no other in
    assert value is not None and item is not None
    if function == "min":
        return item if item < value else value  # type: ignore[operator]
    return item if item > value else value  # type: ignore[operator]


def parse_call(text: str) -> AggregateCall:
    """`COUNT(*) AS orders` as a call; AggregateError names what is wrong."""
    match = _CALL.match(text) if isinstance(text, str) else None
    if match is None:
        raise AggregateError(
            f"{text!r} is not an aggregate call: expected FUNCTION(column) AS name, FUNCTION one of "
            f"{', '.join(FUNCTIONS)} (COUNT(*) counts rows)"
        )
    fn, arg, name = match["fn"].upper(), match["arg"], match["name"]
    if fn not in FUNCTIONS:
        raise AggregateError(f"{fn} is not an aggregate wmviz models: one of {', '.join(FUNCTIONS)}")
    if arg == "*" and fn != "COUNT":
        raise AggregateError(f"{fn}(*) is not SQL: only COUNT takes *")
    function: Function = "count_star" if arg == "*" else fn.lower()  # type: ignore[assignment]
    column = None if arg == "*" else arg
    return AggregateCall(function, column, name or f"{fn}({arg})")
