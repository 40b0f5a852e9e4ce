"""`MATCH_RECOGNIZE` on a stream, as Flink 2.3.0 runs it (`CepOperator` in event time, the
pattern in flink-cep's NFA, `wmviz.core.sql_match_nfa`).

The event-time side (docs/rules.md, SQL-MR1 … SQL-MR3): a row whose time is not after the
operator's current watermark is late, dropped and counted in `numLateRecordsDropped`. Any other
row waits in its partition's buffer under its time; the first row of a time registers an
event-time timer there. When a watermark fires any timer of a partition, every buffered time of
that partition up to the watermark is fed to the pattern in time order (rows of one time in
arrival order: the SQL plan has no secondary ORDER BY here), each time after the matcher's clock
is moved to it (WITHIN timeouts, SQL-MR4); then the clock moves to the watermark. A row that
starts a partial match under WITHIN registers a timer at its time + the bound, so a timeout is
noticed even when no row follows. The operator forwards the watermark after its timers.
"""

from __future__ import annotations

from wmviz.core.changelog import RowKind
from wmviz.core.operator_log import Dropped, StepLog
from wmviz.core.scenario import TraceRow
from wmviz.core.sql_buffer import ForwardsWatermark, key_words, partition_key
from wmviz.core.sql_match_config import MatchLogic, SqlMatchConfig
from wmviz.core.sql_match_nfa import Matcher, Partial
from wmviz.core.sql_rows import LATE_METRIC, Fate, RowFate, SqlOutput, columns_of
from wmviz.core.timers import FiredTimer, TimeDomain, TimerService
from wmviz.core.timetext import TimedText

ROWS_AT = "match: rows at this time"
WITHIN_AT = "match: WITHIN ends a partial match"


