"""Rows carried from where the replay computes them to every sink (docs/sql.md, "Replay").

A group's rows start at its SQL operator (its `SqlOutput` rows, by output field), at the interval
join where its tables meet (the join's rows, `wmviz.sql.join_rows`), or, for a group with no SQL
operator, at the table's scan (the input rows themselves). From there each path to a
sink is followed node by node: an Exchange and a WatermarkAssigner pass rows on, a Calc projects
them and applies its WHERE (`wmviz.sql.rex`), the sink takes them by position as its columns.
Operators in series: a path that reaches another SQL operator the core models (a window aggregate
after a join, a cascade of windows) feeds it, in order, the rows and the output watermarks of the
operator before it (`Stage`, each run by `wmviz.sql.chain`), and its own rows go on from there.
Anything else on the way makes that sink's rows "not replayed", with the node named; its
watermarks still replay.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from wmviz.core.operator_kind import SqlOperatorKind
from wmviz.core.sql_rows import LATE_METRIC, SqlOutput
from wmviz.sql import rex
from wmviz.sql.chain import StageRun, StageSpec, retracting, stage_spec
from wmviz.sql.job_shape import Group, groups_of
from wmviz.sql.join_rows import join_rows
from wmviz.sql.model import Node, OperatorRefused, SqlJob, fields_of
from wmviz.sql.operators import operator_of
from wmviz.sql.replay import StepState
from wmviz.sql.routes import Route, SinkRow, carry, oracle_value, project, replace_refused, routes_from
from wmviz.sql.rows import InputRow, ReplayInput

__all__ = [
    "DropLine",
    "Route",
    "SinkRow",
    "carry",
    "group_rows",
    "oracle_value",
    "replay_lines",
    "routes_from",
]


@dataclass(frozen=True, slots=True)
class DropLine:
    """Late rows an operator dropped at a step (`{"step", "metric", "operator", "delta"}`)."""

    step: int
    operator: str
    delta: int
    metric: str = LATE_METRIC
    """The metric the oracle prints (a window join counts each side apart: `leftNumLateRecordsDropped`)."""

    def as_json(self) -> dict[str, object]:
        return {"step": self.step, "metric": self.metric, "operator": self.operator, "delta": self.delta}


@dataclass(frozen=True, slots=True)
class Stage:
    """A SQL operator fed by the rows of the one before it (operators in series): the route into
    it (its Calcs), its input fields, what it runs (None: refused, `why`), and where its rows go."""

    inbound: Route
    input_fields: tuple[str, ...]
    spec: StageSpec | None
    routes: tuple[Route, ...]
    stages: tuple[Stage, ...]
    why: str | None = None


@dataclass(frozen=True, slots=True)
class GroupRows:
    """Where one group's rows start and the routes from there to its sinks."""

    group: Group
    operator: str | None
    """The SQL operator's name as Flink's metrics name it (`GlobalWindowAggregate[4]`), if any."""
    routes: tuple[Route, ...]
    """From the SQL operator to the sinks its rows reach."""
    input_routes: tuple[Route, ...] = ()
    """From the table's scan to the sinks its input rows reach without the operator (every sink,
    for a table with no SQL operator; a dead-letter query beside a window)."""
    stages: tuple[Stage, ...] = ()
    """The SQL operators its operator's rows feed (operators in series)."""


def group_rows(job: SqlJob) -> list[GroupRows]:
    """Each group's routes: from its SQL operator's node (a join's: the node where the tables
    meet), else from its table's scan; a refused operator's sinks are refused."""
    out = []
    for group in groups_of(job):
        if group.is_join:
            assert group.meeting is not None
            meeting = job.node(group.meeting)
            refused = None
            if not isinstance(group.operator, SqlOperatorKind):  # the interval join's rows
                made = join_rows(job, group)  # (`wmviz.sql.join_rows`), or why not
                refused = made if isinstance(made, str) else None
            routes, stages = _outgoing(job, group.meeting, fields_of(meeting), group.operator, refused)
            # No drop line for the interval join: Flink 2.3.0's counts no late rows (docs/late-rows.md).
            name = f"{meeting.name}[{meeting.id}]" if isinstance(group.operator, SqlOperatorKind) else None
            out.append(GroupRows(group, name, tuple(routes), stages=stages))
            continue
        stage = group.sql
        scan = group.branches[0].table.node_id
        if stage is None:
            inputs = routes_from(job, scan, fields_of(job.node(scan)))
            out.append(GroupRows(group, None, (), tuple(inputs)))
            continue
        node = job.node(stage.node)
        refused = stage.refused or _computed_before(job, group, node)
        routes, stages = _outgoing(job, stage.node, fields_of(node), stage.config, refused)
        inputs = routes_from(job, scan, fields_of(job.node(scan)), avoid=stage.node)
        out.append(GroupRows(group, f"{node.name}[{node.id}]", tuple(routes), tuple(inputs), stages))
    return out


