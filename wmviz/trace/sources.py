"""Where a trace file's rows are: its file-level part read once, its body cut into chunks.

`plan_trace` reads what belongs to the whole file (a CSV header, leading JSON Lines config lines,
a Parquet footer) and cuts the body into `Chunk`s at record boundaries, each with the row number of
its first record, so any chunk can be read on its own: in this process one after another, or by a
Spark task on another machine (`wmviz.trace.chunks.read_chunk` does the reading). Row numbers are
what a text editor shows (CSV and JSON Lines lines) or the 1-based row index (Parquet).
"""

from __future__ import annotations

import csv
import io
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from wmviz.core.scenario import ScenarioConfig
from wmviz.trace.columns import RESERVED_NAMES, STANDARD
from wmviz.trace.config import max_config_bytes, parse_config_into
from wmviz.trace.errors import IssueCollector
from wmviz.trace.jsonline import JsonLineError, decode_json_line, is_compact_header, loads_strict
from wmviz.trace.lines import line_breaks
from wmviz.trace.quote import show

FORMATS: dict[str, str] = {
    ".csv": "csv",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "jsonl",
    ".parquet": "parquet",
    ".pq": "parquet",
}
PARQUET_CONFIG_KEY = b"wmviz.config"
"""Parquet schema metadata key holding the scenario config as JSON (written by `write_trace`)."""
_BOM = b"\xef\xbb\xbf"
_SCAN_BLOCK = 8 << 20


def format_of(name: str) -> str | None:
    """`csv`, `jsonl` or `parquet` from a file name's extension (case-insensitive), else None."""
    return FORMATS.get(os.path.splitext(name)[1].lower())


class Blob:
    """The bytes of a trace: a file on disk, or an upload held in memory."""

    def __init__(self, path: str | None = None, data: bytes | None = None) -> None:
        assert (path is None) != (data is None)
        self.path, self.data = path, data
        self.size = len(data) if data is not None else os.path.getsize(path)  # type: ignore[arg-type]

    def read(self, start: int, end: int) -> bytes:
        if self.data is not None:
            return self.data[start:end]
        with open(self.path, "rb") as f:  # type: ignore[arg-type]
            f.seek(start)
            return f.read(end - start)

    def open(self) -> Any:
        """A binary file object (Parquet's reader wants one)."""
        if self.data is not None:
            return io.BytesIO(self.data)
        return open(self.path, "rb")  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class Chunk:
    """A piece of the body a task reads on its own: bytes [start, end) whose first record is on line
    `first_row` (CSV, JSON Lines), or row groups [start, end) whose first row is `first_row` (Parquet).

    A Parquet row group larger than a chunk is shared by several chunks, each keeping `rows` rows
    from row `skip` of the group: reading a row group again is cheap, checking it is not.
    """

    start: int
    end: int
    first_row: int
    skip: int = 0
    rows: int | None = None


@dataclass(slots=True)
class TracePlan:
    """What the file-level part of a trace says, and the chunks of its body.

    `header` is the CSV header (column names in file order; for Parquet, the schema's names) and
    `declared` the set of columns a header or schema declares (None for JSON Lines). `compact` marks
    the compact valve format (read as one chunk: its instance numbers count headers from the top).
    """

    source: str
    fmt: str
    blob: Blob
    config: ScenarioConfig
    config_ok: bool
    unit: str
    chunks: list[Chunk] = field(default_factory=list)
    header: tuple[str, ...] = ()
    declared: frozenset[str] | None = None
    header_row: int | None = None
    compact: bool = False


def plan_trace(
    blob: Blob,
    source: str,
    collector: IssueCollector,
    config: ScenarioConfig | None,
    config_ok: bool,
    chunk_bytes: int = 32 << 20,
    chunk_rows: int = 1 << 20,
) -> TracePlan | None:
    """Read the file-level part and cut the body into chunks; None if the file cannot be read at all
    (the reason is collected). A `config` given from outside replaces the file's own."""
    fmt = format_of(source)
    if fmt is None:
        known = ", ".join(FORMATS)
        collector.add(
            None, None, f"unknown trace format {show(os.path.splitext(source)[1])}; expected one of {known}"
        )
        return None
    if fmt == "csv":
        return _plan_csv(blob, source, collector, config, config_ok, chunk_bytes)
    if fmt == "jsonl":
        return _plan_jsonl(blob, source, collector, config, config_ok, chunk_bytes)
    return _plan_parquet(blob, source, collector, config, config_ok, chunk_rows)


# ---- CSV -------------------------------------------------------------------------------------------


