"""A row-time OVER aggregation with an unbounded frame, as Flink 2.3.0 runs it by default
(`RowTimeUnboundedPrecedingOverFunctionV2`, `table.exec.unbounded-over.version` 2):
`AGG(x) OVER (PARTITION BY k ORDER BY ts ROWS|RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)`.

A row waits, per key and timestamp, until the watermark reaches its timestamp; then the rows of
that timestamp leave, in arrival order, each with the input columns and the aggregates after it.
Keys and timestamps leave in the order their timers fire (Flink's timer heap,
`wmviz.core.timers`), so two keys due at one watermark interleave as in Flink. A row not after the
watermark on arrival is dropped and counted in `numLateRecordsDropped`. Nothing is ever retracted:
every output row is +I. One method per rule (docs/rules.md, SQL-O1 … SQL-O4).
"""

from __future__ import annotations

from wmviz.core.changelog import RowKind
from wmviz.core.operator_log import Dropped, StepLog
from wmviz.core.scenario import TraceRow
from wmviz.core.sql_aggregates import Accumulator
from wmviz.core.sql_buffer import (
    ForwardsWatermark,
    check_aggregated,
    compared,
    input_values,
    key_words,
    partition_key,
)
from wmviz.core.sql_buffer_config import OverAggregateConfig
from wmviz.core.sql_over_bounded import BoundedOver
from wmviz.core.sql_rows import LATE_METRIC, Fate, RowFate, SqlOutput, SqlValue, columns_of
from wmviz.core.timers import FiredTimer, TimeDomain, TimerService
from wmviz.core.timetext import TimedText

ROWS_AT = "over: rows at this time"
"""The purpose of the timer a key registers at a timestamp it holds rows of."""


class OverAggregate(ForwardsWatermark):
    """One instance of the OVER aggregation: per key its accumulators and the rows still waiting,
    by timestamp, in arrival order."""

    def __init__(self, config: OverAggregateConfig, timers: TimerService) -> None:
        self.config = config
        self.timers = timers
        self.accumulators: dict[str, tuple[Accumulator, ...]] = {}
        self.waiting: dict[str, dict[int, list[TraceRow]]] = {}

    # --- rules ---------------------------------------------------------------------------------

    def o1_is_late(self, ts_ms: int) -> bool:
        """SQL-O1: a row whose time is not after the operator's watermark is late: dropped and
        counted. Its place in the running aggregate has passed (rows of that time have left)."""
        return ts_ms <= self.watermark_ms

    def o2_wait(self, key: str, row: TraceRow, log: StepLog) -> None:
        """SQL-O2: a row on time waits under its key and timestamp; the first row of a timestamp
        registers that key's event-time timer there (one timer per key and timestamp)."""
        assert row.event_ms is not None
        at_time = self.waiting.setdefault(key, {})
        if row.event_ms not in at_time:
            at_time[row.event_ms] = []
            log.registered.append(self.timers.register(TimeDomain.EVENT, row.event_ms, key, ROWS_AT))
        at_time[row.event_ms].append(row)

    def o3_rows(self, key: str, rows: list[TraceRow], log: StepLog) -> None:
        """SQL-O3: ROWS: the rows of one timestamp are taken one at a time, in arrival order, and
        each leaves with the aggregates including itself and the rows before it, not those after."""
        for row in rows:
            self._accumulate(key, row)
            log.emit.append(self._output(key, row))

    def o4_range(self, key: str, rows: list[TraceRow], log: StepLog) -> None:
        """SQL-O4: RANGE: every row of one timestamp is its peer; all are taken first, then all
        leave with the same aggregates."""
        for row in rows:
            self._accumulate(key, row)
        for row in rows:
            log.emit.append(self._output(key, row))

    # --- the operator's contract ---------------------------------------------------------------

    def on_record(self, input_name: str, row: TraceRow, log: StepLog) -> None:
        assert row.event_ms is not None
        check_aggregated(row, self.config.aggregates)
        key = partition_key(row, self.config.partition_by)
        ts, watermark = row.event_ms, self.watermark_ms
        if self.o1_is_late(ts):
            why = TimedText.of(
                lambda t: (
                    f"{t(ts)} is not after the watermark {t(watermark)} on arrival{key_words(key)}: "
                    f"dropped, {LATE_METRIC} (SQL-O1)"
                )
            )
            log.notes.append(RowFate(row, Fate.DROPPED, "SQL-O1", why, LATE_METRIC))
            log.dropped.append(Dropped(row, why, late=True))
            return
        self.o2_wait(key, row, log)
        frame = self.config.frame.upper()
        why = TimedText.of(
            lambda t: (
                f"{t(ts)} is after the watermark {t(watermark)} on arrival{key_words(key)}: waits until "
                f"the watermark reaches {t(ts)}, then leaves in time order with the {frame} aggregates "
                "(SQL-O2)"
            )
        )
        log.notes.append(RowFate(row, Fate.KEPT, "SQL-O2", why))

    def on_timer(self, fired: FiredTimer, log: StepLog) -> None:
        key, ts = fired.timer.key, fired.timer.timestamp_ms
        at_time = self.waiting.get(key, {})
        rows = at_time.pop(ts, [])
        if not at_time:
            self.waiting.pop(key, None)
        if self.config.frame == "rows":
            self.o3_rows(key, rows, log)
        else:
            self.o4_range(key, rows, log)

    def snapshot(self) -> tuple[object, ...]:
        waiting = tuple(
            (key, tuple((ts, tuple(rows)) for ts, rows in sorted(at_time.items())))
            for key, at_time in sorted(self.waiting.items())
        )
        return (self.watermark_ms, tuple(sorted(self.accumulators.items())), waiting)

    def live_rows(self) -> set[int]:
        return {row.row for at_time in self.waiting.values() for rows in at_time.values() for row in rows}

    # --- helpers -------------------------------------------------------------------------------

    def _accumulate(self, key: str, row: TraceRow) -> None:
        calls = self.config.aggregates
        accs = self.accumulators.get(key) or tuple(call.empty() for call in calls)
        columns = columns_of(row)
        self.accumulators[key] = tuple(
            compared(row, call.column or "", lambda: call.add(acc, columns))  # noqa: B023 (called at once)
            for call, acc in zip(calls, accs, strict=True)
        )

    def _output(self, key: str, row: TraceRow) -> SqlOutput:
        accs = self.accumulators[key]
        results: tuple[tuple[str, SqlValue], ...] = tuple(
            (call.name, call.result(acc)) for call, acc in zip(self.config.aggregates, accs, strict=True)
        )
        return SqlOutput(RowKind.INSERT, input_values(row) + results, (row.row,))


def build_over(config: OverAggregateConfig, timers: TimerService) -> OverAggregate | BoundedOver:
    """The unbounded frame's operator, or the bounded one's when the config has `preceding`."""
    if config.preceding is not None:
        return BoundedOver(config, timers)
    return OverAggregate(config, timers)
