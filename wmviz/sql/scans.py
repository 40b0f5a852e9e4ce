"""A source table's watermark read from its scan's digest: the text EXPLAIN prints and a running
job's REST plan carries for each operator (docs/sql.md).

A scan whose digest has `watermark=[…]` makes its watermark in the source, with the values in
effect (`idletimeout`, `watermarkEmitStrategy`, `watermarkAlignment`) and its OPTIONS hints
(`hints=[[[OPTIONS options:{…}]]]`); one followed by a `WatermarkAssigner` through operators that
pass watermarks on has a separate assigner; a source a connector builds itself (Kafka in a running
job) shows its name only, and its watermark is known to be made in the source when an event-time
operator reads it with no assigner between. A digest prints no types and no table options.
"""

from __future__ import annotations

import re
from typing import Any

from wmviz.core.sql_expr import Column, Expr, ToTimestampLtz, TypeKind, UnsupportedExpression
from wmviz.sql import sources
from wmviz.sql.digest import (
    DigestSyntaxError,
    attributes,
    duration_ms,
    node_digest,
    parse_expression,
    render,
    split_top,
    to_expr,
)
from wmviz.sql.model import ASSIGNER_EMITS, Behaviour, Edge, Node, Origin, Setting, SourceTable
from wmviz.sql.plan_nodes import runtime_name


def scan_attributes(text: str) -> dict[str, str]:
    """The `key=[value]` entries inside a scan's `table=[[…]]` (watermark, idletimeout, …)."""
    _, attrs = node_digest(text)
    inner = attrs.get("table", "")
    if inner.startswith("[") and inner.endswith("]"):
        return attributes(split_top(inner[1:-1]))
    return {}


def hint_options(text: str) -> dict[str, str]:
    """The options of the OPTIONS hints in a digest's `hints=[[[OPTIONS … options:{k=v, …}]]]`."""
    found = {}
    for options in re.findall(r"OPTIONS[^{]*options:\{([^}]*)\}", text):
        for pair in split_top(options):
            key, _, value = pair.partition("=")
            found[key.strip()] = value.strip()
    return found


def digest_sources(
    nodes: tuple[Node, ...],
    edges: tuple[Edge, ...],
    hints: dict[str, dict[str, str]],
    rowtimes: dict[str, str] | None = None,
) -> tuple[SourceTable, ...]:
    """Each scanned table's watermark, read from the digests (EXPLAIN and a REST plan)."""
    consumers: dict[str, list[str]] = {}
    for edge in edges:
        consumers.setdefault(edge.source, []).append(edge.target)
    by_id = {n.id: n for n in nodes}
    found = []
    for node in nodes:
        if node.behaviour is not Behaviour.SOURCE:
            continue
        table = node.table or node.id
        own = hint_options(node_digest(node.digest)[1].get("hints", ""))  # the scan's own digest
        hinted = {
            k: Setting(v, Origin.HINT)
            for k, v in {**hints.get(table, {}), **own}.items()
            if k.startswith("scan.watermark.")
        }
        common: dict[str, Any] = {
            "table": table,
            "node_id": node.id,
            "watermark_options": hinted,
            "parallelism": node.parallelism,
            "rowtime": (rowtimes or {}).get(table),
        }
        attrs = scan_attributes(node.digest)
        assigner = _assigner_after(node.id, consumers, by_id)
        if "watermark" in attrs:
            found.append(_pushed_down(common, attrs, hinted))
        elif assigner is not None:
            found.append(_assigned(common, assigner))
        elif runtime_name(node.digest) is not None:
            found.append(_runtime_named(common, _feeds_event_time(node.id, consumers, by_id)))
        else:
            found.append(SourceTable(**common, where=None))
    return tuple(found)


def _feeds_event_time(node_id: str, consumers: dict[str, list[str]], by_id: dict[str, Node]) -> bool:
    """Whether an event-time operator reads this node's watermarks with no assigner between (an
    interval join on row time, a window not known to be on processing time, a temporal join)."""
    seen, todo = set(), [node_id]
    while todo:
        for target in consumers.get(todo.pop(), []):
            node = by_id.get(target)
            if node is None or target in seen or node.behaviour is Behaviour.MAKES:
                continue
            seen.add(target)
            bounds, window = node.join_bounds, node.window
            if (bounds is not None and bounds.event_time) or node.behaviour in _ROW_TIME:
                return True
            if node.behaviour is Behaviour.WINDOW and window is not None and window.rowtime is not False:
                return True
            todo.append(target)
    return False


_ROW_TIME = (Behaviour.TEMPORAL_JOIN, Behaviour.BUFFERS)
"""Operators that read event time whatever their spec says (a row-time OVER, deduplication and
sort are planned only on a time attribute here: a processing-time one is refused by its reader)."""


