"""Operators in series: a SQL operator fed by another's rows and output watermark (docs/sql.md,
"Operators in series").

At parallelism 1 the second operator of a chain (a window aggregate after an interval join, a
cascade of windows, a window after a temporal join) sees exactly what the first one sends, in the
order it sends it: each output row, and after the rows a firing made, the watermark the first one
forwards. wmviz writes no second copy of any operator for this: each stage runs in its own core
pipeline (`wmviz.core.pipeline.InstancePipeline`, the same one every trace runs), whose one input
channel carries the first operator's output watermarks as watermark rows and its output rows as
records, their time attribute read from the column the stage's plan node names.
`wmviz.sql.rowflow` finds the chains and composes the stages; this module runs one.

Refused by name (`ReplayRefused`), as Flink's planner refuses or plans it differently: a stage fed
by an operator whose rows may be updates (`-U`/`+U`/`-D`), since none of the stages modelled here
consumes a retraction.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from wmviz.core.operator_kind import SqlOperatorKind
from wmviz.core.operator_log import Dropped, OutputWatermark
from wmviz.core.pipeline import InstancePipeline
from wmviz.core.scenario import GeneratorConfig, IntervalJoinConfig, Kind, ScenarioConfig, TraceRow
from wmviz.core.sql_buffer_config import DeduplicateConfig
from wmviz.core.sql_expr import TypeKind
from wmviz.core.sql_rows import SqlOutput, SqlValue
from wmviz.core.types import Profile
from wmviz.sql.job_shape import ReplayRefused
from wmviz.sql.model import Node, SqlJob
from wmviz.sql.values import cell_ms

INPUT = "0"
"""The stage's one input: the operator before it (one channel, at parallelism 1)."""


@dataclass(frozen=True, slots=True)
class StageSpec:
    """A SQL operator fed by another SQL operator: where it is, what it runs, and which column of
    its input rows is their time attribute."""

    node: str
    operator: str
    """Flink's name for it in its metrics (`GlobalWindowAggregate[7]`)."""
    config: SqlOperatorKind
    time_field: str
    time_kind: TypeKind
    zone: str
    time_shift_ms: int = 0
    """Added to the time field's value: −1 where the time is the row's attached `window_end` (the
    window it belongs to ends there, so its last millisecond is its time)."""


@dataclass(slots=True)
class StageStep:
    """What a stage did with what reached it during one step: its output rows and forwarded
    watermarks in order (the next stage's input) and its late drops as Flink counts them."""

    flow: list[SqlOutput | int] = field(default_factory=list)
    late: int = 0

    @property
    def outputs(self) -> list[SqlOutput]:
        return [item for item in self.flow if isinstance(item, SqlOutput)]


def stage_spec(job: SqlJob, node: Node, config: SqlOperatorKind) -> StageSpec | str:
    """The stage a plan node runs, or why it cannot run in series (its time attribute unknown). A
    Window TopN or deduplication fed by a window aggregate reads the windows attached to its rows
    (`window_end`): a TUMBLE row is in that one window; attached HOP or CUMULATE windows, already
    one row per window, are not modelled in series."""
    where = f"{node.name} (plan node {node.id})"
    window = node.window
    if window is None or window.time_column is None:
        return f"{where}: fed by another SQL operator, its time attribute is not read from the plan"
    zone = job.local_time_zone.value or "UTC"
    kind: TypeKind = window.time_kind or "TIMESTAMP"
    name = f"{node.name}[{node.id}]"
    windowing = node.spec.get("windowing")
    if isinstance(windowing, dict) and windowing.get("strategy") == "WindowAttached":
        if window.kind != "TUMBLE":
            attached = f"{window.kind} windows attached by an earlier operator"
            return f"{where}: {attached} are not modelled in series"
        return StageSpec(node.id, name, config, "window_end", kind, zone, time_shift_ms=-1)
    return StageSpec(node.id, name, config, window.time_column, kind, zone)


