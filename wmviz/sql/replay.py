"""`wmviz sql replay`: a SQL job's watermarks replayed on rows in arrival order (docs/sql.md, "Replay").

The job runs as the SQL front door's differential test runs it in real Flink: parallelism 1, one
split per partition, each input line carried through the whole job before the next. wmviz writes
no second engine for it. The job becomes a wmviz trace (`job_trace`): one instance per group of
source tables whose watermarks meet, each table one channel of the operator where they meet (its
own generator config: pushed into the source per split, or a separate assigner), and the core's
pipeline runs that trace. The watermark of every plan node is then read off the run
(`NodeWatermarks`): a node on one table's branch carries what that table's source (or assigner)
sent, a node at or after the meeting point carries the meeting operator's output (an interval
join's held back by its bounds). A one-table group's instance runs, as its operator, the first SQL
operator on its path the core models (`job_shape.SqlStage`); a two-table group's, the operator
where they meet (the temporal join, the window join; an interval join's rows are made SQL's by
`wmviz.sql.join_rows`). Each step's `StepState` keeps the rows the operator output, in order with
the watermarks it forwarded (`flow`, which feeds operators in series, `wmviz.sql.chain`), and the
rows it dropped late, by metric; `wmviz.sql.rowflow` carries them to the sinks.

What is not replayed is refused by name (`ReplayRefused`), never approximated: a source whose
watermark expression wmviz does not evaluate, `SOURCE_WATERMARK()` (the connector's own logic),
operators that change watermarks in ways not modelled here (a regular join meeting two tables, a
second meeting after the first, a mini-batch assigner).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from itertools import groupby

from wmviz.core.operator_log import Dropped, JoinOutput, OutputWatermark
from wmviz.core.pipeline import InstancePipeline
from wmviz.core.scenario import (
    COLUMN_KINDS,
    AlignmentConfig,
    GeneratorConfig,
    IntervalJoinConfig,
    Kind,
    NoOperator,
    OperatorConfig,
    ScenarioConfig,
    TraceRow,
)
from wmviz.core.simulate import instance_channels
from wmviz.core.splits import SplitReader
from wmviz.core.sql_expr import columns_read
from wmviz.core.sql_rows import LATE_METRIC, RowFate, SqlOutput
from wmviz.core.types import MAX_MS, MIN_MS, Profile, Status
from wmviz.sql.job_shape import Branch, Group, ReplayRefused, groups_of
from wmviz.sql.join_rows import JoinRows, join_rows, key_fields, row_key
from wmviz.sql.model import SourceTable, SqlJob
from wmviz.sql.rows import InputRow, ReplayInput, RowsFileError
from wmviz.sql.values import event_ms_of
from wmviz.trace.timecells import parse_duration_ms

__all__ = ["ReplayRefused", "StepState", "WatermarkLine", "job_trace", "replay_states", "replay_watermarks"]

DEFAULT_INTERVAL_MS = 200
"""`pipeline.auto-watermark-interval`'s default. A line without `proc_ms` is followed by this much
processing time before the next line arrives: the job keeps up, and its periodic work (a periodic
emission, a separate assigner's timer) runs once between two rows, as it does in the real runs
the replay is checked against."""


@dataclass(frozen=True, slots=True)
class WatermarkLine:
    """A node's watermark changed at a step (the output line `{"step", "operator", "node", "watermark"}`)."""

    step: int
    node: str
    operator: str
    watermark_ms: int

    def as_json(self) -> dict[str, object]:
        """The JSON line; a plan's numeric node id as a number, as COMPILE PLAN writes it."""
        return {
            "step": self.step,
            "operator": self.operator,
            "node": int(self.node) if self.node.isdigit() else self.node,
            "watermark": self.watermark_ms,
        }


@dataclass(frozen=True, slots=True)
class JobTrace:
    """A SQL job as a wmviz trace: its groups (instances), their configs, and the rows in arrival
    order with the step of the input line each came from."""

    groups: tuple[Group, ...]
    configs: Mapping[str, ScenarioConfig]
    rows: tuple[tuple[int, TraceRow], ...]
    end_step: int


def interval_ms_of(job: SqlJob) -> int:
    """`pipeline.auto-watermark-interval` as the job's options say it (default 200 ms)."""
    text = job.global_options.get("pipeline.auto-watermark-interval")
    if text is None:
        return DEFAULT_INTERVAL_MS
    return parse_duration_ms(text.replace(" ", ""), "pipeline.auto-watermark-interval")


def job_trace(job: SqlJob, rows: ReplayInput) -> JobTrace:
    """The job and its rows as a trace the core runs (one instance per group)."""
    interval = interval_ms_of(job)
    groups = groups_of(job)
    configs = {g.name: _scenario(g, rows, interval) for g in groups}
    by_table = {b.table.table: (g, b) for g in groups for b in g.branches}
    keys = {g.name: key_fields(job, g) for g in groups if isinstance(g.operator, IntervalJoinConfig)}
    out: list[tuple[int, TraceRow]] = []
    proc_ms = 0
    for line in rows.lines:
        if not isinstance(line, InputRow):
            continue
        if line.table not in by_table:
            raise ReplayRefused(f"{rows.path}, line {line.line}: the job reads no table {line.table!r}")
        group, branch = by_table[line.table]
        proc_ms = _clock_at(rows.path, line, proc_ms, interval)
        if group.name in keys:
            key: str | None = row_key(line.values, keys[group.name][branch.input], line.line)
        else:
            key = _key_of(line) if group.is_join else None
        out.append((line.step, _record_row(rows.path, line, group, branch, proc_ms, key)))
        if line.proc_ms is None:
            # A line without a clock: the job keeps up, so one interval passes after the row
            # (a periodic emission, an assigner's timer) before the next line arrives.
            proc_ms += interval
            out.extend((line.step, _clock_row(g.name, proc_ms)) for g in groups)
    # The end of input: every source finishes (released Flink sends MAX on its channel).
    for group in groups:
        for branch in group.branches:
            finished = TraceRow(
                row=0, kind=Kind.STATUS, instance=group.name, input=branch.input, channel=branch.channel,
                status=Status.FINISHED,
            )  # fmt: skip
            out.append((rows.end_step, finished))
    return JobTrace(tuple(groups), configs, tuple(out), rows.end_step)


def _record_row(
    path: str, line: InputRow, group: Group, branch: Branch, proc_ms: int, key: str | None
) -> TraceRow:
    """The line as a RECORD row: its columns as the payload (what a SQL operator reads), after the
    split it came from where the source reads splits (what the split readers read)."""
    source = branch.table
    event_ms = event_ms_of(path, line, source, group.zone)
    payload: tuple[tuple[str, object], ...] = ()
    if source.where == "source":
        if "split" in line.values:
            raise ReplayRefused(
                f"{path}, line {line.line}: column 'split' of table {source.table} is not replayed "
                "(the replay's split readers read a payload field of that name)"
            )
        payload = (("split", split_id(source.table, line.partition)),)
    payload += tuple(line.values.items())
    return TraceRow(
        row=line.line, kind=Kind.RECORD, instance=group.name, input=branch.input, channel=branch.channel,
        event_ms=event_ms, proc_ms=proc_ms, key=key, payload=payload,
    )  # fmt: skip


def _clock_at(path: str, line: InputRow, clock_ms: int, interval: int) -> int:
    """The processing clock when the line's row arrives: its `proc_ms`, else the clock so far.
    Processing time never goes back (a trace refuses a `proc_ms` that does), and one interval
    after a row without one must still be a time (the clock passes it before the next line)."""
    if line.proc_ms is not None and line.proc_ms < clock_ms:
        raise RowsFileError(
            path, line.line, "proc_ms",
            f"{line.proc_ms} is before the processing clock's {clock_ms} ms here (the last proc_ms, "
            f"plus {interval} ms after each line without one); processing time never goes back",
        )  # fmt: skip
    clock_ms = line.proc_ms if line.proc_ms is not None else clock_ms
    if line.proc_ms is None and clock_ms > MAX_MS - interval:
        raise RowsFileError(
            path, line.line, None,
            f"the processing clock ({clock_ms} ms) plus one watermark interval ({interval} ms) after "
            "this row is past the largest time (2^63 - 1 ms)",
        )  # fmt: skip
    return clock_ms


def _clock_row(instance: str, proc_ms: int) -> TraceRow:
    """The processing clock moves to `proc_ms` (due periodic work runs, up to and including it)."""
    return TraceRow(row=0, kind=Kind.PROCTIME, instance=instance, proc_ms=proc_ms)


def _key_of(line: InputRow) -> str:
    """The row's values as one key, for a meeting that is not an interval join (whose rows meet by
    the join's own keys, `join_rows.row_key`)."""
    return ",".join(f"{k}={v}" for k, v in line.values.items())


def split_id(table: str, partition: int) -> str:
    """A partition's split id as Kafka's source names it: `<topic>-<partition>` (the table here)."""
    return f"{table}-{partition}"


def _scenario(group: Group, rows: ReplayInput, interval_ms: int) -> ScenarioConfig:
    generators = {b.input: _generator(b, rows, interval_ms, group.zone) for b in group.branches}
    first = next(iter(generators.values()))
    operator: OperatorConfig = NoOperator()
    if group.operator is not None:
        operator = group.operator  # type: ignore[assignment]  # a SqlOperatorKind is one of them
    elif group.sql is not None and group.sql.config is not None:
        operator = group.sql.config  # type: ignore[assignment]
    channels = {b.input: 1 for b in group.branches}
    # One table: the trace's one generator is its own; a join: each side its own (`generators`).
    own = generators if len(generators) > 1 else {}
    return ScenarioConfig(
        name=group.name, channels=channels, generator=first, generators=own, operator=operator
    )


def _generator(branch: Branch, rows: ReplayInput, interval_ms: int, zone: str) -> GeneratorConfig:
    source = branch.table
    assert source.expression is not None
    (column,) = set(columns_read(source.expression))
    kind = source.column_kinds.get(column, "TIMESTAMP")
    column_type = next(name for name, named in COLUMN_KINDS.items() if named == kind)
    common = {
        "expression": source.expression,
        "column_type": column_type,
        "zone": zone,
        "interval_ms": interval_ms,
        "idle_timeout_ms": source.idle_timeout_ms.value,
    }
    if source.where == "assigner":
        return GeneratorConfig.with_preset("sql-assigner", **common)
    partitions = rows.partitions.get(source.table, 1)
    splits = ((branch.channel, tuple(split_id(source.table, p) for p in range(partitions))),)
    return GeneratorConfig.with_preset(
        "sql-source",
        **common,
        emit=source.emit.value or "on-periodic",
        splits=splits,
        alignment=_alignment(source),
    )


@dataclass(frozen=True, slots=True)
class StepState:
    """Every node's watermark after one step, and each source split's (watermark, idle)."""

    step: int
    time_ms: int
    """The processing clock at the step (a line's `proc_ms`, as `job_trace` fills it in)."""
    nodes: Mapping[str, int]
    splits: Mapping[tuple[str, str], tuple[int, bool]]
    """(node id of the scan, split id) -> the split's watermark in its reader, whether it is idle."""
    outputs: Mapping[str, tuple[SqlOutput, ...]] = field(default_factory=dict)
    """Group name -> the rows its SQL operator (or interval join, `wmviz.sql.join_rows`) output
    during the step, in order."""
    late: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    """Group name -> metric -> the rows its SQL operator dropped as Flink counts them in that metric
    (`numLateRecordsDropped`; a window join's `leftNumLateRecordsDropped` and `right...`)."""
    fates: Mapping[int, RowFate] = field(default_factory=dict)
    """A rows-file line -> what its SQL operator decided during the step (kept, added late, dropped)."""
    flow: Mapping[str, tuple[SqlOutput | int, ...]] = field(default_factory=dict)
    """Group name -> its operator's output rows and the watermarks it forwarded, in the order it
    sent them (what an operator after it receives: `wmviz.sql.chain`)."""


def replay_states(
    job: SqlJob, rows: ReplayInput, profile: Profile = Profile.FLINK_1X_2X
) -> Iterator[StepState]:
    """The state after every step that had rows, in step order."""
    trace = job_trace(job, rows)
    pipelines = {
        g.name: InstancePipeline(
            g.name,
            trace.configs[g.name],
            profile,
            instance_channels(_channels(trace, g), trace.configs[g.name], g.name),
            set(),
        )
        for g in trace.groups
    }
    watch = NodeWatermarks(job, trace.groups)
    joins = {g.name: join_rows(job, g) for g in trace.groups if isinstance(g.operator, IntervalJoinConfig)}
    time_ms = 0
    for step, batch in groupby(trace.rows, key=lambda item: item[0]):
        outputs: dict[str, list[SqlOutput]] = {}
        late: dict[str, dict[str, int]] = {}
        fates: dict[int, RowFate] = {}
        flow: dict[str, list[SqlOutput | int]] = {}
        for _, row in batch:
            time_ms = row.proc_ms if row.proc_ms is not None else time_ms
            pipelines[row.instance].run_row(row, explain=False)
            watch.saw(row.instance, pipelines[row.instance])
            for event in pipelines[row.instance].step_log.timeline:
                if isinstance(event, SqlOutput):
                    outputs.setdefault(row.instance, []).append(event)
                    flow.setdefault(row.instance, []).append(event)
                elif isinstance(event, JoinOutput) and isinstance(join := joins.get(row.instance), JoinRows):
                    outputs.setdefault(row.instance, []).append(made := join.output(event))
                    flow.setdefault(row.instance, []).append(made)
                elif isinstance(event, OutputWatermark):
                    flow.setdefault(row.instance, []).append(event.watermark_ms)
                elif isinstance(event, Dropped) and event.late:
                    counts = late.setdefault(row.instance, {})
                    metric = event.metric or LATE_METRIC
                    counts[metric] = counts.get(metric, 0) + 1
                elif isinstance(event, RowFate):
                    fates[event.row.row] = event
        yield StepState(
            step, time_ms, watch.values_of(pipelines), watch.splits_of(pipelines),
            {name: tuple(rows) for name, rows in outputs.items()}, late, fates,
            {name: tuple(items) for name, items in flow.items()},
        )  # fmt: skip


def _alignment(source: SourceTable) -> AlignmentConfig | None:
    """`scan.watermark.alignment.*` as the split readers' alignment (on only when Flink turns it on)."""
    align = source.alignment
    if align is None or not align.enabled:
        return None
    assert align.group.value and align.max_drift_ms.value and align.update_interval_ms.value
    return AlignmentConfig(
        group=align.group.value,
        max_drift_ms=align.max_drift_ms.value,
        update_interval_ms=align.update_interval_ms.value,
    )


def replay_watermarks(
    job: SqlJob, rows: ReplayInput, profile: Profile = Profile.FLINK_1X_2X
) -> Iterator[WatermarkLine]:
    """Every change of a node's watermark, step by step (a step's last value; steps in order)."""
    return watermark_changes(job, replay_states(job, rows, profile))


def watermark_changes(job: SqlJob, states: Iterable[StepState]) -> Iterator[WatermarkLine]:
    """The changes between successive states (every node starts at MIN)."""
    last = {n.id: MIN_MS for n in job.nodes}
    for state in states:
        for node_id, value in state.nodes.items():
            if value != last[node_id] and not job.node(node_id).is_exchange:
                last[node_id] = value
                yield WatermarkLine(state.step, node_id, job.node(node_id).name, value)


def _channels(trace: JobTrace, group: Group) -> dict[tuple[str, str], int]:
    config = trace.configs[group.name]
    return {(group.name, name): n for name, n in config.channels.items()}


class NodeWatermarks:
    """Reads every node's watermark off the groups' pipelines after each step."""

    def __init__(self, job: SqlJob, groups: tuple[Group, ...]) -> None:
        self.job = job
        self.groups = groups
        self.join_output: dict[str, int] = {g.name: MIN_MS for g in groups}

    def saw(self, group_name: str, pipeline: InstancePipeline) -> None:
        """After one row: keep the join's output watermark (JW3), which the pipeline does not hold."""
        for output in pipeline.step_log.emit:
            if isinstance(output, OutputWatermark):
                self.join_output[group_name] = output.watermark_ms

    def values_of(self, pipelines: Mapping[str, InstancePipeline]) -> dict[str, int]:
        """Every node's watermark now (MIN for a node no group reaches: a table without watermark)."""
        out = {n.id: MIN_MS for n in self.job.nodes}
        for group in self.groups:
            out.update(self.values(group, pipelines[group.name]))
        return out

    def values(self, group: Group, pipeline: InstancePipeline) -> dict[str, int]:
        out: dict[str, int] = {}
        for branch in group.branches:
            sent = pipeline.valves[branch.input].state().channels[branch.channel].watermark_ms
            for node_id in branch.made_by_source:
                out[node_id] = sent
            ended = sent == MAX_MS
            for node_id in branch.before_assigner:
                out[node_id] = MAX_MS if ended else MIN_MS
        downstream = self.join_output[group.name] if group.is_join else pipeline.output_watermark_ms
        for node_id in group.downstream:
            out[node_id] = downstream
        return out

    def splits_of(self, pipelines: Mapping[str, InstancePipeline]) -> dict[tuple[str, str], tuple[int, bool]]:
        """Each pushed-down source's splits: watermark and idleness in its reader."""
        out: dict[tuple[str, str], tuple[int, bool]] = {}
        for group in self.groups:
            pipeline = pipelines[group.name]
            for branch in group.branches:
                reader = pipeline.generators.get((branch.input, branch.channel))
                if isinstance(reader, SplitReader):
                    for split, state in reader.splits.items():
                        out[(branch.table.node_id, split)] = (state.partial_ms, state.partial_idle)
        return out


def group_trace(job: SqlJob, rows: ReplayInput, name: str) -> tuple[ScenarioConfig, list[TraceRow]]:
    """One group of the job as a trace the page opens: its config and rows, up to the end of input
    (a recording of a running job: its sources do not finish). ReplayRefused if the job has several
    groups, since one trace holds one config."""
    trace = job_trace(job, rows)
    if len(trace.groups) != 1:
        names = ", ".join(g.name for g in trace.groups)
        raise ReplayRefused(
            f"the job's watermarks form {len(trace.groups)} groups ({names}); a trace holds one"
        )
    (group,) = trace.groups
    config = dataclasses.replace(trace.configs[group.name], name=name)
    return config, [row for step, row in trace.rows if step < trace.end_step]
