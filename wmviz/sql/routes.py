"""The ways a SQL job's rows take through its plan (docs/sql.md, "Replay"): from a node where rows
are known (a SQL operator's output, a join's meeting node, a table's scan) to every sink, or to
the next SQL operator the core models (operators in series), with each Calc on the way.

An Exchange, a WatermarkAssigner and the local half of a two-phase window aggregate pass rows on;
a Calc projects them and applies its WHERE, both computed by `wmviz.sql.rex` (a route whose Calc
reads what rex does not evaluate is refused, naming the node); the sink takes them by position as
its columns. Any other node makes the route "not replayed", with the node named. `wmviz.sql.rowflow`
says where each group's rows start and carries them along these routes.

Values are written as the oracle (`tools/flink/sql/run.py`) prints them, by the sink column's type:
timestamps `YYYY-MM-DD HH:MM:SS.fff` (TIMESTAMP_LTZ in the session zone), DOUBLE as a float,
BIGINT and INT as integers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from wmviz.core.sql_expr import local_ms_of_instant
from wmviz.core.sql_rows import SqlValue
from wmviz.core.sql_window_time import timestamp_text
from wmviz.core.types import MIN_MS
from wmviz.sql import rex
from wmviz.sql.model import Node, OperatorRefused, SqlJob, fields_of
from wmviz.sql.operators import PLAN_OPERATORS
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
    into: str | None = None
    """The node id of the SQL operator the route feeds (operators in series), else None (a sink)."""


_PASS = {"stream-exec-exchange", "stream-exec-watermark-assigner", "stream-exec-local-window-aggregate"}


def routes_from(
    job: SqlJob, start: str, start_fields: Sequence[str], avoid: str | None = None, *, feeds: bool = False
) -> list[Route]:
    """Every sink reachable from node `start` (not through `avoid`, the SQL operator whose own rows
    take that way), each with its route (or why it is not replayed); with `feeds`, a route that
    reaches a SQL operator the core models ends there (`Route.into`)."""
    out: list[Route] = []
    todo: list[tuple[str, tuple[CalcStep, ...], str | None]] = [(start, (), None)]
    while todo:
        node_id, projections, refused = todo.pop(0)
        refused = refused or _width_problem(projections, len(start_fields))
        for edge in (e for e in job.edges if e.source == node_id and e.target != avoid):
            target = job.node(edge.target)
            if target.flink_type == "stream-exec-sink":
                out.append(Route(target.table or target.name, tuple(start_fields), projections,
                                 _sink_columns(target), refused))  # fmt: skip
                continue
            if feeds and target.flink_type in PLAN_OPERATORS:
                name = f"{target.name}[{target.id}]"
                out.append(Route(name, tuple(start_fields), projections, (), refused, target.id))
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


def _width_problem(projections: tuple[CalcStep, ...], width: int) -> str | None:
    """Why a route's Calcs cannot be computed: one reads a field its input row does not have (a plan
    whose types and projections disagree), else None. Checked once per route, not per row."""
    for calc in projections:
        for item in (*calc.projection, *([calc.condition] if calc.condition is not None else [])):
            try:
                needed = _fields_read(item)
            except ValueError as bad:
                return f"plan node {calc.node}: {bad}"
            if needed > width:
                return f"plan node {calc.node} reads field {needed - 1} of a row of {width} fields"
        width = len(calc.projection)
    return None


def _fields_read(item: Mapping[str, Any]) -> int:
    """1 + the highest input field an expression reads (0: none), walking its operands."""
    highest, todo = 0, [item]
    while todo:
        node = todo.pop()
        if node.get("kind") == "INPUT_REF":
            index = node.get("inputIndex")
            if type(index) is not int or index < 0:  # a negative index would read from the row's end
                raise ValueError(f"an input reference {index!r} that is not a field number")
            highest = max(highest, index + 1)
        todo.extend(o for o in node.get("operands", ()) if isinstance(o, Mapping))
    return highest


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
    row = project(route, values, zone, watermarks)
    if row is None:
        return None
    named = tuple(
        (name, oracle_value(value, data_type, zone))
        for (name, data_type), value in zip(route.columns, row, strict=False)
    )
    return SinkRow(route.sink, step, kind, named)


def project(
    route: Route, values: Mapping[str, SqlValue], zone: str, watermarks: Mapping[str, int] | None = None
) -> list[SqlValue] | None:
    """A row's values through each Calc of a route, in order (None when a WHERE drops it)."""
    row: list[SqlValue] = [values.get(name) for name in route.start_fields]
    for calc in route.projections:
        context = rex.Context((watermarks or {}).get(calc.node, MIN_MS), zone)
        if calc.condition is not None and rex.evaluate(calc.condition, row, context) is not True:
            return None
        row = [rex.sql_value(rex.evaluate(item, row, context)) for item in calc.projection]
    return row


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


def replace_refused(route: Route, why: str) -> Route:
    return Route(route.sink, route.start_fields, route.projections, route.columns, why)
