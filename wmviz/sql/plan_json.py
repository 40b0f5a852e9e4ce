"""A `COMPILE PLAN` JSON read into a `SqlJob` (docs/sql.md §COMPILE PLAN).

What the plan says and where: every node under `nodes` (`id`, `type` such as
`stream-exec-table-source-scan_1`, `description`), every edge under `edges` with the edges into one
target listed left input first; a scan's table under `scanTableSource.table` (`identifier`, and
with `table.plan.compile.catalog-objects` = ALL, the default, a permanent table's `resolvedTable`
with its `schema` and its `options`, OPTIONS hints merged in; a temporary table is written as its
identifier alone); a pushed-down watermark as the scan's `WatermarkPushDown` ability
(`watermarkExpr` over the source's own fields, `idleTimeoutMillis` = the global idle timeout at
compile time or -1, `watermarkParams` = the table's `scan.watermark.*` values), `SOURCE_WATERMARK()`
as a `SourceWatermark` ability, and a separate assigner as a `stream-exec-watermark-assigner` node.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from wmviz.core.sql_expr import TypeKind, UnsupportedExpression, columns_read
from wmviz.core.sql_value import json_type
from wmviz.sql import sources
from wmviz.sql.digest import Tree, render, rex_tree, row_fields, time_kind, to_expr
from wmviz.sql.errors import PlanError, check_count
from wmviz.sql.model import (
    ASSIGNER_EMITS,
    Behaviour,
    JoinBounds,
    Node,
    Origin,
    Setting,
    SourceTable,
    SqlJob,
    WindowSpec,
    kind_of_type,
    ordered_edges,
    plain_type,
)
from wmviz.sql.plan_nodes import node_name, window_from_json

Json = dict[str, Any]


def is_compile_plan(doc: object) -> bool:
    """Whether decoded JSON has COMPILE PLAN's shape: `flinkVersion`, `nodes` and `edges`."""
    return isinstance(doc, dict) and "nodes" in doc and "edges" in doc and "flinkVersion" in doc


def field(obj: Json, key: str, kind: type | tuple[type, ...], where: str) -> Any:
    """`obj[key]`, which must be there and of `kind`; a PlanError naming `where` and `key` otherwise."""
    if key not in obj:
        raise PlanError(where, f"has no field {key!r}")
    value = obj[key]
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
        raise PlanError(f"{where} field {key!r}", f"is {json_type(value)}, not {_kind_name(kind)}")
    return value


def _kind_name(kind: type | tuple[type, ...]) -> str:
    names = {dict: "an object", list: "an array", str: "a string", int: "a whole number"}
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(names.get(k, k.__name__) for k in kinds)


def read_compile_plan(doc: Json) -> SqlJob:
    """The job a COMPILE PLAN describes."""
    raw_nodes = field(doc, "nodes", list, "the plan")
    raw_edges = field(doc, "edges", list, "the plan")
    check_count("nodes", len(raw_nodes))
    check_count("edges", len(raw_edges))
    by_id: dict[str, Json] = {}
    for index, raw in enumerate(raw_nodes):
        if not isinstance(raw, dict):
            raise PlanError(f"nodes[{index}]", f"is {json_type(raw)}, not an object")
        node_id = str(field(raw, "id", int, f"nodes[{index}]"))
        field(raw, "type", str, f"node {node_id}")
        if node_id in by_id:
            raise PlanError(f"nodes[{index}]", f"repeats node id {node_id}")
        by_id[node_id] = raw
    pairs = [_edge(raw, index, by_id) for index, raw in enumerate(raw_edges)]
    edges = ordered_edges(pairs)
    reader = _Reader(by_id, {e.target: e.source for e in edges if e.input == 0})
    nodes = tuple(reader.node(node_id, raw) for node_id, raw in by_id.items())
    sources_found = tuple(reader.source(n.id) for n in nodes if n.behaviour is Behaviour.SOURCE)
    return SqlJob(
        "compile-plan",
        nodes,
        edges,
        tuple(s for s in sources_found if s is not None),
        global_options=reader.global_options,
        local_time_zone=reader.local_time_zone(),
        notes=tuple(reader.notes),
    )


