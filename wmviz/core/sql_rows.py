"""What a SQL operator takes and gives (docs/sql.md, "Operators"): an input row's columns, the rows
it outputs with their changelog kind, and what became of every row it received (the late-row
ledger's source).

The contract every SQL operator of the core keeps (`wmviz.core.sql_operators.SqlOperator`), so
the pipeline, the replay and the ledger treat them alike:
- a record reaches `on_record(input, row, log)`; the row's SQL columns are its `payload` pairs
  (`columns_of`), its time attribute is `row.event_ms`, already in epoch milliseconds;
- the combined watermark reaches `on_watermark(ms, log)` before the due event-time timers fire
  (`on_timer`), then `output_watermark(ms, log)` forwards what the operator lets through;
- for every record received the operator logs exactly one `RowFate` (kept, added late or
  dropped), at the step its fate is decided; a row Flink counts in
  `numLateRecordsDropped` is also logged as a late `Dropped`, which the page already shows;
- every output row is one `SqlOutput`, values in the operator's output field order.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from enum import Enum

from wmviz.core.changelog import RowKind
from wmviz.core.scenario import TraceRow
from wmviz.core.sql_value import SqlValue
from wmviz.core.timetext import TimedText

LATE_METRIC = "numLateRecordsDropped"
"""The metric Flink's event-time operators count a dropped late row in (DataStream's windows and
SQL's operators alike)."""


def columns_of(row: TraceRow) -> Mapping[str, SqlValue]:
    """A record's SQL columns: its payload pairs (the rows file's `row` object, in order)."""
    return dict(row.payload)


@dataclass(frozen=True, slots=True)
class SqlOutput:
    """One output row of a SQL operator: its changelog kind and its values by output field."""

    kind: RowKind
    values: tuple[tuple[str, SqlValue], ...]
    """(field name, value) in the operator's output field order."""
    rows: tuple[int, ...] = ()
    """The trace rows (their `row` numbers) the output was made from, in arrival order."""

    def value(self, name: str) -> SqlValue:
        return dict(self.values)[name]


class Fate(Enum):
    """What became of one input row in one operator (the late-row ledger's column)."""

    KEPT = "kept"
    """Taken on time: into a window, a buffer or a cache."""
    ADDED_LATE = "added late"
    """Behind the watermark, yet still counted: in the windows not yet fired, or an open session.
    Nothing already emitted is revised."""
    DROPPED = "dropped"
    """Never reaches an output; Flink counts it (`metric`) or not (metric None)."""


@dataclass(frozen=True, slots=True)
class RowFate:
    """One input row's fate in the operator that logs it, under a rule id of docs/rules.md."""

    row: TraceRow
    fate: Fate
    rule: str
    why: TimedText
    """In words, times kept as numbers (`why.text(times)` in the reader's format)."""
    metric: str | None = None
    """The Flink metric that counts it, when one does (`numLateRecordsDropped`)."""
    watermark_ms: int | None = None
    """The operator's combined input watermark when the row arrived, before the row (what
    `CURRENT_WATERMARK(ts)` returns at that node; MIN: none yet, SQL's NULL). None: not said."""

    @property
    def reason(self) -> str:
        return self.why.text()


def said_watermark(events: list, start: int, watermark_ms: int) -> None:
    """Give every `RowFate` logged from `events[start]` on that does not say its watermark the one
    the operator had when the record arrived (the pipeline calls this around a SQL operator's
    `on_record`), so an operator that logs a fate needs nothing more for the ledger's
    `CURRENT_WATERMARK` column."""
    for index in range(start, len(events)):
        event = events[index]
        if isinstance(event, RowFate) and event.watermark_ms is None:
            events[index] = replace(event, watermark_ms=watermark_ms)


__all__ = ["Fate", "RowFate", "RowKind", "SqlOutput", "SqlValue", "columns_of", "said_watermark"]
