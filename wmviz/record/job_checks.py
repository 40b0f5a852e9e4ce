"""What both forms of a job recording (JSON, `wmviz.record.job`; columnar,
`wmviz.record.job_columnar`) judge the same way: the one error they raise and the checks of a value
read from either, kept here so the two readers share them without importing each other."""

from __future__ import annotations

from typing import Any

from wmviz.core.errors import BadInputError
from wmviz.core.settings import MAX_CHANNELS
from wmviz.core.types import MAX_MS, MIN_MS
from wmviz.trace.config import channel_budget_reason
from wmviz.trace.quote import show


class JobFormatError(BadInputError, ValueError):
    """A job recording or plan that cannot be read; the message names the file and the place."""


SeriesKey = tuple[str, int, str, str | None]
"""(vertex id, subtask, metric, split id or None)."""


def parallelism_of(value: Any, name: str) -> int:
    """A vertex's parallelism: a JSON integer (not text, a float or a bool, which `int()` would
    take) counting subtasks within the channel budget (Flink's ceiling)."""
    count = whole(value, f"{name}: parallelism", 1)
    if count > MAX_CHANNELS.get():
        raise JobFormatError(f"{name}: parallelism {count:,}: {channel_budget_reason(count)}")
    return count


def whole(value: Any, where: str, least: int = 0, most: int = MAX_MS) -> int:
    """A whole number in [least, most] (a JSON integer, not a bool), or JobFormatError at `where`."""
    if isinstance(value, bool) or not isinstance(value, int) or not least <= value <= most:
        bound = f"from {least} to {most:,}" if most < MAX_MS else f">= {least}"
        raise JobFormatError(f"{where}: {show(value)} is not a whole number {bound} (a JSON integer)")
    return value


def optional_long(value: Any, where: str) -> int | None:
    """None, or a long as `long_of` reads it."""
    return None if value is None else long_of(value, where)


def long_of(value: Any, where: str) -> int:
    """An integer, held to Java's long range (what Flink's metric can carry)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise JobFormatError(f"{where}: {value!r} is not an integer")
    return min(max(value, MIN_MS), MAX_MS)


def split_of(value: Any, where: str) -> str | None:
    """A series' split id: text, or None for a per-subtask metric."""
    if value is not None and not isinstance(value, str):
        raise JobFormatError(f"{where}: split {value!r} is not a split id (text)")
    return value


def what(err: Exception) -> str:
    """A reader's KeyError or TypeError in words (`KeyError('vertices')`: missing field `vertices`)."""
    if isinstance(err, KeyError):
        return f"missing field `{err.args[0]}`" if err.args else "a missing field"
    return "a value of the wrong kind (an object, list, number or text where another belongs)"
