"""The data model of a scenario: trace rows plus the config that says how to read them.

Parsing and validation live in `wmviz.trace`; these are the validated, immutable results
(docs/trace-format.md §1 and §2).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, ClassVar, Literal

from wmviz.core.budgets import alignment_buffer_reason
from wmviz.core.fieldrules import (
    Check,
    FieldSetter,
    Rule,
    channel_counts,
    choice,
    count,
    expression,
    flag,
    input_sections,
    millis,
    profile_name,
    section,
    split_lists,
    text,
)
from wmviz.core.operator_kind import OperatorKind
from wmviz.core.settings import MAX_ALIGNMENT_BUFFER
from wmviz.core.sql_buffer_config import DeduplicateConfig, OverAggregateConfig, TemporalSortConfig
from wmviz.core.sql_expr import Expr, TypeKind, watermark_delay_ms, with_watermark_delay
from wmviz.core.sql_match_config import SqlMatchConfig
from wmviz.core.sql_session_config import SqlSessionConfig
from wmviz.core.sql_temporal_join_config import TemporalJoinConfig
from wmviz.core.sql_window_join_config import WindowJoinConfig
from wmviz.core.sql_window_rank_config import WindowDedupConfig, WindowRankConfig
from wmviz.core.sql_windows_config import SqlWindowConfig
from wmviz.core.types import Profile, Status


class Kind(Enum):
    """The `kind` column of a trace row."""

    RECORD = "record"
    WATERMARK = "watermark"
    STATUS = "status"
    PROCTIME = "proctime"
    SPLIT = "split"
    """A split of a reading channel is added, finished, or marked idle or active (wmviz/core/splits.py)."""


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


Emit = Literal["per-record", "periodic", "on-event", "on-periodic"]
Resume = Literal["eager", "flip27-released"]
Preset = Literal["none", "flip27", "sql-source", "sql-assigner"]
Style = Literal["datastream", "sql-source", "sql-assigner", "source-watermark"]
ColumnType = Literal["timestamp", "timestamp_ltz", "number"]
COLUMN_KINDS: dict[ColumnType, TypeKind] = {
    "timestamp": "TIMESTAMP",
    "timestamp_ltz": "TIMESTAMP_LTZ",
    "number": "NUMBER",
}
"""A config's `column_type` and the type `wmviz.core.sql_expr` names, one to one."""
Aggregate = Literal["list", "count", "sum", "min", "max"]
JoinType = Literal["inner", "left", "right", "full"]
TimeMode = Literal["rowtime", "proctime"]


@dataclass(frozen=True, slots=True, kw_only=True)
class AlignmentConfig:
    """`generator.alignment`: Flink's watermark alignment (`withWatermarkAlignment`) over the channels
    that read splits (wmviz/core/alignment.py)."""

    group: str = field(
        default="default", metadata=text("the alignment group's name, as the narration says it")
    )
    max_drift_ms: int = field(
        metadata=millis("how far a subtask or split may run ahead of the group watermark", minimum=0)
    )
    update_interval_ms: int = field(
        default=1000, metadata=millis("how often subtasks report and the coordinator announces", minimum=1)
    )
    buffer_size: int = field(
        default=3,
        metadata=count(
            "pipeline.watermark-alignment.buffer-size: pausing compares the watermark of this many "
            "updates ago (0: the latest, as before Flink 2.3)",
            minimum=0,
            maximum=MAX_ALIGNMENT_BUFFER.get,
            maximum_why=alignment_buffer_reason,
        ),
    )