def _outgoing(
    job: SqlJob, start: str, fields: Sequence[str], upstream: object, refused: str | None
) -> tuple[list[Route], tuple[Stage, ...]]:
    """Where an operator's rows go: its routes to sinks, and the SQL operators in series it feeds
    (each a `Stage`); with `refused`, every sink after it is refused for that reason."""
    if refused is not None:
        return [replace_refused(r, refused) for r in routes_from(job, start, fields)], ()
    routes: list[Route] = []
    stages: list[Stage] = []
    for route in routes_from(job, start, fields, feeds=True):
        if route.into is None:
            routes.append(route)
        else:
            stages.append(_stage(job, route, upstream))
    return routes, tuple(stages)


def _stage(job: SqlJob, inbound: Route, upstream: object) -> Stage:
    """The operator an inbound route feeds, or why it is refused (then so is every sink after it):
    a Calc on the way wmviz does not evaluate, rows that may be updates (none of the operators
    modelled in series consumes a retraction, and Flink's planner refuses such a plan), an
    operator its plan reader refuses, a time attribute the plan does not name."""
    assert inbound.into is not None
    node = job.node(inbound.into)
    last = inbound.projections[-1].node if inbound.projections else None
    fields = fields_of(job.node(last)) if last is not None else inbound.start_fields
    why = inbound.refused
    if why is None and len(job.inputs_of(node.id)) > 1:
        why = f"{node.name} (plan node {node.id}): where tables meet, it is not run in series"
    if why is None and (updates := retracting(upstream)) is not None:
        why = f"{node.name} (plan node {node.id}) consumes inserts only: {updates}"
    config = None
    if why is None:
        try:
            config = operator_of(node, job)
        except OperatorRefused as refused:
            why = str(refused)
    spec = None
    if why is None and config is not None:
        made = stage_spec(job, node, config)
        spec, why = (None, made) if isinstance(made, str) else (made, None)
    routes, stages = _outgoing(job, node.id, fields_of(node), config, why)
    return Stage(inbound, tuple(fields), spec, tuple(routes), stages, why)


def _all_routes(plan: GroupRows) -> list[Route]:
    """Every route of a group to a sink: from its operator, from its scan, and from each operator
    in series after it."""
    out = [*plan.routes, *plan.input_routes]
    todo = list(plan.stages)
    while todo:
        stage = todo.pop(0)
        out += stage.routes
        todo += stage.stages
    return out


def _computed_before(job: SqlJob, group: Group, node: Node) -> str | None:
    """Why the operator's rows cannot be computed from the rows file: a column it reads (a key, an
    aggregate's argument) that the table's scan does not give (computed by a Calc before it)."""
    config = group.sql.config if group.sql is not None else None
    read = [*getattr(config, "keys", ())]
    read += [c.column for c in getattr(config, "aggregates", ()) if c.column is not None]
    given = set(fields_of(job.node(group.branches[0].table.node_id)))
    missing = [name for name in read if name not in given]
    if not missing:
        return None
    return f"{node.name} (plan node {node.id}) reads {', '.join(missing)}, computed before it (not modelled)"


def replay_lines(
    job: SqlJob, rows: ReplayInput, states: Iterable[StepState], runs: dict[str, StageRun] | None = None
) -> Iterator[SinkRow | DropLine]:
    """Every sink row (sinks in name order, each in arrival order) and every late drop, step by
    step, as the oracle writes them. `runs`, when given, receives each operator in series by its
    plan node (read it once the lines are consumed: each stage's trace, `StageRun.stage_trace`)."""
    plans = group_rows(job)
    inputs: dict[int, list[InputRow]] = {}
    for line in rows.lines:
        if isinstance(line, InputRow):
            inputs.setdefault(line.step, []).append(line)
    before: Mapping[str, int] = {}
    """Each node's watermark before the step's rows (what a Calc's CURRENT_WATERMARK reads)."""
    runs = {} if runs is None else runs
    """The operators in series, each in its own pipeline, kept from step to step."""
    for state in states:
        carried: list[SinkRow | None] = []
        drops: list[DropLine] = []
        for plan in plans:
            carried += _input_rows(plan, state.step, inputs.get(state.step, []), before)
            carried += _operator_rows(plan, state, before)
            name = plan.group.name
            for metric, delta in sorted(state.late.get(name, {}).items()):  # the oracle's order
                if plan.operator is not None:
                    drops.append(DropLine(state.step, plan.operator, delta, metric))
            after: list[SinkRow | DropLine | None] = []
            flow = state.flow.get(name, ())
            _in_series(plan.stages, flow, state.step, plan.group.zone, before, runs, after)
            carried += [line for line in after if not isinstance(line, DropLine)]
            drops += [line for line in after if isinstance(line, DropLine)]
        sink_rows = sorted((r for r in carried if r is not None), key=lambda r: r.sink)
        yield from sink_rows
        yield from drops
        before = state.nodes