def _plan_csv(
    blob: Blob,
    source: str,
    collector: IssueCollector,
    config: ScenarioConfig | None,
    config_ok: bool,
    chunk_bytes: int,
) -> TracePlan | None:
    start = 3 if blob.read(0, 3) == _BOM else 0  # spreadsheet exports put a byte-order mark first
    plan = TracePlan(source, "csv", blob, config or ScenarioConfig(), config_ok, "line")
    header_at = None
    span = 1 << 16
    while header_at is None:
        head = blob.read(start, min(blob.size, start + span))
        whole = start + len(head) >= blob.size
        found = _first_record(head, whole)
        if found is not None:
            offset, lines, end = found
            header_at = (start + offset, 1 + lines, start + end)
        elif whole:
            collector.add(None, None, "file is empty; expected a header line naming the columns")
            return None
        span *= 4
    header_start, header_line, header_end = header_at
    raw_header = blob.read(header_start, header_end)
    try:
        text = raw_header.decode("utf-8")
    except UnicodeDecodeError:
        collector.add(header_line, None, "line is not valid UTF-8 text")
        return None
    try:
        cells = next(csv.reader(io.StringIO(text)))
    except (csv.Error, StopIteration) as exc:
        collector.add(header_line, None, f"broken CSV: {exc}")
        return None
    # Spaces around a standard name are a spreadsheet's ("kind, channel"); a payload column keeps
    # its name exactly, so " note" is written back as " note".
    plan.header = tuple(c.strip() if c.strip() in STANDARD or not c.strip() else c for c in cells)
    plan.declared = frozenset(plan.header)
    plan.header_row = header_line
    _check_header(plan.header, header_line, "header", collector)
    body_line = header_line + (len(raw_header.splitlines()) if raw_header.endswith((b"\n", b"\r")) else 0)
    plan.chunks = [
        Chunk(offset, end, line)
        for (offset, line), (end, _) in zip(*_pairs(record_cuts(blob, header_end, body_line, chunk_bytes)))
    ]
    return plan


def _pairs(cuts: list[tuple[int, int]]) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    return cuts[:-1], cuts[1:]


def _first_record(head: bytes, whole: bool) -> tuple[int, int, int] | None:
    """(offset, newlines before it, end) of the first record of `head` that is not blank; None if
    there is none, or if it may continue past `head` (unless `head` is the `whole` rest of the file)."""
    offset = 0
    lines = 0
    for raw in head.splitlines(keepends=True):
        if raw.strip(b"\r\n"):
            end = offset + len(raw)
            quotes = raw.count(b'"')
            if quotes % 2:  # a quoted header cell spans lines: take lines until it closes
                for more in head[end:].splitlines(keepends=True):
                    end += len(more)
                    quotes += more.count(b'"')
                    if quotes % 2 == 0:
                        break
            complete = head[end - 1 : end] == b"\n" and quotes % 2 == 0
            return (offset, lines, end) if complete or whole else None
        offset += len(raw)
        lines += raw.count(b"\n")
    return None


def record_cuts(
    blob: Blob, start: int, first_line: int, every: int, *, csv_rules: bool = True
) -> list[tuple[int, int]]:
    """Offsets where records start, about `every` bytes apart, with their line numbers; the list
    starts at (`start`, `first_line`) and ends at (file size, last line + 1).

    CSV (`csv_rules`): a line break (LF, CRLF or a lone CR) ends a record only outside quotes;
    RFC 4180 doubles a quote inside a quoted field, so a break is outside quotes exactly when an
    even number of quotes precede it. JSON Lines: every LF ends a record, quotes or not.
    """
    cuts = [(start, first_line)]
    parity, line, position = 0, first_line, start
    next_cut = start + every
    while position < blob.size:
        block = blob.read(position, min(blob.size, position + _SCAN_BLOCK))
        if csv_rules and block.endswith(b"\r") and position + len(block) < blob.size:
            block = block[:-1]  # a CR whose LF may start the next block: scan it with that block
        data = np.frombuffer(block, np.uint8)
        newlines = line_breaks(data, lone_cr=csv_rules)
        quotes = np.flatnonzero(data == 34) if csv_rules else newlines[:0]
        if len(quotes):
            ends = newlines[(parity + np.searchsorted(quotes, newlines)) % 2 == 0]
        else:
            ends = newlines if parity == 0 else newlines[:0]
        while next_cut < position + len(block):
            i = int(np.searchsorted(ends, next_cut - position))
            if i >= len(ends):
                break
            cut = position + int(ends[i]) + 1
            cut_line = line + int(np.searchsorted(newlines, ends[i], side="right"))
            if cut < blob.size:
                cuts.append((cut, cut_line))
            next_cut = cut + every
        parity = (parity + len(quotes)) % 2
        line += len(newlines)
        position += len(block)
    cuts.append((blob.size, line + 1))
    return cuts


def _check_header(names: tuple[str, ...], row: int | None, what: str, collector: IssueCollector) -> None:
    seen: set[str] = set()
    for i, name in enumerate(names, start=1):
        if not name:
            collector.add(row, None, f"{what} cell {i} is empty; every column needs a name")
        elif name in seen:
            collector.add(row, name, f"appears twice in the {what}")
        elif name in RESERVED_NAMES and name not in STANDARD:
            collector.add(
                row,
                name,
                'is a reserved name (a JSON Lines line with a "config" key is the config); rename it',
            )
        seen.add(name)


# ---- JSON Lines ------------------------------------------------------------------------------------


