"""SQL's window TopN and window deduplication over a TUMBLE, HOP or CUMULATE table function, one
method per rule (SQL-R1…SQL-R5 of docs/rules.md; the glossary is `wmviz.core.sql_window_rank_rules`).

How Flink 2.3.0 runs them (its `WindowRankOperator` / `WindowDeduplicateOperator`, both fed by the
window table function that attaches each row's window), said in wmviz's words and checked against
real runs (tests/flink/test_sql_window_rank_flink.py):
- the table function copies a row into every window holding it, in its assigner's order (HOP:
  the latest start first; CUMULATE: the smallest end first), and each copy reaches the operator
  alone (SQL-R5); no table function drops anything;
- a copy whose window has fired on arrival (the watermark has reached its end − 1) is dropped and
  counted in `numLateRecordsDropped`, one count per copy (SQL-R1); a HOP or CUMULATE row late for
  one window is still kept for its windows not yet fired;
- otherwise it waits in a buffer per key and window, flushed whole into state when a watermark
  fires the earliest window it holds (SQL-R2), which registers each window's timer in the buffer's
  first-arrival order: the order keys fire at one watermark;
- TopN (SQL-R3): at the window's end the rows are sorted by the ORDER BY columns, rows with equal
  sort keys in arrival order, and the first N emitted as +I rows, with rn 1…N when selected;
- deduplication (SQL-R4): a later row replaces the kept one when its time is earlier (keep first,
  ASC) or not earlier (keep last, DESC: a tie goes to the later arrival); one +I row at window end;
- the windows' ends are cut in the session zone for TIMESTAMP_LTZ (the slicing window's helpers,
  `wmviz.core.sql_window_time`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import cmp_to_key

from wmviz.core.changelog import RowKind
from wmviz.core.operator_kind import SqlOperatorKind
from wmviz.core.operator_log import Dropped, OutputWatermark, StepLog
from wmviz.core.scenario import TraceRow
from wmviz.core.sql_rows import LATE_METRIC, Fate, RowFate, SqlOutput, SqlValue, columns_of
from wmviz.core.sql_window_rank_config import WindowDedupConfig, WindowRankConfig
from wmviz.core.sql_window_time import ShiftZone, timestamp_text, window_start
from wmviz.core.timers import FiredTimer, TimeDomain, TimerService
from wmviz.core.timetext import TimedText, Times
from wmviz.core.types import MIN_MS
from wmviz.core.windows import ScenarioError

Key = tuple[SqlValue, ...]
WindowConfig = WindowRankConfig | WindowDedupConfig


class SqlWindowRank:
    """One instance of a window TopN or window deduplication, against the contract of
    `wmviz.core.sql_rows`."""

    def __init__(self, config: WindowConfig, timers: TimerService) -> None:
        self.config = config
        self.timers = timers
        self.zone = ShiftZone(config.zone)
        self.progress = MIN_MS
        """The watermark the operator has seen (Flink's `currentProgress`)."""
        self.buffer: dict[tuple[Key, int], list[TraceRow]] = {}
        """Rows per (key, window end) in first-arrival order, not yet in state (SQL-R2)."""
        self.state: dict[tuple[Key, int], list[TraceRow]] = {}
        """Rows per (key, window end) taken into state: all of them (TopN), the kept one (dedup)."""

    # ---- the window a row belongs to ------------------------------------------------------------

    def window_ends_of(self, row: TraceRow) -> list[int]:
        """SQL-R5: the ends of the windows holding the row's (local) time, in the order the table
        function's assigner lists them (Flink's group-window assigners): TUMBLE one; HOP from the
        latest start back; CUMULATE from the smallest end up to the largest."""
        assert row.event_ms is not None
        c, t = self.config, self.zone.local_ms(row.event_ms)
        if c.window == "hop":
            assert c.slide_ms is not None
            start, out = window_start(t, c.offset_ms, c.slide_ms), []
            while start > t - c.size_ms:
                out.append(start + c.size_ms)
                start -= c.slide_ms
            return out
        if c.window == "cumulate":
            assert c.step_ms is not None
            largest = window_start(t, c.offset_ms, c.size_ms) + c.size_ms
            first = window_start(t, c.offset_ms, c.step_ms) + c.step_ms
            return list(range(first, largest + 1, c.step_ms))
        return [window_start(t, c.offset_ms, c.size_ms) + c.size_ms]

    def start_of(self, end: int) -> int:
        """The start of the window ending at `end` (CUMULATE: the start of its largest window)."""
        c = self.config
        if c.window == "cumulate":
            return window_start(end - 1, c.offset_ms, c.size_ms)
        return end - c.size_ms

    # ---- the contract ---------------------------------------------------------------------------

    def on_record(self, input_name: str, row: TraceRow, log: StepLog) -> None:
        """SQL-R5: each copy of the row (one per window) judged on its own window, in order; the
        row's fate said once (dropped when every window has fired, else at its first window kept)."""
        ends = self.window_ends_of(row)
        late = [end for end in ends if self.zone.fired(end, self.progress)]
        kept = [end for end in ends if end not in late]
        for end in ends:
            if end in late:
                self.drop_late(row, end, log, say=not kept and end == late[0])
            else:
                self.keep(row, end, log, say=end == kept[0], late=late, kept=kept)

    def on_watermark(self, watermark_ms: int, log: StepLog) -> None:
        self.flush(watermark_ms, log)

    def on_timer(self, fired: FiredTimer, log: StepLog) -> None:
        assert fired.timer.namespace is not None
        key = tuple(json.loads(fired.timer.key))
        end = fired.timer.namespace[1]
        rows = self.state.pop((key, end), [])
        if isinstance(self.config, WindowRankConfig):
            self.emit_top(key, end, rows, log)
        elif rows:
            self.emit_row(end, rows[0], None, log)

    def output_watermark(self, watermark_ms: int, log: StepLog) -> None:
        log.emit.append(OutputWatermark(watermark_ms))

    def snapshot(self) -> tuple[object, ...]:
        held = (tuple((k, tuple(v)) for k, v in d.items()) for d in (self.buffer, self.state))
        return (self.progress, *held)

    def live_rows(self) -> set[int]:
        return {r.row for d in (self.buffer, self.state) for rows in d.values() for r in rows}

    # ---- SQL-R1: late rows ----------------------------------------------------------------------

    def drop_late(self, row: TraceRow, end: int, log: StepLog, *, say: bool = True) -> None:
        """SQL-R1: the copy's window has fired: dropped and counted, once per copy (`say`: this
        drop is the row's fate, every window of it having fired)."""
        start, progress = self.start_of(end), self.progress
        why = TimedText.of(
            lambda t: f"late: its window [{t(start)}, {t(end)}) has fired (watermark {t(progress)}): dropped"
        )
        if say:
            log.notes.append(RowFate(row, Fate.DROPPED, "SQL-R1", why, LATE_METRIC))
        log.dropped.append(Dropped(row, why, late=True))

    # ---- SQL-R2: the buffer ---------------------------------------------------------------------

    def keep(
        self,
        row: TraceRow,
        end: int,
        log: StepLog,
        *,
        say: bool = True,
        late: Sequence[int] = (),
        kept: Sequence[int] = (),
    ) -> None:
        """SQL-R2: the copy waits in the buffer for its key and window (`say`: its row's fate is
        told here, naming every window it waits in, `kept`: kept, or added late when some of its
        windows had fired, SQL-R5)."""
        columns = columns_of(row)
        key = tuple(columns.get(name) for name in self.config.partition_by)
        shown = self.key_text(key)
        waits = [(self.start_of(e), e) for e in (kept or (end,))]
        noun = "window" if len(waits) == 1 else "windows"

        def into(t: Times) -> str:
            return f"into {noun} {', '.join(f'[{t(a)}, {t(b)})' for a, b in waits)} of key {shown}"

        if say and late:
            fired = tuple(late)
            why = TimedText.of(
                lambda t: (
                    f"late for the window(s) ending {', '.join(t(e) for e in fired)} (dropped there,"
                    f" counted); {into(t)}, not yet fired"
                )
            )
            log.notes.append(RowFate(row, Fate.ADDED_LATE, "SQL-R5", why))
        elif say:
            why = TimedText.of(into)
            log.notes.append(RowFate(row, Fate.KEPT, "SQL-R2", why))
        self.buffer.setdefault((key, end), []).append(row)

    def flush(self, watermark_ms: int, log: StepLog) -> None:
        """SQL-R2: a higher watermark that fires the earliest window in the buffer moves the whole
        buffer into state, registering each (key, window)'s timer in first-arrival order."""
        if watermark_ms <= self.progress:
            return
        self.progress = watermark_ms
        if not self.buffer or not self.zone.fired(min(end for _, end in self.buffer), watermark_ms):
            return
        entries, self.buffer = list(self.buffer.items()), {}
        for (key, end), rows in entries:
            held = self.state.get((key, end))
            if held is None:
                self.register(key, end, log)
            merged = held or []
            for row in rows:
                merged = self.combine(merged, row)
            self.state[(key, end)] = merged

    def combine(self, held: list[TraceRow], row: TraceRow) -> list[TraceRow]:
        """TopN keeps every row (sorted at firing); deduplication keeps one (SQL-R4)."""
        if isinstance(self.config, WindowRankConfig):
            return [*held, row]
        return [row] if not held or self.replaces(held[0], row) else held

    def replaces(self, kept: TraceRow, row: TraceRow) -> bool:
        """SQL-R4: keep first: a strictly earlier row replaces; keep last: a row not earlier does."""
        assert kept.event_ms is not None and row.event_ms is not None
        if self.config.keep == "first":  # type: ignore[union-attr]
            return row.event_ms < kept.event_ms
        return row.event_ms >= kept.event_ms

    def register(self, key: Key, end: int, log: StepLog) -> None:
        namespace = (self.start_of(end), end)
        log.registered.append(
            self.timers.register(
                TimeDomain.EVENT,
                self.zone.timer_ms(end - 1),
                json.dumps(list(key)),
                "its window ends",
                namespace,
            )
        )

    # ---- SQL-R3 / SQL-R4: firing ----------------------------------------------------------------

    def emit_top(self, key: Key, end: int, rows: list[TraceRow], log: StepLog) -> None:
        """SQL-R3: the window's rows sorted by the ORDER BY columns (equal keys in arrival order,
        a stable sort), the first N emitted, rn 1…N."""
        config = self.config
        assert isinstance(config, WindowRankConfig)
        ranked = sorted(rows, key=cmp_to_key(self.compare))
        for rank, row in enumerate(ranked[: config.top], start=1):
            self.emit_row(end, row, rank, log)

    def compare(self, a: TraceRow, b: TraceRow) -> int:
        """ORDER BY: column by column, DESC reversed, NULLs last (Flink's default for DESC and ASC
        alike in these plans)."""
        config = self.config
        assert isinstance(config, WindowRankConfig)
        ca, cb = columns_of(a), columns_of(b)
        for name in config.order_by:
            x, y = ca.get(name), cb.get(name)
            if x == y:
                continue
            if x is None or y is None:
                return 1 if x is None else -1
            if _kind(x) != _kind(y) or _kind(x) is None:
                later = a if a.row > b.row else b
                value = x if later is a else y
                raise ScenarioError(
                    later, name,
                    f"{value!r} cannot be ordered with the window's other {name} values (ORDER BY {name} "
                    "compares numbers with numbers or text with text)",
                )  # fmt: skip
            less = x < y  # type: ignore[operator]
            return (1 if less else -1) if name in config.descending else (-1 if less else 1)
        return 0

    def emit_row(self, end: int, row: TraceRow, rank: int | None, log: StepLog) -> None:
        columns, start = columns_of(row), self.start_of(end)
        computed = {"window_start": timestamp_text(start), "window_end": timestamp_text(end)}
        computed["window_time"] = timestamp_text(self.zone.local_ms(self.zone.instant_ms(end - 1)))
        names = self.config.columns or tuple(columns)
        values: list[tuple[str, SqlValue]] = [
            (n, computed[n] if n in computed and n not in columns else columns.get(n)) for n in names
        ]
        if rank is not None and isinstance(self.config, WindowRankConfig) and self.config.rank_column:
            values.append((self.config.rank_column, rank))
        log.emit.append(SqlOutput(RowKind.INSERT, tuple(values), (row.row,)))

    @staticmethod
    def key_text(key: Key) -> str:
        """The key in words, its braces doubled (it goes into a `TimedText` template)."""
        text = "(" + ", ".join(str(v) for v in key) + ")" if key else "(no key)"
        return text.replace("{", "{{").replace("}", "}}")


def build(config: SqlOperatorKind, timers: TimerService) -> SqlWindowRank:
    assert isinstance(config, (WindowRankConfig, WindowDedupConfig))
    return SqlWindowRank(config, timers)


__all__ = ["SqlWindowRank", "build"]


def _kind(value: object) -> str | None:
    """What ORDER BY compares a value as: a number, text, or nothing it can order (None)."""
    if isinstance(value, str):
        return "text"
    return "number" if isinstance(value, int | float) else None
