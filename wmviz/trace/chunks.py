"""Read one chunk of a trace into raw batches (the cells as written), with its line-level issues.

A line that is not a row (broken JSON, a CSV record with the wrong number of cells, bytes that are
not UTF-8) is reported here and left out of the batch; everything a row's cells say is judged
later by `wmviz.trace.check`. The same function runs in this process and in Spark's workers.
"""

from __future__ import annotations

import io
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from wmviz.core.settings import MAX_CHANNELS
from wmviz.trace.columns import STANDARD, TYPED
from wmviz.trace.config import channel_budget_reason
from wmviz.trace.errors import IssueCollector
from wmviz.trace.jsonline import JsonLineError, decode_json_line, is_compact_header
from wmviz.trace.lines import line_breaks
from wmviz.trace.quote import show
from wmviz.trace.raw import RawBatch, RawColumn, from_arrow, from_python, from_text
from wmviz.trace.sources import Chunk, TracePlan

BATCH_ROWS = 1 << 18


def read_chunk(plan: TracePlan, chunk: Chunk, collector: IssueCollector) -> Iterator[RawBatch]:
    """The rows of `chunk` as raw batches of at most about BATCH_ROWS rows."""
    if plan.fmt == "csv":
        yield from _csv(plan, chunk, collector)
    elif plan.fmt == "parquet":
        yield from _parquet(plan, chunk, collector)
    else:
        yield from _json_lines(plan, chunk, collector)


# ---- CSV -------------------------------------------------------------------------------------------


def _csv(plan: TracePlan, chunk: Chunk, collector: IssueCollector) -> Iterator[RawBatch]:
    data = plan.blob.read(chunk.start, chunk.end)
    bad_lines = _invalid_utf8_lines(data, chunk.first_row)
    if bad_lines:
        data = data.decode("utf-8", errors="replace").encode("utf-8")
    stray = _stray_quote_line(data, chunk.first_row)
    if stray is not None:
        collector.add(stray, None, STRAY_QUOTE_REASON)
        return
    lines = _record_lines(data, chunk.first_row)
    if not len(lines):
        return  # only blank lines
    parsed = _csv_records(data, lines, len(plan.header), chunk, collector)
    if parsed is None:
        return
    table, rows = parsed
    if bad_lines:
        table, rows = _without_lines(table, rows, bad_lines, collector)
    yield from _csv_batches(plan.header, table, rows)


def _csv_records(
    data: bytes, lines: np.ndarray, width: int, chunk: Chunk, collector: IssueCollector
) -> tuple[pa.Table, np.ndarray] | None:
    """The records of `data` as text columns `c0`…, and the line each starts on (`lines` holds the
    start of every record); a record of the wrong width is an issue and skipped. None (said to
    `collector`) when the CSV is broken."""
    names = [f"c{i}" for i in range(width)]
    broken: list[int] = []

    def wrong_width(row: Any) -> str:
        broken.append(row.number - 1)  # 1-based among records that are not blank
        collector.add(
            int(lines[min(row.number, len(lines)) - 1]),  # past the end: the count check below says so
            None,
            f"row has {row.actual_columns} cells but the header has {row.expected_columns}",
        )
        return "skip"

    try:
        table = pacsv.read_csv(
            io.BytesIO(data),
            read_options=pacsv.ReadOptions(
                column_names=names, use_threads=False, block_size=max(1 << 20, len(data) + 1)
            ),
            parse_options=pacsv.ParseOptions(
                newlines_in_values=b'"' in data, invalid_row_handler=wrong_width
            ),
            convert_options=pacsv.ConvertOptions(
                column_types=dict.fromkeys(names, pa.string()),
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
            ),
        )
    except pa.ArrowInvalid as exc:
        collector.add(chunk.first_row, None, f"broken CSV: {exc}")
        return None
    kept = np.ones(len(lines), bool)
    kept[broken] = False
    rows = lines[kept]
    if len(rows) != table.num_rows:  # never expected: say so rather than misnumber rows
        collector.add(chunk.first_row, None, f"broken CSV: {table.num_rows} records, {len(rows)} line starts")
        return None
    return table, rows


def _without_lines(
    table: pa.Table, rows: np.ndarray, bad_lines: list[int], collector: IssueCollector
) -> tuple[pa.Table, np.ndarray]:
    """The records without those touching a line that is not valid UTF-8 (each one an issue)."""
    ends = np.concatenate((rows[1:], [np.iinfo(np.int64).max]))
    for line in bad_lines:
        collector.add(line, None, "line is not valid UTF-8 text")
    keep = np.ones(len(rows), bool)
    for line in bad_lines:
        keep[np.flatnonzero((rows <= line) & (line < ends))] = False
    return table.filter(pa.array(keep)), rows[keep]


