"""Event-time tumbling and sliding windows with allowed lateness, as Flink 2.3.0's WindowOperator.
(Session windows, which merge, are `wmviz.core.sessions`, built on this module.)

The default event-time trigger: a window fires when the watermark reaches its maxTimestamp, fires
again at once for every late-but-accepted element, never purges, and is cleaned up at
maxTimestamp + allowedLateness. One timer per (key, window, timestamp), as in Flink, so with zero
lateness the firing and the cleanup share a callback and the firing comes first.

All window arithmetic is Java's `long`: a window near `Long.MAX_VALUE` may end past it and wrap
(`[MAX−2, MIN+2)`, whose maxTimestamp is MIN+1), a cleanup time that would overflow is MAX, and a
window whose cleanup time is MAX gets no cleanup timer at all (Flink's "end of time" guard).
An element that no window takes (every window already late, or a gap between sliding windows)
is late when `timestamp + allowedLateness ≤ watermark`: Flink then counts it in
`numLateRecordsDropped` or sends it to the late side output; otherwise it vanishes uncounted.
"""

from __future__ import annotations

from typing import Any

from wmviz.core.budgets import live_windows_reason
from wmviz.core.errors import BadInputError
from wmviz.core.java.longs import java_rem, wrap_long
from wmviz.core.operator_log import Dropped, StepLog, ToldFate, WindowOutput
from wmviz.core.scenario import TraceRow, WindowConfig
from wmviz.core.settings import MAX_LIVE_WINDOWS
from wmviz.core.sql_rows import LATE_METRIC, Fate
from wmviz.core.timers import FiredTimer, TimeDomain, TimerService
from wmviz.core.timetext import RAW, TimedText, Times
from wmviz.core.types import MAX_MS, MIN_MS

WINDOW_END = "window_end"
WINDOW_CLEANUP = "window_cleanup"

ASSIGNMENT, FIRING, LATENESS = "Window assignment", "Firing", "Lateness"
"""The rule a window row's fate cites: docs/rules.md's window sections, which have no short ids."""

MAX_WINDOWS_PER_ELEMENT = 10_000_000
"""Flink's `SlidingEventTimeWindows.MAX_WINDOW_NUM`: it rejects `size / slide` above this."""


class ScenarioError(BadInputError, ValueError):
    """A trace row the operator cannot process; names the row and column like validation does."""

    def __init__(self, row: TraceRow, column: str, reason: str) -> None:
        super().__init__(f"row {row.row}: column {column}: {reason}")
        self.row, self.column, self.reason = row, column, reason

    def __reduce__(self) -> tuple[type, tuple[TraceRow, str, str]]:
        # Exception pickling replays `args` (the message); a Spark worker sends the error itself.
        return (ScenarioError, (self.row, self.column, self.reason))


class AssignerError(BadInputError, ValueError):
    """An event time Flink's window assigner cannot handle: the job would fail on that record."""


def offset_config_problem(size_ms: int, slide_ms: int | None, offset_ms: int) -> str | None:
    """Why Flink refuses this window offset (None if it builds): its assigners' constructors need
    `Math.abs(offset) < slide` (sliding) or `< size` (tumbling). Java's `Math.abs(Long.MIN_VALUE)`
    is `Long.MIN_VALUE` itself, negative, so Flink accepts an offset of MIN (and so does wmviz)."""
    bound, name = (size_ms, "size") if slide_ms is None else (slide_ms, "slide")
    magnitude = offset_ms if offset_ms == MIN_MS else abs(offset_ms)
    if magnitude < bound:
        return None
    assigner = "TumblingEventTimeWindows" if slide_ms is None else "SlidingEventTimeWindows"
    return (
        f"|{offset_ms}| is not less than the {name} {bound}: Flink's {assigner} rejects it when the "
        "job is built "
        f'("parameters must satisfy abs(offset) < {name}")'
    )


def assigner_offset(size_ms: int, slide_ms: int | None, offset_ms: int) -> int:
    """The offset the assigner computes window starts with: the sliding assigner uses its offset
    as given; the tumbling one uses `(offset + stagger) % size` (the stagger is 0 here, aligned),
    which changes only an offset of Long.MIN_VALUE, the one `Math.abs` lets past its check."""
    return offset_ms if slide_ms is not None else java_rem(offset_ms, size_ms)


