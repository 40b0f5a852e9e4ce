"""Write traces as CSV, JSON Lines, Parquet or the compact valve format.

Reading back what was written gives the same rows (apart from `row` numbers), with the limits that
follow from each format having fewer types than a `TraceRow`:

* CSV has no types: a `value` string that reads as a number (`12`, `1.5`) comes back as a number,
  and every payload value comes back as a string. An empty string is an empty cell, i.e. absent.
* Parquet stores `value` as int64, float64 or string, whichever holds every row's value; a column
  mixing strings and numbers is written as strings. Payload columns are strings.
* The compact format holds only watermark/status rows on input "0", renames the instances
  "0", "1", … in order of first appearance and groups each instance's rows together.
"""

from __future__ import annotations

import io
import itertools
import json
import os
from collections.abc import Iterable
from typing import IO, Any

from wmviz.core.errors import BadValue
from wmviz.core.scenario import Kind, ScenarioConfig, Trace, TraceRow
from wmviz.core.types import MAX_MS, MIN_MS
from wmviz.disk.atomic import replacing_file, write_file
from wmviz.trace.columns import STANDARD_COLUMNS
from wmviz.trace.config_write import config_to_dict
from wmviz.trace.payload import payload_text
from wmviz.trace.sources import FORMATS, PARQUET_CONFIG_KEY, format_of
from wmviz.trace.timecells import format_time_ms

WRITE_FORMATS = ("csv", "jsonl", "parquet", "compact")
_INT_COLUMNS = frozenset({"seq", "channel", "event_ms", "watermark_ms", "proc_ms"})
_BATCH_ROWS = 65_536


def write_trace(
    rows: Trace | Iterable[TraceRow],
    path: str | os.PathLike[str],
    fmt: str | None = None,
    config: ScenarioConfig | None = None,
) -> None:
    """Write `rows` to `path` as `fmt` (`csv`, `jsonl`, `parquet`, `compact`; default: from the extension).

    The config (`config`, else a `Trace`'s own config when it is not the default) goes into a
    leading `{"config": ...}` line for JSON Lines and compact, and into the schema metadata for
    Parquet. CSV cannot hold one: an explicit `config` with CSV is a `ValueError` (write it next to
    the file with `write_config`), and a `Trace`'s own config is left out.
    """
    fmt = fmt or format_of(os.fspath(path))
    if fmt not in WRITE_FORMATS:
        raise BadValue(f"cannot tell the format of {os.fspath(path)!r}; pass fmt= one of {WRITE_FORMATS}")
    with replacing_file(path) as f:  # whole or not at all: an earlier file stays until the new one is
        _write(rows, f, fmt, config)


def out_format(path: str | os.PathLike[str], option: str = "--out") -> str:
    """The format an output's extension names (`csv`, `jsonl`, `parquet`), or a `ValueError`
    listing the extensions that name one."""
    fmt = format_of(os.fspath(path))
    if fmt is None:
        suffix = os.path.splitext(os.fspath(path))[1]
        raise BadValue(
            f"{option} {os.fspath(path)}: "
            + (f"{suffix!r} names no trace format" if suffix else "no extension names its format")
            + f"; end it in one of {', '.join(FORMATS)}"
        )
    return fmt


def write_trace_bytes(
    rows: Trace | Iterable[TraceRow], fmt: str, config: ScenarioConfig | None = None
) -> bytes:
    """`write_trace` into memory (for a download button); `fmt` is required."""
    if fmt not in WRITE_FORMATS:
        raise BadValue(f"unknown format {fmt!r}; expected one of {WRITE_FORMATS}")
    buffer = io.BytesIO()
    _write(rows, buffer, fmt, config)
    return buffer.getvalue()


def write_compact(trace_or_rows: Trace | Iterable[TraceRow], path: str | os.PathLike[str]) -> None:
    """Write a valve-only trace in the compact format (docs/trace-format.md §6).

    Only `watermark` and `status` rows on input "0" without `seq`, `proc_ms` or payload fit the
    format; anything else is a `ValueError`. Each instance gets one `{"channels": N}` header (N from
    the trace's `valve_channels`, or 1 + the largest channel index for bare rows) followed by its
    rows; the sentinels are written as "MIN"/"MAX".
    """
    write_trace(trace_or_rows, path, "compact")


def write_config(config: ScenarioConfig, path: str | os.PathLike[str]) -> None:
    """Write a scenario config JSON file holding only the fields that differ from the defaults."""
    text = json.dumps(config_to_dict(config), indent=2, ensure_ascii=False) + "\n"
    write_file(path, text.encode("utf-8"))


