"""The validated trace row as an Arrow table: one schema, one encoder, one decoder.

Readers produce it, both engines and live mode consume it, and the timeline's `steps` table carries
its columns, so a step can always be replayed from what was stored. `TraceRows` lets the pure core
iterate a table as `TraceRow`s without holding every row object at once.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any, overload

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from wmviz.core.scenario import Kind, TraceRow
from wmviz.core.types import Status
from wmviz.trace.payload import decode_payload, encode_payload

ROW_SCHEMA = pa.schema(
    [
        ("row", pa.int64()),  # where the row came from (line or Parquet row), for messages and links
        ("order", pa.int64()),  # arrival order over the whole trace: seq when rows carry it, else row
        ("instance", pa.string()),
        ("input", pa.string()),
        ("channel", pa.int32()),
        ("seq", pa.int64()),
        ("kind", pa.string()),
        ("event_ms", pa.int64()),
        ("watermark_ms", pa.int64()),
        ("status", pa.string()),
        ("proc_ms", pa.int64()),
        ("key", pa.string()),
        ("value_json", pa.string()),  # the value as JSON text, so a string "12" and a number 12 differ
        ("payload_json", pa.string()),  # wmviz.trace.payload's encoding; null when there is none
    ]
)
ROW_COLUMNS: tuple[str, ...] = tuple(ROW_SCHEMA.names)
_KINDS = {k.value: k for k in Kind}
_STATUSES = {s.value: s for s in Status}
_DECODE_ROWS = 1 << 16


def encode_rows(rows: Sequence[TraceRow]) -> pa.Table:
    """TraceRows as a ROW_SCHEMA table (what-if edits, live inputs, traces built in tests)."""
    columns: dict[str, list[Any]] = {name: [] for name in ROW_COLUMNS}
    for r in rows:
        columns["row"].append(r.row)
        columns["order"].append(r.seq if r.seq is not None else r.row)
        columns["instance"].append(r.instance)
        columns["input"].append(r.input)
        columns["channel"].append(r.channel)
        columns["seq"].append(r.seq)
        columns["kind"].append(r.kind.value)
        columns["event_ms"].append(r.event_ms)
        columns["watermark_ms"].append(r.watermark_ms)
        columns["status"].append(r.status.value if r.status is not None else None)
        columns["proc_ms"].append(r.proc_ms)
        columns["key"].append(r.key)
        columns["value_json"].append(json.dumps(r.value, ensure_ascii=False) if r.value is not None else None)
        columns["payload_json"].append(encode_payload(r.payload))
    return pa.table(columns, schema=ROW_SCHEMA)


def decode_rows(table: pa.Table | pa.RecordBatch) -> list[TraceRow]:
    """The TraceRows of a table with the ROW_SCHEMA columns (extra columns are ignored); the same
    rows as `row_from_record` makes of each record, decoded column by column."""
    n = table.num_rows
    column = table.column
    cells = {name: column_cells(column(name)) for name in _PLAIN_CELLS}
    kinds = column_cells(column("kind"), Kind)  # an Enum called with a value gives its member
    statuses = column_cells(column("status"), Status)
    values = column_cells(column("value_json"), json.loads)
    if column("payload_json").null_count == n:
        payloads: list[Any] = [()] * n
    else:
        payloads = [() if p is None else p for p in column_cells(column("payload_json"), decode_payload)]
    return [
        TraceRow(*fields)
        for fields in zip(
            cells["row"],
            kinds,
            cells["instance"],
            cells["input"],
            cells["channel"],
            cells["seq"],
            cells["event_ms"],
            cells["watermark_ms"],
            statuses,
            cells["proc_ms"],
            cells["key"],
            values,
            payloads,
            strict=True,
        )
    ]


_PLAIN_CELLS = ("row", "instance", "input", "channel", "seq", "event_ms", "watermark_ms", "proc_ms", "key")


def column_cells(
    column: pa.ChunkedArray | pa.Array, convert: Callable[[Any], Any] | None = None
) -> list[Any]:
    """A column's cells as Python values (None where null), `convert`ed where not null.

    Quick for the shapes trace columns take: an all-null column is one list, and text columns
    (`kind`, `status`, `input`, …) are converted once per distinct value (Arrow's `to_pylist` on a
    dictionary column costs ~1 µs a cell).
    """
    n = len(column)
    if column.null_count == n:
        return [None] * n
    if not (pa.types.is_string(column.type) or pa.types.is_dictionary(column.type)):
        cells = column.to_pylist()
        return cells if convert is None else [None if c is None else convert(c) for c in cells]
    encoded = column if pa.types.is_dictionary(column.type) else pc.dictionary_encode(column)
    if isinstance(encoded, pa.ChunkedArray):
        encoded = encoded.unify_dictionaries().combine_chunks()
    distinct = encoded.dictionary.to_pylist()
    if convert is not None:
        distinct = [convert(value) for value in distinct]
    members = np.empty(len(distinct) + 1, object)  # the last one, None, stands for null
    for index, value in enumerate(distinct):  # one by one: a tuple must stay one cell
        members[index] = value
    codes = encoded.indices.fill_null(len(distinct)).to_numpy(zero_copy_only=False)
    return members[codes].tolist()


def row_from_record(record: dict[str, Any]) -> TraceRow:
    """The TraceRow of one record holding the ROW_SCHEMA columns (a timeline `steps` row)."""
    cell: Callable[[str], Any] = record.get  # a null cell may be left out (Spark's to_json drops it)
    status, value_json, payload_json = cell("status"), cell("value_json"), cell("payload_json")
    return TraceRow(
        cell("row"),
        _KINDS[cell("kind")],
        cell("instance"),
        cell("input"),
        cell("channel"),
        cell("seq"),
        cell("event_ms"),
        cell("watermark_ms"),
        _STATUSES[status] if status is not None else None,
        cell("proc_ms"),
        cell("key"),
        json.loads(value_json) if value_json is not None else None,
        decode_payload(payload_json) if payload_json is not None else (),
    )


class TraceRows(Sequence[TraceRow]):
    """A ROW_SCHEMA table seen as a sequence of TraceRows in arrival order, decoded on demand.

    The table may be stored grouped by instance (sorted by instance, then arrival), which is how
    engines consume it; `arrival` then holds the table positions in arrival order. Iterating
    decodes one slice at a time, so a ten-million-row trace is never held as objects; indexing
    decodes (and keeps) the slice around the index.
    """

    def __init__(self, table: pa.Table, arrival: np.ndarray | None = None, *, grouped: bool = False) -> None:
        self.table = table
        self.arrival = arrival
        self.grouped = grouped
        self._slice: tuple[int, list[TraceRow]] | None = None

    def __len__(self) -> int:
        return self.table.num_rows

    def _part(self, start: int, stop: int) -> pa.Table:
        if self.arrival is None:
            return self.table.slice(start, max(0, stop - start))
        return self.table.take(pa.array(self.arrival[start:stop]))

    def arrival_table(self) -> pa.Table:
        """The rows in arrival order."""
        return self._part(0, len(self))

    @overload
    def __getitem__(self, index: int) -> TraceRow: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[TraceRow, ...]: ...

    def __getitem__(self, index: int | slice) -> TraceRow | tuple[TraceRow, ...]:
        if isinstance(index, slice):  # a slice is a plain tuple, as a trace's rows used to be
            start, stop, step = index.indices(len(self))
            if step == 1:
                return tuple(decode_rows(self._part(start, stop)))
            return tuple(self[i] for i in range(start, stop, step))
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        first = index - index % _DECODE_ROWS
        if self._slice is None or self._slice[0] != first:
            self._slice = (first, decode_rows(self._part(first, first + _DECODE_ROWS)))
        return self._slice[1][index - first]

    def __iter__(self) -> Iterator[TraceRow]:
        for start in range(0, len(self), _DECODE_ROWS):
            yield from decode_rows(self._part(start, start + _DECODE_ROWS))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence):
            return len(self) == len(other) and list(self) == list(other)
        return NotImplemented

    def __add__(self, other: Sequence[TraceRow]) -> tuple[TraceRow, ...]:
        return (*self, *other)

    def __radd__(self, other: Sequence[TraceRow]) -> tuple[TraceRow, ...]:
        return (*other, *self)

    __hash__ = None  # type: ignore[assignment]


def row_table(rows: Sequence[TraceRow]) -> pa.Table:
    """The ROW_SCHEMA table of any row sequence (in any order: every row carries its `order`)."""
    return rows.table if isinstance(rows, TraceRows) else encode_rows(rows)


def grouped_table(rows: Sequence[TraceRow]) -> pa.Table:
    """The rows sorted by (instance, arrival order): each instance's rows together, in order."""
    if isinstance(rows, TraceRows) and rows.grouped:
        return rows.table
    table = row_table(rows)
    return table.take(pc.sort_indices(table, [("instance", "ascending"), ("order", "ascending")]))