class SqlMatch(ForwardsWatermark):
    """One instance: per partition its buffered rows by time and its matcher."""

    def __init__(self, config: SqlMatchConfig, timers: TimerService) -> None:
        if config.logic is None:
            raise ValueError("a MATCH_RECOGNIZE config needs its DEFINE and MEASURES (read from a plan)")
        self.config = config
        self.logic: MatchLogic = config.logic
        self.timers = timers
        self.buffer: dict[str, dict[int, list[TraceRow]]] = {}
        self.matchers: dict[str, Matcher[TraceRow]] = {}
        self.matches = 0

    # --- rules ---------------------------------------------------------------------------------

    def mr1_is_late(self, ts_ms: int) -> bool:
        """SQL-MR1: a row whose time is not after the operator's current watermark is late: dropped
        and counted in numLateRecordsDropped (CepOperator keeps no late side output in SQL)."""
        return ts_ms <= self.watermark_ms

    def mr2_buffer(self, key: str, row: TraceRow, log: StepLog) -> None:
        """SQL-MR2: a row on time waits in its partition's buffer under its time; the first row of
        a time registers the partition's event-time timer there."""
        assert row.event_ms is not None
        times = self.buffer.setdefault(key, {})
        if row.event_ms not in times:
            times[row.event_ms] = []
            log.registered.append(self.timers.register(TimeDomain.EVENT, row.event_ms, key, ROWS_AT))
        times[row.event_ms].append(row)

    def mr3_feed(self, key: str, log: StepLog) -> None:
        """SQL-MR3: at any timer of a partition, every buffered time up to the watermark reaches the
        pattern in time order, rows of one time in arrival order, each time after the matcher's
        clock moved to it (SQL-MR4); then the clock moves to the watermark."""
        times = self.buffer.get(key, {})
        matcher = self._matcher(key)
        for ts in sorted(t for t in times if t <= self.watermark_ms):
            self._emit(key, matcher.mr4_advance_time(ts), matcher.mr7_release(), log)
            for row in times.pop(ts):
                released = matcher.feed(ts, row)
                if matcher.started and self.config.within_ms is not None:
                    at = ts + self.config.within_ms
                    log.registered.append(self.timers.register(TimeDomain.EVENT, at, key, WITHIN_AT))
                self._emit(key, [], released, log)
        self._emit(key, matcher.mr4_advance_time(self.watermark_ms), matcher.mr7_release(), log)
        if not times:
            self.buffer.pop(key, None)

    # --- the operator's contract ---------------------------------------------------------------

    def on_record(self, input_name: str, row: TraceRow, log: StepLog) -> None:
        assert row.event_ms is not None
        ts, watermark = row.event_ms, self.watermark_ms
        key = partition_key(row, self.config.partition_by)
        if self.mr1_is_late(ts):
            why = TimedText.of(
                lambda t: (
                    f"{t(ts)} is not after the watermark {t(watermark)}{key_words(key)}: dropped, "
                    f"{LATE_METRIC} (SQL-MR1)"
                )
            )
            log.notes.append(RowFate(row, Fate.DROPPED, "SQL-MR1", why, LATE_METRIC))
            log.dropped.append(Dropped(row, why, late=True))
            return
        self.mr2_buffer(key, row, log)
        why = TimedText.of(
            lambda t: (
                f"{t(ts)} waits{key_words(key)} until the watermark (now {t(watermark)}) reaches it, "
                "then meets the pattern in time order (SQL-MR2)"
            )
        )
        log.notes.append(RowFate(row, Fate.KEPT, "SQL-MR2", why))

    def on_timer(self, fired: FiredTimer, log: StepLog) -> None:
        self.mr3_feed(fired.timer.key, log)

    def snapshot(self) -> tuple[object, ...]:
        buffered = tuple(
            (key, tuple((ts, tuple(rows)) for ts, rows in sorted(times.items())))
            for key, times in sorted(self.buffer.items())
        )
        matchers = tuple((key, m.snapshot()) for key, m in sorted(self.matchers.items()))
        return (self.watermark_ms, self.matches, buffered, matchers)

    def live_rows(self) -> set[int]:
        rows = {row.row for times in self.buffer.values() for rs in times.values() for row in rs}
        for matcher in self.matchers.values():
            for partial in [*matcher.partials, *matcher.completed]:
                rows.update(row.row for _, _, row in partial.taken)
        return rows

    # --- helpers -------------------------------------------------------------------------------

    def _matcher(self, key: str) -> Matcher[TraceRow]:
        if key not in self.matchers:
            self.matchers[key] = Matcher(
                self.config.pattern, self.config.skip, self.config.within_ms, self.logic.define
            )
        return self.matchers[key]

    def _emit(
        self, key: str, timed_out: list[Partial[TraceRow]], released: list[Partial[TraceRow]], log: StepLog
    ) -> None:
        """One +I row per released match: the partition's keys (from its first row), then the
        MEASURES."""
        for partial in timed_out:
            self._note_timeout(key, partial, log)
        for match in released:
            self.matches += 1
            first = columns_of(match.taken[0][2])
            keys = tuple((name, first.get(name)) for name in self.config.partition_by)
            rows = tuple(row.row for _, _, row in match.taken)
            log.emit.append(SqlOutput(RowKind.INSERT, keys + self.logic.measures(match), rows))

    def _note_timeout(self, key: str, partial: Partial[TraceRow], log: StepLog) -> None:
        """SQL-MR4's words for the page: which rows a timed-out partial match held."""
        start, within = partial.start.ts_ms, self.config.within_ms or 0
        shown = ", ".join(f"row {row.row}" for _, _, row in partial.taken)
        log.dropped.extend(
            Dropped(
                row,
                TimedText.of(
                    lambda t: (
                        f"a partial match{key_words(key)} from {t(start)} ({shown}) timed out at "
                        f"{t(start + within)}: discarded, no output (SQL-MR4)"
                    )
                ),
            )
            for _, _, row in partial.taken[:1]
        )


def build(config: SqlMatchConfig, timers: TimerService) -> SqlMatch:
    return SqlMatch(config, timers)
