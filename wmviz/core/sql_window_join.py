"""SQL's window join (`L JOIN R ON L.k = R.k AND L.window_start = R.window_start AND L.window_end =
R.window_end` over two window table functions), as Flink 2.3.0's `WindowJoinOperator` runs it
(docs/rules.md, "SQL window join", SQL-WJ1..SQL-WJ6; the glossary is `sql_window_join_rules`).

In wmviz's words, each rule confirmed by real runs (tests/flink/test_sql_window_join_flink.py):
- each input row first passes its side's window table function, which puts it in every window it
  belongs to (one TUMBLE window; several HOP or CUMULATE windows, each a copy of the row with its
  own window_start and window_end) and drops nothing (SQL-WJ1);
- the join then takes each copy alone: a copy whose window has already fired (the combined
  watermark of both inputs has reached the window's end − 1) is dropped and counted on its side's
  metric, `leftNumLateRecordsDropped` or `rightNumLateRecordsDropped`, never in
  `numLateRecordsDropped` (SQL-WJ2); any other copy waits in its side's list for its key and
  window, and the key's timer at the window's end − 1 is registered (SQL-WJ3);
- when that timer fires the window's two lists are joined (INNER, LEFT, RIGHT, FULL, SEMI, ANTI;
  the unmatched rows of an outer side padded with NULLs then, never earlier) and forgotten
  (SQL-WJ4); a key with a NULL column matches nothing (SQL-WJ5);
- the output watermark is the combined input watermark, after the due windows (SQL-WJ6).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field

from wmviz.core.budgets import join_window_rows_reason
from wmviz.core.changelog import RowKind
from wmviz.core.operator_kind import SqlOperatorKind
from wmviz.core.operator_log import Dropped, OutputWatermark, StepLog
from wmviz.core.scenario import TraceRow
from wmviz.core.settings import MAX_JOIN_WINDOW_ROWS
from wmviz.core.sql_rows import Fate, RowFate, SqlOutput, SqlValue, columns_of
from wmviz.core.sql_window_join_config import LEFT, RIGHT, WINDOW_COLUMNS, WindowJoinConfig
from wmviz.core.sql_window_time import ShiftZone, timestamp_text, window_start
from wmviz.core.timers import FiredTimer, TimeDomain, TimerService
from wmviz.core.timetext import TimedText, Times
from wmviz.core.types import MIN_MS
from wmviz.core.windows import ScenarioError

FIRE = "window_join_fire"
"""The purpose of a (key, window) timer: join the window's rows and forget them."""

SIDE_METRIC = {LEFT: "leftNumLateRecordsDropped", RIGHT: "rightNumLateRecordsDropped"}
"""The metric Flink's window join counts a side's late copy in (one counter per side)."""

Window = tuple[int, int]
"""(window_start, window_end) in epoch milliseconds."""


@dataclass
class WindowRows:
    """One key's rows of one window, per side, in arrival order (Flink's two list states)."""

    left: list[TraceRow] = field(default_factory=list)
    right: list[TraceRow] = field(default_factory=list)