def sliding_config_problem(size_ms: int, slide_ms: int | None) -> str | None:
    """Why Flink refuses to build this sliding window (None if it builds): too many windows each."""
    if slide_ms is None:
        return None
    ratio = size_ms // slide_ms  # Java's long division, as in the assigner's constructor
    if ratio <= MAX_WINDOWS_PER_ELEMENT:
        return None
    return (
        f"size / slide = {ratio:,} windows per element exceeds {MAX_WINDOWS_PER_ELEMENT:,}: Flink's "
        f"SlidingEventTimeWindows rejects it when the job is built "
        f'("parameters must satisfy size / slide <= {MAX_WINDOWS_PER_ELEMENT}")'
    )


_NO_OVERFLOW = 1 << 61
"""Below this magnitude a window start's arithmetic cannot leave Java's long range."""


def window_start(ts_ms: int, offset_ms: int, size_ms: int) -> int:
    """`TimeWindow.getWindowStartWithOffset` in Java's long arithmetic."""
    bound = _NO_OVERFLOW
    if -bound < ts_ms < bound and -bound < offset_ms < bound and 0 < size_ms < bound:
        # Nothing can wrap, and for a positive size Python's flooring `%` is Java's remainder after
        # Flink's "+ size when negative" correction: the same start in one step (most records).
        return ts_ms - (ts_ms - offset_ms) % size_ms
    return window_start_long(ts_ms, offset_ms, size_ms)


def window_start_long(ts_ms: int, offset_ms: int, size_ms: int) -> int:
    """`window_start` step by step as Java computes it, wrapping where a long would."""
    remainder = java_rem(wrap_long(ts_ms - offset_ms), size_ms)
    if remainder < 0:
        return wrap_long(ts_ms - (remainder + size_ms))
    return wrap_long(ts_ms - remainder)


def assign_windows(
    ts_ms: int, size_ms: int, slide_ms: int | None, offset_ms: int = 0
) -> list[tuple[int, int]]:
    """The [start, end) windows of a timestamp, in Flink's assignment order (latest first).
    `offset_ms` is the assigner's own (`assigner_offset`).

    Java's long arithmetic throughout, so `end` may wrap past MAX, and a sliding element within
    `size` of MIN may get no window (`ts − size` wraps). Raises AssignerError where Flink's
    assigner fails: a MIN timestamp ("no timestamp"), or a sliding loop that wraps around the
    long range and never ends.
    """
    if ts_ms == MIN_MS:
        raise AssignerError(
            "Long.MIN_VALUE is Flink's 'no timestamp' marker: its window assigners fail the job "
            '("Record has Long.MIN_VALUE timestamp (= no timestamp marker)")'
        )
    if slide_ms is None:  # a `slide_ms` equal to `size_ms` is still Flink's sliding assigner
        start = window_start(ts_ms, offset_ms, size_ms)
        return [(start, wrap_long(start + size_ms))]
    windows: list[tuple[int, int]] = []
    start = window_start(ts_ms, offset_ms, slide_ms)
    bound = wrap_long(ts_ms - size_ms)
    most = size_ms // slide_ms + 1  # a timestamp is in at most ⌈size / slide⌉ windows
    while start > bound:
        following = wrap_long(start - slide_ms)
        if following > start or len(windows) == most:
            # The first window start wrapped past MAX, or the next one wraps below MIN: Java's
            # loop then runs through (nearly) all 2^64 longs and the job dies.
            raise AssignerError(
                f"Flink's sliding assigner wraps around Java's long range for event time {ts_ms} "
                "and never finishes (the job dies with OutOfMemoryError)"
            )
        windows.append((start, wrap_long(start + size_ms)))
        start = following
    return windows


def max_timestamp(window: tuple[int, int]) -> int:
    """The last timestamp inside the window (the end is exclusive), in long arithmetic."""
    end = window[1] - 1
    return end if end >= MIN_MS else MAX_MS  # only MIN − 1 wraps


def cleanup_time(window: tuple[int, int], allowed_lateness_ms: int) -> int:
    """maxTimestamp + allowedLateness, or MAX if that sum overflows (Flink's guard)."""
    return _cleanup_after(max_timestamp(window), allowed_lateness_ms)


def _cleanup_after(end: int, allowed_lateness_ms: int) -> int:
    cleanup = end + allowed_lateness_ms  # lateness ≥ 0: only an overflow past MAX can happen
    return cleanup if cleanup <= MAX_MS else MAX_MS


def format_window(window: tuple[int, int], t: Times = RAW) -> str:
    """`[0, 5)`, with MIN / MAX spelled out (times through `t`)."""
    return f"[{t(window[0])}, {t(window[1])})"


