"""The window join's config from its COMPILE PLAN node (`stream-exec-window-join`): two inputs, each a
table cut into windows by its own window table function (`TABLE(TUMBLE|HOP|CUMULATE(...))`), joined
on a key and the window, modelled by `wmviz.core.sql_window_join`.

Read from the node's own JSON: `joinSpec` (the join type and the key columns of both inputs, by
position), `leftWindowing` / `rightWindowing` (the windows, attached by the table functions), the
output field names (Flink renames a clash: user_id0, window_start0) and both inputs' fields. Each
input's path from its table is read too, since the core computes the table function's work itself:
it must be the table's scan, one window table function on the table's own time attribute, and
projections of columns only. What the core does not model is refused by name (OperatorRefused): a
join condition beyond the key equality, a NULL-safe key (`IS NOT DISTINCT FROM`), processing time,
a TIMESTAMP_LTZ time attribute, a WHERE or a computed column before the join, windows attached by
an earlier window aggregate, state retention.
"""

from __future__ import annotations

from typing import Any

from wmviz.core.sql_window_join_config import WINDOW_COLUMNS, WindowJoinConfig
from wmviz.core.sql_windows_config import WindowKind
from wmviz.sql.model import Node, OperatorRefused, SqlJob, WindowSpec, fields_of
from wmviz.sql.plan_nodes import window_from_json

JOIN_TYPES = {kind: kind.lower() for kind in ("INNER", "LEFT", "RIGHT", "FULL", "SEMI", "ANTI")}
"""COMPILE PLAN's `joinSpec.joinType` -> the core's `join_type`."""

_PASS = ("stream-exec-exchange", "stream-exec-watermark-assigner", "stream-exec-table-source-scan")
"""Nodes on an input's path that leave its rows as they are."""


def read_window_join(node: Node, job: SqlJob) -> WindowJoinConfig:
    """The window join `node` plans, or OperatorRefused naming what wmviz does not model."""
    where = f"{node.name} (plan node {node.id})"
    spec = node.spec
    join = spec.get("joinSpec")
    if not isinstance(join, dict):
        raise OperatorRefused(f"{where}: the plan gives no joinSpec")
    join_type = JOIN_TYPES.get(str(join.get("joinType")))
    if join_type is None:
        raise OperatorRefused(f"{where}: a {join.get('joinType')} window join is not modelled")
    if join.get("nonEquiCondition") is not None:
        raise OperatorRefused(f"{where}: a join condition beyond the key equality is not modelled")
    if not all(f is True for f in join.get("filterNulls") or [False]):
        raise OperatorRefused(f"{where}: a NULL-safe key (IS NOT DISTINCT FROM) is not modelled")
    ttl = job.global_options.get("table.exec.state.ttl", "0")
    if ttl.strip() not in ("0", "0 ms", "0ms", ""):
        raise OperatorRefused(f"{where}: state retention (table.exec.state.ttl = {ttl}) is not modelled")
    edges = job.inputs_of(node.id)
    if len(edges) != 2:
        raise OperatorRefused(f"{where}: a window join needs two inputs, the plan gives {len(edges)}")
    left, right = (fields_of(job.node(edge.source)) for edge in edges)
    window = _window(spec.get("leftWindowing"), left, where, "left")
    if _window(spec.get("rightWindowing"), right, where, "right") != window:
        raise OperatorRefused(f"{where}: the two sides' windows differ")
    for edge in edges:
        _check_path(job, edge.source, window, where)
    output = fields_of(node)
    width = len(left) + (len(right) if join_type not in ("semi", "anti") else 0)
    if len(output) != width:
        raise OperatorRefused(f"{where}: its output fields are not the left input's then the right's")
    return WindowJoinConfig(
        join_type=join_type,  # type: ignore[arg-type]
        window=window.kind.lower(),  # type: ignore[arg-type]  # _window checked it
        size_ms=window.size_ms or 0,
        slide_ms=window.slide_ms if window.kind == "HOP" else None,
        step_ms=window.step_ms if window.kind == "CUMULATE" else None,
        offset_ms=window.offset_ms or 0,
        left_key=_columns(join.get("leftKeys"), left, where, "leftKeys"),
        right_key=_columns(join.get("rightKeys"), right, where, "rightKeys"),
        left_columns=left,
        right_columns=right,
        output_names=output,
    )


