"""`ORDER BY ts[, c [DESC], ...]` on a stream, as Flink 2.3.0 runs it (`RowTimeSortOperator`).

Rows wait per timestamp; the first row of a timestamp registers an event-time timer there, and
when the watermark reaches it the rows of that timestamp leave, ordered by the other ORDER BY
columns (a stable sort: ties keep their arrival order). The late test is not the watermark: a row
is dropped when its time is not after the last timestamp the operator emitted, so a row behind
the watermark still waits (its timer fires at the next watermark) as long as no later timestamp
has left. Flink counts no metric for it. One method per rule (docs/rules.md, SQL-SORT1 …
SQL-SORT3).
"""

from __future__ import annotations

from functools import cmp_to_key

from wmviz.core.changelog import RowKind
from wmviz.core.operator_log import Dropped, StepLog
from wmviz.core.scenario import TraceRow
from wmviz.core.sql_buffer import ForwardsWatermark, compared, input_values
from wmviz.core.sql_buffer_config import TemporalSortConfig
from wmviz.core.sql_rows import Fate, RowFate, SqlOutput, SqlValue, columns_of
from wmviz.core.timers import FiredTimer, TimeDomain, TimerService
from wmviz.core.timetext import TimedText

ROWS_AT = "sort: rows at this time"
KEY = ""
"""The one key: Flink runs the sort on a single (keyless) stream."""


class TemporalSort(ForwardsWatermark):
    """One instance of the sort: the rows waiting by timestamp and the last timestamp emitted."""

    def __init__(self, config: TemporalSortConfig, timers: TimerService) -> None:
        self.config = config
        self.timers = timers
        self.waiting: dict[int, list[TraceRow]] = {}
        self.last_emitted_ms: int | None = None

    # --- rules ---------------------------------------------------------------------------------

    def sort1_is_late(self, ts_ms: int) -> bool:
        """SQL-SORT1: a row whose time is not after the last timestamp already emitted would leave
        out of order: it is dropped, and no metric counts it. Before the first emission nothing is
        late, and the watermark itself is not compared."""
        return self.last_emitted_ms is not None and ts_ms <= self.last_emitted_ms

    def sort2_wait(self, row: TraceRow, log: StepLog) -> None:
        """SQL-SORT2: a row waits under its timestamp; the first row of a timestamp registers the
        event-time timer there (a time the watermark has passed fires at the next watermark)."""
        assert row.event_ms is not None
        if row.event_ms not in self.waiting:
            self.waiting[row.event_ms] = []
            log.registered.append(self.timers.register(TimeDomain.EVENT, row.event_ms, KEY, ROWS_AT))
        self.waiting[row.event_ms].append(row)

    def sort3_emit(self, ts_ms: int, log: StepLog) -> None:
        """SQL-SORT3: at its timer the rows of one timestamp leave, ordered by the other ORDER BY
        columns (stable: equal rows keep arrival order), and that timestamp becomes the last one
        emitted."""
        rows = self.waiting.pop(ts_ms, None)
        if rows is None:
            return
        column = ", ".join(self.config.then_by)
        for row in compared(rows[-1], column, lambda: sorted(rows, key=cmp_to_key(self._compare))):
            log.emit.append(SqlOutput(RowKind.INSERT, input_values(row), (row.row,)))
        self.last_emitted_ms = ts_ms

    # --- the operator's contract ---------------------------------------------------------------

    def on_record(self, input_name: str, row: TraceRow, log: StepLog) -> None:
        assert row.event_ms is not None
        ts, last, watermark = row.event_ms, self.last_emitted_ms, self.watermark_ms
        if self.sort1_is_late(ts):
            assert last is not None
            why = TimedText.of(
                lambda t: (
                    f"{t(ts)} is not after {t(last)}, the last time the sort emitted: dropped, "
                    "no metric counts it (SQL-SORT1)"
                )
            )
            log.notes.append(RowFate(row, Fate.DROPPED, "SQL-SORT1", why))
            log.dropped.append(Dropped(row, why, late=False))
            return
        self.sort2_wait(row, log)
        why = TimedText.of(
            lambda t: (
                f"{t(ts)} waits until the watermark (now {t(watermark)}) reaches it, then leaves in "
                "time order (SQL-SORT2)"
            )
        )
        log.notes.append(RowFate(row, Fate.KEPT, "SQL-SORT2", why))

    def on_timer(self, fired: FiredTimer, log: StepLog) -> None:
        self.sort3_emit(fired.timer.timestamp_ms, log)

    def snapshot(self) -> tuple[object, ...]:
        waiting = tuple((ts, tuple(rows)) for ts, rows in sorted(self.waiting.items()))
        return (self.watermark_ms, self.last_emitted_ms, waiting)

    def live_rows(self) -> set[int]:
        return {row.row for rows in self.waiting.values() for row in rows}

    # --- helpers -------------------------------------------------------------------------------

    def _compare(self, left: TraceRow, right: TraceRow) -> int:
        """Flink's generated comparator over the other ORDER BY columns: ASC with NULLs first,
        DESC with NULLs last (the planner's defaults)."""
        a, b = columns_of(left), columns_of(right)
        for column in self.config.then_by:
            descending = column in self.config.descending
            order = _compare_values(a.get(column), b.get(column), nulls_last=descending)
            if order:
                return (
                    -order
                    if descending and a.get(column) is not None and b.get(column) is not None
                    else order
                )
        return 0


def _compare_values(a: SqlValue, b: SqlValue, *, nulls_last: bool) -> int:
    if a is None or b is None:
        if a is None and b is None:
            return 0
        return (1 if a is None else -1) if nulls_last else (-1 if a is None else 1)
    return (a > b) - (a < b)  # type: ignore[operator]


def build_sort(config: TemporalSortConfig, timers: TimerService) -> TemporalSort:
    return TemporalSort(config, timers)
