"""Event-time session windows, as Flink 2.3.0's `EventTimeSessionWindows.withGap` with the default
`EventTimeTrigger` in the `WindowOperator`.

A record at `t` gets the window `[t, t + gap)` (Java long: near MAX the end wraps below the start),
and `MergingWindowSet.addWindow` merges it with every live window of its key it touches:
`TimeWindow.intersects` is `start ≤ other.end && end ≥ other.start`, so two records exactly one
gap apart share a session. The windows are sorted by start and swept greedily, each group merged
into its cover. For each merge Flink first fails the job if the merged window's
`maxTimestamp + allowedLateness` (Java long, unguarded) is ≤ the watermark: that only happens when
the sum wraps past MAX, i.e. a merge whose merged session's cleanup time is capped at MAX (a record
inside such a session merges nothing and does not fail; under a watermark below the wrapped sum,
such as MIN, the merge passes). Then the
trigger's `onMerge` registers a firing timer at the merged `end − 1` only if that is after the
watermark, the merged windows' firing and cleanup timers are deleted, and their contents move
into the one state window kept (one of the originals: Flink never renames state).

After the merge the record's session is judged as any window is: late when its cleanup time
(`end − 1 + lateness`, capped at MAX) ≤ the watermark. So lateness is judged after merging: a
record whose own window is past cleanup still joins a live session it touches (moving its start
back). A record that joins no live window goes to the late side output if it is itself late
(`t + lateness ≤ watermark`), else vanishes uncounted (only possible when `t + gap` wraps). A
record that lands in a session whose end the watermark has passed fires the whole session again
at once (late); one whose merge pushes the end past the watermark waits for the watermark.

Which state window absorbs the others, and so the order of a merged session's elements, and the
order in which merged windows' timers are deleted follow Java's hash-based iteration order
(`wmviz.core.java.hashorder`); Flink promises no element order, wmviz repeats the released one.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable
from typing import Any

from wmviz.core.budgets import live_windows_reason
from wmviz.core.errors import Refused
from wmviz.core.java.hashorder import JavaHashTable
from wmviz.core.java.longs import wrap_long
from wmviz.core.operator_log import Dropped, SessionMerge, StepLog
from wmviz.core.scenario import TraceRow, WindowConfig
from wmviz.core.settings import MAX_LIVE_WINDOWS
from wmviz.core.timers import FiredTimer, TimeDomain, TimerService
from wmviz.core.timetext import RAW, TimedText, Times
from wmviz.core.types import MAX_MS, format_ms
from wmviz.core.windows import (
    WINDOW_CLEANUP,
    WINDOW_END,
    ScenarioError,
    WindowOperator,
    cleanup_time,
    drop_fate,
    element_of,
    format_window,
    max_timestamp,
    session_fate,
)

Window = tuple[int, int]
MergeFunction = Callable[[Window, list[Window], Window, list[Window], bool], None]
"""Flink's `MergeFunction.merge(result, merged windows, its state window, merged state windows)`,
and whether the new window took part (Flink leaves it out of the merged windows)."""


def session_window(ts_ms: int, gap_ms: int) -> Window:
    """`EventTimeSessionWindows.assignWindows`: `[t, t + gap)` in Java long arithmetic. Unlike the
    tumbling and sliding assigners it has no Long.MIN_VALUE check: a MIN timestamp is a session."""
    return (ts_ms, wrap_long(ts_ms + gap_ms))


def merge_fails(end_ms: int, lateness_ms: int, watermark_ms: int) -> bool:
    """The merge callback's check, `maxTimestamp + allowedLateness <= watermark`, in Java long
    arithmetic without the overflow guard the cleanup time has: true only when the sum wraps."""
    return wrap_long(end_ms + lateness_ms) <= watermark_ms


def intersects(a: Window, b: Window) -> bool:
    """`TimeWindow.intersects`: overlapping or touching (`[0, 5)` and `[5, 9)` intersect)."""
    return a[0] <= b[1] and a[1] >= b[0]


def cover(a: Window, b: Window) -> Window:
    """`TimeWindow.cover`: the smallest window holding both."""
    return (min(a[0], b[0]), max(a[1], b[1]))


def merge_groups(
    windows: list[Window] | _WithNew, touching: Iterable[int]
) -> list[tuple[Window, JavaHashTable[Window]]]:
    """`TimeWindow.mergeWindows` over `windows` in its sort order (by start; the new window after an
    equal one): sweep, each group of more than one window with its cover, its members a `HashSet`
    in Java's order, in the order the sweep meets them.

    `touching` holds the positions whose window may touch the one before it; any other window starts
    a group of its own when the sweep reaches it on a group of one. So the sweep visits only the
    stretches from one window before each such position while a group grows: what Flink's sweep
    over all windows finds, at the cost of the windows it merges."""
    where = set(touching)
    groups: list[tuple[Window, JavaHashTable[Window]]] = []
    swept = 1  # the sweep's groups are known before this position (position 0 has no neighbour)
    for point in sorted(where):
        if point < swept or point >= len(windows):
            continue
        at = point - 1
        covered, members = windows[at], [windows[at]]
        at += 1
        while at < len(windows) and (len(members) > 1 or at in where):
            candidate = windows[at]
            if intersects(covered, candidate):
                covered = cover(covered, candidate)
                members.append(candidate)
            else:
                _add_group(groups, covered, members)
                covered, members = candidate, [candidate]
            at += 1
        _add_group(groups, covered, members)
        swept = at
    return groups


def _add_group(
    groups: list[tuple[Window, JavaHashTable[Window]]], result: Window, members: list[Window]
) -> None:
    """One group of the sweep, if it merges anything (equal windows are one `HashSet` element)."""
    if len(members) < 2:
        return
    table: JavaHashTable[Window] = JavaHashTable()
    for member in members:
        table.add(member)
    if len(table) > 1:
        groups.append((result, table))


class _WithNew:
    """A key's sorted live windows with the new one at `at`, read in place rather than copied."""

    __slots__ = ("at", "new", "windows")

    def __init__(self, windows: list[Window], at: int, new: Window) -> None:
        self.windows, self.at, self.new = windows, at, new

    def __len__(self) -> int:
        return len(self.windows) + 1

    def __getitem__(self, index: int, /) -> Window:
        if index < self.at:
            return self.windows[index]
        return self.new if index == self.at else self.windows[index - 1]