class SqlWindowJoin:
    """One subtask of the window join; the pipeline calls it as a `SqlOperator`."""

    def __init__(self, config: WindowJoinConfig, timers: TimerService) -> None:
        self.config = config
        self.timers = timers
        self.zone = ShiftZone(config.zone)
        self.watermark_ms = MIN_MS
        self.state: dict[tuple[str, Window], WindowRows] = {}

    # ---- arrival: SQL-WJ1 (the windows), SQL-WJ2 (late copies), SQL-WJ3 (waiting) ----------------

    def on_record(self, input_name: str, row: TraceRow, log: StepLog) -> None:
        """A row of either side: copied into its windows (SQL-WJ1), each copy dropped late
        (SQL-WJ2) or kept (SQL-WJ3); one fate for the row, saying what became of every copy."""
        side = WindowJoinConfig.canonical_input(input_name)
        if side not in (LEFT, RIGHT):
            raise ScenarioError(row, "input", f"{input_name!r} is neither L (left) nor R (right)")
        key = self.key_of(row, side)
        windows = self.windows_of(row)
        dropped = [w for w in windows if self.zone.fired(w[1], self.watermark_ms)]
        for window in windows:
            if window in dropped:
                self.drop_late_copy(row, side, window, log)
            else:
                self.keep_copy(row, side, key, window, log)
        log.notes.append(self.fate(row, side, windows, dropped))

    def windows_of(self, row: TraceRow) -> list[Window]:
        """SQL-WJ1: the windows the window table function puts the row in, in the order it emits
        the copies: one TUMBLE window; HOP windows latest start first; CUMULATE windows of one
        cycle, shortest first."""
        c, t = self.config, self.zone.local_ms(self.time_of(row))
        if c.window == "hop":
            assert c.slide_ms is not None
            last = window_start(t, c.offset_ms, c.slide_ms)
            return [(s, s + c.size_ms) for s in range(last, t - c.size_ms, -c.slide_ms)]
        start = window_start(t, c.offset_ms, c.size_ms)
        if c.window == "cumulate":
            assert c.step_ms is not None
            first_end = window_start(t, c.offset_ms, c.step_ms) + c.step_ms
            return [(start, end) for end in range(first_end, start + c.size_ms + 1, c.step_ms)]
        return [(start, start + c.size_ms)]

    def drop_late_copy(self, row: TraceRow, side: str, window: Window, log: StepLog) -> None:
        """SQL-WJ2: the copy's window has fired: dropped, counted on its side's metric (the join's
        own counter per side, not `numLateRecordsDropped`)."""
        (start, end), w, metric = window, self.watermark_ms, SIDE_METRIC[side]
        why = TimedText.of(
            lambda t: (
                f"late: its window [{t(start)}, {t(end)}) has fired (the combined watermark {t(w)}"
                f" ≥ its end − 1): dropped, counted in {metric}"
            )
        )
        log.dropped.append(Dropped(row, why, late=True, metric=metric))

    def keep_copy(self, row: TraceRow, side: str, key: str, window: Window, log: StepLog) -> None:
        """SQL-WJ3: the copy waits in its side's list for its key and window; the key's timer at
        the window's end − 1 is registered (again: every copy registers it, one timer results)."""
        rows = self.state.setdefault((key, window), WindowRows())
        (rows.left if side == LEFT else rows.right).append(row)
        timer_ms = self.zone.timer_ms(window[1] - 1)
        log.registered.append(self.timers.register(TimeDomain.EVENT, timer_ms, key, FIRE, window))

    def fate(self, row: TraceRow, side: str, windows: list[Window], dropped: list[Window]) -> RowFate:
        """The row's one fate: kept (every copy waits), added late (some copies dropped, the others
        wait) or dropped (every copy late), with the windows in words."""
        kept = [w for w in windows if w not in dropped]
        listed = self.windows_text(kept or dropped)
        metric, w = SIDE_METRIC[side], self.watermark_ms
        if not dropped:
            why = TimedText.of(lambda t: f"waits in {listed(t)} until the combined watermark passes its end")
            return RowFate(row, Fate.KEPT, "SQL-WJ3", why)
        if not kept:
            why = TimedText.of(lambda t: f"late: {listed(t)} fired (watermark {t(w)}): dropped, in {metric}")
            return RowFate(row, Fate.DROPPED, "SQL-WJ2", why, metric)
        late = self.windows_text(dropped)
        why = TimedText.of(
            lambda t: (
                f"waits in {listed(t)}; its copies in {late(t)} came late (watermark {t(w)}), in {metric}"
            )
        )
        return RowFate(row, Fate.ADDED_LATE, "SQL-WJ2", why, metric)

    # ---- the watermark: SQL-WJ4, SQL-WJ5 (at a window's timer), SQL-WJ6 -------------------------

    def on_watermark(self, watermark_ms: int, log: StepLog) -> None:
        """The combined watermark (both inputs') advances; due window timers fire next."""
        self.watermark_ms = watermark_ms

    def on_timer(self, fired: FiredTimer, log: StepLog) -> None:
        """A (key, window) timer: the window's rows joined (SQL-WJ4) and forgotten."""
        window = fired.timer.namespace
        assert window is not None
        rows = self.state.pop((fired.timer.key, window), WindowRows())
        matches = self.null_key_matches_nothing(fired.timer.key)
        self.join_window(window, rows, matches, log)

    def null_key_matches_nothing(self, key: str) -> bool:
        """SQL-WJ5: the key equality filters NULLs (`=`, not `IS NOT DISTINCT FROM`): rows whose key
        has a NULL column share a window list yet match nothing, so outer sides are padded."""
        return None not in json.loads(key)

    def join_window(self, window: Window, rows: WindowRows, matches: bool, log: StepLog) -> None:
        """SQL-WJ4: the window's lists joined as its join type says, in arrival order (left rows
        outer, right rows inner; a RIGHT join walks the right rows outer), the unmatched rows of an
        outer side padded with NULLs; SEMI / ANTI emit a left row that has / has no match."""
        c, left, right = self.config, rows.left, rows.right
        self.within_budget(left, right, matches)
        out = log.emit
        before = len(out)
        if c.join_type in ("semi", "anti"):
            keep = (matches and bool(right)) == (c.join_type == "semi")
            out.extend(self.output(window, row, None) for row in left if keep)
        elif c.join_type == "right":
            for r in right:
                pairs = [self.output(window, row, r) for row in left] if matches else []
                out.extend(pairs or [self.output(window, None, r)])
        else:
            for row in left:
                pairs = [self.output(window, row, r) for r in right] if matches else []
                out.extend(pairs or ([self.output(window, row, None)] if c.outer_left else []))
            if c.outer_right and not (matches and left):
                out.extend(self.output(window, None, r) for r in right)
        start, end = window
        made, n_left, n_right = len(out) - before, len(left), len(right)
        log.notes.append(
            f"SQL-WJ4: window [{start}, {end}) fired ({c.join_type} join): {n_left} left, {n_right}"
            f" right rows -> {made} output rows; the window is forgotten"
        )

    def within_budget(self, left: list[TraceRow], right: list[TraceRow], matches: bool) -> None:
        """A window about to emit more pairs than `MAX_JOIN_WINDOW_ROWS` stops the run, naming its
        last row to arrive and that side's first key column."""
        pairs = len(left) * len(right) if matches and self.config.join_type not in ("semi", "anti") else 0
        if pairs <= MAX_JOIN_WINDOW_ROWS.get():
            return
        last = max((*left, *right), key=lambda r: r.row)
        keys = self.config.left_key if any(r is last for r in left) else self.config.right_key
        raise ScenarioError(last, keys[0] if keys else "event_ms", join_window_rows_reason(pairs))

    def output_watermark(self, watermark_ms: int, log: StepLog) -> None:
        """SQL-WJ6: after the due windows, the combined watermark goes downstream unchanged: a quiet
        side holds it, and every window of both sides with it."""
        log.emit.append(OutputWatermark(watermark_ms))

    # ---- rows and state ------------------------------------------------------------------------

    def output(self, window: Window, left: TraceRow | None, right: TraceRow | None) -> SqlOutput:
        """The left input's columns then (not SEMI/ANTI) the right's, NULLs for a padded side,
        named as the join's output."""
        c = self.config
        values = self.side_values(window, left, c.left_columns)
        if c.keeps_right:
            values += self.side_values(window, right, c.right_columns)
        names = c.output_names or (*c.left_columns, *(c.right_columns if c.keeps_right else ()))
        rows = tuple(r.row for r in (left, right) if r is not None)
        return SqlOutput(RowKind.INSERT, tuple(zip(names, values, strict=True)), rows)

    def side_values(self, window: Window, row: TraceRow | None, names: tuple[str, ...]) -> list[SqlValue]:
        """One side's values: the row's columns, its window's columns computed (SQL-WJ1)."""
        if row is None:
            return [None] * len(names)
        columns, (start, end) = columns_of(row), window
        computed = {"window_start": start, "window_end": end, "window_time": end - 1}
        out: list[SqlValue] = []
        for name in names:
            if name in WINDOW_COLUMNS and name not in columns:
                out.append(timestamp_text(computed[name]))
            elif name in columns:
                out.append(columns[name])
            else:
                raise ScenarioError(row, name, "missing: the window join's input columns name it")
        return out

    def key_of(self, row: TraceRow, side: str) -> str:
        """The row's join key (its side's key columns' values) as one text, the timers' key."""
        names = self.config.left_key if side == LEFT else self.config.right_key
        values = columns_of(row)
        if missing := [c for c in names if c not in values]:
            field_name = "operator.left_key" if side == LEFT else "operator.right_key"
            raise ScenarioError(row, missing[0], f"missing: {field_name} names it")
        return json.dumps([values[c] for c in names])

    @staticmethod
    def time_of(row: TraceRow) -> int:
        if row.event_ms is None:
            raise ScenarioError(row, "event_ms", "a window join's row needs its time attribute")
        return row.event_ms

    @staticmethod
    def windows_text(windows: list[Window]) -> Callable[[Times], str]:
        """`window [a, b)` or `windows [a, b), [c, d)` in the reader's time format."""

        def text(t: Times) -> str:
            spans = ", ".join(f"[{t(s)}, {t(e)})" for s, e in windows)
            return ("windows " if len(windows) > 1 else "window ") + spans

        return text

    def snapshot(self) -> tuple[object, ...]:
        """The watermark and, per key and window, both sides' waiting rows."""
        held = tuple(
            (key, window, tuple(r.row for r in rows.left), tuple(r.row for r in rows.right))
            for (key, window), rows in sorted(self.state.items())
        )
        return (self.watermark_ms, held)

    def live_rows(self) -> set[int]:
        """Trace rows still held in a window of either side."""
        return {r.row for rows in self.state.values() for r in (*rows.left, *rows.right)}


def build(config: SqlOperatorKind, timers: TimerService) -> SqlWindowJoin:
    assert isinstance(config, WindowJoinConfig)
    return SqlWindowJoin(config, timers)


__all__ = ["SIDE_METRIC", "SqlWindowJoin", "build"]
