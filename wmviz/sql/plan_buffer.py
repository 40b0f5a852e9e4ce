"""Plan readers of SQL's buffering operators: a COMPILE PLAN node of an OVER aggregation, a
deduplication or a temporal sort, read into its core config (`wmviz.core.sql_buffer_config`).

What the core does not model is refused by name (`OperatorRefused`), never approximated: a
floating-point SUM or AVG in a bounded OVER frame (Flink retracts; the last bits drift), a frame
not ending at the current row, the older unbounded OVER function
(`table.exec.unbounded-over.version` 1), processing-time ordering,
DISTINCT or FILTER aggregates, a mini-batch deduplication, and a sort whose NULL order is not the
planner's default. MATCH_RECOGNIZE has its own reader, `wmviz.sql.plan_match`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from wmviz.core.sql_aggregates import AggregateCall, Function
from wmviz.core.sql_buffer_config import DeduplicateConfig, OverAggregateConfig, TemporalSortConfig
from wmviz.sql.model import Node, OperatorRefused, SqlJob

AGGREGATES: dict[str, Function] = {
    "$COUNT$1": "count",
    "$SUM$1": "sum",
    "$$SUM0$1": "sum0",
    "$MIN$1": "min",
    "$MAX$1": "max",
    "$AVG$1": "avg",
}
"""The planner's internal aggregate names wmviz models (`COUNT` without argument is COUNT(*))."""


def _refuse(node: Node, what: str) -> OperatorRefused:
    return OperatorRefused(f"{node.name} (plan node {node.id}): {what}")


def _input_fields(node: Node, job: SqlJob) -> list[dict[str, Any]]:
    """The input's fields as the plan declares them (name and type), in order."""
    edges = job.inputs_of(node.id)
    if not edges:
        raise _refuse(node, "has no input in the plan")
    output = job.node(edges[0].source).spec.get("outputType")
    fields = output.get("fields", []) if isinstance(output, dict) else []
    if not fields:
        raise _refuse(node, "its input's fields are not in the plan (a COMPILE PLAN is needed)")
    return [f for f in fields if isinstance(f, dict)]


def _name(node: Node, fields: Sequence[Mapping[str, Any]], index: object) -> str:
    if not isinstance(index, int) or not 0 <= index < len(fields):
        raise _refuse(node, f"names input field {index!r}, which its input does not have")
    return str(fields[index].get("name"))


def _is_rowtime(field: Mapping[str, Any]) -> bool:
    kind = field.get("fieldType")
    return isinstance(kind, dict) and kind.get("kind") == "ROWTIME"


def _order_fields(node: Node, order: object) -> list[Mapping[str, Any]]:
    fields = order.get("fields") if isinstance(order, dict) else None
    if not isinstance(fields, list) or not fields:
        raise _refuse(node, "its ORDER BY is not in the plan")
    return fields


def _time_first(node: Node, fields: Sequence[Mapping[str, Any]], order: Sequence[Mapping[str, Any]]) -> None:
    """The first ORDER BY field must be the row-time attribute, ascending."""
    index = order[0].get("index")
    _name(node, fields, index)
    assert isinstance(index, int)
    if not _is_rowtime(fields[index]):
        raise _refuse(node, "is ordered by processing time or a plain column, not a row-time attribute")
    if order[0].get("isAscending") is not True:
        raise _refuse(
            node, "is ordered by its time attribute descending, which Flink does not run on a stream"
        )


def read_over(node: Node, job: SqlJob) -> OverAggregateConfig:
    """An OVER aggregation's config from its `overSpec`."""
    fields = _input_fields(node, job)
    spec = node.spec.get("overSpec")
    if not isinstance(spec, dict):
        raise _refuse(node, "has no overSpec in the plan")
    groups = spec.get("groups") or []
    if len(groups) != 1:
        raise _refuse(node, f"has {len(groups)} window groups; wmviz models one")
    group = groups[0]
    _time_first(node, fields, _order_fields(node, group.get("orderBy")))
    lower = group.get("lowerBound") or {}
    if (group.get("upperBound") or {}).get("kind") != "CURRENT_ROW":
        raise _refuse(node, "a frame that does not end at CURRENT ROW is not modelled")
    preceding = None
    if lower.get("kind") == "BOUNDED_WINDOW" and lower.get("isPreceding"):
        preceding = _preceding(node, spec, lower)
    elif lower.get("kind") != "UNBOUNDED_PRECEDING":
        raise _refuse(node, f"a frame starting at {lower.get('kind')} is not modelled")
    elif node.spec.get("unboundedOverVersion") != 2:
        raise _refuse(
            node,
            "table.exec.unbounded-over.version 1 (RowTimeRowsUnboundedPrecedingFunction, one timer per"
            " watermark) is not modelled; Flink 2.3.0's default, version 2, is",
        )
    partition = (spec.get("partition") or {}).get("fields") or []
    calls = tuple(
        _call(node, fields, call, bounded=preceding is not None) for call in group.get("aggCalls") or []
    )
    if not calls:
        raise _refuse(node, "has no aggregate call")
    return OverAggregateConfig(
        partition_by=tuple(_name(node, fields, i) for i in partition),
        frame="rows" if group.get("isRows") else "range",
        preceding=preceding,
        aggregates=calls,
    )


