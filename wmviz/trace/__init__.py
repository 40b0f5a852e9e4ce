"""Trace I/O: read, validate and write traces and scenario configs (trace-format.md).

Nothing here imports a UI or plotting library, so the command-line tool and tests stay light. The
names below are loaded when first asked for (PEP 562): importing one light part (`errors`,
`columns`) does not pull in the readers and writers, and with them pandas and Parquet (the app's
first page, a built-in incident from its prepared timeline, needs neither: issue 30).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from wmviz.trace.config import load_config, parse_config
    from wmviz.trace.config_write import config_to_dict
    from wmviz.trace.errors import MAX_ISSUES, TraceIssue, TraceValidationError
    from wmviz.trace.readers import read_trace, read_trace_bytes
    from wmviz.trace.timecells import format_time_ms, parse_time_ms
    from wmviz.trace.writers import write_compact, write_config, write_trace, write_trace_bytes

_HOMES = {
    "config_to_dict": "config_write",
    "load_config": "config",
    "parse_config": "config",
    "MAX_ISSUES": "errors",
    "TraceIssue": "errors",
    "TraceValidationError": "errors",
    "read_trace": "readers",
    "read_trace_bytes": "readers",
    "format_time_ms": "timecells",
    "parse_time_ms": "timecells",
    "write_compact": "writers",
    "write_config": "writers",
    "write_trace": "writers",
    "write_trace_bytes": "writers",
}
"""Where each public name lives."""

__all__ = [
    "MAX_ISSUES",
    "TraceIssue",
    "TraceValidationError",
    "config_to_dict",
    "format_time_ms",
    "load_config",
    "parse_config",
    "parse_time_ms",
    "read_trace",
    "read_trace_bytes",
    "write_compact",
    "write_config",
    "write_trace",
    "write_trace_bytes",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{home}"), name)
