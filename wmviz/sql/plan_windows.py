"""The plan reader of SQL's slicing window aggregate (TUMBLE, HOP, CUMULATE): a COMPILE PLAN
`stream-exec-window-aggregate` (one phase) or `stream-exec-global-window-aggregate` (the global half
of two; the local half before it passes rows on) node read into `SqlWindowConfig`.

What the core does not model is refused by name (`OperatorRefused`), never approximated: SESSION
windows (`wmviz/sql/plan_session.py`), processing time, DISTINCT or FILTER aggregates, functions
other than COUNT, SUM, MIN, MAX and AVG, windows whose bounds come from an upstream window TVF.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from wmviz.core.sql_aggregates import AggregateCall
from wmviz.core.sql_windows_config import SqlWindowConfig, WindowKind
from wmviz.sql.model import Node, OperatorRefused, SqlJob, fields_of

_FUNCTIONS = {
    "$COUNT$1": "count",
    "$SUM$1": "sum",
    "$SUM0$1": None,
    "$MIN$1": "min",
    "$MAX$1": "max",
    "$AVG$1": "avg",
}
_KINDS: dict[str, WindowKind] = {"TUMBLE": "tumble", "HOP": "hop", "CUMULATE": "cumulate"}


def window_config(node: Node, job: SqlJob) -> SqlWindowConfig:
    """The window aggregate `node` runs, as the core's config (OperatorRefused for what is not modelled)."""
    where = f"{node.name} (plan node {node.id})"
    spec, window = node.spec, node.window
    if window is None or window.kind not in _KINDS:
        kind = window.kind if window is not None else "an unknown window"
        raise OperatorRefused(f"{where}: {kind} windows are not modelled by the slicing window aggregate")
    if not window.rowtime:
        raise OperatorRefused(f"{where}: processing-time windows are not modelled (only event time)")
    windowing = spec.get("windowing")
    strategy = windowing.get("strategy") if isinstance(windowing, dict) else None
    if strategy not in ("TimeAttribute", "SliceAttached"):
        raise OperatorRefused(
            f"{where}: windowing {strategy!r} (window bounds from an earlier window TVF) is not modelled"
        )
    inputs = _input_fields(node, job)
    grouping = [int(i) for i in _list(spec.get("grouping"))]
    keys = tuple(inputs[i] for i in grouping)
    calls = tuple(_call(where, raw, inputs) for raw in _list(spec.get("aggCalls")))
    if not calls:
        raise OperatorRefused(f"{where}: a window aggregate without aggregate calls is not modelled")
    size = window.size_ms
    assert size is not None
    zone = (job.local_time_zone.value or "UTC") if window.time_kind == "TIMESTAMP_LTZ" else "UTC"
    if zone == "default":
        zone = "UTC"
    return SqlWindowConfig(
        window=_KINDS[window.kind],
        size_ms=size,
        slide_ms=window.slide_ms if window.kind == "HOP" else None,
        step_ms=window.step_ms if window.kind == "CUMULATE" else None,
        offset_ms=window.offset_ms or 0,
        keys=keys,
        aggregates=calls,
        zone=zone,
        two_phase=node.flink_type == "stream-exec-global-window-aggregate",
    )


def _input_fields(node: Node, job: SqlJob) -> tuple[str, ...]:
    """The names the grouping and the calls' arguments index: the local stage's input for a global
    node (`localAggInputRowType`), else the node's own input."""
    local = node.spec.get("localAggInputRowType")
    if isinstance(local, dict):
        return tuple(str(f.get("name")) for f in _list(local.get("fields")) if isinstance(f, dict))
    edges = job.inputs_of(node.id)
    return fields_of(job.node(edges[0].source)) if edges else ()


def _call(where: str, raw: object, inputs: Sequence[str]) -> AggregateCall:
    if not isinstance(raw, Mapping):
        raise OperatorRefused(f"{where}: an aggregate call it cannot read")
    name, internal = str(raw.get("name")), str(raw.get("internalName"))
    function = _FUNCTIONS.get(internal)
    if function is None:
        raise OperatorRefused(
            f"{where}: aggregate {internal.strip('$').split('$')[0]} ({name}) is not modelled"
        )
    if raw.get("distinct") or raw.get("filterArg", -1) != -1:
        raise OperatorRefused(f"{where}: DISTINCT or FILTER aggregates ({name}) are not modelled")
    args = [int(a) for a in _list(raw.get("argList"))]
    if function == "count" and not args:
        return AggregateCall("count_star", None, name)
    if len(args) != 1:
        raise OperatorRefused(f"{where}: aggregate {name} over {len(args)} columns is not modelled")
    return AggregateCall(function, inputs[args[0]], name)  # type: ignore[arg-type]


def _list(value: object) -> list:
    return list(value) if isinstance(value, list) else []