def _preceding(node: Node, spec: Mapping[str, Any], lower: Mapping[str, Any]) -> int:
    """A bounded frame's size: ROWS n PRECEDING gives n, RANGE INTERVAL … PRECEDING its milliseconds.
    The plan states it as a constant, numbered after the input's fields."""
    offset = lower.get("offset")
    index = offset.get("inputIndex") if isinstance(offset, dict) else None
    first, constants = spec.get("originalInputFields"), spec.get("constants")
    if not (isinstance(index, int) and isinstance(first, int) and isinstance(constants, list)):
        raise _refuse(node, "its frame's bound is not a constant the plan states")
    if not 0 <= index - first < len(constants) or not isinstance(constants[index - first], dict):
        raise _refuse(node, "its frame's bound is not a constant the plan states")
    value = constants[index - first].get("value")
    try:
        size = int(str(value))
    except ValueError:
        raise _refuse(node, f"its frame's bound {value!r} is not a whole number") from None
    if size < 0:
        raise _refuse(node, f"its frame's bound {size} is negative")
    return size


def _call(
    node: Node, fields: Sequence[Mapping[str, Any]], call: Mapping[str, Any], *, bounded: bool = False
) -> AggregateCall:
    internal = str(call.get("internalName"))
    kind = str(call.get("type", ""))
    if (
        bounded
        and internal in ("$$SUM0$1", "$SUM$1", "$AVG$1")
        and kind.split()[0] in ("FLOAT", "DOUBLE", "REAL")
    ):
        raise _refuse(
            node, f"{internal} over {kind} in a bounded frame (Flink adds and retracts; floating sums drift)"
        )
    function = AGGREGATES.get(internal)
    if function is None:
        raise _refuse(node, f"aggregate {internal} is not one wmviz models ({', '.join(AGGREGATES)})")
    if call.get("distinct") or call.get("filterArg", -1) != -1:
        raise _refuse(node, f"{internal} with DISTINCT or FILTER is not modelled")
    args = call.get("argList") or []
    if len(args) > 1:
        raise _refuse(node, f"{internal} over {len(args)} columns is not modelled")
    if not args:
        if function != "count":
            raise _refuse(node, f"{internal} without an argument is not modelled")
        return AggregateCall("count_star", None, str(call.get("name")))
    return AggregateCall(function, _name(node, fields, args[0]), str(call.get("name")))


def read_deduplicate(node: Node, job: SqlJob) -> DeduplicateConfig:
    """A deduplication's config: keys, which row it keeps, and which function the plan runs."""
    fields = _input_fields(node, job)
    spec = node.spec
    if spec.get("isRowtime") is not True:
        raise _refuse(node, "deduplicates on processing time, which wmviz does not model")
    found = spec.get("configuration")
    options: Mapping[str, Any] = found if isinstance(found, dict) else {}
    if str(options.get("table.exec.mini-batch.enabled", "false")).lower() == "true":
        raise _refuse(
            node, "a mini-batch deduplication (RowTimeMiniBatchDeduplicateFunction) is not modelled"
        )
    if not any(_is_rowtime(f) for f in fields):
        raise _refuse(node, "its input has no row-time attribute")
    sensitive = str(options.get("table.exec.deduplicate.insert-update-after-sensitive-enabled", "true"))
    return DeduplicateConfig(
        partition_by=tuple(_name(node, fields, i) for i in _list(spec.get("uniqueKeys"))),
        keep="last" if spec.get("keepLastRow") else "first",
        insert_only=bool(spec.get("outputInsertOnly", False)),
        generate_update_before=bool(spec.get("generateUpdateBefore", False)),
        generate_insert=sensitive.lower() == "true",
    )


def _list(value: object) -> list[object]:
    return value if isinstance(value, list) else []


def read_temporal_sort(node: Node, job: SqlJob) -> TemporalSortConfig:
    """A temporal sort's config: the ORDER BY columns after the time attribute."""
    fields = _input_fields(node, job)
    order = _order_fields(node, node.spec.get("orderBy"))
    _time_first(node, fields, order)
    then_by: list[str] = []
    descending: list[str] = []
    for item in order[1:]:
        name = _name(node, fields, item.get("index"))
        ascending = item.get("isAscending") is True
        if bool(item.get("nullIsLast")) == ascending:
            raise _refuse(
                node, f"orders NULLs of {name} against the default (NULLS FIRST/LAST), not modelled"
            )
        then_by.append(name)
        if not ascending:
            descending.append(name)
    return TemporalSortConfig(then_by=tuple(then_by), descending=tuple(descending))