@dataclass(frozen=True, slots=True)
class GeneratorConfig:
    """`generator`: per-channel watermark generation from records (docs/rules.md, "Windows and watermark
    generators")."""

    presets: ClassVar[dict[str, dict[str, Any]]] = {
        "none": {},
        # A FLIP-27 source as Flink 2.3.0 runs it when nothing is set: periodic emission every
        # pipeline.auto-watermark-interval (200 ms), the source output's resume (ACTIVE only with a
        # higher watermark), no idleness unless withIdleness is called.
        "flip27": {
            "emit": "periodic",
            "interval_ms": 200,
            "resume": "flip27-released",
            "idle_timeout_ms": None,
        },
        # A SQL table whose WATERMARK is pushed into its (FLIP-27, e.g. Kafka) source: one
        # generated generator per split, `scan.watermark.emit.strategy` on-periodic by default
        # (wmviz/core/sql_generator.py).
        "sql-source": {
            "style": "sql-source",
            "emit": "on-periodic",
            "interval_ms": 200,
            "resume": "flip27-released",
            "idle_timeout_ms": None,
        },
        # A SQL table whose WATERMARK stays a separate WatermarkAssigner per subtask
        # (wmviz/core/sql_assigner.py); `interval_ms` is pipeline.auto-watermark-interval.
        "sql-assigner": {"style": "sql-assigner", "interval_ms": 200},
    }
    """The defaults each `preset` gives the fields a config leaves out (a given field still wins)."""

    setters: ClassVar[dict[str, FieldSetter]] = {
        # `WATERMARK FOR ts AS ts - INTERVAL '2' SECOND`'s delay, so a sweep can vary it as it
        # varies out_of_orderness_ms (which a SQL style refuses: the expression holds the delay).
        "watermark_delay_ms": FieldSetter(
            Rule(
                Check.MILLIS,
                "the interval of a SQL WATERMARK of the form col - INTERVAL …, rewritten in"
                " `expression` (a sweep's --vary; any other form is refused)",
                minimum=0,
                unit="ms",
            ),
            sets="expression",
            apply=lambda section, ms: with_watermark_delay(section.expression, ms),
            read=lambda section: watermark_delay_ms(section.expression),
        ),
    }
    """Paths that set a field rather than hold a value of their own (`wmviz.core.fieldrules.FieldSetter`)."""

    out_of_orderness_ms: int = field(
        default=0, metadata=millis("how far behind the largest event time the watermark stays", minimum=0)
    )
    emit: Emit = field(
        default="per-record",
        metadata=choice(Emit, "a watermark after every record, or one per interval on the proc_ms clock"),
    )
    interval_ms: int = field(
        default=200, metadata=millis("the periodic emission interval (proc_ms clock)", minimum=1)
    )
    idle_timeout_ms: int | None = field(
        default=None,
        # Flink's withIdleness() rejects a zero or negative timeout.
        metadata=millis("a channel without records this long turns IDLE; none: never", minimum=1),
    )
    resume: Resume = field(
        default="eager",
        metadata=choice(
            Resume, "ACTIVE again before the first element after idleness, or at FLIP-27's release"
        ),
    )
    splits: tuple[tuple[int, tuple[str, ...]], ...] = field(
        default=(),
        metadata=split_lists(
            "channels that are FLIP-27 source readers of several splits, each split its own generator"
        ),
    )
    """(channel, split ids) pairs of input "0" (wmviz/core/splits.py); records name their split."""
    alignment: AlignmentConfig | None = field(
        default=None,
        metadata=section(
            "pause subtasks and splits that run ahead of their group (needs splits)", AlignmentConfig
        ),
    )
    preset: Preset = field(
        default="none",
        metadata=choice(
            Preset,
            "flip27, sql-source, sql-assigner: the other fields default to that source's as Flink"
            " 2.3.0 runs it; none: wmviz's",
        ),
    )
    style: Style = field(
        default="datastream",
        metadata=choice(
            Style,
            "whose rules make the watermarks: DataStream's bounded out-of-orderness, a SQL WATERMARK"
            " pushed into the source (per split), a separate SQL WatermarkAssigner (per subtask), or"
            " SOURCE_WATERMARK() (the channels carry the source's own watermark rows)",
        ),
    )
    expression: Expr | None = field(
        default=None,
        metadata=expression(
            "the SQL WATERMARK expression (sql-source, sql-assigner) over the column whose value is"
            " the record's event_ms"
        ),
    )
    column_type: ColumnType = field(
        default="timestamp",
        metadata=choice(ColumnType, "the SQL type of the column the expression reads"),
    )
    zone: str = field(
        default="UTC",
        metadata=text("table.local-time-zone (an IANA name): casts between TIMESTAMP and TIMESTAMP_LTZ"),
    )
    minibatch_interval_ms: int | None = field(
        default=None,
        metadata=millis(
            "a RowTimeMiniBatchAssigner after each channel's generator forwards only the watermarks"
            " that cross this event-time interval; none: no mini-batch",
            minimum=1,
        ),
    )

    @classmethod
    def preset_default(cls, preset: str, name: str, default: Any) -> Any:
        """The default of field `name` under `preset`."""
        return cls.presets.get(preset, {}).get(name, default)

    @classmethod
    def with_preset(cls, preset: Preset, **fields: Any) -> GeneratorConfig:
        """`{"preset": preset, ...}` built in code: the preset's defaults, then `fields`."""
        return cls(**{"preset": preset, **cls.presets[preset], **fields})

    @classmethod
    def flip27(cls, **fields: Any) -> GeneratorConfig:
        """`{"preset": "flip27", ...}` built in code."""
        return cls.with_preset("flip27", **fields)

    @property
    def emits_per_record(self) -> bool:
        """A generator that may emit after a record: DataStream's per-record or SQL's on-event."""
        return self.emit in ("per-record", "on-event")

    @property
    def emits_periodically(self) -> bool:
        """Watermarks made on the proc_ms clock: periodic, on-periodic, or a SQL assigner's timer."""
        return self.emit in ("periodic", "on-periodic") or self.style == "sql-assigner"

    @property
    def column_kind(self) -> TypeKind:
        """`column_type` as `wmviz.core.sql_expr` names a type."""
        return COLUMN_KINDS[self.column_type]

    def splits_of(self, channel: int) -> tuple[str, ...] | None:
        """The split ids of a channel that reads splits, else None."""
        for ch, ids in self.splits:
            if ch == channel:
                return ids
        return None