def _edge(raw: object, index: int, by_id: dict[str, Json]) -> tuple[str, str, str]:
    where = f"edges[{index}]"
    if not isinstance(raw, dict):
        raise PlanError(where, f"is {json_type(raw)}, not an object")
    ends = []
    for key in ("source", "target"):
        node_id = str(field(raw, key, int, where))
        if node_id not in by_id:
            raise PlanError(f"{where} field {key!r}", f"names node {node_id}, which the plan has not")
        ends.append(node_id)
    shuffle = raw.get("shuffle")
    return ends[0], ends[1], str(shuffle.get("type", "")) if isinstance(shuffle, dict) else ""


class _Reader:
    """The per-node reading of one plan, with what it learns about global options on the way."""

    def __init__(self, by_id: dict[str, Json], first_input: dict[str, str]) -> None:
        self.by_id = by_id
        self.first_input = first_input
        self.global_options: dict[str, str] = {}
        self.notes: list[str] = []
        self._zones: set[str] = set()
        self.global_idle_ms = _recorded_global_idle(by_id.values())
        if self.global_idle_ms:
            self.global_options[sources.GLOBAL_IDLE] = f"{self.global_idle_ms} ms"

    def node(self, node_id: str, raw: Json) -> Node:
        flink_type = raw["type"]
        kind = kind_of_type(flink_type)
        behaviour = kind.behaviour if kind else Behaviour.PASSES
        table = _table_name(raw) if behaviour in (Behaviour.SOURCE, Behaviour.SINK) else None
        window = self._window(node_id, raw)  # a local window aggregate names the time column too
        bounds, early = _join_bounds(raw, node_id) if behaviour is Behaviour.INTERVAL_JOIN else (None, None)
        batch = raw.get("miniBatchInterval")
        interval = batch.get("interval") if isinstance(batch, dict) else None
        self._note_config(raw)
        return Node(
            node_id,
            plain_type(flink_type),
            node_name(kind.label if kind else plain_type(flink_type), table),
            behaviour,
            digest=str(raw.get("description", "")),
            table=table,
            window=window,
            join_bounds=bounds,
            early_fire_delay_ms=early,
            mini_batch_interval_ms=interval if isinstance(interval, int) else None,
            mini_batch_mode=str(batch["mode"]) if isinstance(batch, dict) and "mode" in batch else None,
            spec=raw,
        )

    def _note_config(self, raw: Json) -> None:
        config = raw.get("configuration")
        if isinstance(config, dict) and isinstance(config.get(sources.LOCAL_TIME_ZONE), str):
            self._zones.add(config[sources.LOCAL_TIME_ZONE])

    def local_time_zone(self) -> Setting[str]:
        if len(self._zones) == 1:
            zone = next(iter(self._zones))
            if zone == "default":
                return Setting(None, Origin.DEFAULT, "'default': the JVM's zone where the job runs")
            return Setting(zone, Origin.PLAN)
        return Setting(None, Origin.UNKNOWN)

    def _window(self, node_id: str, raw: Json) -> WindowSpec | None:
        """The window, its time column named from the input's fields; a two-phase aggregate's global
        half (no time attribute index of its own) takes the column its local half names."""
        input_id = self.first_input.get(node_id)
        fields = row_fields(self.by_id[input_id].get("outputType")) if input_id else []
        window = window_from_json(raw, fields)
        current = input_id
        while window is not None and window.time_column is None and current is not None:
            upstream = self.first_input.get(current)
            windowing = self.by_id[current].get("windowing")
            if isinstance(windowing, dict) and upstream is not None:
                local = window_from_json(
                    self.by_id[current], row_fields(self.by_id[upstream].get("outputType"))
                )
                if local is not None and local.time_column is not None:
                    return dataclasses.replace(window, time_column=local.time_column)
            current = upstream
        return window

    def source(self, scan_id: str) -> SourceTable | None:
        raw = self.by_id[scan_id]
        scan = raw.get("scanTableSource")
        if not isinstance(scan, dict) or not isinstance(scan.get("table"), dict):
            raise PlanError(f"node {scan_id}", "is a table source scan without 'scanTableSource.table'")
        table = scan["table"]
        name = _table_name(raw) or f"node {scan_id}"
        resolved = table.get("resolvedTable") if isinstance(table.get("resolvedTable"), dict) else None
        options = resolved.get("options") if resolved and isinstance(resolved.get("options"), dict) else None
        listed = scan.get("abilities")
        abilities = [a for a in listed if isinstance(a, dict)] if isinstance(listed, list) else []
        by_type = {a["type"]: a for a in abilities if isinstance(a.get("type"), str)}
        common = _common(name, scan_id, options)
        if "SourceWatermark" in by_type:
            return SourceTable(**common, where="source-defined", expression_text="SOURCE_WATERMARK()")
        if "WatermarkPushDown" in by_type:
            return self._pushed_down(common, by_type["WatermarkPushDown"], resolved, options)
        assigner = self._assigner_below(scan_id)
        if assigner is not None:
            return self._assigned(common, assigner, resolved)
        if resolved is None:
            self.notes.append(f"table {name}: the plan carries its name only (a temporary table)")
        return SourceTable(**common, where=None)

    def _pushed_down(
        self, common: dict[str, Any], spec: Json, resolved: Json | None, options: Any
    ) -> SourceTable:
        where = f"node {common['node_id']} ability 'WatermarkPushDown'"
        fields = row_fields(spec.get("producedType"))
        tree = rex_tree(field(spec, "watermarkExpr", dict, where), fields, f"{where} field 'watermarkExpr'")
        global_ms = spec.get("idleTimeoutMillis")
        global_idle = Setting(
            global_ms if isinstance(global_ms, int) and global_ms > 0 else None, Origin.GLOBAL
        )
        values = _param_values(spec.get("watermarkParams"), options, where)
        return SourceTable(
            **common,
            where="source",
            **_expression(tree, fields, common["table"]),
            rowtime=_rowtime(resolved),
            emit=sources.emit(values),
            idle_timeout_ms=sources.idle_timeout(values, global_idle),
            alignment=sources.alignment(values),
        )

    def _assigned(self, common: dict[str, Any], assigner: Json, resolved: Json | None) -> SourceTable:
        where = f"node {assigner['id']}"
        fields = row_fields(assigner.get("outputType"))
        tree = rex_tree(
            field(assigner, "watermarkExpr", dict, where), fields, f"{where} field 'watermarkExpr'"
        )
        index = assigner.get("rowtimeFieldIndex")
        rowtime = (
            fields[index][0] if isinstance(index, int) and 0 <= index < len(fields) else _rowtime(resolved)
        )
        idle: Setting[int] = Setting(
            None,
            Origin.UNKNOWN,
            "table.exec.source.idle-timeout where the plan runs: a COMPILE PLAN does not keep it "
            "for an assigner",
        )
        if self.global_idle_ms:
            idle = Setting(
                self.global_idle_ms, Origin.GLOBAL, "as the plan's pushed-down sources recorded it"
            )
        return SourceTable(
            **common,
            where="assigner",
            **_expression(tree, fields, common["table"]),
            rowtime=rowtime,
            emit=Setting(None, Origin.DEFAULT, ASSIGNER_EMITS),
            idle_timeout_ms=idle,
        )

    def _assigner_below(self, scan_id: str) -> Json | None:
        """The watermark assigner fed by a scan through single-input operators, if any."""
        current = scan_id
        for _ in range(len(self.by_id)):
            after = [t for t, s in self.first_input.items() if s == current]
            if len(after) != 1:
                return None
            current = after[0]
            raw = self.by_id[current]
            kind = kind_of_type(raw["type"])
            if kind and kind.behaviour is Behaviour.MAKES:
                return raw
            if kind is None or kind.behaviour is not Behaviour.PASSES:
                return None
        return None


