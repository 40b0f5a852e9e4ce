"""Rows carried from where the replay computes them to every sink (docs/sql.md, "Replay").

A group's rows start at its SQL operator (its `SqlOutput` rows, by output field), at the interval
join where its tables meet (the join's rows, `wmviz.sql.join_rows`), or, for a group with no SQL
operator, at the table's scan (the input rows themselves). From there each path to a
sink is followed node by node: an Exchange and a WatermarkAssigner pass rows on, a Calc whose
projection is only input references (and no condition) projects them, the sink takes them by
position as its columns. Anything else on the way (a window aggregate after a join, a second
aggregate) makes that sink's rows "not replayed", with the node named; its watermarks still replay.

Values are written as the oracle (`tools/flink/sql/run.py`) prints them, by the sink column's type:
timestamps `YYYY-MM-DD HH:MM:SS.fff` (TIMESTAMP_LTZ in the session zone), DOUBLE as a float,
BIGINT and INT as integers.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from wmviz.core.operator_kind import SqlOperatorKind
from wmviz.core.sql_expr import local_ms_of_instant
from wmviz.core.sql_rows import LATE_METRIC, SqlValue
from wmviz.core.sql_window_time import timestamp_text
from wmviz.core.types import MIN_MS
from wmviz.sql import rex
from wmviz.sql.job_shape import Group, groups_of
from wmviz.sql.join_rows import join_rows
from wmviz.sql.model import Node, OperatorRefused, SqlJob, fields_of
from wmviz.sql.replay import StepState
from wmviz.sql.rows import InputRow, ReplayInput
from wmviz.sql.values import cell_ms


@dataclass(frozen=True, slots=True)
class SinkRow:
    """A row a sink receives at a step (the output line `{"sink", "step", "kind", "row"}`)."""

    sink: str
    step: int
    kind: str
    row: tuple[tuple[str, SqlValue], ...]
    line: int | None = None
    """The rows file's line the row is (an input row carried past the operator), else None."""

    def as_json(self) -> dict[str, object]:
        return {"sink": self.sink, "step": self.step, "kind": self.kind, "row": dict(self.row)}


@dataclass(frozen=True, slots=True)
class DropLine:
    """Late rows an operator dropped at a step (`{"step", "metric", "operator", "delta"}`)."""

    step: int
    operator: str
    delta: int

    def as_json(self) -> dict[str, object]:
        return {"step": self.step, "metric": LATE_METRIC, "operator": self.operator, "delta": self.delta}


@dataclass(frozen=True, slots=True)
class CalcStep:
    """One Calc on a route: its projection's expressions and its WHERE (`wmviz.sql.rex`)."""

    node: str
    projection: tuple[Mapping[str, Any], ...]
    condition: Mapping[str, Any] | None


@dataclass(frozen=True, slots=True)
class Route:
    """How rows leaving `start` reach one sink: the field names at `start`, each Calc on the way,
    the sink's columns (name, type); or why they do not."""

    sink: str
    start_fields: tuple[str, ...]
    projections: tuple[CalcStep, ...]
    columns: tuple[tuple[str, str], ...]
    refused: str | None = None


_PASS = {"stream-exec-exchange", "stream-exec-watermark-assigner", "stream-exec-local-window-aggregate"}


def routes_from(
    job: SqlJob, start: str, start_fields: Sequence[str], avoid: str | None = None
) -> list[Route]:
    """Every sink reachable from node `start` (not through `avoid`, the SQL operator whose own rows
    take that way), each with its route (or why it is not replayed)."""
    out: list[Route] = []
    todo: list[tuple[str, tuple[CalcStep, ...], str | None]] = [(start, (), None)]
    while todo:
        node_id, projections, refused = todo.pop(0)
        for edge in (e for e in job.edges if e.source == node_id and e.target != avoid):
            target = job.node(edge.target)
            if target.flink_type == "stream-exec-sink":
                out.append(Route(target.table or target.name, tuple(start_fields), projections,
                                 _sink_columns(target), refused))  # fmt: skip
                continue
            step, why = _through(target)
            todo.append((target.id, projections + step, refused or why))
    return out


def _through(node: Node) -> tuple[tuple[CalcStep, ...], str | None]:
    """What a node between the operator and a sink does to rows: nothing, a Calc (its projection
    and WHERE, computed by `wmviz.sql.rex`), or it is not modelled (the reason)."""
    if node.flink_type in _PASS:
        return (), None
    where = f"{node.name} (plan node {node.id})"
    if node.flink_type == "stream-exec-calc":
        projection = node.spec.get("projection")
        items = tuple(projection) if isinstance(projection, list) else ()
        condition = node.spec.get("condition")
        try:
            if not items:
                raise OperatorRefused(f"{where}: a projection it cannot read")
            for item in (*items, *([condition] if condition is not None else [])):
                rex.check(item, where)
        except OperatorRefused as refused:
            return (), str(refused)
        return ((CalcStep(node.id, items, condition if isinstance(condition, dict) else None),), None)
    return (), f"{where} is not replayed for rows"


def _sink_columns(sink: Node) -> tuple[tuple[str, str], ...]:
    table = sink.spec.get("dynamicTableSink")
    try:
        columns = table["table"]["resolvedTable"]["schema"]["columns"]  # type: ignore[index]
        return tuple((str(c["name"]), str(c.get("dataType", ""))) for c in columns)
    except (KeyError, TypeError):
        return tuple((name, "") for name in fields_of(sink))


