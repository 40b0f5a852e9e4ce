"""What SQL's buffering operators (OVER, deduplication, ORDER BY rowtime) share: the key a row is
kept under, its output values, and the watermark they all forward unchanged.

Their late rules are not shared: Flink 2.3.0 drops an OVER row at `ts ≤ W`, a buffered
deduplication row at `ts < W`, and a sorted row at `ts ≤` the last timestamp it emitted (not the
watermark), so each operator states its own (docs/rules.md, SQL-O1, SQL-D1, SQL-SORT1).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import TypeVar

from wmviz.core.operator_log import OutputWatermark, StepLog
from wmviz.core.scenario import TraceRow
from wmviz.core.sql_aggregates import AggregateCall, AggregateValueError
from wmviz.core.sql_rows import SqlValue, columns_of
from wmviz.core.sql_value import json_type
from wmviz.core.types import MIN_MS
from wmviz.core.windows import ScenarioError

T = TypeVar("T")


def partition_key(row: TraceRow, columns: tuple[str, ...]) -> str:
    """The key a row is kept under: `user_id='u1'` (the PARTITION BY values; '' for one key).

    Flink's timers and keyed state compare keys by value, which this text keeps (a value's repr
    tells 1 from '1'); braces are doubled so the text can sit in a `TimedText` template."""
    values = columns_of(row)
    text = ", ".join(f"{name}={values.get(name)!r}" for name in columns)
    return text.replace("{", "{{").replace("}", "}}")


def input_values(row: TraceRow) -> tuple[tuple[str, SqlValue], ...]:
    """A record's columns as output values, in the rows file's order."""
    return tuple(row.payload)


def key_words(key: str) -> str:
    """`for user_id='u1'`, or nothing for the one key of an operator without PARTITION BY."""
    return f" for {key}" if key else ""


def check_aggregated(row: TraceRow, calls: Iterable[AggregateCall]) -> None:
    """A record whose column a SUM, SUM0 or AVG reads holds a number or NULL, and one MIN or MAX
    reads a number, a text or NULL; else ScenarioError names the row and the column."""
    values = columns_of(row)
    for call in calls:
        if call.column is None or values.get(call.column) is None:
            continue
        value = values[call.column]
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if call.function in ("sum", "sum0", "avg") and not number:
            raise ScenarioError(row, call.column, f"{value!r} is not a number, which {call.spelled()} needs")
        if call.function in ("min", "max") and not (number or isinstance(value, str)):
            raise ScenarioError(row, call.column, f"{value!r} is neither a number nor a text")


def compared(row: TraceRow, column: str, work: Callable[[], T]) -> T:
    """`work()`, which compares the row's `column` with other rows' values: a number met by a text
    (or the other way round) is a ScenarioError naming the row and the column, not a traceback."""
    try:
        return work()
    except (TypeError, AggregateValueError):
        raise ScenarioError(
            row, column, "cannot be compared with the other rows' values (a number and a text)"
        ) from None


def computed_over(rows: list[TraceRow], work: Callable[[], T]) -> T:
    """`work()`, which computes over `rows` together (a match's MEASURES): when values of two kinds
    meet there, the ScenarioError names the first row whose column holds another kind than the
    rows before it (a `true` among numbers), not the row the computation happened to end on."""
    try:
        return work()
    except (TypeError, AggregateValueError):
        row, column, why = _odd_value(rows)
        raise ScenarioError(row, column, why) from None


def _odd_value(rows: list[TraceRow]) -> tuple[TraceRow, str, str]:
    """The first (row, column) whose value is of another kind than the column's first value, and
    why; without one, the last row as a whole."""
    first_kind: dict[str, str] = {}
    for row in rows:
        for column, value in columns_of(row).items():
            if value is None:
                continue
            kind = json_type(value)
            seen = first_kind.setdefault(column, kind)
            if seen != kind:
                why = f"holds {json.dumps(value)} ({kind}) where the match's rows before it hold {seen}"
                return row, column, why
    return rows[-1], "MEASURES", "cannot be computed: its values are of kinds that cannot meet"


class ForwardsWatermark:
    """The operator's current watermark, and its output: the same watermark, after its timers
    (a KeyedProcessOperator forwards what it receives once the due timers have fired)."""

    watermark_ms: int = MIN_MS

    def on_watermark(self, watermark_ms: int, log: StepLog) -> None:
        """Remember the operator's watermark; the pipeline then fires the due timers."""
        self.watermark_ms = watermark_ms

    def output_watermark(self, watermark_ms: int, log: StepLog) -> None:
        """Forward the watermark unchanged."""
        log.emit.append(OutputWatermark(watermark_ms))
