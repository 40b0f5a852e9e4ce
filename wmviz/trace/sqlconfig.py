"""The rules over a generator's SQL fields (trace-format.md, "SQL watermarks"): which fields each
`style` takes, and the expression's shape, checked once where the config is read."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from wmviz.core.sql_expr import UnsupportedExpression, columns_read, result_kind

_EMITS = {
    "datastream": ("per-record", "periodic"),
    "sql-source": ("on-event", "on-periodic"),
}
"""The `emit` values a style takes (DataStream's words and `scan.watermark.emit.strategy`'s)."""


def sql_style_problems(values: dict[str, Any], data: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(field, reason) for every field the generator's `style` cannot take (`data`: as given)."""
    style = values["style"]
    if style in _EMITS and values["emit"] not in _EMITS[style]:
        words = " or ".join(_EMITS[style])
        yield "emit", f"{values['emit']} is not for style {style}; it emits {words}"
    if style in ("sql-source", "sql-assigner"):
        yield from _sql_problems(values, data)
        return
    for name, default in (("expression", None), ("column_type", "timestamp"), ("zone", "UTC")):
        if values[name] != default:
            yield name, f"only a SQL style (sql-source, sql-assigner) reads it, not {style}"


def _sql_problems(values: dict[str, Any], data: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """A SQL style: its expression and zone, and the DataStream fields it has no use for."""
    style, expression = values["style"], values["expression"]
    if expression is None and data.get("expression") is not None:
        pass  # given but refused: its own message says why
    elif expression is None:
        yield "expression", f"required for style {style} (the table's WATERMARK expression)"
    else:
        yield from _expression_problems(expression, values["column_type"])
    try:
        ZoneInfo(values["zone"])
    except (ZoneInfoNotFoundError, ValueError):
        yield "zone", f"{values['zone']!r} is not a time zone (an IANA name such as Europe/Berlin, or UTC)"
    if values["out_of_orderness_ms"]:
        yield "out_of_orderness_ms", "not used by a SQL style: the expression holds the delay"
    if style == "sql-source" and values["resume"] != "flip27-released":
        yield "resume", "a SQL source is a FLIP-27 source: it needs resume flip27-released"
    if style != "sql-assigner":
        return
    if values["emit"] != "per-record":
        yield "emit", "not used by style sql-assigner: it emits eagerly and at its timer (interval_ms)"
    for name in ("splits", "alignment"):
        if values[name]:
            yield name, "not used by style sql-assigner: one assigner sees its subtask's rows merged"


def _expression_problems(expression: Any, column_type: str) -> Iterator[tuple[str, str]]:
    """One column, of the declared type, giving a TIMESTAMP or TIMESTAMP_LTZ (Flink's code generator
    refuses any other result type)."""
    columns = columns_read(expression)
    if len(set(columns)) != 1:
        yield "expression", f"reads {len(set(columns))} columns; wmviz evaluates expressions of one column"
        return
    kind = {"timestamp": "TIMESTAMP", "timestamp_ltz": "TIMESTAMP_LTZ"}.get(column_type, "NUMBER")
    try:
        result = result_kind(expression, {columns[0]: kind})  # type: ignore[dict-item]
    except UnsupportedExpression as exc:
        yield "expression", str(exc)
        return
    if result == "NUMBER":
        yield "expression", "gives a number; a watermark expression must give TIMESTAMP or TIMESTAMP_LTZ"