def retracting(upstream: object) -> str | None:
    """Why the rows of an operator configured by `upstream` may be updates, or None (insert only)."""
    if isinstance(upstream, DeduplicateConfig) and upstream.keep == "last":
        return "a deduplication keeping the last row sends updates (-U/+U)"
    if isinstance(upstream, IntervalJoinConfig) and upstream.early_fire_delay_ms is not None:
        return "an interval join that fires early retracts its padded rows (-U/+U)"
    return None


class StageRun:
    """One stage's operator in its own core pipeline, fed row by row and watermark by watermark."""

    def __init__(self, spec: StageSpec, profile: Profile = Profile.FLINK_1X_2X) -> None:
        self.spec = spec
        config = ScenarioConfig(
            name=spec.operator,
            channels={INPUT: 1},
            generator=GeneratorConfig(style="source-watermark"),
            operator=spec.config,  # type: ignore[arg-type]  # a SqlOperatorKind is one of them
        )
        self.pipeline = InstancePipeline(spec.operator, config, profile, {INPUT: 1}, {(INPUT, 0)})
        self.received = 0
        """Rows received so far: a stage's input row is numbered by its arrival (1, 2, ...)."""
        self.trace: list[TraceRow] = []
        """Every row the stage ran, in order: its trace (`stage_trace`), which `wmviz late` reads for
        the stage's own late-row ledger. As many as the rows and watermarks it was sent."""

    def feed(self, flow: Sequence[SqlOutput | int]) -> StageStep:
        """The rows and watermarks the operator before it sent during one step, in order; each row
        named by this stage's input fields (after the Calcs between the two, `wmviz.sql.rowflow`)."""
        out = StageStep()
        for item in flow:
            if isinstance(item, SqlOutput):
                self._row(item, out)
            else:
                self._run(TraceRow(row=0, kind=Kind.WATERMARK, instance=self.spec.operator,
                                   input=INPUT, channel=0, watermark_ms=item), out)  # fmt: skip
        return out

    def _row(self, row: SqlOutput, out: StageStep) -> None:
        if row.kind.value != "+I":
            raise ReplayRefused(
                f"{self.spec.operator} receives a {row.kind.value} row from the operator before it; "
                "it consumes inserts only (Flink's planner refuses this plan)"
            )
        values = dict(row.values)
        self.received += 1
        event_ms = self._time_ms(values.get(self.spec.time_field))
        record = TraceRow(
            row=self.received, kind=Kind.RECORD, instance=self.spec.operator, input=INPUT, channel=0,
            event_ms=event_ms, payload=tuple(values.items()),
        )  # fmt: skip
        self._run(record, out)

    def _time_ms(self, value: SqlValue) -> int:
        """The time attribute of a row between two operators: a timestamp as an operator writes it
        (epoch milliseconds, or the text an input row carried)."""
        if isinstance(value, int) and not isinstance(value, bool):
            return value + self.spec.time_shift_ms
        try:
            return cell_ms(value, self.spec.time_kind, self.spec.zone) + self.spec.time_shift_ms
        except ValueError as exc:
            raise ReplayRefused(
                f"{self.spec.operator}: its time attribute {self.spec.time_field}: {exc}"
            ) from None

    def stage_trace(self) -> tuple[ScenarioConfig, list[TraceRow]]:
        """The stage as a trace: its config (the operator alone, fed on one channel) and every row
        it ran. Run again (`wmviz simulate`, `wmviz late`), it is the same pipeline on the same rows,
        so its ledger names this operator and rule for every row it dropped or added late."""
        return self.pipeline.config, list(self.trace)

    def _run(self, row: TraceRow, out: StageStep) -> None:
        self.trace.append(row)
        self.pipeline.run_row(row, explain=False)
        for event in self.pipeline.step_log.timeline:
            if isinstance(event, SqlOutput):
                out.flow.append(event)
            elif isinstance(event, OutputWatermark):
                out.flow.append(event.watermark_ms)
            elif isinstance(event, Dropped) and event.late:
                out.late += 1
