"""Read traces from CSV, JSON Lines (including the compact valve format) and Parquet.

The format comes from the file extension. Every reader streams (CSV and JSON Lines line by line,
Parquet in record batches), hands each row to the shared `TraceBuilder`, and either returns a
validated `Trace` or raises one `TraceValidationError` listing every problem in the file.
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Iterator
from typing import IO, Any

from wmviz.core.scenario import ScenarioConfig, Trace
from wmviz.trace.compact import CompactReader, is_compact_header
from wmviz.trace.config import load_config_into, parse_config_into
from wmviz.trace.errors import IssueCollector
from wmviz.trace.timefmt import show
from wmviz.trace.validate import TraceBuilder

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
_BATCH_ROWS = 65_536


def format_of(name: str) -> str | None:
    """`csv`, `jsonl` or `parquet` from a file name's extension (case-insensitive), else None."""
    return FORMATS.get(os.path.splitext(name)[1].lower())


def read_trace(
    path: str | os.PathLike[str],
    config_path: str | os.PathLike[str] | None = None,
    *,
    config: ScenarioConfig | None = None,
) -> Trace:
    """Read and validate a trace file; the format comes from the extension.

    The config is, in order of precedence: `config`, the JSON file `config_path`, the trace's own
    config (a leading `{"config": {...}}` JSON Lines line, or the Parquet schema metadata written by
    `write_trace`), else the defaults. A config given from outside replaces the in-file one
    entirely: the in-file line is then skipped without being read or validated.

    Raises `TraceValidationError` with every issue (trace and config file alike), sorted by row.
    """
    if config is not None and config_path is not None:
        raise ValueError("give either config or config_path, not both")
    source = os.path.basename(os.fspath(path))
    collector = IssueCollector(source)
    config_ok = True
    if config_path is not None:
        config, config_ok = load_config_into(config_path, collector)
    with open(path, "rb") as f:
        return _read(f, source, collector, config, config_ok)


def read_trace_bytes(data: bytes, name: str, config: ScenarioConfig | None = None) -> Trace:
    """`read_trace` for an upload held in memory; `name` gives the format and the message file name."""
    source = os.path.basename(name)
    return _read(io.BytesIO(data), source, IssueCollector(source), config, True)


def _read(
    stream: IO[bytes], source: str, collector: IssueCollector, config: ScenarioConfig | None, config_ok: bool
) -> Trace:
    fmt = format_of(source)
    if fmt is None:
        known = ", ".join(FORMATS)
        collector.add(
            None, None, f"unknown trace format {show(os.path.splitext(source)[1])}; expected one of {known}"
        )
        raise collector.error()
    reader = {"csv": _read_csv, "jsonl": _read_jsonl, "parquet": _read_parquet}[fmt]
    builder = reader(stream, source, collector, config, config_ok)
    if builder is None:  # the file could not be read at all; the reason is already collected
        raise collector.error()
    return builder.finish()


def _read_csv(
    stream: IO[bytes], source: str, collector: IssueCollector, config: ScenarioConfig | None, config_ok: bool
) -> TraceBuilder | None:
    # utf-8-sig drops the byte-order mark spreadsheet programs put in front of CSV exports.
    text = io.TextIOWrapper(stream, encoding="utf-8-sig", newline="")
    reader = csv.reader(text)
    header: list[str] | None = None
    header_row = 0
    builder: TraceBuilder | None = None
    last_line = 0
    try:
        for cells in reader:
            start, last_line = last_line + 1, reader.line_num
            if not cells:
                continue  # a blank line
            if header is None:
                header, header_row = [c.strip() for c in cells], start
                _check_header(header, header_row, collector)
                builder = TraceBuilder(
                    source,
                    collector,
                    config or ScenarioConfig(),
                    config_ok,
                    header=set(header),
                    header_row=header_row,
                    text=True,
                    unit="line",
                )
                continue
            assert builder is not None
            if len(cells) != len(header):
                collector.add(start, None, f"row has {len(cells)} cells but the header has {len(header)}")
                continue
            builder.add_row(
                start, [(name, cell) for name, cell in zip(header, cells, strict=True) if cell != ""]
            )
    except UnicodeDecodeError:
        collector.add(last_line + 1, None, "file is not valid UTF-8 text")
        return None
    except csv.Error as exc:
        collector.add(reader.line_num, None, f"broken CSV: {exc}")
        return None
    if builder is None:
        collector.add(None, None, "file is empty; expected a header line naming the columns")
    return builder


def _check_header(header: list[str], row: int, collector: IssueCollector) -> None:
    seen: set[str] = set()
    for i, name in enumerate(header, start=1):
        if not name:
            collector.add(row, None, f"header cell {i} is empty; every column needs a name")
        elif name in seen:
            collector.add(row, name, "appears twice in the header")
        seen.add(name)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # A repeated key would otherwise silently keep only its last value.
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f"key {show(key)} appears twice")
        result[key] = value
    return result


