"""The data model of a scenario: trace rows plus the config that says how to read them.

Parsing and validation live in `wmviz.trace`; these are the validated, immutable results
(trace-format.md §1 and §3).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from wmviz.core.types import Profile, Status


class Kind(Enum):
    """The `kind` column of a trace row."""

    RECORD = "record"
    WATERMARK = "watermark"
    STATUS = "status"
    PROCTIME = "proctime"


@dataclass(frozen=True, slots=True)
class TraceRow:
    """One validated trace element. `row` is where it came from, for messages and the UI.

    `row` is the 1-based line a text editor shows (CSV, JSON Lines, compact) or the 1-based row
    index (Parquet). `payload` keeps unknown extra columns, in file order.
    """

    row: int
    kind: Kind
    instance: str = "0"
    input: str = "0"
    channel: int | None = None
    seq: int | None = None
    event_ms: int | None = None
    watermark_ms: int | None = None
    status: Status | None = None
    proc_ms: int | None = None
    key: str | None = None
    value: str | int | float | None = None
    payload: tuple[tuple[str, Any], ...] = ()


@dataclass(frozen=True, slots=True)
class GeneratorConfig:
    """`generator` (windows-and-generation.md): per-channel watermark generation from records."""

    out_of_orderness_ms: int = 0
    emit: str = "per-record"  # or "periodic"
    interval_ms: int = 200
    idle_timeout_ms: int | None = None
    resume: str = "eager"
    """§3: `eager` (ACTIVE before the first element after idleness) or `flip27-released`."""
    splits: tuple[tuple[int, tuple[str, ...]], ...] = ()
    """Channels that are FLIP-27 source readers of several splits, each split its own generator
    (wmviz/core/splits.py): (channel, split ids) pairs of input "0"; records name their split."""

    def splits_of(self, channel: int) -> tuple[str, ...] | None:
        """The split ids of a channel that reads splits, else None."""
        for ch, ids in self.splits:
            if ch == channel:
                return ids
        return None


@dataclass(frozen=True, slots=True)
class OperatorConfig:
    """`operator`: what sits behind the valve. Fields unused by a type keep their defaults."""

    type: str = "none"  # none | window | interval_join
    size_ms: int | None = None
    slide_ms: int | None = None
    allowed_lateness_ms: int = 0
    session_gap_ms: int | None = None
    """Event-time session windows with this gap (`EventTimeSessionWindows.withGap`) instead of
    tumbling or sliding windows of `size_ms`."""
    offset_ms: int = 0
    """Shifts tumbling or sliding window starts (`TumblingEventTimeWindows.of(size, offset)`)."""
    aggregate: str = "list"
    join: str = "inner"
    lower_ms: int | None = None
    upper_ms: int | None = None
    early_fire_delay_ms: int | None = None
    time_mode: str | None = None
    min_cleanup_interval_ms: int = 0
    join_time: str = "rowtime"
    """The join attributes' time domain: `rowtime` (event time) or `proctime` (arrival clock)."""
    all_idle_flush: bool = True
    """Once both inputs are idle, the combined input emits the larger input's watermark: what Flink
    2.3.0's CombinedWatermarkStatus does (FLINK-38454; checked against the released operator).
    Off reproduces the older spec's two-input rule."""


@dataclass(frozen=True, slots=True)
class ScenarioConfig:
    """trace-format.md §3. Every field has a default so a bare trace runs."""

    name: str = ""
    description: str = ""
    profile: Profile = Profile.FLINK_1X_2X
    channels: dict[str, int] = field(default_factory=dict)
    generator: GeneratorConfig | None = None
    operator: OperatorConfig = field(default_factory=OperatorConfig)


@dataclass(frozen=True, slots=True)
class Trace:
    """A validated trace in arrival order, ready to simulate.

    `valve_channels` gives the channel count of every (instance, input) that appears, already
    resolved from the config, a compact `{"channels": N}` header, or 1 + the largest index seen.
    """

    source: str
    rows: Sequence[TraceRow]
    """In arrival order: a tuple, or (from a reader) an Arrow table decoded on demand."""
    config: ScenarioConfig
    valve_channels: dict[tuple[str, str], int]

    @property
    def instances(self) -> list[str]:
        """Instance ids in order of first appearance (`valve_channels` lists every instance's inputs
        in that order, so a ten-million-row trace need not be walked)."""
        if self.valve_channels:
            return list(dict.fromkeys(instance for instance, _ in self.valve_channels))
        return list(dict.fromkeys(r.instance for r in self.rows))
