"""Watermark alignment (FLIP-182 across source subtasks, FLIP-217 per split): who is PAUSED and why.

Restated from Flink 2.3.0's SourceOperator; its subtask and split side is checked against the real
operator (tests/flink/test_flink_alignment.py), the coordinator's step (`announce`) is modelled from the
SourceCoordinator (wmviz/view/checked.py says which is which on the page):

1. every `update_interval_ms` each source subtask samples its watermarks (`WatermarkSampler`: the
   one it last emitted and each split's) and reports the last it emitted, or MAX while it is idle;
   a subtask that has emitted none yet reports nothing;
2. the coordinator takes the group watermark, the minimum over the reports, and announces the
   highest watermark any member may reach: group watermark + `max_drift_ms` (MAX when that would
   pass MAX, and MAX before any report);
3. a subtask whose sampled watermark (the oldest of the last `buffer_size` samples; the latest
   with 0) is above the announcement stops reading: PAUSED, its records held back, until an
   announcement lets it go on; a split whose sampled watermark is above it is PAUSED the same way
   while its siblings go on (FLIP-217). A split that is idle is left as it is (neither paused nor
   resumed) and is checked again the moment it turns active. A paused split's idleness clock
   stops (FLINK-35886); a paused subtask stops only the clock of its own (main) output, so its
   splits' clocks run on and they may go idle while it waits.

wmviz runs these steps at every multiple of the update interval on the processing clock, reports
and the announcement in the same instant (in Flink they travel as RPCs on two timers, so a real job
applies each announcement a little later; the sampling ring exists to absorb that delay). The
subtasks are the channels of an instance that read splits; each instance runs its own coordinator
over them, so both engines, which replay an instance on its own, run this one implementation.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

from wmviz.core.timetext import RAW, Times, duration
from wmviz.core.types import MAX_MS, MIN_MS


@dataclass(frozen=True, slots=True)
class Report:
    """What one source subtask told the coordinator: its watermark (MAX while idle)."""

    subtask: int
    watermark_ms: int
    holder: str | None = None
    """The split holding the subtask's watermark, for the narration."""


@dataclass(frozen=True, slots=True)
class Announcement:
    """The coordinator's answer to one round of reports."""

    group_ms: int
    """The group watermark: the minimum report (MAX when none)."""
    max_allowed_ms: int
    """The highest watermark a member may reach before it is paused."""
    held_by: Report | None
    """The report that set the group watermark."""


def announce(reports: Iterable[Report], max_drift_ms: int) -> Announcement:
    """The coordinator's step: the group watermark and the highest allowed, from the reports."""
    lowest: Report | None = None
    for report in reports:
        if lowest is None or report.watermark_ms < lowest.watermark_ms:
            lowest = report
    if lowest is None:
        return Announcement(MAX_MS, MAX_MS, None)
    group = lowest.watermark_ms
    allowed = MAX_MS if group > MAX_MS - max_drift_ms else group + max_drift_ms
    return Announcement(group, allowed, lowest)


def report_of(subtask: int, sent_ms: int, idle: bool, holder: str | None) -> Report | None:
    """A subtask's report: nothing before its first watermark, MAX while idle."""
    if sent_ms == MIN_MS:
        return None
    return Report(subtask, MAX_MS if idle else sent_ms, holder)


class WatermarkSampler:
    """Flink 2.3's smoothing of alignment (pipeline.watermark-alignment.buffer-size): the latest
    watermark, and a ring of the values it had at the last `capacity` updates (the minimum before
    any). Pausing compares the oldest of those, so a member is paused only once it has been ahead
    for `capacity` updates, which covers the reports' and announcements' round trip; with capacity
    0 the latest is compared, as before 2.3.

    Flink's ring holds `capacity` values; wmviz holds it as runs of equal values, [value, how many],
    oldest first, so an update costs O(1) and the ring as many runs as the watermark changed within
    its span, whatever the capacity (the config bounds it too: `buffer_size`)."""

    __slots__ = ("capacity", "latest_ms", "runs")

    def __init__(self, capacity: int) -> None:
        self.latest_ms = MIN_MS
        self.capacity = capacity
        self.runs: deque[list[int]] = deque([[MIN_MS, capacity]] if capacity else [])

    def sample(self) -> None:
        """An update: the latest value joins the ring, the oldest leaves it."""
        runs = self.runs
        if not runs:
            return
        if runs[-1][0] == self.latest_ms:
            runs[-1][1] += 1
        else:
            runs.append([self.latest_ms, 1])
        runs[0][1] -= 1
        if not runs[0][1]:
            runs.popleft()

    def oldest_ms(self) -> int:
        """The value pausing compares with the highest allowed watermark."""
        return self.runs[0][0] if self.runs else self.latest_ms

    def snapshot(self) -> tuple:
        return (self.latest_ms, self.capacity, tuple(tuple(run) for run in self.runs))

    def __getstate__(self) -> tuple:
        """Its state for a keyframe or a pickle (a deque is neither's plain value)."""
        return self.snapshot()

    def __setstate__(self, state: tuple) -> None:
        self.latest_ms, self.capacity, runs = state
        self.runs = deque([value, count] for value, count in runs)


