"""The job as a person reads it, as the `--json` object, and as a `wmviz-sqljob/1` file.

`lines` is what `wmviz plan` prints: each source table, where its watermark is made, its
expression, emit strategy, idle timeout and alignment, each value with where it came from; then the
operators with their inputs in order and what each does with event time; then the lint. `as_json`
is `{"sources": […], "lint": […]}` plus `input` and `notes`. `job_document` is the description the
replay reads (docs/sql.md §The job file), and `expr_json` / `expr_from_json` its expressions.
"""

from __future__ import annotations

from typing import Any

from wmviz.core.sql_expr import CastTo, Column, Expr, Shifted, ToTimestampLtz
from wmviz.sql.lint import Finding
from wmviz.sql.model import WHERE_SAID, Alignment, Node, Origin, Setting, SourceTable, SqlJob
from wmviz.view.timefmt import duration

FORMAT = "wmviz-sqljob/1"
INPUT_SAID = {
    "compile-plan": "COMPILE PLAN",
    "explain": "EXPLAIN",
    "rest-plan": "REST plan",
    "sql": "SQL script (compiled by Flink's planner)",
}


def _ms(value: int | None) -> str:
    return "none" if not value else duration(value)


def _said(setting: Setting[Any], text: str) -> str:
    note = f"; {setting.note}" if setting.note else ""
    return f"{text} ({setting.origin.value}{note})"


def source_lines(source: SourceTable) -> list[str]:
    """One source table, as a few indented lines."""
    connector = f" [{source.connector.value}]" if source.connector.value else ""
    lines = [f"table {source.table}{connector}: {WHERE_SAID[source.where]}"]
    if source.where_note:
        lines.append(f"  (known as: {source.where_note})")
    if source.where is None:
        return lines
    reads = ", ".join(f"{c} {k}" for c, k in source.column_kinds.items())
    rowtime = f"rowtime {source.rowtime}" if source.rowtime else ""
    detail = "; ".join(x for x in (rowtime, f"reads {reads}" if reads else "") if x)
    expression = source.expression_text or "not in the input"
    lines.append(f"  expression   {expression}" + (f"   ({detail})" if detail else ""))
    if source.where == "source-defined":
        return lines
    emit = source.emit
    if emit.value:
        lines.append("  emit         " + _said(emit, emit.value))
    else:
        unknown = emit.origin is Origin.UNKNOWN
        lines.append(
            "  emit         " + (f"unknown ({emit.note})" if unknown else f"no strategy: {emit.note}")
        )
    idle = source.idle_timeout_ms
    unknown_idle = idle.origin is Origin.UNKNOWN and not idle.value
    lines.append(
        "  idle timeout " + (f"unknown ({idle.note})" if unknown_idle else _said(idle, _ms(idle.value)))
    )
    lines.append("  alignment    " + _alignment_text(source.alignment))
    return lines


def _alignment_text(align: Alignment | None) -> str:
    if align is None:
        return "none"
    state = "on" if align.enabled else "off"
    return (
        f"{state}: group {_said(align.group, repr(align.group.value))}, "
        f"max drift {_said(align.max_drift_ms, _ms(align.max_drift_ms.value))}, "
        f"update interval {_said(align.update_interval_ms, _ms(align.update_interval_ms.value))}"
    )


def node_line(node: Node, job: SqlJob) -> str:
    """One operator: id, name, inputs in order, what it does with event time."""
    inputs = job.inputs_of(node.id)
    names = ["left", "right"] if len(inputs) == 2 and job.input_order_known else []
    fed = ", ".join(f"{names[i] + ' ' if names else ''}{e.source}" for i, e in enumerate(inputs))
    what = node.behaviour.value + _details(node)
    return f"  {node.id:>4} {node.name}" + (f" <- {fed}" if fed else "") + f": {what}"


def _signed(ms: int) -> str:
    return f"{'-' if ms < 0 else '+'} {duration(abs(ms)) if ms else '0'}"


def _details(node: Node) -> str:
    if node.window is not None:
        w = node.window
        sizes = ", ".join(
            f"{label} {duration(v)}"
            for label, v in (
                ("size", w.size_ms),
                ("slide", w.slide_ms),
                ("step", w.step_ms),
                ("gap", w.gap_ms),
                ("offset", w.offset_ms),
            )
            if v is not None
        )
        time = f" on {w.time_column}" if w.time_column else ""
        return f" ({w.kind}{time}{', ' + sizes if sizes else ''})"
    if node.join_bounds is not None:
        b = node.join_bounds
        early = f", early fire after {duration(node.early_fire_delay_ms)}" if node.early_fire_delay_ms else ""
        clock = "event time" if b.event_time else "processing time"
        bounds = f"[right {_signed(b.left_lower_ms)}, right {_signed(b.left_upper_ms)}]"
        return f" (left within {bounds}, {clock}{early})"
    if node.mini_batch_interval_ms:
        mode = f", {node.mini_batch_mode}" if node.mini_batch_mode else ""
        return f" (every {duration(node.mini_batch_interval_ms)}{mode})"
    return ""


def lines(job: SqlJob, findings: list[Finding]) -> list[str]:
    """Everything `wmviz plan` prints."""
    out = [f"{INPUT_SAID[job.input_kind]}: {len(job.nodes)} operators, {len(job.sources)} source tables"]
    for source in job.sources:
        out.extend(source_lines(source))
    out.append(
        "operators (inputs in order):" if job.input_order_known else "operators (input order not known):"
    )
    out.extend(node_line(n, job) for n in job.nodes)
    out.append("lint:" if findings else "lint: nothing found")
    out.extend(f"  [{f.code}] {f.message}" for f in findings)
    out.extend(f"note: {note}" for note in job.notes)
    return out