def _json_lines(stream: IO[bytes], collector: IssueCollector) -> Iterator[tuple[int, dict[str, Any]]]:
    """Decoded JSON objects with their line numbers; comments skipped, broken lines reported."""
    for lineno, raw in enumerate(stream, start=1):
        try:
            line = raw.decode("utf-8-sig" if lineno == 1 else "utf-8").strip()
        except UnicodeDecodeError:
            collector.add(lineno, None, "line is not valid UTF-8 text")
            continue
        if not line or line.startswith(("#", "//")):
            continue
        try:
            obj = json.loads(line, object_pairs_hook=_unique_keys, parse_constant=_reject_constant)
        except ValueError as exc:
            collector.add(lineno, None, f"line is not valid JSON: {getattr(exc, 'msg', exc)}")
            continue
        if not isinstance(obj, dict):
            collector.add(lineno, None, f"line is not a JSON object: {show(obj)}")
            continue
        yield lineno, obj


def _read_jsonl(
    stream: IO[bytes], source: str, collector: IssueCollector, config: ScenarioConfig | None, config_ok: bool
) -> TraceBuilder | None:
    external = config is not None
    builder: TraceBuilder | None = None
    compact: CompactReader | None = None
    for lineno, obj in _json_lines(stream, collector):
        if "config" in obj:
            if builder is not None:
                collector.add(lineno, None, 'a {"config": ...} line must come before every trace line')
            elif len(obj) != 1:
                extra = ", ".join(k for k in obj if k != "config")
                collector.add(lineno, None, f'a {{"config": ...}} line holds nothing else; found {extra}')
            elif not external:
                if config is not None:
                    collector.add(lineno, None, 'only one {"config": ...} line is allowed')
                else:
                    config, config_ok = parse_config_into(obj["config"], collector, row=lineno)
            continue
        if builder is None:
            builder = TraceBuilder(source, collector, config or ScenarioConfig(), config_ok, unit="line")
            if is_compact_header(obj):
                compact = CompactReader(builder)
        if compact is not None:
            compact.feed(lineno, obj)
        else:
            builder.add_row(lineno, [(k, v) for k, v in obj.items() if v is not None])
    return builder or TraceBuilder(source, collector, config or ScenarioConfig(), config_ok)


def _read_parquet(
    stream: IO[bytes], source: str, collector: IssueCollector, config: ScenarioConfig | None, config_ok: bool
) -> TraceBuilder | None:
    import pyarrow as pa  # lazily: the CSV/JSON path and the web app's start-up must not pay for it
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(stream)
    except (pa.ArrowException, OSError) as exc:
        collector.add(None, None, f"not a readable Parquet file: {exc}")
        return None
    with pf:
        names, seen, config, config_ok = parquet_footer(pf, collector, config, config_ok)
        builder = TraceBuilder(
            source, collector, config or ScenarioConfig(), config_ok, header=seen, header_row=None, unit="row"
        )
        row = 0
        try:
            for batch in pf.iter_batches(batch_size=_BATCH_ROWS):
                columns = [column.to_pylist() for column in batch.columns]
                for values in zip(*columns, strict=True):
                    row += 1
                    builder.add_row(row, [(n, v) for n, v in zip(names, values, strict=True) if not _null(v)])
        except (pa.ArrowException, OSError) as exc:
            collector.add(row + 1, None, f"cannot read this Parquet row group: {exc}")
            return None
    return builder


def parquet_footer(
    pf: Any, collector: IssueCollector, config: ScenarioConfig | None, config_ok: bool
) -> tuple[list[str], set[str], ScenarioConfig | None, bool]:
    """The file-level part of a Parquet trace (also the Spark reader's): the column names, with a
    name given twice reported, and the config stored in the file's metadata unless one was given."""
    schema = pf.schema_arrow
    names = list(schema.names)
    seen: set[str] = set()
    for name in names:
        if name in seen:
            collector.add(None, name, "appears twice in the schema")
        seen.add(name)
    stored = (schema.metadata or {}).get(PARQUET_CONFIG_KEY)
    if config is None and stored is not None:
        try:
            obj = json.loads(stored.decode("utf-8"), parse_constant=_reject_constant)
        except ValueError as exc:
            collector.add(None, None, f"the {PARQUET_CONFIG_KEY.decode()} metadata is not valid JSON: {exc}")
            config_ok = False
        else:
            config, config_ok = parse_config_into(obj, collector)
    return names, seen, config, config_ok


def _null(value: Any) -> bool:
    # NaN is how pandas writes a missing value into a float column, so it means "absent" too.
    return value is None or (isinstance(value, float) and value != value)