def _window(windowing: Any, fields: tuple[str, ...], where: str, side: str) -> WindowSpec:
    """One side's windows, attached by its table function, with window_start / window_end as named."""
    if not isinstance(windowing, dict) or windowing.get("strategy") != "WindowAttached":
        raise OperatorRefused(f"{where}: {side} windows not attached by a table function are not modelled")
    window = window_from_json({"windowing": windowing}, [])
    kinds: tuple[WindowKind, ...] = ("tumble", "hop", "cumulate")
    if window is None or window.kind.lower() not in kinds or not window.size_ms:
        kind = window.kind if window is not None else "an unknown window"
        raise OperatorRefused(f"{where}: {kind} windows are not modelled (TUMBLE, HOP, CUMULATE)")
    if not window.rowtime:
        raise OperatorRefused(f"{where}: a processing-time window join is not modelled (event time only)")
    if window.time_kind != "TIMESTAMP":
        raise OperatorRefused(
            f"{where}: a {window.time_kind} time attribute is not modelled (only TIMESTAMP)"
        )
    start, end = windowing.get("windowStart"), windowing.get("windowEnd")
    if not isinstance(start, int) or not isinstance(end, int) or max(start, end) >= len(fields):
        raise OperatorRefused(f"{where}: {side} window columns it cannot read")
    if (fields[start], fields[end]) != ("window_start", "window_end"):
        raise OperatorRefused(f"{where}: renamed window columns are not modelled")
    return window


def _check_path(job: SqlJob, start: str, window: WindowSpec, where: str) -> None:
    """An input's path back to its table: projections of columns (no WHERE, no computed column),
    exchanges, exactly one window table function on the table's time attribute with the join's
    window, then the scan."""
    path: list[Node] = []
    node_id: str | None = start
    while node_id is not None:
        node = job.node(node_id)
        path.append(node)
        edges = job.inputs_of(node_id)
        if len(edges) > 1:
            raise OperatorRefused(
                f"{_said(node, where)}: a second meeting before the window join is not modelled"
            )
        node_id = edges[0].source if edges else None
    table = next((s for s in job.sources if s.node_id == path[-1].id), None)
    tvfs = [n for n in path if n.flink_type == "stream-exec-window-table-function"]
    if table is None or len(tvfs) != 1:
        raise OperatorRefused(f"{where}: each input must be one table cut by one window table function")
    for node in path:
        if node.flink_type == "stream-exec-calc":
            _check_projection(node, job, _said(node, where))
        elif node.flink_type == "stream-exec-window-table-function":
            _check_table_function(node, job, window, table.rowtime, _said(node, where))
        elif node.flink_type not in _PASS:
            raise OperatorRefused(f"{_said(node, where)}: not modelled before a window join")


def _said(node: Node, where: str) -> str:
    return f"{node.name} (plan node {node.id}) before {where}"


def _check_projection(node: Node, job: SqlJob, said: str) -> None:
    """A Calc that only picks columns, keeping their names."""
    if node.spec.get("condition") is not None:
        raise OperatorRefused(f"{said}: a WHERE before a window join is not modelled")
    source = fields_of(job.node(job.inputs_of(node.id)[0].source))
    projection = node.spec.get("projection")
    items = projection if isinstance(projection, list) else [None]
    for item, name in zip(items, fields_of(node), strict=False):
        index = item.get("inputIndex") if isinstance(item, dict) and item.get("kind") == "INPUT_REF" else None
        if not isinstance(index, int) or index >= len(source) or source[index] != name:
            raise OperatorRefused(f"{said}: {name} is computed before the window join (not modelled)")


def _check_table_function(
    node: Node, job: SqlJob, window: WindowSpec, rowtime: str | None, said: str
) -> None:
    """The window table function cuts the join's windows on its table's own time attribute."""
    source_fields = fields_of(job.node(job.inputs_of(node.id)[0].source))
    own = window_from_json(dict(node.spec), [(name, "") for name in source_fields])
    if own is None or (own.kind, own.size_ms, own.slide_ms, own.step_ms, own.offset_ms) != (
        window.kind, window.size_ms, window.slide_ms, window.step_ms, window.offset_ms,
    ):  # fmt: skip
        raise OperatorRefused(f"{said}: its windows are not the join's")
    if own.time_column != rowtime:
        raise OperatorRefused(f"{said}: windows on {own.time_column}, not the table's WATERMARK column")
    if set(WINDOW_COLUMNS) & set(source_fields):
        raise OperatorRefused(f"{said}: its table already has a window column")


def _columns(indexes: Any, fields: tuple[str, ...], where: str, name: str) -> tuple[str, ...]:
    if not isinstance(indexes, list) or not indexes:
        raise OperatorRefused(f"{where}: the plan gives no joinSpec.{name}")
    if not all(isinstance(i, int) and 0 <= i < len(fields) for i in indexes):
        raise OperatorRefused(f"{where}: joinSpec.{name} {indexes} are not columns of its input")
    return tuple(fields[i] for i in indexes)