class WindowOperator:
    """Keyed event-time windows; state is live until cleanup, so the UI can show every pane."""

    def __init__(self, config: WindowConfig, timers: TimerService) -> None:
        self.config = config
        self.size_ms = config.size_ms or 0  # None only for session windows, which never read it
        self.slide_ms = config.slide_ms
        self.offset_ms = assigner_offset(self.size_ms, self.slide_ms, config.offset_ms) if self.size_ms else 0
        self.lateness_ms = config.allowed_lateness_ms
        self.timers = timers
        self.watermark_ms = MIN_MS
        self.panes: dict[tuple[str, tuple[int, int]], list[tuple[TraceRow, Any]]] = {}
        """Window contents by (key, window); for session windows by (key, state window)."""

    def on_record(self, row: TraceRow, log: StepLog) -> None:
        """As `WindowOperator.processElement` (docs/rules.md, "Firing", "Lateness"): each window that
        is not late takes the element and fires at once if already due (else registers its end timer),
        then registers its cleanup timer; an element no window took is late or vanishes silently."""
        assert row.event_ms is not None
        key = row.key or ""
        element = element_of(row, self.config.aggregate)
        try:
            windows = assign_windows(row.event_ms, self.size_ms, self.slide_ms, self.offset_ms)
        except AssignerError as err:
            raise ScenarioError(row, "event_ms", str(err)) from None
        added = skipped = fired_late = False
        lateness, watermark = self.lateness_ms, self.watermark_ms
        for window in windows:
            end = max_timestamp(window)
            cleanup = _cleanup_after(end, lateness)
            if cleanup <= watermark:  # the window is late, it takes no more elements
                skipped = True
                continue
            added = True
            pane = self.panes.get((key, window))
            if pane is None:
                if len(self.panes) >= MAX_LIVE_WINDOWS.get():
                    raise ScenarioError(row, "event_ms", live_windows_reason(len(self.panes) + 1))
                pane = self.panes[(key, window)] = []
            pane.append((row, element))
            # The default event-time trigger's onElement, then the operator's cleanup timer.
            if end <= watermark:
                fired_late = True
                log.emit.append(self._firing(key, window, late=True))
            else:
                log.registered.append(self.timers.register(TimeDomain.EVENT, end, key, WINDOW_END, window))
            if cleanup != MAX_MS:  # Flink sets no cleanup timer for "the end of time"
                log.registered.append(
                    self.timers.register(TimeDomain.EVENT, cleanup, key, WINDOW_CLEANUP, window)
                )
        if not added:
            late = self.element_is_late(row.event_ms)
            ts_ms = row.event_ms  # narrowed here, not inside the lambda
            why = TimedText.of(lambda t: self.unassigned_reason(ts_ms, windows, late, t))
            log.dropped.append(Dropped(row, why, late=late))
            log.timeline.append(drop_fate(row, why, late, watermark))
        elif skipped or fired_late:
            log.timeline.append(self.added_late_fate(row, windows, fired_late))
        else:
            log.timeline.append(ToldFate(row, Fate.KEPT, ASSIGNMENT, _ON_TIME, None, watermark))

    def added_late_fate(self, row: TraceRow, windows: list[tuple[int, int]], fired_late: bool) -> ToldFate:
        """A row some window still took although it is behind the watermark: it fired a window again
        at once (within allowed lateness), or only its windows not yet cleaned up took it."""
        watermark, lateness = self.watermark_ms, self.lateness_ms
        taken = [w for w in windows if _cleanup_after(max_timestamp(w), lateness) > watermark]

        def why(t: Times) -> str:
            listed = ", ".join(format_window(w, t) for w in taken)
            if fired_late:
                return (
                    f"late but within allowed lateness {lateness}: added to {listed}, whose max "
                    f"timestamp the watermark {t(watermark)} has passed, so it fires again at once "
                    "(a late firing)"
                )
            return (
                f"behind the watermark {t(watermark)}: its other windows are cleaned up, so only "
                f"{listed} took it; nothing already fired is revised"
            )

        rule = FIRING if fired_late else LATENESS
        return ToldFate(row, Fate.ADDED_LATE, rule, TimedText.of(why), watermark_ms=watermark)

    def element_is_late(self, ts_ms: int) -> bool:
        """Flink's `isElementLate`: timestamp + allowedLateness ≤ watermark, in long arithmetic."""
        return wrap_long(ts_ms + self.lateness_ms) <= self.watermark_ms

    def unassigned_reason(
        self, ts_ms: int, windows: list[tuple[int, int]], late: bool, t: Times = RAW
    ) -> str:
        """Why no window took the element, and what Flink then does with it (times through `t`)."""
        w, lateness = t(self.watermark_ms), self.lateness_ms
        if not windows:
            where = (
                f"event time {t(ts_ms)} falls in a gap between sliding windows "
                f"(slide {self.slide_ms} > size {self.size_ms}), so no window takes it"
                if self.slide_ms is not None and self.slide_ms > self.size_ms
                else f"no window covers event time {t(ts_ms)} (Java long arithmetic near MIN)"
            )
        else:
            listed = ", ".join(f"{format_window(x, t)} max timestamp {t(max_timestamp(x))}" for x in windows)
            which = "its window" if len(windows) == 1 else "every one of its windows"
            where = (
                f"too late: {which} ({listed}) has max timestamp + allowed lateness {lateness} ≤ "
                f"watermark {w}, so it was already cleaned up"
            )
        if late:
            return (
                f"{where}; event time + allowed lateness {lateness} ≤ watermark {w}, so Flink counts it "
                "as late (numLateRecordsDropped, or the late side output)"
            )
        return (
            f"{where}; event time + allowed lateness {lateness} > watermark {w}, so it is not late: "
            "Flink discards it silently, uncounted and not sent to the late side output"
        )

    def on_watermark(self, watermark_ms: int) -> None:
        """Remember the operator's watermark; the pipeline fires the due timers."""
        self.watermark_ms = watermark_ms

    def on_timer(self, fired: FiredTimer, log: StepLog) -> None:
        """`WindowOperator.onEventTime`: the trigger fires at maxTimestamp; at the cleanup time the
        pane and the trigger's end timer are cleared."""
        timer = fired.timer
        window = timer.namespace
        assert window is not None
        pane_id = (timer.key, window)
        end = max_timestamp(window)
        if timer.timestamp_ms == end and pane_id in self.panes:
            log.emit.append(self._firing(timer.key, window, late=False))
        if timer.timestamp_ms == _cleanup_after(end, self.lateness_ms):
            # Flink's clearAllState also deletes the trigger's end timer; it is never still pending
            # here (it is due no later than the cleanup time), so only the pane goes.
            self.panes.pop(pane_id, None)

    def _firing(
        self, key: str, window: tuple[int, int], *, late: bool, pane: list[tuple[TraceRow, Any]] | None = None
    ) -> WindowOutput:
        """The firing of `window`: its own pane, or (a session) the pane of its state window."""
        pane = self.panes[(key, window)] if pane is None else pane
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

    def live_panes(self) -> list[tuple[str, tuple[int, int], list[tuple[TraceRow, Any]]]]:
        """(key, window, contents) of every live window, for the windows panel."""
        return [(key, window, pane) for (key, window), pane in self.panes.items()]

    def cleanup_time(self, window: tuple[int, int]) -> int:
        """When `window` is cleaned up (`cleanup_time` with this operator's lateness)."""
        return cleanup_time(window, self.lateness_ms)


