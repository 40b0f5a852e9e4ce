"""A SQL column's value as wmviz holds it, declared below everything that holds one (the configs
that name aggregate calls sit under `wmviz.core.scenario`, which `wmviz.core.sql_rows` reads)."""

from __future__ import annotations

SqlValue = str | int | float | bool | None
"""A column's value as the rows file gives it (a timestamp as its text) or an operator computes it."""


def json_type(value: object) -> str:
    """A JSON value's type in JSON's words, for messages (a rows file's cell, a plan's field)."""
    if value is None:
        return "null"
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}.get(
        type(value), "a number"
    )
