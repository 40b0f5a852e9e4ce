"""A row-time OVER aggregation with a bounded frame, as Flink 2.3.0 runs it:
`ROWS BETWEEN n PRECEDING AND CURRENT ROW` (`RowTimeRowsBoundedPrecedingFunction`) and
`RANGE BETWEEN INTERVAL … PRECEDING AND CURRENT ROW` (`RowTimeRangeBoundedPrecedingFunction`).

Unlike the unbounded frame (wmviz/core/sql_over.py), the late test is not the watermark: a row is
dropped and counted when its time is not after the last timer that fired for its key (0 before
any), so a row behind the watermark still waits while no later time of its key has fired. RANGE
also registers a cleanup timer 1.5 × the frame after a row (Flink's own arithmetic); when it fires
and no later row moved it, the key's whole state goes, the last fired time with it, and a row that
would have been late is taken again. A timer that fires with no rows of its time (an old cleanup
timer) still becomes the last fired time.

The aggregates are computed over the rows in the frame each time (Flink adds and retracts): the
same values for COUNT, SUM over integers, MIN, MAX and AVG over integers; a floating-point SUM or
AVG could differ in its last bits, so the plan reader refuses those. One method per rule
(docs/rules.md, SQL-O5 … SQL-O8).
"""

from __future__ import annotations

from wmviz.core.changelog import RowKind
from wmviz.core.operator_log import Dropped, StepLog
from wmviz.core.scenario import TraceRow
from wmviz.core.sql_buffer import (
    ForwardsWatermark,
    check_aggregated,
    compared,
    input_values,
    key_words,
    partition_key,
)
from wmviz.core.sql_buffer_config import OverAggregateConfig
from wmviz.core.sql_rows import LATE_METRIC, Fate, RowFate, SqlOutput, SqlValue, columns_of
from wmviz.core.timers import FiredTimer, TimeDomain, TimerService
from wmviz.core.timetext import TimedText

ROWS_AT = "over: rows at this time"
CLEANUP = "over: state cleanup"