def _csv_batches(header: Sequence[str], table: pa.Table, rows: np.ndarray) -> Iterator[RawBatch]:
    """The records as raw batches of at most BATCH_ROWS rows: the standard columns by name, the
    others as the payload."""
    for offset in range(0, max(table.num_rows, 1), BATCH_ROWS):
        part = table.slice(offset, BATCH_ROWS)
        if not part.num_rows:
            return
        columns: dict[str, RawColumn] = {}
        payload: list[tuple[str, RawColumn]] = []
        for name, values in zip(header, part.columns, strict=True):
            array = values.combine_chunks()
            if name in STANDARD:
                columns[name] = from_text(array, strip=name in TYPED)
            else:
                payload.append((name, from_text(array, strip=False)))
        yield RawBatch(rows[offset : offset + part.num_rows], columns, payload, text=True)


STRAY_QUOTE_REASON = (
    "broken CSV: a quote inside a cell that does not start with one; quote the whole cell and double "
    'the quotes in it ("a ""b"" c")'
)


def _stray_quote_line(data: bytes, first_line: int) -> int | None:
    """The line of the first quote that opens nowhere a cell starts (`ab"c`), if any.

    Records are found by counting quotes (RFC 4180: a cell is quoted from its first character),
    and Arrow takes such a quote as a plain character: the two would disagree on where records end.
    """
    buf = np.frombuffer(data, np.uint8)
    quotes = np.flatnonzero(buf == 34)
    opening = quotes[::2]  # outside a quoted cell, every other quote opens one
    if not len(opening):
        return None
    before = buf[np.maximum(opening - 1, 0)]
    # After a comma or a line break a cell starts; after a quote it is a doubled quote ("").
    stray = (opening > 0) & (before != 44) & (before != 10) & (before != 13) & (before != 34)
    if not stray.any():
        return None
    at = int(opening[np.argmax(stray)])
    return first_line + len(line_breaks(buf[:at]))


def _invalid_utf8_lines(data: bytes, first_line: int) -> list[int]:
    try:
        data.decode("utf-8")
        return []
    except UnicodeDecodeError:
        pass
    bad = []
    for offset, line in enumerate(data.split(b"\n")):
        try:
            line.decode("utf-8")
        except UnicodeDecodeError:
            bad.append(first_line + offset)
    return bad


def _record_lines(data: bytes, first_line: int) -> np.ndarray:
    """The line each record that is not blank starts on (pyarrow skips blank ones).

    A record ends at a line break outside quotes: LF, CRLF, or a lone CR, as pyarrow reads them
    (and as editors count lines).
    """
    buf = np.frombuffer(data, np.uint8)
    if not len(buf):
        return np.zeros(0, np.int64)
    breaks = line_breaks(buf)
    quotes = np.flatnonzero(buf == 34)
    ends = breaks[np.searchsorted(quotes, breaks) % 2 == 0] if len(quotes) else breaks
    starts = np.concatenate(([0], ends + 1))
    stops = np.concatenate((ends, [len(buf)]))
    # A CRLF ends at its LF: the CR before it belongs to no record.
    crlf = (stops > starts) & (buf[np.maximum(stops - 1, 0)] == 13) & (stops < len(buf))
    blank = (stops - starts) - crlf == 0
    return first_line + np.searchsorted(breaks, starts[~blank])


# ---- Parquet ---------------------------------------------------------------------------------------


def _parquet(plan: TracePlan, chunk: Chunk, collector: IssueCollector) -> Iterator[RawBatch]:
    import pyarrow.parquet as pq

    row = chunk.first_row
    skip, left = chunk.skip, chunk.rows
    with plan.blob.open() as f, pq.ParquetFile(f) as pf:
        batches = pf.iter_batches(batch_size=BATCH_ROWS, row_groups=range(chunk.start, chunk.end))
        while left is None or left > 0:
            try:
                batch = next(batches)
            except StopIteration:
                return
            except (pa.ArrowException, OSError) as exc:
                collector.add(row, None, f"cannot read this Parquet row group: {exc}")
                return
            if skip >= batch.num_rows:  # rows of the group another chunk checks
                skip -= batch.num_rows
                continue
            keep = batch.num_rows - skip if left is None else min(left, batch.num_rows - skip)
            batch = batch.slice(skip, keep)
            skip = 0
            if left is not None:
                left -= batch.num_rows
            columns: dict[str, RawColumn] = {}
            payload: list[tuple[str, RawColumn]] = []
            for name, values in zip(plan.header, batch.columns, strict=True):
                column = from_arrow(values)
                if name in STANDARD:
                    columns[name] = column
                else:
                    payload.append((name, column))
            rows = np.arange(row, row + batch.num_rows, dtype=np.int64)
            row += batch.num_rows
            yield RawBatch(rows, columns, payload)


