"""Counting one sweep combination: run an instance's rows through a fresh pipeline and keep only
counters read from the step's own log (`wmviz.analysis.sweep` says what each counter means, and
docs/sweep.md says it for users). The in-process sweep and the Spark engine (`wmviz.spark.sweep`)
both run `count_instance` and merge with `Counts.merge`, so the two engines count alike.

Pure: no streamlit, pyspark or plotly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from wmviz.core.operator_log import Dropped, JoinOutput, OutputWatermark, StepEvent, WindowOutput
from wmviz.core.scenario import Kind, ScenarioConfig, Trace, TraceRow
from wmviz.core.simulate import manual_channels_of
from wmviz.core.sql_rows import RowKind, SqlOutput
from wmviz.core.types import MIN_MS
from wmviz.timeline.local import instance_groups
from wmviz.timeline.runner import RunSpec, new_pipeline
from wmviz.trace.rowtable import decode_rows, grouped_table

# ---- counting one instance ---------------------------------------------------------------------


@dataclass
class Counts:
    """What one combination did on some instances; `merge` adds another instance's."""

    records: int = 0
    dropped: int = 0
    firings: int = 0
    delays: list[int] = field(default_factory=list)
    stall_ms: int | None = None
    clocks: set[str] = field(default_factory=set)

    def merge(self, other: Counts) -> Counts:
        self.records += other.records
        self.dropped += other.dropped
        self.firings += other.firings
        self.delays.extend(other.delays)
        if other.stall_ms is not None:
            self.stall_ms = max(self.stall_ms or 0, other.stall_ms)
        self.clocks |= other.clocks
        return self


@dataclass(frozen=True)
class InstanceInput:
    """One instance's rows in arrival order, decoded once, with what every combination reads from
    them and no config changes: the channels carrying explicit watermarks (`new_pipeline`'s
    `manual`), whether the rows carry a processing clock, the event-time clock at each row (the
    largest event time received so far) and which rows are records."""

    name: str
    rows: list[TraceRow]
    manual: set[tuple[str, int]]
    proc_clock: bool
    event_clocks: list[int | None]
    is_record: list[bool]
    event_of_row: dict[int, int]
    """Each record's event time by its trace row number (what a SQL output row was made from)."""

    @classmethod
    def of(cls, name: str, rows: list[TraceRow]) -> InstanceInput:
        event_clocks: list[int | None] = []
        is_record: list[bool] = []
        event_of_row: dict[int, int] = {}
        latest: int | None = None
        for row in rows:
            record = row.kind is Kind.RECORD
            if record and row.event_ms is not None:
                event_of_row[row.row] = row.event_ms
            if record and row.event_ms is not None and (latest is None or row.event_ms > latest):
                latest = row.event_ms
            event_clocks.append(latest)
            is_record.append(record)
        proc_clock = any(row.proc_ms is not None for row in rows)
        return cls(name, rows, manual_channels_of(rows), proc_clock, event_clocks, is_record, event_of_row)


_SQL_ADDS = (RowKind.INSERT, RowKind.UPDATE_AFTER)
"""The SQL output rows counted as firings: a -U or -D withdraws a row already counted."""


def sql_output_time(output: SqlOutput, event_of_row: dict[int, int]) -> int | None:
    """The time a SQL output row's delay is measured from: its `window_end` column when it has one
    (a window aggregate: the rows wait for the window to close, and that wait is the delay), else
    the newest event time among the trace rows it was made from: the row an OVER aggregate,
    deduplication or `ORDER BY rowtime` releases, or a temporal join's probe row (its build version
    is never newer). None when neither is known."""
    end = dict(output.values).get("window_end")
    if isinstance(end, int) and not isinstance(end, bool):
        return end
    times = [event_of_row[row] for row in output.rows if row in event_of_row]
    return max(times) if times else None


def _count_step(
    log: Sequence[StepEvent],
    counts: Counts,
    clock: int | None,
    output_wm: int,
    event_of_row: dict[int, int],
) -> tuple[int, bool]:
    """Count one step's drops and firings (each firing's delay read on `clock`); the operator's
    output watermark after the step, and whether the step raised it."""
    risen = False
    for event in log:
        if isinstance(event, Dropped):
            counts.dropped += 1
        elif isinstance(event, WindowOutput | JoinOutput):
            counts.firings += 1
            if clock is not None:
                start = event.end_ms if isinstance(event, WindowOutput) else event.timestamp_ms
                counts.delays.append(clock - start)
        elif isinstance(event, SqlOutput) and event.kind in _SQL_ADDS:
            counts.firings += 1
            if clock is not None and (made := sql_output_time(event, event_of_row)) is not None:
                counts.delays.append(clock - made)
        elif isinstance(event, OutputWatermark) and event.watermark_ms > output_wm:
            output_wm, risen = event.watermark_ms, True
    return output_wm, risen


def count_instance(spec: RunSpec, instance: InstanceInput) -> Counts:
    """Run one instance's rows (arrival order) through a fresh pipeline and count what it did.

    Everything is read from the pipeline's step log (`step_log.timeline`, the list the transcript's
    `dropped` and `emit` come from) and its output watermark; no rule is restated here. The loop
    runs once per row of every combination, so it keeps its state in locals: most steps log
    nothing, and then only the stall is looked at.
    """
    pipeline = new_pipeline(spec, instance.name, instance.rows, manual=instance.manual)
    watch_valve = pipeline.operator is None  # no operator: the output watermark is the valve's
    proc_clock = instance.proc_clock
    counts = Counts(records=sum(instance.is_record), clocks={"proc_ms" if proc_clock else "event_ms"})
    log, run_row = pipeline.step_log.timeline, pipeline.run_row
    output_wm = MIN_MS
    risen_at: int | None = None  # the clock when the output watermark last rose (or the first record's)
    longest = 0  # the longest time it stood still at a record
    for row, event_clock, is_record in zip(
        instance.rows, instance.event_clocks, instance.is_record, strict=True
    ):
        run_row(row, explain=False)
        clock = pipeline.proc_ms if proc_clock else event_clock
        risen = False
        if log:
            output_wm, risen = _count_step(log, counts, clock, output_wm, instance.event_of_row)
        if watch_valve and pipeline.output_watermark_ms > output_wm:
            output_wm, risen = pipeline.output_watermark_ms, True
        if clock is None:
            continue
        if is_record:
            if risen_at is None:
                risen_at = clock
            elif clock - risen_at > longest:
                longest = clock - risen_at
        if risen:
            risen_at = clock
    counts.stall_ms = longest if risen_at is not None else None
    return counts


def instance_rows(trace: Trace) -> list[InstanceInput]:
    """Each instance's input, decoded once (every combination reuses it)."""
    return [
        InstanceInput.of(name, decode_rows(rows)) for name, rows in instance_groups(grouped_table(trace.rows))
    ]


def count_combination(
    config: ScenarioConfig,
    valve_channels: dict[tuple[str, str], int],
    groups: Sequence[InstanceInput],
) -> Counts:
    """One combination over every instance, merged."""
    spec = RunSpec.of(config, config.profile, valve_channels, keyframe_every=1)
    total = Counts()
    for instance in groups:
        total.merge(count_instance(spec, instance))
    return total