class BoundedOver(ForwardsWatermark):
    """One instance: per key the rows held by timestamp (waiting, or still in a RANGE frame), the
    ROWS frame in processing order, the last fired time and the RANGE cleanup time."""

    def __init__(self, config: OverAggregateConfig, timers: TimerService) -> None:
        assert config.preceding is not None
        self.config = config
        self.timers = timers
        self.preceding: int = config.preceding
        self.held: dict[str, dict[int, list[TraceRow]]] = {}
        self.frame: dict[str, list[TraceRow]] = {}
        self.last_fired: dict[str, int] = {}
        self.cleanup_at: dict[str, int] = {}

    # --- rules ---------------------------------------------------------------------------------

    def o5_is_late(self, key: str, ts_ms: int) -> bool:
        """SQL-O5: a bounded frame drops (and counts) a row whose time is not after the last timer
        that fired for its key, 0 before any; the watermark is not compared."""
        return ts_ms <= self.last_fired.get(key, 0)

    def o6_register_cleanup(self, key: str, ts_ms: int, log: StepLog) -> None:
        """SQL-O6: RANGE: a row moves its key's cleanup time to ts + ⌊1.5 × frame⌋ + 1 when the
        current one is before ts + frame + 1 (the old timer is not deleted)."""
        current = self.cleanup_at.get(key)
        if current is None or current < ts_ms + self.preceding + 1:
            at = ts_ms + int(self.preceding * 1.5) + 1
            log.registered.append(self.timers.register(TimeDomain.EVENT, at, key, CLEANUP))
            self.cleanup_at[key] = at

    def o7_rows_frame(self, key: str, rows: list[TraceRow], log: StepLog) -> None:
        """SQL-O7: ROWS n PRECEDING: each row of the timestamp in turn drops the oldest row once
        the frame holds n + 1, joins it, and leaves with the aggregates over the frame."""
        frame = self.frame.setdefault(key, [])
        for row in rows:
            if len(frame) >= self.preceding + 1:
                frame.pop(0)
            frame.append(row)
            log.emit.append(self._output(row, frame))

    def o8_range_frame(self, key: str, ts_ms: int, rows: list[TraceRow], log: StepLog) -> None:
        """SQL-O8: RANGE: rows more than the frame before the timestamp leave the state, then all
        rows of the timestamp leave with the aggregates over the rows within [ts − frame, ts]."""
        held = self.held.get(key, {})
        for old in [t for t in held if ts_ms - t > self.preceding]:
            del held[old]
        frame = [row for t in sorted(held) if t <= ts_ms for row in held[t]]
        for row in rows:
            log.emit.append(self._output(row, frame))

    def o6_cleans(self, key: str, ts_ms: int) -> bool:
        """SQL-O6: RANGE: the cleanup timer, when no later row moved it, clears the key's state:
        rows, aggregates and the last fired time."""
        at = self.cleanup_at.get(key)
        if at is None or at > ts_ms:
            return False
        self.held.pop(key, None)
        self.last_fired.pop(key, None)
        del self.cleanup_at[key]
        return True

    # --- the operator's contract ---------------------------------------------------------------

    def on_record(self, input_name: str, row: TraceRow, log: StepLog) -> None:
        assert row.event_ms is not None
        check_aggregated(row, self.config.aggregates)
        key = partition_key(row, self.config.partition_by)
        ts, last = row.event_ms, self.last_fired.get(key, 0)
        if self.o5_is_late(key, ts):
            why = TimedText.of(
                lambda t: (
                    f"{t(ts)} is not after {t(last)}, the last time that fired{key_words(key)}: "
                    f"dropped, {LATE_METRIC} (SQL-O5)"
                )
            )
            log.notes.append(RowFate(row, Fate.DROPPED, "SQL-O5", why, LATE_METRIC))
            log.dropped.append(Dropped(row, why, late=True))
            return
        at_time = self.held.setdefault(key, {})
        if ts not in at_time:
            at_time[ts] = []
            log.registered.append(self.timers.register(TimeDomain.EVENT, ts, key, ROWS_AT))
        at_time[ts].append(row)
        if self.config.frame == "range":
            self.o6_register_cleanup(key, ts, log)
        watermark = self.watermark_ms
        why = TimedText.of(
            lambda t: (
                f"{t(ts)} is after {t(last)}, the last time that fired{key_words(key)} (watermark "
                f"{t(watermark)}): waits for its timer, then leaves with its frame's aggregates (SQL-O5)"
            )
        )
        log.notes.append(RowFate(row, Fate.KEPT, "SQL-O5", why))

    def on_timer(self, fired: FiredTimer, log: StepLog) -> None:
        key, ts = fired.timer.key, fired.timer.timestamp_ms
        if self.config.frame == "range" and self.o6_cleans(key, ts):
            return
        rows = self.held.get(key, {}).get(ts)
        if rows is not None:
            if self.config.frame == "rows":
                del self.held[key][ts]
                self.o7_rows_frame(key, rows, log)
            else:
                self.o8_range_frame(key, ts, rows, log)
        self.last_fired[key] = ts

    def snapshot(self) -> tuple[object, ...]:
        held = tuple(
            (key, tuple((ts, tuple(rows)) for ts, rows in sorted(at.items())))
            for key, at in sorted(self.held.items())
        )
        frames = tuple((key, tuple(rows)) for key, rows in sorted(self.frame.items()))
        return (
            self.watermark_ms,
            held,
            frames,
            tuple(sorted(self.last_fired.items())),
            tuple(sorted(self.cleanup_at.items())),
        )

    def live_rows(self) -> set[int]:
        held = {row.row for at in self.held.values() for rows in at.values() for row in rows}
        return held | {row.row for rows in self.frame.values() for row in rows}

    # --- helpers -------------------------------------------------------------------------------

    def _output(self, row: TraceRow, frame: list[TraceRow]) -> SqlOutput:
        results: list[tuple[str, SqlValue]] = []
        for call in self.config.aggregates:
            acc = call.empty()
            for member in frame:
                acc = compared(member, call.column or "", lambda: call.add(acc, columns_of(member)))  # noqa: B023
            results.append((call.name, call.result(acc)))
        return SqlOutput(RowKind.INSERT, input_values(row) + tuple(results), (row.row,))
