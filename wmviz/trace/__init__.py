"""Trace I/O: read, validate and write traces and scenario configs (trace-format.md).

Nothing here imports a UI or plotting library, so the command-line tool and tests stay light.
"""

from wmviz.trace.config import load_config, parse_config
from wmviz.trace.config_write import config_to_dict
from wmviz.trace.errors import MAX_ISSUES, TraceIssue, TraceValidationError
from wmviz.trace.readers import read_trace, read_trace_bytes
from wmviz.trace.timecells import format_time_ms, parse_time_ms
from wmviz.trace.writers import write_compact, write_config, write_trace, write_trace_bytes

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
