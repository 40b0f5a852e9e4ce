"""A SQL column's value as wmviz holds it, named once for the modules below `sql_rows` (the
aggregates, the operators' configs) so they need not import the trace row's module."""

from __future__ import annotations

SqlValue = str | int | float | bool | None
"""A column's value as the rows file gives it (a timestamp as its text) or an operator computes it."""
