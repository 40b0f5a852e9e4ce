"""SQL's SESSION window aggregation, as Flink 2.3.0's unslicing window operator runs it
(`UnsliceWindowAggProcessor` with the SESSION unslice assigner), one method per rule (SQL-S1…S7
in docs/rules.md).

Each partition key (all rows, without PARTITION BY) keeps its live sessions, sorted by start then
end as Flink's `TreeSet`, each mapped to the state window that holds its accumulators (Flink never
renames state: a merge keeps one of the originals). A row at `t` brings the session `[t, t + gap)`;
it merges only with the live session just at or before it and the one just at or after it, and
only when they overlap or touch (`[0, 5)` and `[5, 9)` merge). Lateness is judged after that merge:
a session is late when its `end − 1` is at or behind the watermark, and since a live session has not
fired, only a row that joins none can be late. So a row far behind the watermark that touches an
open session is added and moves its start back, while a row whose own session would already have
ended is dropped and counted in `numLateRecordsDropped` (SESSION passes allowed lateness 0).

Each session fires once, by an event-time timer at `end − 1`, emitting one insert (`+I`), never
revised. Sessions due at one watermark fire in the timer heap's order (`wmviz.core.timers`): by
time, equal times as Flink's heap leaves them, which depends on every earlier registration and
deletion, so a merge repeats Flink's timer calls in order: the merged session's timer is
registered, then the merged sessions' timers are deleted in Java's `HashSet` order
(`wmviz.core.java.hashorder`). The planner always plans SESSION in one phase (no local
pre-aggregation, whatever `table.optimizer.agg-phase-strategy` says).
"""

from __future__ import annotations

import json
from bisect import bisect_left, insort
from collections.abc import Mapping
from dataclasses import dataclass

from wmviz.core.java.hashorder import JavaHashTable
from wmviz.core.operator_log import Dropped, OutputWatermark, StepLog
from wmviz.core.scenario import TraceRow
from wmviz.core.sessions import cover, intersects
from wmviz.core.sql_aggregates import Accumulator, AggregateValueError
from wmviz.core.sql_rows import LATE_METRIC, Fate, RowFate, RowKind, SqlOutput, SqlValue, columns_of
from wmviz.core.sql_session_config import SqlSessionConfig
from wmviz.core.timers import FiredTimer, TimeDomain, TimerService
from wmviz.core.timetext import TimedText, Times
from wmviz.core.types import MIN_MS
from wmviz.core.windows import ScenarioError

Window = tuple[int, int]
FIRE_PURPOSE = "SQL session end"


@dataclass(frozen=True, slots=True)
class SessionState:
    """What a state window holds: one accumulator per aggregate call and the rows taken."""

    accumulators: tuple[Accumulator, ...]
    rows: tuple[int, ...]
    """Trace row numbers, in arrival order."""


@dataclass(frozen=True, slots=True)
class Joined:
    """Where a row's session ended up (`add_window`): the live session it belongs to, and the live
    sessions that merge swallowed (empty when it merged nothing or fell inside one)."""

    window: Window
    swallowed: tuple[Window, ...]