def _runtime_named(common: dict[str, Any], event_time_below: bool) -> SourceTable:
    """A source the connector built itself (Kafka): a running job names it, not its digest, so the
    expression and its settings are not in the plan. An event-time operator reading it with no
    assigner between says the watermark is made in the source (the planner keeps an assigner
    wherever the source does not take it)."""
    unknown = "a running job names this source, not its digest: the plan does not say"
    if not event_time_below:
        return SourceTable(**common, where=None, where_note=f"no event-time operator reads it; {unknown}")
    return SourceTable(
        **common,
        where="source",
        where_note="an event-time operator reads it with no WatermarkAssigner between",
        expression_text="",
        emit=Setting(None, Origin.UNKNOWN, unknown),
        idle_timeout_ms=Setting(None, Origin.UNKNOWN, unknown),
    )


def _assigner_after(node_id: str, consumers: dict[str, list[str]], by_id: dict[str, Node]) -> Node | None:
    current = node_id
    for _ in range(len(by_id)):
        after = consumers.get(current, [])
        if len(after) != 1 or after[0] not in by_id:
            return None
        node = by_id[after[0]]
        if node.behaviour is Behaviour.MAKES:
            return node
        if node.behaviour is not Behaviour.PASSES:
            return None
        current = node.id
    return None


def _expression(text: str, table: str) -> dict[str, Any]:
    try:
        tree = parse_expression(text)
    except DigestSyntaxError as err:
        return {"expression_text": text, "expression_error": f"watermark expression of table {table}: {err}"}
    try:
        expr = to_expr(tree, table)
    except UnsupportedExpression as err:
        return {"expression_text": render(tree), "expression_error": str(err)}
    return {"expression_text": render(tree), "expression": expr, "column_kinds": _known_kinds(expr)}


def _known_kinds(expr: Expr) -> dict[str, TypeKind]:
    """The column types a digest's expression gives away (a digest prints none): the column
    TO_TIMESTAMP_LTZ reads is a number; any other column's type stays unknown."""
    while not isinstance(expr, Column):
        if isinstance(expr, ToTimestampLtz) and isinstance(expr.operand, Column):
            return {expr.operand.name: "NUMBER"}
        expr = expr.operand
    return {}


def _pushed_down(
    common: dict[str, Any], attrs: dict[str, str], hinted: dict[str, Setting[str]]
) -> SourceTable:
    """A scan whose digest carries `watermark=[…]`: what the digest states, with origins only as
    far as it can tell them (a non-default value was set by a hint or the table; a hint the AST
    shows is a hint)."""
    if attrs["watermark"].strip().upper() == "SOURCE_WATERMARK()":
        return SourceTable(**common, where="source-defined", expression_text="SOURCE_WATERMARK()")
    values: dict[str, Setting[Any]] = {}
    emit = attrs.get("watermarkEmitStrategy")
    if emit:
        values[sources.EMIT] = Setting(emit, Origin.PLAN if emit == "on-periodic" else Origin.HINT_OR_TABLE)
    idle = attrs.get("idletimeout")
    idle_setting = Setting(
        int(idle) if idle and idle.isdigit() else None, Origin.PLAN if idle else Origin.DEFAULT
    )
    if idle_setting.value:
        idle_setting = Setting(
            idle_setting.value, Origin.PLAN, "the digest shows the value in effect, not whose it is"
        )
    align = split_top(attrs.get("watermarkAlignment", ""))
    if len(align) == 3:
        values[sources.GROUP] = Setting(align[0], Origin.HINT_OR_TABLE)
        values[sources.DRIFT] = Setting(duration_ms(align[1]), Origin.HINT_OR_TABLE)
        values[sources.UPDATE] = Setting(duration_ms(align[2]), Origin.PLAN)
    for key in hinted:  # the AST shows this value came from a hint
        if key in values:
            values[key] = Setting(values[key].value, Origin.HINT)
    if sources.IDLE in hinted and idle_setting.value:
        idle_setting = Setting(idle_setting.value, Origin.HINT)
    return SourceTable(
        **common,
        where="source",
        **_expression(attrs["watermark"], common["table"]),
        emit=sources.emit(values)
        if emit
        else Setting("on-periodic", Origin.DEFAULT, "no emit strategy in the digest"),
        idle_timeout_ms=idle_setting,
        alignment=sources.alignment(values),
    )


def _assigned(common: dict[str, Any], assigner: Node) -> SourceTable:
    _, attrs = node_digest(assigner.digest)
    return SourceTable(
        **{**common, "rowtime": attrs.get("rowtime") or common["rowtime"]},
        where="assigner",
        **_expression(attrs.get("watermark", ""), common["table"]),
        emit=Setting(None, Origin.DEFAULT, ASSIGNER_EMITS),
        idle_timeout_ms=Setting(
            None, Origin.UNKNOWN, "table.exec.source.idle-timeout where the job runs: the digest does not say"
        ),
    )
