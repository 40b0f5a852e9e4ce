"""The Spark reader's slow path: the pure row validator, run on the executors.

Rows the fast path (`wmviz.spark.native`) cannot vouch for come here, in Arrow batches
(`mapInArrow`). Each is read into cells exactly as the pure reader does it (`csv`, `_json_lines`,
`CompactReader`, pyarrow values) and validated by the very `TraceBuilder.add_row` of the pure reader,
so every message is identical by construction. The outcome of a row leaves as flat records of one
schema, told apart by `t`:

* `I`: an issue (`row`, `idx` = its position among the row's issues, `col`, `reason`);
* `F`: the row's facts for the whole-file checks, and its typed columns when it is valid;
* `H`: a required column the header/schema lacks (`col`; `reason` holds the kind label, as in
  `TraceBuilder._header_missing`);
* `X`: a problem after which the pure CSV reader stops reading (`reason` is the message).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pandas as pd

from wmviz.core.scenario import ScenarioConfig
from wmviz.trace.compact import CompactReader, is_compact_header
from wmviz.trace.config import MAX_CHANNELS
from wmviz.trace.errors import IssueCollector
from wmviz.trace.payload import encode_payload
from wmviz.trace.readers import _json_lines, _null
from wmviz.trace.validate import TraceBuilder

OUT_FIELDS = (
    ("t", "string"),
    ("row", "long"),
    ("idx", "int"),
    ("col", "string"),
    ("reason", "string"),
    ("seq", "long"),
    ("seq_ok", "boolean"),
    ("instance", "string"),
    ("input", "string"),
    ("kind", "string"),
    ("channel", "long"),
    ("proc_ms", "long"),
    ("valid", "boolean"),
    ("event_ms", "long"),
    ("watermark_ms", "long"),
    ("status", "string"),
    ("key", "string"),
    ("value_json", "string"),
    ("payload_json", "string"),
)
OUT_DDL = ", ".join(f"{name} {kind}" for name, kind in OUT_FIELDS)
SPANS_REASON = "a quoted field spans lines; the Spark reader needs one record per line (use --engine local)"
# Worded as in wmviz.trace.readers, where these two are inline.
CONFIG_LATE_REASON = 'a {"config": ...} line must come before every trace line'


def cell_count_reason(cells: int, header: int) -> str:
    """A CSV row whose cell count differs from the header's (wmviz.trace.readers' wording)."""
    return f"row has {cells} cells but the header has {header}"


# --- running the pure validator one row at a time --------------------------------------------------


class _Found(IssueCollector):
    """Keeps every issue as found, uncapped: Spark counts and sorts them across all rows."""

    def __init__(self, source: str):
        super().__init__(source)
        self.found: list[tuple[int | None, str | None, str]] = []

    def add(
        self,
        row: int | None,
        column: str | None,
        reason: str,
        *,
        field: str | None = None,
        file: str | None = None,
    ) -> None:
        # Row validation never reports config fields or other files; keep the record flat.
        assert field is None and file is None
        self.total += 1
        self.found.append((row, column, reason))


@dataclass(frozen=True)
class RowParams:
    """What `TraceBuilder` needs to judge one row as the pure reader would (small and picklable)."""

    source: str
    config: ScenarioConfig
    config_ok: bool
    header: tuple[str, ...] | None
    header_row: int | None
    text: bool
    unit: str


class RowRunner:
    """Validates rows with the pure `TraceBuilder` and turns each outcome into output records."""

    def __init__(self, params: RowParams):
        self.found = _Found(params.source)
        header = set(params.header) if params.header is not None else None
        self.builder = TraceBuilder(
            params.source,
            self.found,
            params.config,
            params.config_ok,
            header=header,
            header_row=params.header_row,
            text=params.text,
            unit=params.unit,
        )
        self.columns: dict[str, list[Any]] = {name: [] for name, _ in OUT_FIELDS}

    def _emit(self, **values: Any) -> None:
        for name, column in self.columns.items():
            column.append(values.get(name))

    def fatal(self, row: int, reason: str) -> None:
        self._emit(t="X", row=row, reason=reason)

    def row(self, validate: Callable[[], None]) -> None:
        """Run `validate` (which reads and validates one row) and emit all it found.

        The builder is emptied around every row: each row is judged alone, exactly as `add_row`
        judges it in the middle of a file, and the whole-file state is rebuilt by Spark.
        """
        b = self.builder
        b._facts.clear()
        b._header_missing.clear()
        self.found.found.clear()
        validate()
        for idx, (row, column, reason) in enumerate(self.found.found):
            self._emit(t="I", row=row, idx=idx, col=column, reason=reason)
        for idx, (column, (first, kinds)) in enumerate(b._header_missing.items()):
            self._emit(t="H", row=first, idx=idx, col=column, reason=kinds[0])
        for f in b._facts:
            r = f.trace_row
            typed: dict[str, Any] = {}
            if r is not None:
                typed = {
                    "event_ms": r.event_ms,
                    "watermark_ms": r.watermark_ms,
                    "status": r.status.value if r.status is not None else None,
                    "key": r.key,
                    "value_json": json.dumps(r.value) if r.value is not None else None,
                    "payload_json": encode_payload(r.payload),
                }
            self._emit(
                t="F",
                row=f.row,
                seq=f.seq,
                seq_ok=f.seq_ok,
                instance=f.instance,
                input=f.input,
                kind=f.kind.value if f.kind is not None else None,
                channel=f.channel,
                proc_ms=f.proc_ms,
                valid=r is not None,
                **typed,
            )

    def batch(self) -> Any:
        """The records emitted so far as one Arrow batch (and a fresh start)."""
        import pyarrow as pa

        batch = pa.RecordBatch.from_pydict(self.columns, schema=arrow_schema())
        self.columns = {name: [] for name, _ in OUT_FIELDS}
        return batch


def arrow_schema() -> Any:
    import pyarrow as pa

    types = {"string": pa.string(), "long": pa.int64(), "int": pa.int32(), "boolean": pa.bool_()}
    return pa.schema([(name, types[kind]) for name, kind in OUT_FIELDS])


# --- the per-format slow paths (functions for mapInArrow) -----------------------------------------


def csv_rows(params: RowParams, header: list[str]) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """CSV lines (`row`, `raw` bytes) → records, parsed one line at a time as `csv.reader` does."""

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        runner = RowRunner(params)
        builder = runner.builder
        for batch in batches:
            for row, raw in zip(batch.column("row").to_pylist(), batch.column("raw").to_pylist()):
                try:
                    line = raw.decode("utf-8-sig" if row == 1 else "utf-8")
                except UnicodeDecodeError:
                    continue  # never reached: the pure reader stops before (see `csv_utf8_cutoff`)
                try:
                    records = list(csv.reader([line + "\n"]))
                except csv.Error as exc:
                    runner.fatal(row, f"broken CSV: {exc}")
                    continue
                cells = records[0] if records else []
                if not cells:
                    continue
                if any("\n" in cell for cell in cells):
                    # The line ends inside a quoted field, so the record goes on on the next line.
                    runner.fatal(row, SPANS_REASON)
                    continue

                def validate(row: int = row, cells: list[str] = cells) -> None:
                    if len(cells) != len(header):
                        runner.found.add(row, None, cell_count_reason(len(cells), len(header)))
                    else:
                        pairs = zip(header, cells, strict=True)
                        builder.add_row(row, [(name, cell) for name, cell in pairs if cell != ""])

                runner.row(validate)
            yield runner.batch()

    return run


def _decode_json_line(row: int, raw: bytes, found: _Found) -> dict[str, Any] | None:
    """The object on a JSON Lines line, by the pure reader's `_json_lines` (issues go to `found`).

    `_json_lines` numbers lines from 1 and reads line 1 with a byte-order mark allowed, so the line
    is put at position 1 only if it is the file's line 1, else behind one blank line.
    """
    data = raw + b"\n" if row == 1 else b"\n" + raw + b"\n"
    local = _Found(found.source)
    objs = list(_json_lines(io.BytesIO(data), local))
    for _, column, reason in local.found:
        found.add(row, column, reason)
    return objs[0][1] if objs else None


def jsonl_rows(params: RowParams, compact: bool) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """JSON Lines (`row`, `raw`, and for the compact format `inst`, `cnt`) → records.

    Every line here comes after the first trace line, so a config line is misplaced. For the compact
    format, `inst` is the line's instance index (a header's own) and `cnt` that instance's header
    count (-1 if the header's count was invalid).
    """

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        runner = RowRunner(params)
        builder = runner.builder
        reader = CompactReader(builder)
        for batch in batches:
            rows, raws = batch.column("row").to_pylist(), batch.column("raw").to_pylist()
            if compact:
                insts, cnts = batch.column("inst").to_pylist(), batch.column("cnt").to_pylist()
            else:
                insts = cnts = [None] * len(rows)
            for row, raw, inst, cnt in zip(rows, raws, insts, cnts, strict=True):

                def validate(row: int = row, raw: bytes = raw, inst: Any = inst, cnt: Any = cnt) -> None:
                    obj = _decode_json_line(row, raw, runner.found)
                    if obj is None:
                        return
                    if "config" in obj:
                        runner.found.add(row, None, CONFIG_LATE_REASON)
                        return
                    if not compact:
                        builder.add_row(row, [(k, v) for k, v in obj.items() if v is not None])
                        return
                    builder._compact = {}
                    if is_compact_header(obj):
                        reader.instances = inst
                    else:
                        reader.instances = inst + 1
                        if cnt is not None and cnt >= 1:
                            builder._compact = {str(inst): cnt}
                    reader.feed(row, obj)

                runner.row(validate)
            yield runner.batch()

    return run


def compact_probe(source: str) -> Callable[..., Any]:
    """A vectorized UDF classifying compact lines the fast path could not: `hdr`, `cnt`.

    `hdr` says whether the line is a `{"channels": N}` header (as `_read_jsonl` decides it), `cnt`
    is its count when valid, -1 when not; both null for lines that are not headers.
    """
    from pyspark.sql import functions as F

    @F.pandas_udf("hdr boolean, cnt long")
    def probe(rows: pd.Series, raws: pd.Series) -> pd.DataFrame:
        hdrs: list[bool | None] = []
        cnts: list[int | None] = []
        for row, raw in zip(rows, raws, strict=True):
            obj = None if raw is None else _decode_json_line(int(row), bytes(raw), _Found(source))
            header = obj is not None and "config" not in obj and is_compact_header(obj)
            count = obj["channels"] if header else None
            if header and (
                isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_CHANNELS
            ):
                count = -1
            hdrs.append(header)
            cnts.append(count)
        return pd.DataFrame({"hdr": pd.array(hdrs, dtype="boolean"), "cnt": pd.array(cnts, dtype="Int64")})

    return probe


def parquet_rows(params: RowParams, names: list[str]) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """Parquet rows as Spark read them (`row`, `c0`…) → records; used only for column types whose
    Spark → Arrow → Python values equal pyarrow's (see `wmviz.spark.source_parquet.spark_readable`)."""

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        runner = RowRunner(params)
        for batch in batches:
            rows = batch.column("row").to_pylist()
            values = [batch.column(f"c{i}").to_pylist() for i in range(len(names))]
            _validate_table(runner, rows, names, values)
            yield runner.batch()

    return run


def parquet_row_groups(
    params: RowParams, path: str, names: list[str], starts: list[int]
) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """Row-group ids (`id`) → records, reading the file with pyarrow like the pure reader does.

    The fallback for files whose column types Spark reads differently (or not at all): every row is
    validated in Python, from values pyarrow gives exactly as for `read_trace`.
    """

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow.parquet as pq

        runner = RowRunner(params)
        with open(path, "rb") as f, pq.ParquetFile(f) as pf:
            for batch in batches:
                for group in batch.column("id").to_pylist():
                    table = pf.read_row_group(group)
                    values = [column.to_pylist() for column in table.columns]
                    rows = list(range(starts[group] + 1, starts[group] + 1 + table.num_rows))
                    _validate_table(runner, rows, names, values)
                    yield runner.batch()

    return run


def _validate_table(runner: RowRunner, rows: list[int], names: list[str], values: list[list[Any]]) -> None:
    builder = runner.builder
    for j, row in enumerate(rows):
        cells = [
            (name, column[j]) for name, column in zip(names, values, strict=True) if not _null(column[j])
        ]
        runner.row(lambda row=row, cells=cells: builder.add_row(row, cells))