@dataclass(frozen=True, slots=True, kw_only=True)
class NoOperator(OperatorKind):
    """`operator.type` none: the valve alone."""

    type_name: ClassVar[str] = "none"


@dataclass(frozen=True, slots=True, kw_only=True)
class WindowConfig(OperatorKind):
    """`operator.type` window: keyed event-time tumbling or sliding windows of `size_ms`
    (wmviz/core/windows.py), or session windows of `session_gap_ms` (wmviz/core/sessions.py)."""

    type_name: ClassVar[str] = "window"
    size_ms: int | None = field(
        default=None,
        metadata=millis("the window's length; required unless session_gap_ms (session windows)", minimum=1),
    )
    slide_ms: int | None = field(
        default=None, metadata=millis("a sliding window's step; none: tumbling (slide = size)", minimum=1)
    )
    offset_ms: int = field(
        default=0,
        metadata=millis("shifts every window's start, as Flink's assigners take an offset; |offset| < size"),
    )
    session_gap_ms: int | None = field(
        default=None,
        # Flink: EventTimeSessionWindows.withGap refuses a gap that is not positive.
        metadata=millis("session windows: a key's session closes after this long without records", minimum=1),
    )
    allowed_lateness_ms: int = field(
        default=0,
        # Flink: "The allowed lateness cannot be negative."
        metadata=millis("how long after its end a window still takes late records", minimum=0),
    )
    aggregate: Aggregate = field(
        default="list", metadata=choice(Aggregate, "what a firing window emits from its records")
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class IntervalJoinConfig(OperatorKind):
    """`operator.type` interval_join: Flink SQL's row-time interval join of two inputs, L and R
    (wmviz/core/interval_join.py)."""

    type_name: ClassVar[str] = "interval_join"
    inputs: ClassVar[tuple[str, ...]] = ("L", "R")

    join: JoinType = field(default="inner", metadata=choice(JoinType, "which unmatched rows are kept"))
    lower_ms: int = field(metadata=millis("the smallest left time minus right time that joins"))
    upper_ms: int = field(metadata=millis("the largest left time minus right time that joins"))
    early_fire_delay_ms: int | None = field(
        default=None, metadata=millis("the EARLY_FIRE hint's delay; none: no hint", minimum=1)
    )
    time_mode: TimeMode | None = field(
        default=None, metadata=choice(TimeMode, "the EARLY_FIRE hint's timer domain")
    )
    min_cleanup_interval_ms: int = field(
        default=0,
        metadata=millis("extra time a cached row waits past its join range for its cleanup timer", minimum=0),
    )
    join_time: TimeMode = field(
        default="rowtime",
        metadata=choice(TimeMode, "the join attributes' time domain: event time or the arrival clock"),
    )
    all_idle_flush: bool = field(
        default=True,
        metadata=flag(
            "once both inputs are idle, emit the larger input's watermark (Flink 2.3.0, FLINK-38454);"
            " off: the older spec's two-input rule"
        ),
    )

    @classmethod
    def canonical_input(cls, name: str) -> str | None:
        # `0`/`1` (and lower case) are accepted and mapped, so two spellings cannot split one side
        # into two valves.
        return {"l": "L", "0": "L", "r": "R", "1": "R"}.get(name.strip().lower())


OperatorConfig = (
    NoOperator
    | WindowConfig
    | IntervalJoinConfig
    | SqlSessionConfig
    | TemporalJoinConfig
    | OverAggregateConfig
    | DeduplicateConfig
    | TemporalSortConfig
    | SqlWindowConfig
    | WindowRankConfig
    | WindowDedupConfig
    | WindowJoinConfig
    | SqlMatchConfig
)
"""`operator`: what sits behind the valve, one type per operator."""


@dataclass(frozen=True, slots=True)
class ScenarioConfig:
    """docs/trace-format.md §2. Every field has a default so a bare trace runs."""

    name: str = field(default="", metadata=text("the page's title"))
    description: str = field(default="", metadata=text("shown under the title, as plain text"))
    profile: Profile = field(
        default=Profile.FLINK_1X_2X, metadata=profile_name("which valve semantics the run uses")
    )
    channels: dict[str, int] = field(
        default_factory=dict,
        metadata=channel_counts("channels per input; by default 1 + the largest channel a row names"),
    )
    generator: GeneratorConfig | None = field(
        default=None, metadata=section("turn records into watermarks per channel", GeneratorConfig)
    )
    operator: OperatorConfig = field(
        default_factory=NoOperator,
        metadata=section(
            "what sits behind the valve",
            NoOperator,
            WindowConfig,
            IntervalJoinConfig,
            SqlSessionConfig,
            TemporalJoinConfig,
            OverAggregateConfig,
            DeduplicateConfig,
            TemporalSortConfig,
            SqlWindowConfig,
            WindowRankConfig,
            WindowDedupConfig,
            WindowJoinConfig,
            SqlMatchConfig,
        ),
    )
    generators: dict[str, GeneratorConfig] = field(
        default_factory=dict,
        metadata=input_sections(
            "per input, a generator of its own in place of `generator` (a join of two tables with"
            " different WATERMARKs); needs `generator`, which the inputs not named keep",
            GeneratorConfig,
        ),
    )

    def generator_of(self, input_name: str) -> GeneratorConfig | None:
        """The generator config of one input: its own (`generators`), else the trace's."""
        return self.generators.get(input_name, self.generator)

    def generator_configs(self) -> list[GeneratorConfig]:
        """Every generator config the trace uses."""
        return [g for g in (self.generator, *self.generators.values()) if g is not None]

    @property
    def valve_only(self) -> bool:
        """Neither a generator nor an operator: records only pass the valve, so a run has no
        output, drops or timers to show."""
        return self.generator is None and isinstance(self.operator, NoOperator)


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
