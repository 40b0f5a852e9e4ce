"""SQL's slicing window aggregate: TUMBLE, HOP and CUMULATE grouped by window and keys, one method
per rule (SQL-W1…SQL-W7 of docs/rules.md; the glossary is `wmviz.core.sql_window_rules`).

How Flink 2.3.0 runs it (its `SlicingWindowAggOperator` and, for two-phase aggregation,
`LocalSlicingWindowAggOperator` before it), said in wmviz's words:
- a row lands in one slice (SQL-W1): the window itself for TUMBLE, a slide of HOP, a step of
  CUMULATE; a window is the union of its slices;
- rows wait in a buffer, per key and slice, until a watermark fires the earliest buffered slice;
  only then are they folded into state and their windows' timers registered (SQL-W6), which is
  what orders several keys firing at one watermark;
- a window fires once, when the watermark reaches its end − 1 (in local time for TIMESTAMP_LTZ),
  and emits one +I row unless it is empty (SQL-W2); firing a HOP or CUMULATE window registers the
  next one of the key (SQL-W7);
- a row whose slice has fired is late: it is dropped and counted (`numLateRecordsDropped`) only
  when the last window holding its slice has fired (SQL-W3); otherwise it is added to the windows
  not yet fired, and no emitted row is revised (SQL-W4);
- two-phase (SQL-W5): the local stage folds rows into partials per key and slice and sends them
  on only at a watermark that fires its earliest buffered slice; the global stage judges each
  partial against the watermark before that one, so a late drop is counted at the flush and once
  per partial, however many rows it merged.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from wmviz.core.changelog import RowKind
from wmviz.core.operator_kind import SqlOperatorKind
from wmviz.core.operator_log import Dropped, OutputWatermark, StepLog
from wmviz.core.scenario import TraceRow
from wmviz.core.sql_aggregates import Accumulator
from wmviz.core.sql_rows import LATE_METRIC, Fate, RowFate, SqlOutput, SqlValue, columns_of
from wmviz.core.sql_window_time import ShiftZone, timestamp_text, window_start
from wmviz.core.sql_windows_config import SqlWindowConfig
from wmviz.core.timers import FiredTimer, TimeDomain, TimerService
from wmviz.core.timetext import TimedText
from wmviz.core.types import MIN_MS

Key = tuple[SqlValue, ...]


@dataclass(frozen=True, slots=True)
class Partial:
    """Rows of one key and slice folded together: one row (one-phase) or a local stage's partial."""

    key: Key
    slice_end: int
    accs: tuple[Accumulator, ...]
    count: int
    """Rows taken (Flink's hidden COUNT(*) that tells an empty window)."""
    rows: tuple[TraceRow, ...]
    arrived: tuple[int | None, ...]
    """The watermark each row arrived under, by position (SQL-W5: a row buffered by the local stage
    gets its fate at a later flush, so the fate says this one, not the flush's); None: said by the
    pipeline as the row arrives (one-phase)."""


class SliceBuffer:
    """Flink's records buffer: entries per (key, slice) in first-arrival order, flushed whole once a
    watermark fires the earliest slice it holds (SQL-W6)."""

    __slots__ = ("entries", "min_slice_end")

    def __init__(self) -> None:
        self.entries: dict[tuple[Key, int], list[Partial]] = {}
        self.min_slice_end: int | None = None

    def add(self, key: Key, slice_end: int, partial: Partial) -> None:
        self.entries.setdefault((key, slice_end), []).append(partial)
        if self.min_slice_end is None or slice_end < self.min_slice_end:
            self.min_slice_end = slice_end

    def due(self, zone: ShiftZone, progress: int) -> list[tuple[tuple[Key, int], list[Partial]]]:
        """The whole buffer, emptied, if `progress` fires its earliest slice; else nothing."""
        if self.min_slice_end is None or not zone.fired(self.min_slice_end, progress):
            return []
        out = list(self.entries.items())
        self.entries, self.min_slice_end = {}, None
        return out

    def snapshot(self) -> tuple[object, ...]:
        return (tuple((k, tuple(v)) for k, v in self.entries.items()), self.min_slice_end)


