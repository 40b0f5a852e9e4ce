"""The rows a SQL job is replayed on: one JSON line each, in arrival order (docs/sql.md, "Replay").

    {"table": "orders", "partition": 1, "row": {"id": 7, "ts": "2026-11-28 10:00:03.250"}}
    {"table": "orders", "partitions": 3}
    {"table": "orders", "partition": 0, "row": {...}, "proc_ms": 4000}

A line with `row` is a record that reaches the table's source in that partition (one Kafka
partition, one split); a line with `partitions` says how many partitions the table has, so a
partition that never receives a row (the classic silent split) exists; without one a table has
1 + the largest partition its rows name. `proc_ms` is the processing-time clock when the row
arrives (periodic emission, idleness); the docs say how time passes without it. Each line is a
step: step N is the 0-based index of the line among the file's non-blank lines, and the end of
input is step = the number of lines.

The fields are declared once below (`FIELDS`), each with its rule, as the trace row is in
`wmviz/trace/columns.py`; the real-Flink runner in `tools/flink/sql` reads the same file through
this module, so both sides of a comparison see the same steps.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wmviz.core.errors import BadInputError
from wmviz.core.settings import MAX_IMPORT_ROWS, MAX_REPLAY_SPLIT_STEPS
from wmviz.trace.jsonline import JsonLineError, decode_json_line
from wmviz.trace.quote import show

MAX_PARTITIONS = 4096
"""The most partitions one table may declare: each is a split with its own generator."""
MAX_FILE_BYTES = 256 * 1024 * 1024
"""A rows file larger than this is refused before it is read."""


class RowsFileError(BadInputError, ValueError):
    """A line of a rows file that cannot be replayed; the message names the file, line and field."""

    def __init__(self, path: str, line: int, field_name: str | None, reason: str) -> None:
        where = f"{path}, line {line}" + (f", field {field_name!r}" if field_name else "")
        super().__init__(f"{where}: {reason}")
        self.path, self.line, self.field_name, self.reason = path, line, field_name, reason


@dataclass(frozen=True, slots=True)
class InputRow:
    """A record arriving at a table's source: `values` are the JSON values as written."""

    step: int
    line: int
    table: str
    partition: int
    values: Mapping[str, Any]
    proc_ms: int | None = None


@dataclass(frozen=True, slots=True)
class PartitionCount:
    """`{"table": T, "partitions": N}`: the table has N partitions, whether or not rows name them."""

    step: int
    line: int
    table: str
    partitions: int


InputLine = InputRow | PartitionCount