def _recorded_global_idle(raw_nodes: Any) -> int | None:
    """The global idle timeout the plan's push-down specs recorded at compile time, if any."""
    for raw in raw_nodes:
        scan = raw.get("scanTableSource")
        abilities = scan.get("abilities") if isinstance(scan, dict) else None
        for ability in abilities if isinstance(abilities, list) else []:
            value = ability.get("idleTimeoutMillis") if isinstance(ability, dict) else None
            if isinstance(value, int) and value > 0:
                return value
    return None


def _common(table: str, node_id: str, options: Any) -> dict[str, Any]:
    connector = options.get("connector") if isinstance(options, dict) else None
    connector = connector if isinstance(connector, str) else None
    watermark_options = {
        k: Setting(str(v), Origin.HINT_OR_TABLE)
        for k, v in (options or {}).items()
        if isinstance(k, str) and k.startswith("scan.watermark.")
    }
    return {
        "table": table,
        "node_id": node_id,
        "connector": Setting(connector, Origin.HINT_OR_TABLE if connector else Origin.UNKNOWN),
        "watermark_options": watermark_options,
        "options_known": isinstance(options, dict),
    }


def _duration(params: Json, key: str, where: str) -> int | None:
    """A `watermarkParams` duration (`PT20S`), in ms; PlanError naming the field if it is none."""
    text = params.get(key)
    if text is None:
        return None
    try:
        return sources.parse_duration_ms(text) if isinstance(text, str) else None
    except ValueError:
        raise PlanError(f"{where} field 'watermarkParams.{key}'", f"is {text!r}, not a duration") from None


