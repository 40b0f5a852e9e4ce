"""Event-time tumbling and sliding windows with allowed lateness (windows-and-generation.md §4).

The default event-time trigger: a window fires when the watermark reaches its maxTimestamp, fires
again at once for every late-but-accepted element, never purges, and is cleaned up at
maxTimestamp + allowedLateness. One timer per (key, window, timestamp), as in Flink, so with zero
lateness the firing and the cleanup share a callback and the firing comes first.
"""

from __future__ import annotations

from typing import Any

from wmviz.core.operator_log import Dropped, StepLog, WindowOutput
from wmviz.core.scenario import OperatorConfig, TraceRow
from wmviz.core.timers import FiredTimer, TimeDomain, TimerService
from wmviz.core.types import MAX_MS, MIN_MS

WINDOW_END = "window_end"
WINDOW_CLEANUP = "window_cleanup"


class ScenarioError(ValueError):
    """A trace row the operator cannot process; names the row and column like validation does."""

    def __init__(self, row: TraceRow, column: str, reason: str) -> None:
        super().__init__(f"row {row.row}: column {column}: {reason}")
        self.row, self.column, self.reason = row, column, reason


def assign_windows(
    ts_ms: int, size_ms: int, slide_ms: int | None, offset_ms: int = 0
) -> list[tuple[int, int]]:
    """§4.1: the [start, end) windows of a timestamp, in Flink's assignment order (latest first)."""
    if slide_ms is None or slide_ms == size_ms:
        start = ts_ms - (ts_ms - offset_ms) % size_ms  # Python's % is floor modulo, as the spec needs
        return [(start, start + size_ms)]
    last = ts_ms - (ts_ms - offset_ms) % slide_ms
    windows = []
    start = last
    while start > ts_ms - size_ms:
        windows.append((start, start + size_ms))
        start -= slide_ms
    return windows


def max_timestamp(window: tuple[int, int]) -> int:
    """The last timestamp inside the window (the end is exclusive)."""
    return window[1] - 1


def cleanup_time(window: tuple[int, int], allowed_lateness_ms: int) -> int:
    """§4.4: maxTimestamp + allowedLateness, saturating at MAX."""
    return min(max_timestamp(window) + allowed_lateness_ms, MAX_MS)


class WindowOperator:
    """Keyed event-time windows; state is live until cleanup, so the UI can show every pane."""

    def __init__(self, config: OperatorConfig, timers: TimerService) -> None:
        assert config.size_ms is not None
        self.config = config
        self.size_ms = config.size_ms
        self.slide_ms = config.slide_ms
        self.lateness_ms = config.allowed_lateness_ms
        self.timers = timers
        self.watermark_ms = MIN_MS
        self.panes: dict[tuple[str, tuple[int, int]], list[tuple[TraceRow, Any]]] = {}

    def on_record(self, row: TraceRow, log: StepLog) -> None:
        """§4.2/§4.3: add to every window that is not late, fire at once if already due, else drop."""
        assert row.event_ms is not None
        key = row.key or ""
        element = element_of(row, self.config.aggregate)
        added = False
        windows = assign_windows(row.event_ms, self.size_ms, self.slide_ms)
        if not windows:
            log.dropped.append(Dropped(row, self.gap_reason(row)))
            return
        for window in windows:
            if self.window_is_late(window):
                continue
            added = True
            pane = self.panes.setdefault((key, window), [])
            pane.append((row, element))
            if max_timestamp(window) <= self.watermark_ms:
                log.emit.append(self._firing(key, window, late=True))
            else:
                log.registered.append(
                    self.timers.register(TimeDomain.EVENT, max_timestamp(window), key, WINDOW_END, window)
                )
            log.registered.append(
                self.timers.register(
                    TimeDomain.EVENT, cleanup_time(window, self.lateness_ms), key, WINDOW_CLEANUP, window
                )
            )
        if not added:
            log.dropped.append(Dropped(row, self.drop_reason(row)))

    def window_is_late(self, window: tuple[int, int]) -> bool:
        """§4.3: a window takes no more elements once its cleanup time is ≤ the watermark."""
        return cleanup_time(window, self.lateness_ms) <= self.watermark_ms

    def drop_reason(self, row: TraceRow) -> str:
        """§4.3: why a record fits no window (counted as numLateRecordsDropped in Flink)."""
        return (
            f"too late: every window of event time {row.event_ms} was cleaned up "
            f"(event time + allowed lateness {self.lateness_ms} ≤ watermark {self.watermark_ms})"
        )

    def gap_reason(self, row: TraceRow) -> str:
        """A sliding window with slide > size leaves gaps no window covers."""
        return (
            f"event time {row.event_ms} falls in a gap between sliding windows (slide {self.slide_ms} > size "
            f"{self.size_ms}): Flink assigns it to no window and discards it without counting it as late"
        )

    def on_watermark(self, watermark_ms: int) -> None:
        """Remember the operator's watermark; the pipeline fires the due timers."""
        self.watermark_ms = watermark_ms

    def on_timer(self, fired: FiredTimer, log: StepLog) -> None:
        """A window's end fires its contents; its cleanup time then removes the pane."""
        timer = fired.timer
        assert timer.namespace is not None
        pane_id = (timer.key, timer.namespace)
        if WINDOW_END in fired.purposes and pane_id in self.panes:
            log.emit.append(self._firing(timer.key, timer.namespace, late=False))
        if timer.timestamp_ms == cleanup_time(timer.namespace, self.lateness_ms):
            self.panes.pop(pane_id, None)

    def _firing(self, key: str, window: tuple[int, int], *, late: bool) -> WindowOutput:
        pane = self.panes[(key, window)]
        elements = tuple(e for _, e in pane)
        return WindowOutput(
            key=key or None,
            start_ms=window[0],
            end_ms=window[1],
            elements=elements,
            result=aggregate(elements, self.config.aggregate),
            aggregate=self.config.aggregate,
            late=late,
            rows=tuple(row.row for row, _ in pane),
        )

    def snapshot(self) -> tuple:
        """Comparable state: the watermark and every live pane's rows and elements."""
        panes = tuple(
            (pane_id, tuple((row.row, element) for row, element in pane))
            for pane_id, pane in sorted(self.panes.items())
        )
        return (self.watermark_ms, panes)

    def live_rows(self) -> set[int]:
        """Trace rows (by row number) still held in some pane."""
        return {row.row for pane in self.panes.values() for row, _ in pane}


def element_of(row: TraceRow, how: str) -> Any:
    """What a record contributes: its `value`, or its event time when it has none."""
    value = row.value if row.value is not None else row.event_ms
    if how in ("sum", "min", "max") and not isinstance(value, int | float):
        raise ScenarioError(row, "value", f"{value!r} is not a number, so it cannot be aggregated with {how}")
    return value


def aggregate(elements: tuple[Any, ...], how: str) -> Any:
    """list | count | sum | min | max over a pane's elements in arrival order."""
    if how == "list":
        return list(elements)
    if how == "count":
        return len(elements)
    if how == "sum":
        return sum(elements)
    return min(elements) if how == "min" else max(elements)
