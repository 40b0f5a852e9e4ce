"""What an operator produced during one step: outputs, drops, timers. Shared by every operator."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

from wmviz.core.alignment import AlignmentUpdate, HeldRecord, PauseEvent, ReleasedRecords
from wmviz.core.changelog import RowKind
from wmviz.core.scenario import TraceRow
from wmviz.core.splits import SplitEvent
from wmviz.core.sql_assigner import AssignerEvent
from wmviz.core.sql_generator import SqlGeneratorUpdate
from wmviz.core.sql_minibatch import MiniBatchHeld
from wmviz.core.sql_rows import RowFate, SqlOutput
from wmviz.core.timers import FiredTimer, TimerRegistration
from wmviz.core.timetext import TimedText


class Cause(Enum):
    """Why the interval join emitted a row (interval_join_cases.json's `cause`)."""

    MATCH = "match"
    RETRACT = "retract"
    EARLY_FIRE = "early_fire"
    PAD_CLEANUP = "pad_cleanup"
    PAD_EAGER = "pad_eager"
    PAD_NOT_CACHED = "pad_not_cached"
    PAD_NEGATIVE_WINDOW = "pad_negative_window"


@dataclass(frozen=True, slots=True)
class JoinOutput:
    """One changelog row; `timestamp_ms` is the record timestamp Flink gives it (JW4 in docs/rules.md)."""

    kind: RowKind
    left: TraceRow | None
    right: TraceRow | None
    cause: Cause
    timestamp_ms: int


@dataclass(frozen=True, slots=True)
class WindowOutput:
    """One window firing: the full contents (`list`) or the aggregate, `late` for a late firing."""

    key: str | None
    start_ms: int
    end_ms: int
    elements: tuple[Any, ...]
    result: Any
    aggregate: str
    late: bool
    rows: tuple[int, ...] = ()
    """Trace row numbers of the contents, in arrival order (links a firing to its records)."""


@dataclass(frozen=True, slots=True)
class SessionMerge:
    """Session windows of one key merged into one (Flink's `MergingWindowSet` merge callback)."""

    key: str | None
    window: tuple[int, int]
    """The merged session."""
    merged: tuple[tuple[int, int], ...]
    """The live sessions it replaced, in the order Flink visits them (their timers are deleted)."""
    new_window: tuple[int, int] | None
    """The record's own window `[t, t + gap)` when it took part (it always does here)."""
    timer_ms: int | None
    """The firing timer registered at the merged end − 1; None when the watermark is already
    there (the record then fires the merged session at once, late)."""


@dataclass(frozen=True, slots=True)
class OutputWatermark:
    """The watermark the operator forwards downstream, after the timers of that advance."""

    watermark_ms: int


OperatorOutput = JoinOutput | WindowOutput | SqlOutput | OutputWatermark


@dataclass(frozen=True, slots=True)
class Dropped:
    """A record that will never reach any output, and why (so no record disappears unseen)."""

    row: TraceRow
    why: TimedText
    """Why, with its times kept as numbers: `why.text(t)` in the reader's time format."""
    late: bool = False
    """Flink counts it as late (`numLateRecordsDropped`, or the late side output); False for a
    record that vanishes uncounted, such as one in a gap between sliding windows that is not late."""
    metric: str | None = None
    """The metric a late drop is counted in when it is not `numLateRecordsDropped` (the window
    join counts each side apart: `leftNumLateRecordsDropped`, `rightNumLateRecordsDropped`)."""

    @property
    def reason(self) -> str:
        """Why, times as raw numbers (the transcript's and the timeline's text)."""
        return self.why.text()


@dataclass(frozen=True, slots=True)
class ToldFate(RowFate):
    """A record's fate logged by an operator whose other events already tell it in their own words
    (DataStream's windows and sessions, the interval join: a firing, a `Dropped`, a `Cached`): the
    late-row ledger reads it, the narration does not say it a second time."""


@dataclass(frozen=True, slots=True)
class Cached:
    """The interval join kept a row: it waits for partners until its side's cache expires it."""

    row: TraceRow
    side: str
    closes_at_ms: int
    """The first operator time at which the row's window has closed (t + Rel + λ + 1)."""


@dataclass(frozen=True, slots=True)
class Finalized:
    """A speculatively padded (fired) row left the cache unmatched: its early-fire row is final."""

    row: TraceRow


@dataclass(frozen=True, slots=True)
class GeneratorUpdate:
    """A record reached its channel's watermark generator."""

    channel: int
    max_seen_ms: int
    candidate_ms: int
    emitted: bool


SqlEvent = SqlGeneratorUpdate | AssignerEvent | MiniBatchHeld
"""What a SQL watermark stage did (wmviz/core/sql_*.py); each says it in words (`describe`)."""

StepEvent = (
    OperatorOutput
    | Dropped
    | TimerRegistration
    | FiredTimer
    | Cached
    | Finalized
    | GeneratorUpdate
    | SplitEvent
    | AlignmentUpdate
    | PauseEvent
    | HeldRecord
    | ReleasedRecords
    | SessionMerge
    | RowFate
    | SqlGeneratorUpdate
    | AssignerEvent
    | MiniBatchHeld
    | str
)


class StepLog:
    """Mutable collector for one step; frozen into the StepResult when the step ends.

    Every output, drop, registration, firing and note goes into one list, in the order it
    happened (so "timer X fired → row Y" can be told without guessing). The typed names all
    append to that list: most steps produce nothing, and one list is all they then cost.
    """

    __slots__ = (
        "cached",
        "dropped",
        "emit",
        "finalized",
        "fired",
        "generator",
        "notes",
        "registered",
        "timeline",
    )

    def __init__(self) -> None:
        self.timeline: list[StepEvent] = []
        shared = self.timeline
        self.emit = self.dropped = self.registered = self.fired = self.notes = shared
        self.cached = self.generator = self.finalized = shared

    def split(self) -> tuple[tuple, tuple, tuple, tuple, tuple]:
        """(outputs, drops, registrations, firings, notes), each in order, in one pass."""
        buckets: tuple[list, list, list, list, list] = ([], [], [], [], [])
        for event in self.timeline:
            index = _BUCKET.get(type(event))
            if index is None:
                index = next((i for kind, i in _BUCKET.items() if isinstance(event, kind)), -1)
            if index >= 0:
                buckets[index].append(event)
        emit, dropped, registered, fired, notes = buckets
        return tuple(emit), tuple(dropped), tuple(registered), tuple(fired), tuple(notes)


_BUCKET: dict[type, int] = {
    JoinOutput: 0,
    WindowOutput: 0,
    SqlOutput: 0,
    OutputWatermark: 0,
    Dropped: 1,
    TimerRegistration: 2,
    FiredTimer: 3,
    str: 4,
}
"""`StepLog.split`'s bucket of each event type (by exact type: `isinstance` only for subclasses)."""
