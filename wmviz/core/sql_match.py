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

from collections.abc import Callable
from typing import Protocol

from wmviz.core.budgets import match_rows_reason
from wmviz.core.changelog import RowKind
from wmviz.core.operator_log import Dropped, StepLog
from wmviz.core.scenario import TraceRow
from wmviz.core.settings import MAX_MATCH_ROWS
from wmviz.core.sql_buffer import ForwardsWatermark, compared, computed_over, key_words, partition_key
from wmviz.core.sql_match_config import SqlMatchConfig
from wmviz.core.sql_match_nfa import Matcher, Partial
from wmviz.core.sql_rows import LATE_METRIC, Fate, RowFate, SqlOutput, SqlValue, columns_of
from wmviz.core.timers import FiredTimer, TimeDomain, TimerService
from wmviz.core.timetext import TimedText
from wmviz.core.windows import ScenarioError

ROWS_AT = "match: rows at this time"
WITHIN_AT = "match: WITHIN ends a partial match"


class MatchLogic(Protocol):
    """The DEFINE conditions and MEASURES of one MATCH_RECOGNIZE, over trace rows."""

    def define(self, variable: str, partial: Partial[TraceRow] | None, row: TraceRow) -> bool:
        """Whether `row` satisfies `variable`'s DEFINE, extending `partial` (None: a new match);
        a variable without DEFINE is TRUE, a NULL condition is not."""
        ...

    def measures(self, match: Partial[TraceRow]) -> tuple[tuple[str, SqlValue], ...]:
        """The MEASURES of a complete match, (name, value) in output order."""
        ...


LOGIC_MAKERS: list[Callable[[SqlMatchConfig], MatchLogic]] = []
"""How a config's DEFINE and MEASURES are computed: filled by `wmviz.sql.plan_match` on import."""


class SqlMatch(ForwardsWatermark):
    """One instance: per partition its buffered rows by time and its matcher."""

    def __init__(self, config: SqlMatchConfig, timers: TimerService) -> None:
        if not LOGIC_MAKERS:
            raise RuntimeError(
                "MATCH_RECOGNIZE's DEFINE and MEASURES are computed by wmviz.sql.plan_match, which was "
                "not imported"
            )
        self.config = config
        self.logic: MatchLogic = LOGIC_MAKERS[0](config)
        self.within_ms = config.within_ms or None
        self.timers = timers
        self.buffer: dict[str, dict[int, list[TraceRow]]] = {}
        self.matchers: dict[str, Matcher[TraceRow]] = {}
        self.open: dict[str, dict[int, TraceRow]] = {}
        """Per partition, the rows fed to the pattern that a partial or completed match still holds."""
        self.matched: set[int] = set()
        """Rows (their numbers) some emitted match holds."""
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
        held = self.open.setdefault(key, {})
        for ts in sorted(t for t in times if t <= self.watermark_ms):
            self._emit(key, matcher.mr4_advance_time(ts), matcher.mr7_release(), log)
            for row in times.pop(ts):
                held[row.row] = row
                released = compared(row, "DEFINE", lambda: matcher.feed(ts, row))  # noqa: B023
                if (held_rows := matcher.held()) > MAX_MATCH_ROWS.get():
                    column = self.config.partition_by[0] if self.config.partition_by else "event_ms"
                    raise ScenarioError(row, column, match_rows_reason(held_rows))
                if matcher.started and self.within_ms is not None:
                    at = ts + self.within_ms
                    log.registered.append(self.timers.register(TimeDomain.EVENT, at, key, WITHIN_AT))
                self._emit(key, [], released, log)
        self._emit(key, matcher.mr4_advance_time(self.watermark_ms), matcher.mr7_release(), log)
        if not times:
            self.buffer.pop(key, None)
        if not held:
            self.open.pop(key, None)

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
        held = tuple((key, tuple(sorted(rows))) for key, rows in sorted(self.open.items()))
        return (self.watermark_ms, self.matches, buffered, matchers, held, tuple(sorted(self.matched)))

    def __getstate__(self) -> dict[str, object]:
        """Everything but the DEFINE/MEASURES code, which the config rebuilds (a keyframe holds
        data only)."""
        return {k: v for k, v in vars(self).items() if k != "logic"}

    def __setstate__(self, state: dict[str, object]) -> None:
        vars(self).update(state)
        self.logic = LOGIC_MAKERS[0](self.config)
        for matcher in self.matchers.values():
            matcher.judge = self.logic.define

    def live_rows(self) -> set[int]:
        rows = {row.row for times in self.buffer.values() for rs in times.values() for row in rs}
        return rows | {number for held in self.open.values() for number in held}

    # --- helpers -------------------------------------------------------------------------------

    def _matcher(self, key: str) -> Matcher[TraceRow]:
        if key not in self.matchers:
            self.matchers[key] = Matcher(
                self.config.variables(), self.config.skip, self.within_ms, self.logic.define
            )
        return self.matchers[key]

    def _emit(
        self, key: str, timed_out: list[Partial[TraceRow]], released: list[Partial[TraceRow]], log: StepLog
    ) -> None:
        """One +I row per released match: the partition's keys (from its first row), then the
        MEASURES."""
        for match in released:
            self.matches += 1
            taken = [row for _, _, row in match.taken]
            first = columns_of(taken[0])
            keys = tuple((name, first.get(name)) for name in self.config.partition_by)
            rows = tuple(row.row for row in taken)
            self.matched.update(rows)
            measured = computed_over(taken, lambda: self.logic.measures(match))  # noqa: B023
            log.emit.append(SqlOutput(RowKind.INSERT, keys + measured, rows))
        self.mr8_settle(key, {row.row for p in timed_out for _, _, row in p.taken}, log)

    def mr8_settle(self, key: str, timed_out: set[int], log: StepLog) -> None:
        """SQL-MR8: a row no partial or completed match holds any more is settled: in an emitted
        match it reached the output (the ledger shows which); otherwise it ends in no output,
        because WITHIN discarded the last partial match holding it, or because no way through the
        pattern took it (or every way it was on broke off)."""
        held = self.open.get(key, {})
        matcher = self.matchers[key]
        live = {row.row for p in [*matcher.partials, *matcher.completed] for _, _, row in p.taken}
        for number in [n for n in held if n not in live]:
            row = held.pop(number)
            if number in self.matched:
                continue
            why = _unmatched(row, key, self.within_ms if number in timed_out else None)
            log.dropped.append(Dropped(row, why))


def _unmatched(row: TraceRow, key: str, within_ms: int | None) -> TimedText:
    """SQL-MR8 in words: a row that ends in no match (`within_ms`: WITHIN discarded it)."""
    ts = row.event_ms
    assert ts is not None
    if within_ms is None:
        return TimedText.of(lambda t: f"{t(ts)}{key_words(key)}: in no match; no output (SQL-MR8)")
    return TimedText.of(
        lambda t: (
            f"{t(ts)}{key_words(key)}: the partial match holding it outlived WITHIN ({within_ms} ms) "
            "and was discarded; no output (SQL-MR8)"
        )
    )


def build(config: SqlMatchConfig, timers: TimerService) -> SqlMatch:
    return SqlMatch(config, timers)