# ---- JSON Lines and the compact format -------------------------------------------------------------


def _lines(plan: TracePlan, chunk: Chunk) -> Iterator[tuple[int, bytes]]:
    data = plan.blob.read(chunk.start, chunk.end)
    for offset, raw in enumerate(data.split(b"\n")):
        if raw:
            yield chunk.first_row + offset, raw


def _json_lines(plan: TracePlan, chunk: Chunk, collector: IssueCollector) -> Iterator[RawBatch]:
    builder = _JsonRows(plan.compact)
    compact = _Compact(plan, collector) if plan.compact else None
    for lineno, raw in _lines(plan, chunk):
        try:
            obj = decode_json_line(raw, first=lineno == 1)
        except JsonLineError as exc:
            collector.add(lineno, None, str(exc))
            continue
        if obj is None:
            continue
        if "config" in obj:
            collector.add(lineno, None, 'a {"config": ...} line must come before every trace line')
            continue
        if compact is not None:
            cells = compact.feed(lineno, obj)
            if cells is not None:
                builder.add(lineno, cells, ())
        else:
            builder.add(
                lineno,
                {k: v for k, v in obj.items() if k in STANDARD},
                [(k, v) for k, v in obj.items() if k not in STANDARD and v is not None],
            )
        if builder.size >= BATCH_ROWS:
            yield builder.batch(compact)
    if builder.size:
        yield builder.batch(compact)


class _JsonRows:
    """Decoded rows gathered column by column."""

    def __init__(self, compact: bool) -> None:
        self.compact = compact
        self.reset()

    def reset(self) -> None:
        self.rows: list[int] = []
        self.cells: dict[str, list[Any]] = {name: [] for name in STANDARD}
        self.payload: list[list[tuple[str, Any]]] = []

    @property
    def size(self) -> int:
        return len(self.rows)

    def add(self, row: int, cells: dict[str, Any], payload: Any) -> None:
        self.rows.append(row)
        for name, values in self.cells.items():
            values.append(cells.get(name))
        self.payload.append(list(payload))

    def batch(self, compact: _Compact | None) -> RawBatch:
        columns = {
            name: from_python(values)
            for name, values in self.cells.items()
            if any(v is not None for v in values)
        }
        batch = RawBatch(
            np.array(self.rows, np.int64),
            columns,
            payload_rows=None if self.compact else self.payload,
            labels={"channel": "ch", "watermark_ms": "wm"} if self.compact else {},
        )
        if compact is not None:
            batch.compact_channels = dict(compact.channels)
        self.reset()
        return batch


class _Compact:
    """The compact valve format: `{"channels": N}` starts a valve (instance 0, 1, …), then
    `{"ch": c, "wm": v}` or `{"ch": c, "status": s}` lines are its inputs, on input "0"."""

    _INPUT_KEYS = ("ch", "wm", "status")

    def __init__(self, plan: TracePlan, collector: IssueCollector) -> None:
        self.collector = collector
        self.configured = plan.config.channels.get("0") if plan.config_ok else None
        self.instances = 0
        self.channels: dict[str, int] = {}

    def feed(self, row: int, obj: dict[str, Any]) -> dict[str, Any] | None:
        """The row cells of one input line, or None for a header or a broken line."""
        if is_compact_header(obj):
            self._header(row, obj)
            return None
        for key in obj:
            if key not in self._INPUT_KEYS:
                self.collector.add(row, key, "unknown key; a compact line has ch and either wm or status")
        present = {k: v for k, v in obj.items() if k in self._INPUT_KEYS and v is not None}
        has_wm, has_status = "wm" in present, "status" in present
        if has_wm and has_status:
            self.collector.add(row, None, "a compact line has either wm or status, not both")
            return None
        if not has_wm and not has_status:
            self.collector.add(row, None, "a compact line needs wm (a watermark) or status")
            return None
        cells: dict[str, Any] = {
            "instance": str(self.instances - 1),
            "kind": "watermark" if has_wm else "status",
            "channel": present.get("ch"),
        }
        if has_wm:
            cells["watermark_ms"] = present["wm"]
        else:
            cells["status"] = present["status"]
        return cells

    def _header(self, row: int, obj: dict[str, Any]) -> None:
        for key in obj:
            if key != "channels":
                self.collector.add(row, key, 'unknown key; a header line is only {"channels": N}')
        self.instances += 1
        count = obj["channels"]
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            self.collector.add(row, "channels", f"{show(count)} is not a positive channel count")
            return
        if count > MAX_CHANNELS.get():
            self.collector.add(row, "channels", channel_budget_reason(count))
            return
        if self.configured is not None and self.configured != count:
            self.collector.add(
                row, "channels", f"{count} disagrees with the config's channels.0 = {self.configured}"
            )
        self.channels[str(self.instances - 1)] = count