def _setting_json(setting: Setting[Any]) -> dict[str, Any]:
    found = {"value": setting.value, "from": setting.origin.value}
    return {**found, "note": setting.note} if setting.note else found


def source_json(source: SourceTable) -> dict[str, Any]:
    """A source as `--json` gives it: the fixed keys, then where each value came from."""
    return {
        "table": source.table,
        "watermark": {
            "where": source.where,
            "expression": source.expression_text,
            "emit": source.emit.value if source.where == "source" else None,
            "idle_timeout_ms": source.idle_timeout_ms.value,
            "emit_from": source.emit.origin.value,
            "idle_timeout_from": source.idle_timeout_ms.origin.value,
            "rowtime": source.rowtime,
            "where_known_as": source.where_note or None,
            "alignment": _alignment_json(source.alignment),
        },
    }


def _alignment_json(align: Alignment | None) -> dict[str, Any] | None:
    if align is None:
        return None
    return {
        "enabled": align.enabled,
        "group": _setting_json(align.group),
        "max_drift_ms": _setting_json(align.max_drift_ms),
        "update_interval_ms": _setting_json(align.update_interval_ms),
    }


def as_json(job: SqlJob, findings: list[Finding]) -> dict[str, Any]:
    """The `--json` object."""
    return {
        "sources": [source_json(s) for s in job.sources],
        "lint": [f.as_json() for f in findings],
        "input": job.input_kind,
        "notes": list(job.notes),
    }


def expr_json(expr: Expr) -> dict[str, Any]:
    """An expression as JSON: `{"column"}`, `{"shift", "by_ms"}`, `{"cast", "to", "precision"}`,
    `{"to_timestamp_ltz", "precision"}`."""
    if isinstance(expr, Column):
        return {"column": expr.name}
    if isinstance(expr, Shifted):
        return {"shift": expr_json(expr.operand), "by_ms": expr.by_ms}
    if isinstance(expr, CastTo):
        return {"cast": expr_json(expr.operand), "to": expr.target, "precision": expr.precision}
    return {"to_timestamp_ltz": expr_json(expr.operand), "precision": expr.precision}


def expr_from_json(value: dict[str, Any]) -> Expr:
    """The inverse of `expr_json` (KeyError / ValueError on another shape)."""
    if "column" in value:
        return Column(str(value["column"]))
    if "shift" in value:
        return Shifted(expr_from_json(value["shift"]), int(value["by_ms"]))
    if "cast" in value:
        target = value["to"]
        if target not in ("TIMESTAMP", "TIMESTAMP_LTZ"):
            raise ValueError(f"cast to {target!r}")
        return CastTo(expr_from_json(value["cast"]), target, int(value["precision"]))
    precision = int(value["precision"])
    if precision not in (0, 3):
        raise ValueError(f"TO_TIMESTAMP_LTZ precision {precision}")
    return ToTimestampLtz(expr_from_json(value["to_timestamp_ltz"]), 0 if precision == 0 else 3)


def _node_json(node: Node) -> dict[str, Any]:
    found: dict[str, Any] = {
        "id": node.id,
        "type": node.flink_type,
        "name": node.name,
        "event_time": node.behaviour.name.lower(),
    }
    extras = {
        "table": node.table,
        "window": _window_json(node),
        "join_bounds": _bounds_json(node),
        "early_fire_delay_ms": node.early_fire_delay_ms,
        "mini_batch_interval_ms": node.mini_batch_interval_ms,
        "mini_batch_mode": node.mini_batch_mode,
        "parallelism": node.parallelism,
    }
    return {**found, **{k: v for k, v in extras.items() if v is not None}}


def _window_json(node: Node) -> dict[str, Any] | None:
    if node.window is None:
        return None
    return {k: v for k, v in _fields(node.window).items() if v is not None}


def _fields(obj: Any) -> dict[str, Any]:
    return {name: getattr(obj, name) for name in obj.__dataclass_fields__}


def _bounds_json(node: Node) -> dict[str, Any] | None:
    return _fields(node.join_bounds) if node.join_bounds is not None else None


def _source_config(source: SourceTable) -> dict[str, Any]:
    return {
        "table": source.table,
        "node": source.node_id,
        "where": source.where,
        "expression": expr_json(source.expression) if source.expression is not None else None,
        "expression_text": source.expression_text,
        "refused": source.expression_error or None,
        "rowtime": source.rowtime,
        "column_kinds": dict(source.column_kinds),
        "emit": _setting_json(source.emit),
        "idle_timeout_ms": _setting_json(source.idle_timeout_ms),
        "alignment": _alignment_json(source.alignment),
        "connector": source.connector.value,
        "partitions": source.partitions,
        "parallelism": source.parallelism,
    }


def job_document(job: SqlJob) -> dict[str, Any]:
    """The `wmviz-sqljob/1` description: graph with input order, behaviours, source configs."""
    return {
        "format": FORMAT,
        "input": job.input_kind,
        "input_order_known": job.input_order_known,
        "local_time_zone": _setting_json(job.local_time_zone),
        "global_options": dict(job.global_options),
        "nodes": [_node_json(n) for n in job.nodes],
        "edges": [
            {"source": e.source, "target": e.target, "input": e.input, "shuffle": e.shuffle}
            for e in job.edges
        ],
        "sources": [_source_config(s) for s in job.sources],
        "notes": list(job.notes),
    }