def carry(
    route: Route,
    step: int,
    kind: str,
    values: Mapping[str, SqlValue],
    zone: str,
    watermarks: Mapping[str, int] | None = None,
) -> SinkRow | None:
    """One row along a route (not refused): through each Calc (None when a WHERE drops it), then
    named and written as the sink's columns. `watermarks` are each node's watermark before the
    row (what CURRENT_WATERMARK reads; MIN where not given)."""
    row: list[SqlValue] = [values.get(name) for name in route.start_fields]
    for calc in route.projections:
        context = rex.Context((watermarks or {}).get(calc.node, MIN_MS), zone)
        if calc.condition is not None and rex.evaluate(calc.condition, row, context) is not True:
            return None
        row = [rex.sql_value(rex.evaluate(item, row, context)) for item in calc.projection]
    named = tuple(
        (name, oracle_value(value, data_type, zone))
        for (name, data_type), value in zip(route.columns, row, strict=False)
    )
    return SinkRow(route.sink, step, kind, named)


def oracle_value(value: SqlValue, data_type: str, zone: str = "UTC") -> SqlValue:
    """A value as the oracle prints it for a column of `data_type`."""
    if value is None:
        return None
    upper = data_type.upper()
    if upper.startswith(("DOUBLE", "FLOAT", "DECIMAL")) and isinstance(value, int | float):
        return float(value)
    if upper.startswith(("BIGINT", "INT", "SMALLINT", "TINYINT")) and isinstance(value, int | float):
        return int(value)
    if upper.startswith("TIMESTAMP") and isinstance(value, str | int):
        ltz = "LOCAL TIME ZONE" in upper or "LTZ" in upper
        if isinstance(value, int):
            return timestamp_text(local_ms_of_instant(value, zone) if ltz else value)
        return timestamp_text(cell_ms(value, "TIMESTAMP", "UTC"))
    return value


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


def group_rows(job: SqlJob) -> list[GroupRows]:
    """Each group's routes: from its SQL operator's node (a join's: the node where the tables
    meet), else from its table's scan; a refused operator's sinks are refused."""
    out = []
    for group in groups_of(job):
        if group.is_join:
            assert group.meeting is not None
            meeting = job.node(group.meeting)
            if isinstance(group.operator, SqlOperatorKind):  # the temporal join: SQL's own rows
                routes = routes_from(job, group.meeting, fields_of(meeting))
                out.append(GroupRows(group, f"{meeting.name}[{meeting.id}]", tuple(routes)))
                continue
            routes = routes_from(job, group.meeting, fields_of(meeting))
            made = join_rows(job, group)  # the join's own rows (`wmviz.sql.join_rows`), or why not
            if isinstance(made, str):
                routes = [replace_refused(r, made) for r in routes]
            after = f"after {meeting.name} (plan node {meeting.id}): a second operator in series"
            routes = [replace_refused(r, f"{r.refused}, {after}") if r.refused else r for r in routes]
            # No drop line: Flink 2.3.0's interval join counts no late rows (docs/late-rows.md).
            out.append(GroupRows(group, None, tuple(routes)))
            continue
        stage = group.sql
        scan = group.branches[0].table.node_id
        if stage is None:
            inputs = routes_from(job, scan, fields_of(job.node(scan)))
            out.append(GroupRows(group, None, (), tuple(inputs)))
            continue
        node = job.node(stage.node)
        routes = routes_from(job, stage.node, fields_of(node))
        refused = stage.refused or _computed_before(job, group, node)
        if refused is not None:
            routes = [replace_refused(r, refused) for r in routes]
        inputs = routes_from(job, scan, fields_of(job.node(scan)), avoid=stage.node)
        out.append(GroupRows(group, f"{node.name}[{node.id}]", tuple(routes), tuple(inputs)))
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


def replace_refused(route: Route, why: str) -> Route:
    return Route(route.sink, route.start_fields, route.projections, route.columns, why)


def replay_lines(job: SqlJob, rows: ReplayInput, states: Iterable[StepState]) -> Iterator[SinkRow | DropLine]:
    """Every sink row (sinks in name order, each in arrival order) and every late drop, step by
    step, as the oracle writes them."""
    plans = group_rows(job)
    inputs: dict[int, list[InputRow]] = {}
    for line in rows.lines:
        if isinstance(line, InputRow):
            inputs.setdefault(line.step, []).append(line)
    before: Mapping[str, int] = {}
    """Each node's watermark before the step's rows (what a Calc's CURRENT_WATERMARK reads)."""
    for state in states:
        carried: list[SinkRow | None] = []
        drops: list[DropLine] = []
        for plan in plans:
            carried += _input_rows(plan, state.step, inputs.get(state.step, []), before)
            carried += _operator_rows(plan, state, before)
            name = plan.group.name
            if state.late.get(name) and plan.operator is not None:
                drops.append(DropLine(state.step, plan.operator, state.late[name]))
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
    routes = [route for plan in group_rows(job) for route in (*plan.routes, *plan.input_routes)]
    notes = [f"the rows {r.sink} receives are not replayed: {r.refused}" for r in routes if r.refused]
    reached = {r.sink for r in routes}
    for sink in job.nodes:
        name = sink.table or sink.name
        if sink.flink_type == "stream-exec-sink" and name not in reached:
            notes.append(f"the rows {name} receives are not replayed: it reads no table with a watermark")
    return notes