class SqlSessionOperator:
    """SESSION window aggregation of one operator instance (the `SqlOperator` contract)."""

    def __init__(self, config: SqlSessionConfig, timers: TimerService) -> None:
        self.config = config
        self.timers = timers
        self.watermark_ms = MIN_MS
        self.sorted_windows: dict[str, list[Window]] = {}
        """Each key's live sessions, sorted by (start, end): Flink's `TreeSet`."""
        self.state_of: dict[str, dict[Window, Window]] = {}
        """Each key's live session -> the state window holding its accumulators."""
        self.states: dict[tuple[str, Window], SessionState] = {}
        self.key_values: dict[str, tuple[tuple[str, SqlValue], ...]] = {}
        """Each key's partition columns, as the output row gives them."""

    # ---- the contract ------------------------------------------------------------------------

    def on_record(self, input_name: str, row: TraceRow, log: StepLog) -> None:
        """`processElement`, where a value an aggregate cannot take names the row and column."""
        try:
            self.process_element(row, log)
        except AggregateValueError as err:
            raise ScenarioError(row, err.column, str(err)) from None

    def process_element(self, row: TraceRow, log: StepLog) -> None:
        """The row's session, merged; dropped if late, else accumulated."""
        assert row.event_ms is not None
        columns = columns_of(row)
        key = self.key_of(columns)
        self.key_values.setdefault(key, tuple((c, columns.get(c)) for c in self.config.partition_by))
        own = self.session_of_row(row.event_ms)
        joined = self.add_window(key, own)
        if self.session_has_fired(joined.window):
            self.retire(key, joined.window)
            watermark = self.watermark_ms
            why = TimedText.of(lambda t: self.drop_reason(key, own, watermark, t))
            log.dropped.append(Dropped(row, why, late=True))
            log.notes.append(RowFate(row, Fate.DROPPED, "SQL-S3", why, LATE_METRIC))
            return
        self.accumulate(key, joined.window, row, columns)
        self.register_firing(key, joined.window, log)
        log.notes.append(self.row_fate(key, row, own, joined))

    def on_watermark(self, watermark_ms: int, log: StepLog) -> None:
        """The operator's current watermark, which the late test (SQL-S3) reads."""
        self.watermark_ms = max(self.watermark_ms, watermark_ms)

    def on_timer(self, fired: FiredTimer, log: StepLog) -> None:
        self.fire_session(fired, log)

    def output_watermark(self, watermark_ms: int, log: StepLog) -> None:
        """SQL-S7: the watermark passes on unchanged, after the sessions it fired."""
        log.emit.append(OutputWatermark(watermark_ms))

    def snapshot(self) -> tuple[object, ...]:
        keys = sorted(self.state_of)
        return (
            self.watermark_ms,
            tuple((k, tuple(sorted(self.state_of[k].items()))) for k in keys),
            tuple(sorted((k, w, s.accumulators, s.rows) for (k, w), s in self.states.items())),
            tuple(sorted(self.key_values.items())),
        )

    def live_rows(self) -> set[int]:
        return {number for state in self.states.values() for number in state.rows}

    # ---- rules ---------------------------------------------------------------------------------

    def key_of(self, columns: Mapping[str, SqlValue]) -> str:
        """SQL-S1: the partition key; without PARTITION BY every row shares one (the planner then
        sends all rows to one subtask)."""
        return json.dumps([columns.get(c) for c in self.config.partition_by])

    def session_of_row(self, ts_ms: int) -> Window:
        """SQL-S1: a row at `t` opens the session `[t, t + gap)`."""
        return (ts_ms, ts_ms + self.config.gap_ms)

    def add_window(self, key: str, new: Window) -> Joined:
        """SQL-S2: the new session merges with its floor and ceiling among the key's live sessions
        (the greatest at or before it and the least at or after it, by start then end) when they
        overlap or touch. A merge keeps the state window of the first merged session in Java's
        `HashSet` order and folds the others' accumulators into it (`merge_states`)."""
        windows = self.sorted_windows.setdefault(key, [])
        state_of = self.state_of.setdefault(key, {})
        at = bisect_left(windows, new)
        ceiling = windows[at] if at < len(windows) else None
        floor = new if ceiling == new else (windows[at - 1] if at > 0 else None)
        members: JavaHashTable[Window] = JavaHashTable()
        result = new
        for neighbour in (ceiling, floor):
            if neighbour is not None and intersects(result, neighbour):
                members.add(neighbour)
                result = cover(result, neighbour)
        if not len(members):
            insort(windows, new)
            state_of[new] = new
            return Joined(new, ())
        members.add(new)
        members.remove(new)  # Flink leaves the new window out of the merged ones
        if not len(members):
            return Joined(result, ())  # the very session already live
        target = state_of[members.first()]
        merged_states = [state_of[m] for m in members if state_of[m] != target]
        for member in members:
            del state_of[member]
            windows.remove(member)
        state_of[result] = target
        insort(windows, result)
        swallowed = tuple(members)
        if swallowed == (result,):
            return Joined(result, ())  # inside one live session: nothing merges
        self.merge_timers(key, result, swallowed)
        self.merge_states(key, target, merged_states)
        return Joined(result, swallowed)

    def merge_timers(self, key: str, result: Window, swallowed: tuple[Window, ...]) -> None:
        """SQL-S2: the trigger's merge registers the merged session's timer, then each swallowed
        session's timer is deleted, in that order (the heap's later order of equal times
        depends on it)."""
        self.timers.register(TimeDomain.EVENT, result[1] - 1, key, FIRE_PURPOSE, result)
        for window in swallowed:
            self.timers.delete(TimeDomain.EVENT, window[1] - 1, key, window)

    def merge_states(self, key: str, target: Window, merged: list[Window]) -> None:
        """SQL-S2: the swallowed state windows' accumulators fold into the kept one, in order."""
        kept = self.states.get((key, target)) or self.empty_state()
        calls = self.config.aggregates
        for window in merged:
            other = self.states.pop((key, window), None)
            if other is None:
                continue
            accumulators = tuple(
                c.merge(a, b) for c, a, b in zip(calls, kept.accumulators, other.accumulators)
            )
            kept = SessionState(accumulators, tuple(sorted(kept.rows + other.rows)))
        self.states[(key, target)] = kept

    def session_has_fired(self, window: Window) -> bool:
        """SQL-S3: a session is late when its `end − 1` is at or behind the watermark (allowed
        lateness 0). A live session never is (its timer would have fired), so only a row that
        joined none can be: it is dropped and counted in numLateRecordsDropped."""
        return window[1] - 1 <= self.watermark_ms

    def retire(self, key: str, window: Window) -> None:
        """SQL-S3: the late session leaves the key's live sessions at once; it never held state."""
        self.state_of[key].pop(window, None)
        self.sorted_windows[key].remove(window)
        self.forget_if_empty(key)

    def accumulate(self, key: str, window: Window, row: TraceRow, columns: Mapping[str, SqlValue]) -> None:
        """SQL-S4: the row goes into its session's state window, through every aggregate call
        (`wmviz.core.sql_aggregates`: NULLs skipped, COUNT(*) counts rows)."""
        target = self.state_of[key][window]
        state = self.states.get((key, target)) or self.empty_state()
        calls = self.config.aggregates
        accumulators = tuple(c.add(a, columns) for c, a in zip(calls, state.accumulators))
        self.states[(key, target)] = SessionState(accumulators, (*state.rows, row.row))

    def register_firing(self, key: str, window: Window, log: StepLog) -> None:
        """SQL-S5: every row that lands registers its session's timer at `end − 1` (once)."""
        log.registered.append(
            self.timers.register(TimeDomain.EVENT, window[1] - 1, key, FIRE_PURPOSE, window)
        )

    def fire_session(self, fired: FiredTimer, log: StepLog) -> None:
        """SQL-S6: at its timer the session emits one `+I` (keys, aggregates, window columns) and
        its state is cleared; it never emits again."""
        key, window = fired.timer.key, fired.timer.namespace
        assert window is not None
        target = self.state_of[key].pop(window)
        self.sorted_windows[key].remove(window)
        state = self.states.pop((key, target))
        values = (*self.key_values[key], *self.aggregate_values(state), *self.window_values(window))
        log.emit.append(SqlOutput(RowKind.INSERT, values, state.rows))
        self.forget_if_empty(key)

    def forget_if_empty(self, key: str) -> None:
        """A key without live sessions keeps nothing (so equal states have equal snapshots)."""
        if not self.state_of[key]:
            del self.state_of[key], self.sorted_windows[key], self.key_values[key]

    def aggregate_values(self, state: SessionState) -> tuple[tuple[str, SqlValue], ...]:
        calls = self.config.aggregates
        return tuple((c.name, c.result(a)) for c, a in zip(calls, state.accumulators))

    def window_values(self, window: Window) -> tuple[tuple[str, SqlValue], ...]:
        """The window columns in epoch ms: start, end (exclusive), and the time attribute end − 1."""
        value = {"window_start": window[0], "window_end": window[1], "window_time": window[1] - 1}
        return tuple((name, value[name]) for name in self.config.properties)

    def empty_state(self) -> SessionState:
        return SessionState(tuple(c.empty() for c in self.config.aggregates), ())

    # ---- narration -------------------------------------------------------------------------------

    def key_text(self, key: str) -> str:
        if not self.config.partition_by:
            return "the one session list (no PARTITION BY)"
        values = ", ".join(f"{c}={v}" for c, v in zip(self.config.partition_by, json.loads(key)))
        return f"key {values}"

    def row_fate(self, key: str, row: TraceRow, own: Window, joined: Joined) -> RowFate:
        """SQL-S4's narration: kept, or added although behind the watermark (SQL-S2 made it)."""
        ts = row.event_ms
        assert ts is not None
        behind = ts <= self.watermark_ms
        wm = self.watermark_ms

        def why(t: Times) -> str:
            where = self.key_text(key)
            if joined.swallowed:
                merged = ", ".join(f"[{t(a)}, {t(b)})" for a, b in sorted(joined.swallowed))
                into = f"joins the open session {merged} of {where}"
            elif joined.window != own:
                into = f"falls inside the open session of {where}"
            else:
                into = f"opens the session [{t(own[0])}, {t(own[1])}) of {where}"
            now = f"the session is now [{t(joined.window[0])}, {t(joined.window[1])})"
            if behind:
                return f"at or behind the watermark {t(wm)} but {into}: added, {now}"
            return f"{into}: kept, {now}, firing when the watermark reaches {t(joined.window[1] - 1)}"

        fate = Fate.ADDED_LATE if behind else Fate.KEPT
        return RowFate(row, fate, "SQL-S2" if behind else "SQL-S4", TimedText.of(why))

    def drop_reason(self, key: str, own: Window, watermark_ms: int, t: Times) -> str:
        """SQL-S3's narration."""
        return (
            f"its session [{t(own[0])}, {t(own[1])}) would have fired at {t(own[1] - 1)}, at or behind "
            f"the watermark {t(watermark_ms)}, and it touches no open session of {self.key_text(key)}: "
            f"dropped, counted in {LATE_METRIC}"
        )


def build(config: SqlSessionConfig, timers: TimerService) -> SqlSessionOperator:
    return SqlSessionOperator(config, timers)