def _input_rows(
    plan: GroupRows, step: int, lines: list[InputRow], before: Mapping[str, int]
) -> list[SinkRow | None]:
    """A step's input rows of the group's table along the routes that do not pass its operator,
    each sink row naming its rows-file line (None: a WHERE dropped it)."""
    if not plan.input_routes:
        return []
    table = plan.group.branches[0].table.table
    out: list[SinkRow | None] = []
    for route in (r for r in plan.input_routes if not r.refused):
        for line in (line for line in lines if line.table == table):
            row = carry(route, step, "+I", line.values, plan.group.zone, before)
            out.append(row if row is None else dataclasses.replace(row, line=line.line))
    return out


def _operator_rows(plan: GroupRows, state: StepState, before: Mapping[str, int]) -> list[SinkRow | None]:
    """The rows the group's SQL operator output during the step, along its routes."""
    outputs = state.outputs.get(plan.group.name, ())
    return [
        carry(route, state.step, output.kind.value, dict(output.values), plan.group.zone, before)
        for route in plan.routes
        if route.refused is None
        for output in outputs
    ]


def _in_series(
    stages: Sequence[Stage],
    flow: Sequence[SqlOutput | int],
    step: int,
    zone: str,
    before: Mapping[str, int],
    runs: dict[str, StageRun],
    out: list[SinkRow | DropLine | None],
) -> None:
    """What an operator sent during a step (`flow`: its rows and forwarded watermarks, in order)
    through each operator it feeds (`runs` keeps each one's pipeline from step to step): the rows
    along the Calcs between them, then that operator's own rows to its sinks, its late drops, and
    on to the operators after it."""
    for stage in stages:
        if stage.spec is None:
            continue
        fed: list[SqlOutput | int] = []
        for item in flow:
            if isinstance(item, int):
                fed.append(item)
            elif (row := project(stage.inbound, dict(item.values), zone, before)) is not None:
                fed.append(SqlOutput(item.kind, tuple(zip(stage.input_fields, row, strict=False)), item.rows))
        run = runs.get(stage.spec.node)
        if run is None:
            run = runs[stage.spec.node] = StageRun(stage.spec)
        done = run.feed(fed)
        for route in (r for r in stage.routes if r.refused is None):
            out += [carry(route, step, o.kind.value, dict(o.values), zone, before) for o in done.outputs]
        if done.late:
            out.append(DropLine(step, stage.spec.operator, done.late))
        _in_series(stage.stages, done.flow, step, zone, before, runs, out)


def dead_letter_sinks(job: SqlJob) -> list[str]:
    """The sinks a table's rows reach through a WHERE that reads CURRENT_WATERMARK (a dead-letter
    query, `WHERE ts < CURRENT_WATERMARK(ts)`), in name order."""
    found = {
        route.sink
        for plan in group_rows(job)
        for route in plan.input_routes
        if route.refused is None
        and any(
            calc.condition is not None and rex.reads_watermark(calc.condition) for calc in route.projections
        )
    }
    return sorted(found)


def rows_not_replayed(job: SqlJob) -> list[str]:
    """What the replay leaves out, by name: the sinks whose rows it does not compute, and why."""
    routes = [route for plan in group_rows(job) for route in _all_routes(plan)]
    notes = [f"the rows {r.sink} receives are not replayed: {r.refused}" for r in routes if r.refused]
    reached = {r.sink for r in routes}
    for sink in job.nodes:
        name = sink.table or sink.name
        if sink.flink_type == "stream-exec-sink" and name not in reached:
            notes.append(f"the rows {name} receives are not replayed: it reads no table with a watermark")
    return notes