@dataclass(frozen=True, slots=True)
class HeldRecord:
    """A record that arrived while its subtask or split was PAUSED: it waits, unread."""

    channel: int
    split: str
    row: int
    subtask_paused: bool


@dataclass(frozen=True, slots=True)
class ReleasedRecords:
    """Records held back that are read now, the subtask or split having been resumed."""

    channel: int
    rows: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class AlignmentUpdate:
    """One update of an alignment group (steps 1 and 2): what each subtask reported and what the
    coordinator announced. It is data for the transcript; the narration says only what the
    announcement paused or resumed (`PauseEvent`), so it has no sentence of its own."""

    time_ms: int
    """The update's time on the processing clock."""
    group: str
    reports: tuple[Report, ...]
    """The reports in subtask order; a subtask that has sent no watermark yet is absent."""
    announcement: Announcement


@dataclass(frozen=True, slots=True)
class PauseEvent:
    """A subtask or split was paused or resumed by an announcement (the narration's subject)."""

    channel: int
    split: str | None
    """None: the whole subtask."""
    paused: bool
    watermark_ms: int
    """The paused member's watermark."""
    group: str
    announcement: Announcement
    max_drift_ms: int
    sampled_ms: int
    """The sampled watermark the announcement was compared with (the oldest in the sampling ring;
    the latest with `buffer_size` 0): above its highest allowed pauses, at or below resumes."""


class PauseClock:
    """A relative clock that stops while paused (Flink's PausableRelativeClock on the processing
    clock): an idleness countdown read on it does not run while its split or subtask waits."""

    __slots__ = ("paused_at_ms", "stopped_ms")

    def __init__(self) -> None:
        self.paused_at_ms: int | None = None
        self.stopped_ms = 0

    def relative_ms(self, now_ms: int) -> int:
        """The relative time at processing time `now_ms`."""
        at = self.paused_at_ms if self.paused_at_ms is not None else now_ms
        return at - self.stopped_ms

    def pause(self, now_ms: int) -> None:
        if self.paused_at_ms is None:
            self.paused_at_ms = now_ms

    def resume(self, now_ms: int) -> None:
        if self.paused_at_ms is not None:
            self.stopped_ms += now_ms - self.paused_at_ms
            self.paused_at_ms = None

    def snapshot(self) -> tuple:
        return (self.paused_at_ms, self.stopped_ms)


def describe_alignment(event: PauseEvent | HeldRecord | ReleasedRecords, t: Times = RAW) -> str:
    """The narration of alignment: `split orders-1 of subtask 0 PAUSED: 40s ahead of the group
    watermark 10:05:00 (group orders, max drift 30s), held by split orders-5 of subtask 2`."""
    if isinstance(event, HeldRecord):
        who = f"subtask {event.channel}" if event.subtask_paused else f"split {event.split}"
        return f"record (line {event.row}) held back: {who} is PAUSED by watermark alignment"
    if isinstance(event, ReleasedRecords):
        rows = ", ".join(str(r) for r in event.rows)
        return f"subtask {event.channel} reads the records it held back (lines {rows})"
    who = f"split {event.split} of subtask {event.channel}" if event.split else f"subtask {event.channel}"
    announcement = event.announcement
    group = f"group {event.group}, max drift {duration(event.max_drift_ms)}"
    if not event.paused:
        return f"{who} resumed: the group {event.group} now allows up to {t(announcement.max_allowed_ms)}"
    ahead = duration(event.watermark_ms - announcement.group_ms)
    text = f"{who} PAUSED: {ahead} ahead of the group watermark {t(announcement.group_ms)} ({group})"
    holder = announcement.held_by
    if holder is not None:
        by = (
            f"split {holder.holder} of subtask {holder.subtask}"
            if holder.holder
            else f"subtask {holder.subtask}"
        )
        text += f", held by {by}"
    return text