class SqlWindowAggregate:
    """One instance of a window aggregate (both stages when two-phase), against the contract of
    `wmviz.core.sql_rows`."""

    def __init__(self, config: SqlWindowConfig, timers: TimerService) -> None:
        self.config = config
        self.timers = timers
        self.zone = ShiftZone(config.zone)
        self.calls = config.aggregates
        self.slice_ms = config.slice_ms
        self.progress = MIN_MS
        """The global stage's watermark (Flink's `currentProgress`)."""
        self.timer_watermark = MIN_MS
        """The watermark of the instance's timer service: the one before `progress` while a
        watermark's buffer is flushed."""
        self.next_trigger = MIN_MS
        self.buffer = SliceBuffer()
        self.state: dict[tuple[Key, int], Partial] = {}
        self.local_watermark = MIN_MS
        self.local_next_trigger = MIN_MS
        self.local_buffer = SliceBuffer()

    # ---- slices and windows (SQL-W1) ------------------------------------------------------------

    def slice_end_of(self, local_ms: int) -> int:
        """SQL-W1: the end of the slice holding a row's (local) time."""
        return window_start(local_ms, self.config.offset_ms, self.slice_ms) + self.slice_ms

    def last_window_end(self, slice_end: int) -> int:
        """The end of the last window that holds the slice."""
        c = self.config
        if c.window == "hop":
            return slice_end - self.slice_ms + c.size_ms
        if c.window == "cumulate":
            return self.window_start_of(slice_end) + c.size_ms
        return slice_end

    def window_start_of(self, window_end: int) -> int:
        c = self.config
        if c.window == "cumulate":
            return window_start(window_end - 1, c.offset_ms, c.size_ms)
        return window_end - c.size_ms

    def merge_target(self, slice_end: int) -> int:
        """Where a late row of a fired slice is kept: CUMULATE's shared first slice, else its own."""
        if self.config.window == "cumulate":
            return self.window_start_of(slice_end) + self.slice_ms
        return slice_end

    # ---- the contract ---------------------------------------------------------------------------

    def on_record(self, input_name: str, row: TraceRow, log: StepLog) -> None:
        assert row.event_ms is not None
        columns = columns_of(row)
        key = tuple(columns.get(name) for name in self.config.keys)
        slice_end = self.slice_end_of(self.zone.local_ms(row.event_ms))
        two_phase = self.config.two_phase
        arrived = self.local_watermark if two_phase else None
        accs = tuple(c.add(c.empty(), columns) for c in self.calls)
        one = Partial(key, slice_end, accs, 1, (row,), (arrived,))
        if two_phase:
            self.local_buffer.add(key, slice_end, one)
            # Said now, though its fate is told when the partial reaches the window stage.
            log.notes.append(
                f"line {row.row} waits in the local pre-aggregator (two-phase aggregation, SQL-W5): "
                "its slice's partial goes on when a watermark reaches the next trigger, and only "
                "then is it kept, added late or dropped"
            )
        else:
            self.take(one, log)

    def on_watermark(self, watermark_ms: int, log: StepLog) -> None:
        if self.config.two_phase:
            self.flush_local(watermark_ms, log)
        self.advance_progress(watermark_ms, log)
        self.timer_watermark = max(self.timer_watermark, watermark_ms)

    def on_timer(self, fired: FiredTimer, log: StepLog) -> None:
        assert fired.timer.namespace is not None
        key = tuple(json.loads(fired.timer.key))
        self.fire_window(key, fired.timer.namespace[1], log)

    def output_watermark(self, watermark_ms: int, log: StepLog) -> None:
        log.emit.append(OutputWatermark(watermark_ms))

    def snapshot(self) -> tuple[object, ...]:
        return (
            self.progress, self.timer_watermark, self.next_trigger, self.buffer.snapshot(),
            tuple(sorted(self.state.items(), key=repr)), self.local_watermark,
            self.local_next_trigger, self.local_buffer.snapshot(),
        )  # fmt: skip

    def live_rows(self) -> set[int]:
        held = [*self.state.values()]
        for buffer in (self.buffer, self.local_buffer):
            held.extend(p for partials in buffer.entries.values() for p in partials)
        return {row.row for partial in held for row in partial.rows}

    # ---- SQL-W5: the local stage of two-phase aggregation ---------------------------------------

    def flush_local(self, watermark_ms: int, log: StepLog) -> None:
        """SQL-W5: at a watermark that reaches the next trigger point and fires the earliest buffered
        slice, the local stage sends one partial per (key, slice), before the watermark itself."""
        if watermark_ms <= self.local_watermark:
            return
        self.local_watermark = watermark_ms
        if watermark_ms < self.local_next_trigger:
            return
        for (key, slice_end), rows in self.local_buffer.due(self.zone, watermark_ms):
            self.take(self.fold(key, slice_end, rows), log)
        c = self.config
        self.local_next_trigger = self.zone.next_trigger(watermark_ms, self.slice_ms, c.offset_ms)

    def fold(self, key: Key, slice_end: int, parts: list[Partial]) -> Partial:
        """Partials of one key and slice as one, in arrival order."""
        accs, count, rows, arrived = parts[0].accs, parts[0].count, parts[0].rows, parts[0].arrived
        for part in parts[1:]:
            accs = tuple(c.merge(a, b) for c, a, b in zip(self.calls, accs, part.accs, strict=True))
            count, rows, arrived = count + part.count, rows + part.rows, arrived + part.arrived
        return Partial(key, slice_end, accs, count, rows, arrived)

    # ---- the global stage (or the only one) -----------------------------------------------------

    def take(self, partial: Partial, log: StepLog) -> None:
        """A row (or a local partial) reaches the window stage: kept, added late, or dropped."""
        if not self.zone.fired(partial.slice_end, self.progress):
            self.keep_on_time(partial, log)
        elif self.zone.fired(self.last_window_end(partial.slice_end), self.progress):
            self.drop_late(partial, log)
        else:
            self.add_late(partial, log)

    def keep_on_time(self, partial: Partial, log: StepLog) -> None:
        """SQL-W1: the row's slice has not fired: it waits in the buffer for its slice."""
        start, end = partial.slice_end - self.slice_ms, partial.slice_end
        for row, arrived in zip(partial.rows, partial.arrived, strict=True):
            why = TimedText.of(
                lambda t: f"into slice [{t(start)}, {t(end)}) of key {self.key_text(partial.key)}"
            )
            log.notes.append(RowFate(row, Fate.KEPT, "SQL-W1", why, watermark_ms=arrived))
        self.buffer.add(partial.key, end, partial)

    def drop_late(self, partial: Partial, log: StepLog) -> None:
        """SQL-W3: every window holding the slice has fired: dropped, counted once (per partial)."""
        start, end = partial.slice_end - self.slice_ms, partial.slice_end
        last = self.last_window_end(end)
        first_start, progress = self.window_start_of(last), self.progress
        (first, *merged), (first_arrived, *merged_arrived) = partial.rows, partial.arrived
        why = TimedText.of(
            lambda t: (
                f"late for slice [{t(start)}, {t(end)}): its last window [{t(first_start)}, "
                f"{t(last)}) has fired (watermark {t(progress)}): dropped"
            )
        )
        log.notes.append(RowFate(first, Fate.DROPPED, "SQL-W3", why, LATE_METRIC, first_arrived))
        log.dropped.append(Dropped(first, why, late=True))
        for row, arrived in zip(merged, merged_arrived, strict=True):
            also = TimedText.of(
                lambda t: (
                    f"merged by the local stage with row {first.row} into one partial of slice "
                    f"[{t(start)}, {t(end)}), which was dropped late and counted once"
                )
            )
            log.notes.append(RowFate(row, Fate.DROPPED, "SQL-W3", also, watermark_ms=arrived))
            log.dropped.append(Dropped(row, also, late=False))

    def add_late(self, partial: Partial, log: StepLog) -> None:
        """SQL-W4: the slice has fired but a window holding it has not: the row goes to the windows
        not yet fired (CUMULATE: its shared first slice); nothing emitted is revised."""
        start, end = partial.slice_end - self.slice_ms, partial.slice_end
        unfired = end
        while self.zone.fired(unfired, self.progress):
            unfired += self.slice_ms
        fired_end = unfired - self.slice_ms
        open_start, fired_start = self.window_start_of(unfired), self.window_start_of(fired_end)
        why = TimedText.of(
            lambda t: (
                f"late for slice [{t(start)}, {t(end)}) but window [{t(open_start)}, {t(unfired)}) "
                f"is still open: added, no retraction of the fired [{t(fired_start)}, {t(fired_end)})"
            )
        )
        for row, arrived in zip(partial.rows, partial.arrived, strict=True):
            log.notes.append(RowFate(row, Fate.ADDED_LATE, "SQL-W4", why, watermark_ms=arrived))
        self.buffer.add(partial.key, self.merge_target(end), partial)
        self.register(partial.key, unfired, "the first window not yet fired of a late row", log)

    def advance_progress(self, watermark_ms: int, log: StepLog) -> None:
        """SQL-W6: a higher watermark that reaches the next trigger point flushes the buffer (when
        it fires the earliest slice in it) into state, registering each window's timer."""
        if watermark_ms <= self.progress:
            return
        self.progress = watermark_ms
        if watermark_ms < self.next_trigger:
            return
        for (key, target), parts in self.buffer.due(self.zone, watermark_ms):
            held = self.state.get((key, target))
            self.state[(key, target)] = self.fold(key, target, [held, *parts] if held else parts)
            if not self.zone.fired(target, self.timer_watermark):
                self.register(key, target, "its window ends", log)
        self.next_trigger = self.zone.next_trigger(watermark_ms, self.slice_ms, self.config.offset_ms)

    def register(self, key: Key, window_end: int, purpose: str, log: StepLog) -> None:
        namespace = (self.window_start_of(window_end), window_end)
        log.registered.append(
            self.timers.register(
                TimeDomain.EVENT,
                self.zone.timer_ms(window_end - 1),
                json.dumps(list(key)),
                purpose,
                namespace,
            )
        )

    # ---- SQL-W2 / SQL-W7: firing ----------------------------------------------------------------

    def fire_window(self, key: Key, window_end: int, log: StepLog) -> None:
        """SQL-W2: the window's rows as one +I row, none if no row reached it (Flink's hidden
        COUNT(*) tells); the slices no later window needs are cleared."""
        c = self.config
        if c.window == "tumble":
            content = self.state.pop((key, window_end), None)
        elif c.window == "hop":
            content = self.hop_content(key, window_end)
        else:
            content = self.cumulate_content(key, window_end)
        if content is not None and content.count > 0:
            self.emit(key, window_end, content, log)
        self.register_next(key, window_end, content, log)

    def register_next(self, key: Key, window_end: int, content: Partial | None, log: StepLog) -> None:
        """SQL-W7: a HOP window that held rows registers the key's next window (slices are shared,
        and no row of the next one may come); CUMULATE registers its next step up to the largest
        size, held rows or not. TUMBLE windows share nothing."""
        c, following = self.config, window_end + self.slice_ms
        if c.window == "hop" and content is not None and content.count > 0:
            self.register(key, following, "the next window (HOP)", log)
        elif c.window == "cumulate" and following <= self.window_start_of(window_end) + c.size_ms:
            self.register(key, following, "the next step (CUMULATE)", log)

    def hop_content(self, key: Key, window_end: int) -> Partial | None:
        """A HOP window: its slices merged afresh; its first slice is no longer needed."""
        ends = range(window_end - self.config.size_ms + self.slice_ms, window_end + 1, self.slice_ms)
        parts = [p for end in ends if (p := self.state.get((key, end))) is not None]
        self.state.pop((key, window_end - self.config.size_ms + self.slice_ms), None)
        return self.fold(key, window_end, parts) if parts else None

    def cumulate_content(self, key: Key, window_end: int) -> Partial | None:
        """A CUMULATE window: its step merged into the shared first slice, which is the result."""
        first = self.window_start_of(window_end) + self.slice_ms
        last = self.window_start_of(window_end) + self.config.size_ms
        if window_end != first:
            parts = [p for end in (first, window_end) if (p := self.state.pop((key, end), None)) is not None]
            if parts:
                self.state[(key, first)] = self.fold(key, first, parts)
        content = self.state.get((key, first))
        if window_end == last:
            self.state.pop((key, first), None)
        return content

    def emit(self, key: Key, window_end: int, content: Partial, log: StepLog) -> None:
        start = self.window_start_of(window_end)
        values: list[tuple[str, SqlValue]] = list(zip(self.config.keys, key, strict=True))
        values += [(c.name, c.result(acc)) for c, acc in zip(self.calls, content.accs, strict=True)]
        values += [("window_start", timestamp_text(start)), ("window_end", timestamp_text(window_end))]
        values.append(("window_time", self.window_time_text(window_end)))
        log.emit.append(SqlOutput(RowKind.INSERT, tuple(values), tuple(r.row for r in content.rows)))

    def window_time_text(self, window_end: int) -> str:
        """`window_time`: the window's last millisecond (LTZ: that instant, read in the zone)."""
        return timestamp_text(self.zone.local_ms(self.zone.instant_ms(window_end - 1)))

    @staticmethod
    def key_text(key: Key) -> str:
        """The key in words, its braces doubled (it goes into a `TimedText` template)."""
        text = "(" + ", ".join(str(v) for v in key) + ")" if key else "(no key)"
        return text.replace("{", "{{").replace("}", "}}")


def build(config: SqlOperatorKind, timers: TimerService) -> SqlWindowAggregate:
    assert isinstance(config, SqlWindowConfig)
    return SqlWindowAggregate(config, timers)


__all__ = ["LATE_METRIC", "Partial", "SqlWindowAggregate", "build"]
