"""Read a SESSION window aggregate's plan node into the core's `SqlSessionConfig`.

The node is COMPILE PLAN's `stream-exec-window-aggregate` whose `windowing.window` is a
`SessionWindow` (the slicing windows share the node type; the dispatch between them is the
operator table's). What the reader takes from the node's own JSON: the gap (`window.gap`, an ISO
duration), the partition keys (`partition_key_indices`, into the input's fields), the grouping
(which must be those keys: the planner only keeps a SESSION aggregate grouped so), the aggregate
calls (`aggCalls`) and the window columns (`namedWindowProperties`). Anything else is refused by
name (`OperatorRefused`): a processing-time or TIMESTAMP_LTZ session, DISTINCT or FILTER calls,
functions wmviz does not model, an input that retracts.

The planner plans SESSION in one phase whatever `table.optimizer.agg-phase-strategy` says (checked
against Flink 2.3.0: TWO_PHASE still gives a single WindowAggregate), so there is no local/global
pair to read.
"""

from __future__ import annotations

import re
from typing import Any

from wmviz.core.sql_aggregates import AggregateError, parse_call
from wmviz.core.sql_session_config import SqlSessionConfig
from wmviz.sql.model import Node, OperatorRefused, SqlJob, fields_of

_DURATION = re.compile(r"^PT(?:(?P<h>\d+)H)?(?:(?P<m>\d+)M)?(?:(?P<s>\d+)(?:\.(?P<f>\d{1,9}))?S)?$")
_FUNCTIONS = {"$COUNT$1": "COUNT", "$SUM$1": "SUM", "$SUM0$1": None, "$MIN$1": "MIN", "$MAX$1": "MAX"}
_FUNCTIONS |= {"$AVG$1": "AVG"}
_PROPERTIES = {"WindowStart": "window_start", "WindowEnd": "window_end", "Rowtime": "window_time"}


def session_config(node: Node, job: SqlJob) -> SqlSessionConfig:
    """The SESSION aggregate `node` models, read from its COMPILE PLAN JSON."""
    where = f"{node.name} (plan node {node.id})"
    spec: dict[str, Any] = dict(node.spec)
    windowing = _object(spec.get("windowing"))
    window = _object(windowing.get("window"))
    if window.get("type") != "SessionWindow":
        raise OperatorRefused(f"{where}: a {window.get('type') or 'missing'} window is not a SESSION window")
    if windowing.get("strategy") != "TimeAttribute" or not windowing.get("isRowtime"):
        raise OperatorRefused(f"{where}: only an event-time SESSION on a time attribute is modelled")
    time_type = _object(windowing.get("timeAttributeType")).get("type")
    if time_type != "TIMESTAMP_WITHOUT_TIME_ZONE":
        raise OperatorRefused(f"{where}: a {time_type} time attribute (sessions shifted by the time zone)")
    if spec.get("needRetraction"):
        raise OperatorRefused(f"{where}: an input that retracts rows")
    inputs = _input_fields(node, job, where)
    partition = tuple(_field(inputs, i, where) for i in window.get("partition_key_indices") or ())
    grouping = tuple(_field(inputs, i, where) for i in spec.get("grouping") or ())
    if not spec.get("aggCalls"):
        raise OperatorRefused(
            f"{where}: a SESSION aggregate without aggregate calls (not checked against Flink)"
        )
    if grouping != partition:
        raise OperatorRefused(f"{where}: grouped by {list(grouping)} but partitioned by {list(partition)}")
    config = SqlSessionConfig(
        gap_ms=_gap_ms(window.get("gap"), where),
        partition_by=partition,
        aggregates=tuple(_call(call, inputs, where) for call in spec.get("aggCalls") or ()),
        properties=tuple(_property(p, where) for p in spec.get("namedWindowProperties") or ()),
    )
    if fields_of(node) != config.output_fields():
        raise OperatorRefused(
            f"{where}: output fields {list(fields_of(node))} are not keys, aggregates, window columns"
        )
    return config


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _input_fields(node: Node, job: SqlJob, where: str) -> tuple[str, ...]:
    edges = job.inputs_of(node.id)
    fields = fields_of(job.node(edges[0].source)) if len(edges) == 1 else ()
    if not fields:
        raise OperatorRefused(f"{where}: its input's fields are not in the plan")
    return fields


def _field(fields: tuple[str, ...], index: Any, where: str) -> str:
    if not isinstance(index, int) or not 0 <= index < len(fields):
        raise OperatorRefused(f"{where}: input field {index!r} is not one of its {len(fields)} inputs")
    return fields[index]


def _gap_ms(text: Any, where: str) -> int:
    """An ISO-8601 duration (`PT10S`, `PT1M30S`, `PT0.25S`) in milliseconds."""
    match = _DURATION.match(text) if isinstance(text, str) else None
    if match is None or not any(match.groupdict().values()):
        raise OperatorRefused(f"{where}: the gap {text!r} is not a duration wmviz reads")
    fraction = (match["f"] or "").ljust(9, "0")
    nanos = int(fraction) if fraction else 0
    if nanos % 1_000_000:
        raise OperatorRefused(f"{where}: a gap of {text} is finer than a millisecond")
    hours, minutes, seconds = (int(match[g] or 0) for g in ("h", "m", "s"))
    return ((hours * 60 + minutes) * 60 + seconds) * 1000 + nanos // 1_000_000


def _call(call: Any, inputs: tuple[str, ...], where: str) -> Any:
    """One `aggCalls` entry as the core's call (`COUNT(*) AS n`)."""
    call = _object(call)
    name, internal = call.get("name"), call.get("internalName")
    function = _FUNCTIONS.get(internal) if isinstance(internal, str) else None
    if function is None:
        raise OperatorRefused(
            f"{where}: the aggregate {internal or call.get('syntax')} ({name}) is not modelled"
        )
    if call.get("distinct") or call.get("filterArg", -1) != -1 or call.get("approximate"):
        raise OperatorRefused(f"{where}: {function} with DISTINCT, FILTER or approximation ({name})")
    args = call.get("argList") or []
    if len(args) > 1:
        raise OperatorRefused(f"{where}: {function} over {len(args)} columns ({name})")
    argument = _field(inputs, args[0], where) if args else "*"
    try:
        return parse_call(f"{function}({argument}) AS {name}")
    except AggregateError as exc:
        raise OperatorRefused(f"{where}: {exc}") from None


def _property(named: Any, where: str) -> str:
    named = _object(named)
    kind = _object(named.get("property")).get("kind")
    canonical = _PROPERTIES.get(kind) if isinstance(kind, str) else None
    if canonical is None or named.get("name") != canonical:
        raise OperatorRefused(f"{where}: the window column {named.get('name')!r} ({kind}) is not modelled")
    return canonical