def _name(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{show(value)} is not a table name (a non-empty string)")
    return value


def _whole(minimum: int, maximum: int) -> Callable[[Any], int]:
    def read(value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{show(value)} is not a whole number")
        if not minimum <= value <= maximum:
            raise ValueError(f"{value} is outside {minimum}..{maximum}")
        return value

    return read


def _object(value: Any) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise ValueError(f"{show(value)} is not an object of column values")
    for column, cell in value.items():
        if isinstance(cell, (dict, list)):
            raise ValueError(
                f"column {column!r} holds {show(cell)}: a cell is a string, number, bool or null"
            )
    return value


@dataclass(frozen=True, slots=True)
class Field:
    """One key of a line: how its value is read, and which kind of line it belongs to."""

    name: str
    read: Callable[[Any], Any] = field(repr=False)
    on_rows: bool
    on_counts: bool


FIELDS: tuple[Field, ...] = (
    Field("table", _name, on_rows=True, on_counts=True),
    Field("partition", _whole(0, MAX_PARTITIONS - 1), on_rows=True, on_counts=False),
    Field("row", _object, on_rows=True, on_counts=False),
    Field("proc_ms", _whole(-(2**63), 2**63 - 1), on_rows=True, on_counts=False),
    Field("partitions", _whole(1, MAX_PARTITIONS), on_rows=False, on_counts=True),
)
_BY_NAME = {f.name: f for f in FIELDS}


@dataclass(frozen=True, slots=True)
class ReplayInput:
    """A whole rows file: its lines in arrival order and each table's partition count."""

    path: str
    lines: tuple[InputLine, ...]
    partitions: Mapping[str, int]

    @property
    def end_step(self) -> int:
        """The step of the end of input: the number of lines."""
        return len(self.lines)


def read_input(path: Path) -> ReplayInput:
    """A rows file read and validated whole; RowsFileError naming file, line and field otherwise."""
    lines = read_lines(path)
    counts = partition_counts(str(path), lines)
    _within_budget(str(path), lines, counts)
    return ReplayInput(str(path), tuple(lines), counts)


def _within_budget(path: str, lines: list[InputLine], counts: Mapping[str, int]) -> None:
    """RowsFileError, naming the line that set the largest partition count, when the splits times
    the lines pass `MAX_REPLAY_SPLIT_STEPS`: the replay's cost and `--out`'s size grow with both."""
    steps = sum(counts.values()) * len(lines)
    if steps <= (most := MAX_REPLAY_SPLIT_STEPS.get()):
        return
    table = max(counts, key=lambda name: counts[name])
    where, field_name = _line_that_set(lines, table, counts[table])
    raise RowsFileError(
        path,
        where,
        field_name,
        f"{sum(counts.values()):,} partitions over {len(lines):,} lines are {steps:,} split-steps, more "
        f"than a replay computes: {most:,} (WMVIZ_MAX_REPLAY_SPLIT_STEPS); fewer partitions or lines",
    )


def read_lines(path: Path) -> list[InputLine]:
    """Every line of a rows file, validated; RowsFileError naming file, line and field otherwise."""
    shown = str(path)
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise RowsFileError(shown, 0, None, f"cannot be read ({exc.strerror})") from None
    if size > MAX_FILE_BYTES:
        raise RowsFileError(shown, 0, None, f"is {size:,} bytes; the limit is {MAX_FILE_BYTES:,}")
    lines = list(_decoded(path))
    if len(lines) > (most := MAX_IMPORT_ROWS.get()):
        raise RowsFileError(shown, 0, None, f"has {len(lines):,} lines; the limit is {most:,}")
    return [_line(shown, step, number, obj) for step, (number, obj) in enumerate(lines)]


def _line_that_set(lines: list[InputLine], table: str, count: int) -> tuple[int, str]:
    """The line (and field) a table's partition count comes from: its last `partitions` line, else
    the first row naming its largest partition."""
    for line in reversed(lines):
        if isinstance(line, PartitionCount) and line.table == table:
            return line.line, "partitions"
    for line in lines:
        if isinstance(line, InputRow) and line.table == table and line.partition + 1 == count:
            return line.line, "partition"
    return 0, "partitions"


def _decoded(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                obj = decode_json_line(raw, first=number == 1)
            except JsonLineError as exc:
                raise RowsFileError(str(path), number, None, str(exc)) from None
            if obj is not None:
                yield number, obj


def _line(path: str, step: int, number: int, obj: dict[str, Any]) -> InputLine:
    is_count = "partitions" in obj
    values: dict[str, Any] = {}
    for key, raw in obj.items():
        spec = _BY_NAME.get(key)
        if spec is None or not (spec.on_counts if is_count else spec.on_rows):
            kind = "a `partitions` line" if is_count else "a row line"
            raise RowsFileError(path, number, key, f"is not a field of {kind}")
        try:
            values[key] = spec.read(raw)
        except ValueError as exc:
            raise RowsFileError(path, number, key, str(exc)) from None
    if "table" not in values:
        raise RowsFileError(path, number, "table", "is missing")
    if is_count:
        return PartitionCount(step, number, values["table"], values["partitions"])
    if "row" not in values:
        raise RowsFileError(path, number, "row", "is missing (a line has `row` or `partitions`)")
    return InputRow(
        step, number, values["table"], values.get("partition", 0), values["row"], values.get("proc_ms")
    )


def partition_counts(path: str, lines: list[InputLine]) -> dict[str, int]:
    """Each table's partition count: its `partitions` line, else 1 + the largest partition named.

    A row naming a partition at or beyond a declared count is an error, as Kafka has no such
    partition.
    """
    declared: dict[str, PartitionCount] = {}
    for line in lines:
        if isinstance(line, PartitionCount):
            declared[line.table] = line
    counts = {table: count.partitions for table, count in declared.items()}
    for line in lines:
        if not isinstance(line, InputRow):
            continue
        count = declared.get(line.table)
        if count is not None and line.partition >= count.partitions:
            raise RowsFileError(
                path,
                line.line,
                "partition",
                f"table {line.table!r} has {count.partitions} partitions (line {count.line}), "
                f"so there is no partition {line.partition}",
            )
        counts[line.table] = max(counts.get(line.table, 1), line.partition + 1)
    return counts