class MergingWindowSet:
    """One key's `MergingWindowSet`: live window → its state window.

    Flink keeps it as a list it rebuilds into a `HashMap` on every callback; nothing it does
    depends on that map's order: `mergeWindows` sorts the windows by start, and no two live windows
    of a key share a start (two that did would touch and have merged, and a window whose end wrapped
    past MAX starts where no other window can). So wmviz keeps the live windows sorted, and a record
    finds the sessions it may touch by bisection instead of sweeping them all: O(log n) a record,
    plus the windows it merges (the list's insert moves pointers, at most MAX_LIVE_WINDOWS of them).

    A settled set has no window touching the one before it, and a merge leaves it settled, but
    removing a session between two others can leave its neighbours touching when a cover spans most
    of the long range and its neighbour's end wrapped (a gap near 2^62). Flink's next sweep merges
    such neighbours whatever the new record touches; `unsettled` keeps them so the sweep does too."""

    __slots__ = ("state_of", "unsettled", "windows")

    def __init__(self) -> None:
        self.windows: list[Window] = []
        """The live windows, sorted (by start: no two share one)."""
        self.state_of: dict[Window, Window] = {}
        self.unsettled: set[Window] = set()
        """Live windows that touch the window before them."""

    def __len__(self) -> int:
        return len(self.windows)

    def put(self, window: Window, state: Window) -> None:
        if window not in self.state_of:
            at = bisect_left(self.windows, window)
            self.windows.insert(at, window)
            self._settle(at)
            self._settle(at + 1)
        self.state_of[window] = state

    def remove(self, window: Window) -> Window | None:
        state = self.state_of.pop(window, None)
        if state is not None:
            at = bisect_left(self.windows, window)
            del self.windows[at]
            self.unsettled.discard(window)
            self._settle(at)
        return state

    def _settle(self, at: int) -> None:
        """Whether the window at `at` touches the one before it (the first touches none)."""
        if at < len(self.windows):
            window = self.windows[at]
            if at and intersects(self.windows[at - 1], window):
                self.unsettled.add(window)
            else:
                self.unsettled.discard(window)

    def add_window(self, new: Window, merge: MergeFunction) -> Window:
        """`addWindow`: merge `new` with what it touches; returns the window it ended up in. Each
        merge's callback runs before the set changes, so a callback that fails the job leaves the
        set as it was (Flink persists its map only after every callback returned)."""
        windows = self.windows
        at = bisect_right(windows, new)
        touching = {at, at + 1}
        for window in self.unsettled:
            where = bisect_left(windows, window)
            touching.add(where if where < at else where + 1)
        results: JavaHashTable[Window] = JavaHashTable()
        groups: dict[Window, JavaHashTable[Window]] = {}
        for result, members in merge_groups(_WithNew(windows, at, new), touching):
            results.add(result)
            groups[result] = members  # HashMap.put: an equal cover replaces the value in place
        result_window, merged_new = new, False
        changes: list[tuple[Window, JavaHashTable[Window], Window]] = []
        for result in results:
            members = groups[result]
            took_new = members.remove(new)
            if took_new:
                merged_new, result_window = True, result
            state = self.state_of[members.first()]
            merged_states = [s for m in members if (s := self.state_of.get(m)) is not None]
            if state in merged_states:
                merged_states.remove(state)
            changes.append((result, members, state))
            if not (result in members and len(members) == 1):  # not just `new` inside a window
                merge(result, list(members), state, merged_states, took_new)
        for result, members, state in changes:
            for member in members:
                self.remove(member)
            self.put(result, state)
        if not len(results) or (result_window == new and not merged_new):
            self.put(result_window, result_window)
        return result_window