_ON_TIME = TimedText.plain("on time: added to its windows, which fire when the watermark reaches their end")


def drop_fate(row: TraceRow, why: TimedText, late: bool, watermark_ms: int) -> ToldFate:
    """A row no window takes: late ones Flink counts in `numLateRecordsDropped`; others (a gap of a
    sliding window, not late) vanish uncounted."""
    metric = LATE_METRIC if late else None
    return ToldFate(row, Fate.DROPPED, LATENESS, why, metric, watermark_ms)


_IN_SESSION = TimedText.plain("on time: added to its session, which fires when the watermark reaches its end")


def session_fate(
    row: TraceRow,
    own: tuple[int, int],
    session: tuple[int, int],
    watermark: int,
    lateness: int,
    *,
    fired_late: bool,
) -> ToldFate:
    """A row a live session took (`wmviz.core.sessions`): late when the session fired again at
    once, or when the watermark had passed its own window's end and it survived by merging into
    an open session."""
    if not fired_late and max_timestamp(own) > watermark:
        return ToldFate(row, Fate.KEPT, ASSIGNMENT, _IN_SESSION, None, watermark)

    def why(t: Times) -> str:
        if fired_late:
            return (
                f"late but within allowed lateness {lateness}: added to session "
                f"{format_window(session, t)}, whose max timestamp the watermark {t(watermark)} has "
                "passed, so the whole session fires again at once (a late firing)"
            )
        return (
            f"behind the watermark {t(watermark)}: its own window {format_window(own, t)} has "
            f"reached its end, but it touches the open session, now {format_window(session, t)}, "
            "and joins it; the session fires with it when the watermark reaches the session's end"
        )

    rule = FIRING if fired_late else LATENESS
    return ToldFate(row, Fate.ADDED_LATE, rule, TimedText.of(why), watermark_ms=watermark)


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