def _write(
    rows: Trace | Iterable[TraceRow], stream: IO[bytes], fmt: str, config: ScenarioConfig | None
) -> None:
    trace = rows if isinstance(rows, Trace) else None
    row_list = tuple(trace.rows) if trace is not None else tuple(rows)  # type: ignore[arg-type]
    if fmt == "csv" and config is not None:
        raise BadValue("a CSV file cannot hold a config; write it next to the file with write_config")
    if config is None and trace is not None and trace.config != ScenarioConfig():
        config = trace.config
    if fmt == "csv":
        _write_csv(row_list, stream)
    elif fmt == "jsonl":
        _write_jsonl(row_list, stream, config)
    elif fmt == "parquet":
        _write_parquet(row_list, stream, config)
    else:
        _write_compact(row_list, stream, config, trace)


def _payload_names(rows: tuple[TraceRow, ...]) -> list[str]:
    """Payload column names in an order that keeps every row's own order where the rows agree.

    A CSV/Parquet reader returns payload in column order, so the columns are a topological order
    of "comes before" within rows, ties broken by first appearance (rows that disagree cannot all
    be kept, and the first appearance wins).
    """
    first_seen: dict[str, int] = {}
    after: dict[str, set[str]] = {}
    for r in rows:
        names = [name for name, _ in r.payload]
        for name in names:
            if name in STANDARD_COLUMNS:
                raise BadValue(f"row {r.row}: payload column {name!r} clashes with a standard column")
            first_seen.setdefault(name, len(first_seen))
            after.setdefault(name, set())
        for before, later in itertools.pairwise(names):
            after[before].add(later)
    waiting = {name: 0 for name in first_seen}
    for laters in after.values():
        for later in laters:
            waiting[later] += 1
    order: list[str] = []
    while len(order) < len(first_seen):
        ready = [n for n, count in waiting.items() if count == 0 and n not in order]
        # A cycle (rows that disagree): release the earliest-seen name still waiting.
        pick = min(ready or [n for n in waiting if n not in order], key=first_seen.__getitem__)
        order.append(pick)
        for later in after[pick]:
            waiting[later] -= 1
    return order


def _standard(r: TraceRow) -> dict[str, Any]:
    """The standard columns of a row that are present, in their declared order, as plain Python values."""
    values = {
        "seq": r.seq,
        "instance": r.instance,
        "input": r.input,
        "channel": r.channel,
        "kind": r.kind.value,
        "event_ms": r.event_ms,
        "watermark_ms": r.watermark_ms,
        "status": r.status.value if r.status is not None else None,
        "proc_ms": r.proc_ms,
        "key": r.key,
        "value": r.value,
    }
    return {k: v for k, v in values.items() if v is not None}


def _text(column: str, value: Any) -> str:
    if value is None:
        return ""
    if column == "watermark_ms" and type(value) is int:
        return format_time_ms(value)
    if isinstance(value, str):
        return value
    if isinstance(value, float):
        return repr(value)  # the shortest text that reads back as the same float
    if isinstance(value, int):
        return str(value)
    # A list or object as JSON; a value JSON cannot hold (a Parquet time, decimal or bytes) as its
    # own text, which is what a text cell can keep of it.
    return payload_text(value)


def _csv_cell(text: str) -> str:
    """A CSV cell, quoted when it holds a comma, a quote or a line break of any kind (a lone CR
    ends a record for most CSV readers, and for wmviz's)."""
    if any(c in text for c in ',"\n\r'):
        return '"' + text.replace('"', '""') + '"'
    return text


def csv_header(payload_columns: Iterable[str]) -> str:
    """A trace CSV's header line: the standard columns, then these payload columns."""
    return ",".join(_csv_cell(c) for c in (*STANDARD_COLUMNS, *payload_columns)) + "\n"


def csv_line(cells: dict[str, Any], payload_columns: Iterable[str]) -> str:
    """One CSV record of a row given as its cells by column name (absent: an empty cell), in the
    columns of `csv_header(payload_columns)`."""
    columns = (*STANDARD_COLUMNS, *payload_columns)
    unknown = set(cells).difference(columns)
    if unknown:
        raise BadValue(f"no CSV column for {', '.join(sorted(unknown))}")  # never drop a cell silently
    return ",".join(_csv_cell(_text(c, cells.get(c))) for c in columns) + "\n"


def _write_csv(rows: tuple[TraceRow, ...], stream: IO[bytes]) -> None:
    extra = _payload_names(rows)
    lines = [csv_header(extra)]
    lines += [csv_line({**dict(r.payload), **_standard(r)}, extra) for r in rows]
    stream.write("".join(lines).encode("utf-8"))