def _param_values(params: object, options: Any, where: str) -> dict[str, Setting[Any]]:
    """A push-down spec's `watermarkParams` as option values with their origin: merged hint or
    table option where the plan's options name the key, default where they do not, and 'the plan'
    where the plan has no options to tell by."""
    if not isinstance(params, dict):
        return {}
    emit = str(params.get("emitStrategy") or "ON_PERIODIC").lower().replace("_", "-")
    idle = params.get("sourceIdleTimeout")
    group = params.get("alignGroupName")
    raw: dict[str, Any] = {
        sources.EMIT: emit,
        sources.IDLE: idle if isinstance(idle, int) and idle >= 0 else None,
        sources.GROUP: group if isinstance(group, str) else None,
        sources.DRIFT: _duration(params, "alignMaxDrift", where),
        sources.UPDATE: _duration(params, "alignUpdateInterval", where),
    }
    values: dict[str, Setting[Any]] = {}
    for key, value in raw.items():
        if isinstance(options, dict):
            if key in options:
                values[key] = Setting(value, Origin.HINT_OR_TABLE)
        elif value is not None and (
            key == sources.IDLE or value not in (sources.OPTION_RULES[key].default, 0)
        ):
            values[key] = Setting(value, Origin.PLAN)  # set, as it differs from Flink's default
    return values


def _expression(tree: Tree, fields: list[tuple[str, str]], table: str) -> dict[str, Any]:
    """The expression's text, its typed tree (or why it was refused) and the kinds of the columns
    it reads."""
    kinds: dict[str, TypeKind] = {}
    try:
        expr = to_expr(tree, table)
    except UnsupportedExpression as err:
        return {"expression_text": render(tree), "expression_error": str(err)}
    types = dict(fields)
    for name in columns_read(expr):
        kind = time_kind(types.get(name, ""))
        if kind is not None:
            kinds[name] = kind
    return {"expression_text": render(tree), "expression": expr, "column_kinds": kinds}


def _rowtime(resolved: Json | None) -> str | None:
    schema = resolved.get("schema") if resolved else None
    specs = schema.get("watermarkSpecs") if isinstance(schema, dict) else None
    if isinstance(specs, list) and specs and isinstance(specs[0], dict):
        return str(specs[0].get("rowtimeAttribute"))
    return None


def _table_name(raw: Json) -> str | None:
    """The table a scan reads or a sink writes, by its own name (the identifier's last part)."""
    holder = raw.get("scanTableSource") or raw.get("dynamicTableSink")
    table = holder.get("table") if isinstance(holder, dict) else None
    identifier = table.get("identifier") if isinstance(table, dict) else None
    if not isinstance(identifier, str):
        return None
    return identifier.rsplit(".", 1)[-1].strip("`")


def _join_bounds(raw: Json, node_id: str) -> tuple[JoinBounds | None, int | None]:
    spec = raw.get("intervalJoinSpec")
    bounds = spec.get("windowBounds") if isinstance(spec, dict) else None
    early = raw.get("earlyFireDelay")
    early_ms = early if isinstance(early, int) else None
    if not isinstance(bounds, dict):
        return None, early_ms
    where = f"node {node_id} field 'intervalJoinSpec.windowBounds'"
    return (
        JoinBounds(
            bool(bounds.get("isEventTime")),
            field(bounds, "leftLowerBound", int, where),
            field(bounds, "leftUpperBound", int, where),
            bounds.get("leftTimeIndex"),
            bounds.get("rightTimeIndex"),
        ),
        early_ms,
    )