def _plan_jsonl(
    blob: Blob,
    source: str,
    collector: IssueCollector,
    config: ScenarioConfig | None,
    config_ok: bool,
    chunk_bytes: int,
) -> TracePlan:
    config, config_ok, first_trace = _config_lines(blob, collector, config, config_ok)
    plan = TracePlan(source, "jsonl", blob, config or ScenarioConfig(), config_ok, "line")
    if first_trace is None:
        return plan
    start, line, obj = first_trace
    if is_compact_header(obj):
        plan.fmt, plan.compact = "compact", True
        plan.chunks = [Chunk(start, blob.size, line)]
        return plan
    # No quote can hide a newline in JSON Lines, and only LF ends a line there.
    cuts = record_cuts(blob, start, line, chunk_bytes, csv_rules=False)
    plan.chunks = [Chunk(a, b, n) for (a, n), (b, _) in zip(*_pairs(cuts))]
    return plan


def _config_lines(
    blob: Blob, collector: IssueCollector, config: ScenarioConfig | None, config_ok: bool
) -> tuple[ScenarioConfig | None, bool, tuple[int, int, dict[str, Any]] | None]:
    """The `{"config": ...}` lines before the first trace line: the config they hold (unless one
    came from outside, `config`), whether it could be read, and the first trace line as (byte
    offset, line number, its object), None when there is none."""
    external = config is not None
    offset, lineno = 0, 0
    with blob.open() as f:
        for raw in f:
            lineno += 1
            start, offset = offset, offset + len(raw)
            try:
                obj = decode_json_line(raw, first=lineno == 1)
            except JsonLineError as exc:
                collector.add(lineno, None, str(exc))
                continue
            if obj is None:
                continue  # blank or a comment
            if "config" not in obj:
                return config, config_ok, (start, lineno, obj)
            if len(obj) != 1:
                extra = ", ".join(k for k in obj if k != "config")
                collector.add(lineno, None, f'a {{"config": ...}} line holds nothing else; found {extra}')
            elif not external:
                if config is not None:
                    collector.add(lineno, None, 'only one {"config": ...} line is allowed')
                elif len(raw) > max_config_bytes():
                    collector.add(lineno, None, _config_too_big(len(raw)))
                    config_ok = False
                else:
                    config, config_ok = parse_config_into(obj["config"], collector, row=lineno)
    return config, config_ok, None


def _config_too_big(size: int) -> str:
    return f"the config is {size:,} bytes; the limit is {max_config_bytes():,} (WMVIZ_MAX_CONFIG_KB)"


# ---- Parquet ---------------------------------------------------------------------------------------


def _plan_parquet(
    blob: Blob,
    source: str,
    collector: IssueCollector,
    config: ScenarioConfig | None,
    config_ok: bool,
    chunk_rows: int,
) -> TracePlan | None:
    import pyarrow as pa  # lazily: the CSV/JSON path and the web app's start-up must not pay for it
    import pyarrow.parquet as pq

    try:
        with blob.open() as f, pq.ParquetFile(f) as pf:
            schema = pf.schema_arrow
            names = tuple(schema.names)
            metadata = pf.metadata
            groups = [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)]
    except (pa.ArrowException, OSError, UnicodeDecodeError, ValueError) as exc:
        collector.add(None, None, f"not a readable Parquet file: {_short(exc)}")
        return None
    _check_header(names, None, "schema", collector)
    stored = (schema.metadata or {}).get(PARQUET_CONFIG_KEY)
    if config is None and stored is not None:
        config, config_ok = _stored_config(stored, collector)
    plan = TracePlan(source, "parquet", blob, config or ScenarioConfig(), config_ok, "row")
    plan.header, plan.declared = names, frozenset(names)
    start_group, start_row, pending = 0, 1, 0
    for group, rows in enumerate(groups):
        if rows > chunk_rows:  # a big row group alone: several chunks share it
            if pending:
                plan.chunks.append(Chunk(start_group, group, start_row))
                start_row += pending
            for skip in range(0, rows, chunk_rows):
                take = min(chunk_rows, rows - skip)
                plan.chunks.append(Chunk(group, group + 1, start_row + skip, skip, take))
            start_group, start_row, pending = group + 1, start_row + rows, 0
            continue
        pending += rows
        if pending >= chunk_rows or group == len(groups) - 1:
            plan.chunks.append(Chunk(start_group, group + 1, start_row))
            start_group, start_row, pending = group + 1, start_row + pending, 0
    return plan


def _stored_config(stored: bytes, collector: IssueCollector) -> tuple[ScenarioConfig | None, bool]:
    key = PARQUET_CONFIG_KEY.decode()
    if len(stored) > max_config_bytes():
        collector.add(None, None, f"the {key} metadata: {_config_too_big(len(stored))}")
        return None, False
    try:
        obj = loads_strict(stored.decode("utf-8"))
    except UnicodeDecodeError:
        collector.add(None, None, f"the {key} metadata is not valid UTF-8 text")
        return None, False
    except JsonLineError as exc:
        collector.add(None, None, f"the {key} metadata is not valid JSON: {_short(exc)}")
        return None, False
    return parse_config_into(obj, collector)


def _short(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text if len(text) <= 200 else text[:199] + "…"