class SessionMergeFailure(Refused):
    """Flink's UnsupportedOperationException from the merge callback: the job fails."""


class SessionWindowOperator(WindowOperator):
    """Keyed event-time session windows; `panes` holds contents by (key, state window)."""

    def __init__(self, config: WindowConfig, timers: TimerService) -> None:
        super().__init__(config, timers)
        assert config.session_gap_ms is not None
        self.gap_ms = config.session_gap_ms
        self.sessions: dict[str, MergingWindowSet] = {}
        """Each key's `MergingWindowSet` (a key without live windows has none)."""
        self.merges: dict[tuple[str, Window], int] = {}
        """How many merges made each live session (wmviz's own count, for the panel)."""

    def on_record(self, row: TraceRow, log: StepLog) -> None:
        """`WindowOperator.processElement` with a merging assigner."""
        assert row.event_ms is not None
        key = row.key or ""
        element = element_of(row, self.config.aggregate)
        window = session_window(row.event_ms, self.gap_ms)
        sessions = self.sessions.get(key) or MergingWindowSet()

        def merge(
            result: Window, merged: list[Window], state: Window, merged_states: list[Window], took_new: bool
        ) -> None:
            log.notes.append(
                SessionMerge(
                    key or None,
                    result,
                    tuple(merged),
                    window if took_new else None,
                    self._merge_timer(result),
                )
            )
            self._merge(key, result, merged, state, merged_states, log)
            self.merges[(key, result)] = 1 + sum(self.merges.pop((key, m), 0) for m in merged)

        try:
            actual = sessions.add_window(window, merge)
        except SessionMergeFailure as failure:
            raise ScenarioError(row, "event_ms", str(failure)) from None
        added = False
        lateness, watermark = self.lateness_ms, self.watermark_ms
        cleanup = cleanup_time(actual, lateness)
        if cleanup <= watermark:
            # isWindowLate: the session is retired and takes no more elements. Flink leaves any
            # state it had where it was (no timer can reach it again), and so does wmviz.
            sessions.remove(actual)
            self.merges.pop((key, actual), None)
        else:
            added = True
            state = sessions.state_of[actual]
            pane = self.panes.get((key, state))
            if pane is None:
                if len(self.panes) >= MAX_LIVE_WINDOWS.get():
                    raise ScenarioError(row, "event_ms", live_windows_reason(len(self.panes) + 1))
                pane = self.panes[(key, state)] = []
            pane.append((row, element))
            end = max_timestamp(actual)
            if end <= watermark:  # EventTimeTrigger.onElement: the watermark is past it, fire now
                log.emit.append(self._firing(key, actual, late=True, pane=pane))
                log.timeline.append(session_fate(row, window, actual, watermark, lateness, fired_late=True))
            else:
                log.timeline.append(session_fate(row, window, actual, watermark, lateness, fired_late=False))
                log.registered.append(self.timers.register(TimeDomain.EVENT, end, key, WINDOW_END, actual))
            if cleanup != MAX_MS:
                log.registered.append(
                    self.timers.register(TimeDomain.EVENT, cleanup, key, WINDOW_CLEANUP, actual)
                )
        self._store(key, sessions)
        if not added:
            late = self.element_is_late(row.event_ms)
            ts_ms = row.event_ms  # narrowed here, not inside the lambda
            why = TimedText.of(lambda t: self.session_drop_reason(ts_ms, window, late, t))
            log.dropped.append(Dropped(row, why, late=late))
            log.timeline.append(drop_fate(row, why, late, watermark))

    def _merge_timer(self, result: Window) -> int | None:
        end = max_timestamp(result)
        return end if end > self.watermark_ms else None

    def _merge(
        self, key: str, result: Window, merged: list[Window], state: Window, merged_states: list[Window],
        log: StepLog,
    ) -> None:  # fmt: skip
        """The operator's merge callback: the job-failing check, `onMerge`, the merged windows'
        timers deleted (in `merged`'s order), their contents moved into `state`."""
        end, watermark = max_timestamp(result), self.watermark_ms
        if merge_fails(end, self.lateness_ms, watermark):
            raise SessionMergeFailure(self._failure_text(result, end, wrap_long(end + self.lateness_ms)))
        if end > watermark:
            log.registered.append(self.timers.register(TimeDomain.EVENT, end, key, WINDOW_END, result))
        for window in merged:
            self.timers.delete(TimeDomain.EVENT, max_timestamp(window), key, window)
            cleanup = cleanup_time(window, self.lateness_ms)
            if cleanup != MAX_MS:
                self.timers.delete(TimeDomain.EVENT, cleanup, key, window)
        # The heap state backend's mergeNamespaces: the sources' contents in order, after the target's.
        moved = [pane for s in merged_states if (pane := self.panes.pop((key, s), None))]
        if moved:
            target = self.panes.setdefault((key, state), [])
            for pane in moved:
                target.extend(pane)

    def _failure_text(self, result: Window, end: int, total: int) -> str:
        lateness = self.lateness_ms
        sum_text = f"its max timestamp {format_ms(end)} + allowed lateness {lateness}"
        if end + lateness != total:
            sum_text += (
                f" wraps past Long.MAX_VALUE to {format_ms(total)} in Java's long arithmetic (the merged "
                "session's cleanup time is capped at MAX; the merge check has no such guard)"
            )
        else:
            sum_text += f" = {format_ms(total)}"
        return (
            f"merging into session {format_window(result)} fails the Flink job: {sum_text}, which is ≤ "
            f"the watermark {format_ms(self.watermark_ms)}, so Flink's WindowOperator throws "
            'UnsupportedOperationException ("The end timestamp of an event-time window cannot become '
            'earlier than the current watermark by merging")'
        )

    def _store(self, key: str, sessions: MergingWindowSet) -> None:
        if len(sessions):
            self.sessions[key] = sessions
        else:
            self.sessions.pop(key, None)

    def on_timer(self, fired: FiredTimer, log: StepLog) -> None:
        """`WindowOperator.onEventTime` with a merging assigner: a timer of a window that is no longer
        in the set does nothing; else fire at its end − 1, and at its cleanup time clear it."""
        timer = fired.timer
        window, key, at = timer.namespace, timer.key, timer.timestamp_ms
        assert window is not None
        sessions = self.sessions.get(key)
        state = sessions.state_of.get(window) if sessions is not None else None
        if sessions is None or state is None:
            return
        pane = self.panes.get((key, state))
        if at == max_timestamp(window) and pane:
            log.emit.append(self._firing(key, window, late=False, pane=pane))
        if at == cleanup_time(window, self.lateness_ms):  # clearAllState
            self.panes.pop((key, state), None)
            self.timers.delete(TimeDomain.EVENT, max_timestamp(window), key, window)  # the trigger's clear
            sessions.remove(window)
            self.merges.pop((key, window), None)
            self._store(key, sessions)

    def session_drop_reason(self, ts_ms: int, window: Window, late: bool, t: Times = RAW) -> str:
        """Why no session took the record, and what Flink then does with it (times through `t`)."""
        w, lateness = t(self.watermark_ms), self.lateness_ms
        where = (
            f"too late: its session window {format_window(window, t)} (max timestamp "
            f"{t(max_timestamp(window))}) touches no live session and its max timestamp + allowed "
            f"lateness {lateness} ≤ watermark {w}"
        )
        if window[1] < window[0]:
            where += f" (event time + gap {self.gap_ms} wraps past Long.MAX_VALUE in Java's long arithmetic)"
        if late:
            return (
                f"{where}; event time + allowed lateness {lateness} ≤ watermark {w}, so Flink counts it as "
                "late (numLateRecordsDropped, or the late side output)"
            )
        return (
            f"{where}; event time + allowed lateness {lateness} > watermark {w}, so it is not late: Flink "
            "discards it silently, uncounted and not sent to the late side output"
        )

    def snapshot(self) -> tuple:
        """The watermark, every key's window set, and every pane's rows and elements."""
        sessions = tuple(
            sorted((key, tuple((w, s.state_of[w]) for w in s.windows)) for key, s in self.sessions.items())
        )
        return (*super().snapshot(), sessions)

    def live_panes(self) -> list[tuple[str, Window, list[tuple[TraceRow, Any]]]]:
        """(key, session, contents) of every live session (its contents live in its state window)."""
        return [
            (key, window, self.panes.get((key, sessions.state_of[window]), []))
            for key, sessions in self.sessions.items()
            for window in sessions.windows
        ]
