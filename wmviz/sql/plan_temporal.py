"""The event-time temporal join's config from its COMPILE PLAN node (`stream-exec-temporal-join`):
`JOIN versioned FOR SYSTEM_TIME AS OF probe.ts ON probe.k = versioned.k`, modelled by
`wmviz.core.sql_temporal_join`.

Read from the node's own JSON: `joinSpec` (the join type and the key columns of both inputs, by
position), the output field names (the build side's renamed, `currency0`), and the two inputs'
fields. What the core does not model is refused by name: a processing-time or temporal-table-function
join, a join condition beyond the key equality, a RIGHT/FULL join, state retention (`table.exec.state.ttl`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from wmviz.core.sql_temporal_join_config import TemporalJoinConfig
from wmviz.sql.model import Node, OperatorRefused, SqlJob, fields_of

JOIN_TYPES = {"INNER": "inner", "LEFT": "left"}
"""COMPILE PLAN's `joinSpec.joinType` -> the core's `join`."""


def read_temporal_join(node: Node, job: SqlJob) -> TemporalJoinConfig:
    """The temporal join `node` plans, or OperatorRefused naming what wmviz does not model."""
    where = f"{node.name} (plan node {node.id})"
    spec = node.spec
    join = spec.get("joinSpec")
    if not isinstance(join, dict):
        raise OperatorRefused(f"{where}: the plan gives no joinSpec")
    if spec.get("isTemporalFunctionJoin"):
        raise OperatorRefused(f"{where}: a temporal table function join (LATERAL TABLE) is not modelled")
    join_type = JOIN_TYPES.get(str(join.get("joinType")))
    if join_type is None:
        kind = join.get("joinType")
        raise OperatorRefused(f"{where}: a {kind} temporal join is not modelled (INNER, LEFT only)")
    if join.get("nonEquiCondition") is not None:
        raise OperatorRefused(f"{where}: a join condition beyond the key equality is not modelled")
    ttl = job.global_options.get("table.exec.state.ttl", "0")
    if ttl.strip() not in ("0", "0 ms", "0ms", ""):
        raise OperatorRefused(f"{where}: state retention (table.exec.state.ttl = {ttl}) is not modelled")
    probe, build = _input_fields(node, job, where)
    if not _is_rowtime(spec, "leftTimeAttributeIndex", _input_types(node, job, 0)):
        raise OperatorRefused(f"{where}: a processing-time temporal join is not modelled (event time only)")
    output = fields_of(node)
    if output[: len(probe)] != probe or len(output) != len(probe) + len(build):
        raise OperatorRefused(f"{where}: its output fields are not the probe's then the build side's")
    return TemporalJoinConfig(
        join_type=join_type,  # type: ignore[arg-type]
        probe_key=_columns(join.get("leftKeys"), probe, where, "leftKeys"),
        build_key=_columns(join.get("rightKeys"), build, where, "rightKeys"),
        build_columns=build,
        build_fields=output[len(probe) :],
    )


def _input_fields(node: Node, job: SqlJob, where: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The probe (input 0) and build (input 1) fields, from the nodes feeding them."""
    edges = job.inputs_of(node.id)
    if len(edges) != 2:
        raise OperatorRefused(f"{where}: a temporal join needs two inputs, the plan gives {len(edges)}")
    probe, build = (fields_of(job.node(edge.source)) for edge in edges)
    if not probe or not build:
        raise OperatorRefused(f"{where}: the plan does not give its inputs' fields")
    return probe, build


def _input_types(node: Node, job: SqlJob, index: int) -> list[Any]:
    output = job.node(job.inputs_of(node.id)[index].source).spec.get("outputType")
    fields = output.get("fields", []) if isinstance(output, dict) else []
    return [f.get("fieldType") for f in fields if isinstance(f, dict)]


def _is_rowtime(spec: Mapping[str, object], name: str, types: list[Any]) -> bool:
    """Whether the time attribute the node names is a row-time (event-time) column."""
    index = spec.get(name)
    if not isinstance(index, int) or not 0 <= index < len(types):
        return False
    kind = types[index]
    return isinstance(kind, dict) and kind.get("kind") == "ROWTIME"


def _columns(indexes: Any, fields: tuple[str, ...], where: str, name: str) -> tuple[str, ...]:
    if not isinstance(indexes, list) or not indexes:
        raise OperatorRefused(f"{where}: the plan gives no joinSpec.{name}")
    if not all(isinstance(i, int) and 0 <= i < len(fields) for i in indexes):
        raise OperatorRefused(f"{where}: joinSpec.{name} {indexes} are not columns of its input")
    return tuple(fields[i] for i in indexes)