def _json_line(obj: dict[str, Any]) -> bytes:
    return (json.dumps(obj, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")


def _write_jsonl(rows: tuple[TraceRow, ...], stream: IO[bytes], config: ScenarioConfig | None) -> None:
    if config is not None:
        stream.write(_json_line({"config": config_to_dict(config)}))
    for r in rows:
        obj = _standard(r)
        # "0" is the default instance and input; leaving it out keeps valve-only files short.
        for column in ("instance", "input"):
            if obj[column] == "0":
                del obj[column]
        if r.watermark_ms in (MIN_MS, MAX_MS):
            obj["watermark_ms"] = format_time_ms(r.watermark_ms)
        obj.update((name, _json_payload(value)) for name, value in r.payload)
        stream.write(_json_line(obj))


def _json_payload(value: Any) -> Any:
    """A payload value as JSON Lines holds it: itself if it is JSON, else its text (a Parquet
    timestamp, decimal or non-finite float has no JSON form; its text is what is shown)."""
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return payload_text(value)
    return value


def _value_type(rows: tuple[TraceRow, ...]) -> str:
    values = [r.value for r in rows if r.value is not None]
    if all(type(v) is int and MIN_MS <= v <= MAX_MS for v in values):
        return "int64"
    if all(isinstance(v, float) or (type(v) is int and abs(v) <= 2**53) for v in values):
        return "float64"
    return "string"


def _write_parquet(rows: tuple[TraceRow, ...], stream: IO[bytes], config: ScenarioConfig | None) -> None:
    import pyarrow as pa  # lazily, as in the reader
    import pyarrow.parquet as pq

    extra = _payload_names(rows)
    value_type = _value_type(rows)
    types = {c: pa.int64() if c in _INT_COLUMNS else pa.string() for c in STANDARD_COLUMNS}
    types["value"] = getattr(pa, value_type)() if value_type != "string" else pa.string()
    metadata = {PARQUET_CONFIG_KEY: json.dumps(config_to_dict(config)).encode()} if config else None
    schema = pa.schema(
        [pa.field(c, types[c]) for c in STANDARD_COLUMNS] + [pa.field(c, pa.string()) for c in extra],
        metadata=metadata,
    )

    def cell(column: str, value: Any) -> Any:
        if (
            value is None
            or column in _INT_COLUMNS
            or column in ("instance", "input", "kind", "status", "key")
        ):
            return value
        if column == "value" and value_type == "float64":
            return float(value)
        if column == "value" and value_type == "int64":
            return value
        return _text(column, value)

    with pq.ParquetWriter(stream, schema) as writer:
        for start in range(0, max(len(rows), 1), _BATCH_ROWS):
            chunk = rows[start : start + _BATCH_ROWS]
            columns: dict[str, list[Any]] = {c: [] for c in schema.names}
            for r in chunk:
                std = _standard(r)
                payload = dict(r.payload)
                for c in STANDARD_COLUMNS:
                    columns[c].append(cell(c, std.get(c)))
                for c in extra:
                    columns[c].append(cell(c, payload.get(c)))
            writer.write_table(pa.table(columns, schema=schema))


def _write_compact(
    rows: tuple[TraceRow, ...], stream: IO[bytes], config: ScenarioConfig | None, trace: Trace | None
) -> None:
    by_instance: dict[str, list[TraceRow]] = {}
    for r in rows:
        if r.kind not in (Kind.WATERMARK, Kind.STATUS) or r.input != "0" or r.channel is None:
            raise BadValue(f"row {r.row}: the compact format holds only watermark/status rows on input 0")
        if r.seq is not None or r.proc_ms is not None or r.payload:
            raise BadValue(f"row {r.row}: the compact format has no seq, proc_ms or payload")
        by_instance.setdefault(r.instance, []).append(r)
    fallback = 1 + max((r.channel or 0 for r in rows), default=0)
    if config is not None:
        stream.write(_json_line({"config": config_to_dict(config)}))
    for instance, instance_rows in by_instance.items():
        count = trace.valve_channels.get((instance, "0"), fallback) if trace else fallback
        stream.write(_json_line({"channels": count}))
        for r in instance_rows:
            if r.kind is Kind.WATERMARK:
                wm = r.watermark_ms
                stream.write(
                    _json_line({"ch": r.channel, "wm": format_time_ms(wm) if wm in (MIN_MS, MAX_MS) else wm})
                )
            else:
                assert r.status is not None
                stream.write(_json_line({"ch": r.channel, "status": r.status.value}))
