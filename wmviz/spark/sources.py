"""Per-format planning for the Spark reader: the file-level part on the driver, the rows as a DataFrame.

For each format this reads what the pure reader reads before the first row (CSV header, JSON Lines
config lines, Parquet footer) on the driver with the pure code, and describes the rows as a `Plan`:
a DataFrame `base` with each row's number, its typed columns and `_fast` (`wmviz.spark.native`), plus
the inputs and function of the slow path (`wmviz.spark.pyrows`) for the other rows.

Text files are read with `spark.read.text`; a line's number is its partition's offset (from one small
count per partition, which also brings back each partition's first lines for the header) plus its
position in the partition (`monotonically_increasing_id` keeps it in the lower 33 bits). The splits
of one file are numbered in file order, so the count and later passes agree.
"""

from __future__ import annotations

import codecs
import csv
import io
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from wmviz.core.scenario import ScenarioConfig
from wmviz.spark import native, pyrows
from wmviz.spark.native import Raw, q
from wmviz.trace.compact import is_compact_header
from wmviz.trace.config import MAX_CHANNELS
from wmviz.trace.errors import IssueCollector
from wmviz.trace.readers import _check_header, _json_lines, _read_jsonl
from wmviz.trace.validate import _TYPED, STANDARD_COLUMNS

UTF8_REASON = "file is not valid UTF-8 text"  # wmviz.trace.readers' wording for CSV
_POSITION_BITS = 33
_HEAD = 256  # lines of each partition brought back by the count pass
_CSV_FIELD_LIMIT = csv.field_size_limit()
_CHUNK = 8192  # io.TextIOWrapper's read size, which decides where the pure CSV reader notices bad UTF-8
_WS = r"[ \t\r]*"
_STR = r'"[^"\\\x00-\x1f]*"'
_NUM = r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?"
_PAIR = rf"{_STR}{_WS}:{_WS}(?:{_STR}|{_NUM}|true|false|null)"
# A flat JSON object with escape-free strings: the lines whose tokens Spark can read unambiguously.
_FLAT_OBJECT = rf"^{_WS}\{{{_WS}(?:{_PAIR}(?:{_WS},{_WS}{_PAIR})*)?{_WS}\}}{_WS}$"
_PAIR_CAPTURE = rf'"([^"\\]*)"{_WS}:{_WS}("[^"\\]*"|[^,}} \t\r]+)'


class Done(Exception):
    """The file-level reading already decided the outcome (raise the collector's issues)."""


@dataclass
class Plan:
    """How to validate one file's rows on Spark.

    `base` has `_row`, `_fast`, the typed columns of `native.row_model` and `payload_json`, plus what
    the slow path reads: `py_columns` (SQL, by the names `py_fn` reads). `py_all`, if set, replaces
    the fast path entirely: the slow path reads it, and `base` is None. `seq_possible` and
    `proc_possible` say whether any row can carry `seq`/`proc_ms` (a CSV header or Parquet schema
    without them rules the whole-file checks out).
    """

    params: pyrows.RowParams
    base: DataFrame | None
    py_columns: dict[str, str]
    py_fn: Callable[[Iterator[Any]], Iterator[Any]]
    py_all: DataFrame | None = None
    compact_counts: DataFrame | None = None
    csv_cutoff: int | None = None  # the last line the pure CSV reader gets to before bad UTF-8
    seq_possible: bool = True
    proc_possible: bool = True


# --- text files ------------------------------------------------------------------------------------


@dataclass
class Lines:
    """A text file's lines numbered as an editor shows them (`_row`, `_v`), and what the count found."""

    df: DataFrame
    total: int
    bad_utf8: int
    head: list[bytes]  # the first lines, as bytes (at least `_HEAD` of them unless the file is shorter)
    spark: SparkSession
    path: str
    line_sep: str | None

    def first(self, enough: Callable[[list[bytes]], bool]) -> list[bytes]:
        """The first lines, more and more of them, until `enough(lines)` or the file is exhausted."""
        lines, count = self.head, len(self.head)
        while not enough(lines) and count < self.total:
            count *= 16
            first = _text(self.spark, self.path, self.line_sep).limit(count)
            lines = [bytes(r["b"]) for r in first.select(F.col("value").cast("binary").alias("b")).collect()]
        return lines


def _text(spark: SparkSession, path: str, line_sep: str | None) -> DataFrame:
    reader = spark.read.option("lineSep", line_sep) if line_sep else spark.read
    return reader.text(path)


def numbered_lines(spark: SparkSession, path: str, line_sep: str | None) -> Lines:
    """Number the lines of a text file with one small job (counts and first lines per partition)."""
    lines = _text(spark, path, line_sep).select(
        F.col("value").alias("_v"), F.monotonically_increasing_id().alias("_mid")
    )
    part, position = F.shiftright("_mid", _POSITION_BITS), F.col("_mid").bitwiseAND((1 << _POSITION_BITS) - 1)
    stats = (
        lines.groupBy(part.alias("p"))
        .agg(
            F.count(F.lit(1)).alias("n"),
            F.sum((~F.is_valid_utf8("_v")).cast("long")).alias("bad"),
            F.collect_list(
                F.when(position < _HEAD, F.struct(position.alias("i"), F.col("_v").cast("binary")))
            ).alias("head"),
        )
        .collect()
    )
    by_part = {r["p"]: r for r in stats}
    offsets, total, head = [], 0, []
    for p in range(max(by_part, default=-1) + 1):
        offsets.append(total)
        r = by_part.get(p)
        total += r["n"] if r else 0
        if r and len(head) < _HEAD:
            head += [bytes(line) for _, line in sorted(r["head"], key=lambda item: item[0])]
    offset = F.element_at(F.array(*[F.lit(o) for o in offsets or [0]]), (part + 1).cast("int"))
    numbered = lines.select((offset + position + 1).alias("_row"), "_v")
    bad = sum(r["bad"] or 0 for r in stats)
    return Lines(numbered, total, bad, head, spark, path, line_sep)


def csv_utf8_cutoff(path: str) -> int | None:
    """How many lines the pure CSV reader reads before failing on bad UTF-8 (None: it does not fail).

    `io.TextIOWrapper` decodes 8192-byte chunks; the error surfaces when a line is not complete in
    the text decoded before the bad chunk, so the issue's line number depends on where chunks end.
    This replays exactly that (a trailing `\\r` waits for the next chunk, as universal newlines do).
    """
    decoder = codecs.getincrementaldecoder("utf-8-sig")()
    complete, pending_cr = 0, False
    with open(path, "rb") as f:
        while True:
            chunk = f.read(_CHUNK)
            try:
                text = decoder.decode(chunk, final=not chunk)
            except UnicodeDecodeError:
                return complete
            if not chunk:
                return None
            if pending_cr and text:
                complete += 0 if text.startswith("\n") else 1
                pending_cr = False
            if text:
                complete += text.count("\n") + text.count("\r") - text.count("\r\n")
                if text.endswith("\r"):
                    complete -= 1
                    pending_cr = True


# --- CSV -------------------------------------------------------------------------------------------


def plan_csv(
    spark: SparkSession,
    path: str,
    source: str,
    collector: IssueCollector,
    config: ScenarioConfig | None,
    config_ok: bool,
) -> Plan:
    config = config or ScenarioConfig()
    lines = numbered_lines(spark, path, None)
    cutoff = csv_utf8_cutoff(path) if lines.bad_utf8 else None
    reach = lines.total if cutoff is None else cutoff

    def decoded(raw_lines: list[bytes]) -> list[str]:
        return [raw.decode("utf-8-sig" if i == 0 else "utf-8", "replace") for i, raw in enumerate(raw_lines)]

    head = decoded(lines.first(lambda ls: any(decoded(ls[:reach]))))[:reach]
    header_row = next((i + 1 for i, line in enumerate(head) if line), None)
    if header_row is None:
        if cutoff is not None:
            collector.add(cutoff + 1, None, UTF8_REASON)
        else:
            collector.add(None, None, "file is empty; expected a header line naming the columns")
        raise Done
    try:
        cells = next(csv.reader([head[header_row - 1] + "\n"]))
    except csv.Error as exc:
        collector.add(header_row, None, f"broken CSV: {exc}")
        raise Done from None
    if any("\n" in cell for cell in cells):
        collector.add(header_row, None, pyrows.SPANS_REASON)
        raise Done
    header = [cell.strip() for cell in cells]
    _check_header(header, header_row, collector)
    header_ok = len(set(header)) == len(header) and all(header)
    params = pyrows.RowParams(source, config, config_ok, tuple(header), header_row, True, "line")

    rows = lines.df.filter(F.expr(f"_row > {header_row} AND _row <= {reach} AND _v <> ''"))
    names = {name: f"_c{j}" for j, name in enumerate(header)} if header_ok else {}
    cells_sql = {
        cell: f"try_element_at(split(_v, ',', -1), {j + 1})" for j, cell in enumerate(names.values())
    }
    raw = {}
    for name, cell in names.items():
        if name in STANDARD_COLUMNS:
            ref = native.c(cell)
            # A typed cell of spaces only is absent (the pure reader strips typed cells).
            blank = f"(startswith({ref}, ' ') AND trim({ref}) = '')"
            present = f"({ref} <> '' AND NOT {blank})" if name in _TYPED else f"({ref} <> '')"
            raw[name] = Raw(present, "s", ref)
    pieces = [
        (name, f"(CASE WHEN {native.c(cell)} <> '' THEN {native.c(cell)} END)", "TRUE")
        for name, cell in names.items()
        if name not in STANDARD_COLUMNS
    ]
    # One record per line (no quote), the header's cell count, and no control character that Spark's
    # number parsing would trim but Python's would not (so cells are `Raw.clean`).
    structure = (
        f"{header_ok} AND NOT contains(_v, '\"') AND octet_length(_v) <= {_CSV_FIELD_LIMIT} "
        f"AND size(split(_v, ',', -1)) = {len(header)} AND NOT _v RLIKE {q(native.CONTROL)}"
    )
    base = native.row_model(rows, raw, config, config_ok, csv=True, structure_ok=structure, inline=cells_sql)
    base = base.withColumn("payload_json", F.expr(native.payload_json(pieces)))
    py = {"row": "_row", "raw": "CAST(_v AS BINARY)"}
    return Plan(
        params,
        base,
        py,
        pyrows.csv_rows(params, header),
        csv_cutoff=cutoff,
        seq_possible="seq" in header,
        proc_possible="proc_ms" in header,
    )


# --- JSON Lines ------------------------------------------------------------------------------------


def _token_raw(tok: str) -> Raw:
    """A raw JSON token of a flat line (`"text"`, a number, true/false/null) as the value json gives.

    Every float is tagged `f` with no long value: only `value` and payload accept floats, and they
    check the `repr` form themselves.
    """
    is_str = f"startswith({tok}, '\"')"
    is_int = f"(NOT {is_str} AND {tok} NOT IN ('true', 'false', 'null') AND NOT ({tok} RLIKE '[.eE]'))"
    tag = (
        f"(CASE WHEN {tok} IS NULL OR {tok} = 'null' THEN NULL WHEN {is_str} THEN 's' "
        f"WHEN {tok} IN ('true', 'false') THEN 'x' WHEN {is_int} THEN 'i' ELSE 'f' END)"
    )
    # json reads -0 as the int 0, whose str() is "0".
    text = (
        f"(CASE WHEN {is_str} THEN substring({tok}, 2, length({tok}) - 2) "
        f"WHEN {is_int} AND {tok} = '-0' THEN '0' ELSE {tok} END)"
    )
    lng = f"(CASE WHEN {is_int} THEN TRY_CAST({tok} AS BIGINT) END)"
    return Raw(f"({tag} IS NOT NULL)", "dyn", text, lng, tag=tag)


def _token_json(tok: str) -> str:
    """`json.dumps` of the value of a token the fast path accepts (a string, number or true/false)."""
    raw = _token_raw(tok)
    return f"(CASE WHEN {raw.tag} = 's' THEN {native.json_string(raw.text)} ELSE {raw.text} END)"


def _token(name: str) -> str:
    """The raw token of key `name` on a flat line, null if absent."""
    at = f"array_position(_k, {q(name)})"
    return f"(CASE WHEN _flat AND {at} > 0 THEN try_element_at(_t, CAST({at} AS INT)) END)"


def plan_jsonl(
    spark: SparkSession,
    path: str,
    source: str,
    collector: IssueCollector,
    config: ScenarioConfig | None,
    config_ok: bool,
) -> Plan:
    lines = numbered_lines(spark, path, "\n")

    def joined(head: list[bytes]) -> io.BytesIO:
        return io.BytesIO(b"".join(raw + b"\n" for raw in head))

    def first_trace_line(head: list[bytes]) -> tuple[int, dict[str, Any]] | None:
        for lineno, obj in _json_lines(joined(head), IssueCollector("")):
            if "config" not in obj:
                return lineno, obj
        return None

    head = lines.first(lambda ls: first_trace_line(ls) is not None)
    found = first_trace_line(head)
    if found is None:  # no trace line at all: the pure reader has no rows to read either
        builder = _read_jsonl(joined(head), source, collector, config, config_ok)
        assert builder is not None
        builder.finish()  # raises: there are no rows
        raise Done
    first, obj = found
    # The lines before the first trace line (comments, config lines) are the pure reader's business.
    builder = _read_jsonl(joined(head[: first - 1]), source, collector, config, config_ok)
    assert builder is not None
    config, config_ok = builder.config, builder.config_ok
    compact = is_compact_header(obj)
    params = pyrows.RowParams(source, config, config_ok, None, None, False, "line")

    # Blank and comment lines that Java's whitespace class already proves so: nothing to read there.
    skip = r"is_valid_utf8(_v) AND (_v RLIKE '^\\s*$' OR _v RLIKE '^\\s*(#|//)')"
    rows = lines.df.filter(F.expr(f"_row >= {first} AND NOT ({skip})"))
    flat = f"is_valid_utf8(_v) AND _v RLIKE {q(_FLAT_OBJECT)}"
    rows = native._with(
        rows,
        {
            "_k": f"CASE WHEN {flat} THEN regexp_extract_all(_v, {q(_PAIR_CAPTURE)}, 1) END",
            "_t": f"CASE WHEN {flat} THEN regexp_extract_all(_v, {q(_PAIR_CAPTURE)}, 2) END",
        },
    )
    rows = rows.withColumn("_flat", F.expr("_k IS NOT NULL AND size(array_distinct(_k)) = size(_k)"))
    py = {"row": "_row", "raw": "CAST(_v AS BINARY)"}
    if compact:
        return _plan_compact(rows, params, py, source)
    std = ", ".join(q(name) for name in STANDARD_COLUMNS)
    pairs = "zip_with(_k, _t, (k, t) -> named_struct('k', k, 't', t))"
    rows = rows.withColumn(
        "_pl", F.expr(f"filter({pairs}, p -> NOT array_contains(array({std}), p.k) AND p.t <> 'null')")
    )
    token = _token_raw("p.t")
    token_ok = f"({token.tag} <> 'f' OR {native.repr_decimal('p.t')})"
    piece = f"concat('[', {native.json_string('p.k')}, ', ', {_token_json('p.t')}, ']')"
    payload = f"concat('[', array_join(transform(_pl, p -> {piece}), ', '), ']')"
    tokens = {name: f"_tk{i}" for i, name in enumerate(STANDARD_COLUMNS)}
    rows = native._with(
        rows, {"payload_json": payload, **{col: _token(name) for name, col in tokens.items()}}
    )
    raw = {name: _token_raw(col) for name, col in tokens.items()}
    structure = "_flat AND NOT array_contains(_k, 'config')"
    payload_ok = f"forall(_pl, p -> {token_ok})"
    base = native.row_model(
        rows, raw, config, config_ok, csv=False, payload_ok=payload_ok, structure_ok=structure
    )
    return Plan(params, base, py, pyrows.jsonl_rows(params, compact=False))


def _plan_compact(rows: DataFrame, params: pyrows.RowParams, py: dict[str, str], source: str) -> Plan:
    """The compact format: each `{"channels": N}` header starts an instance, so a line's instance is a
    running count of headers (a window over the whole file: compact traces are valve-sized)."""
    config, config_ok = params.config, params.config_ok
    tokens = {"_tch": "channels", "_tc": "ch", "_tw": "wm", "_ts": "status"}
    rows = native._with(rows, {col: _token(name) for col, name in tokens.items()})
    count = _token_raw("_tch")
    native_hdr = "array_contains(_k, 'channels') AND NOT array_contains(_k, 'kind') AND NOT array_contains(_k, 'config')"
    native_cnt = f"CASE WHEN {count.tag} = 'i' AND {count.lng} BETWEEN 1 AND {MAX_CHANNELS} THEN {count.lng} ELSE -1 END"
    # Lines the flat grammar cannot read are classified by the pure decoder (a vectorized UDF).
    probe = pyrows.compact_probe(source)
    rows = rows.withColumn(
        "_probe", probe(F.col("_row"), F.expr("CASE WHEN NOT _flat THEN CAST(_v AS BINARY) END"))
    )
    rows = native._with(
        rows,
        {
            "_hdr": f"coalesce(CASE WHEN _flat THEN {native_hdr} ELSE _probe.hdr END, FALSE)",
            "_cnt": (
                f"CASE WHEN _flat THEN (CASE WHEN {native_hdr} THEN {native_cnt} END) ELSE _probe.cnt END"
            ),
        },
    ).drop("_probe")
    upto = Window.orderBy("_row").rowsBetween(Window.unboundedPreceding, Window.currentRow)
    rows = rows.withColumns(
        {
            "_inst": F.sum(F.col("_hdr").cast("long")).over(upto) - 1,
            "_icnt": F.last(F.when(F.col("_hdr"), F.col("_cnt")), ignorenulls=True).over(upto),
        }
    )
    configured = config.channels.get("0") if config_ok else None
    header_fine = (
        f"_hdr AND _flat AND size(_k) = 1 AND _cnt >= 1 AND {config_ok} "
        f"AND {'TRUE' if configured is None else f'_cnt = {configured}'}"
    )
    counts = rows.filter(F.expr("_hdr AND _cnt >= 1")).selectExpr(
        "CAST(_inst AS STRING) AS instance", "_cnt AS count"
    )
    rows = rows.filter(F.expr(f"NOT ({header_fine})"))
    given = {
        n: f"({col} IS NOT NULL AND {col} <> 'null')"
        for n, col in (("ch", "_tc"), ("wm", "_tw"), ("status", "_ts"))
    }
    structure = (
        f"_flat AND NOT _hdr AND forall(_k, k -> k IN ('ch', 'wm', 'status')) AND {given['ch']} "
        f"AND ({given['wm']} <> {given['status']})"
    )
    raw = {
        "instance": Raw("TRUE", "s", "CAST(_inst AS STRING)"),
        "kind": Raw("TRUE", "s", f"(CASE WHEN {given['wm']} THEN 'watermark' ELSE 'status' END)"),
        "channel": _token_raw("_tc"),
        "watermark_ms": _token_raw("_tw"),
        "status": _token_raw("_ts"),
    }
    rows = rows.withColumn("payload_json", F.lit("[]"))
    limit = "CASE WHEN _icnt >= 1 THEN _icnt END"
    base = native.row_model(
        rows, raw, config, config_ok, csv=False, structure_ok=structure, compact_limit=limit
    )
    py = {**py, "inst": "_inst", "cnt": "_icnt"}
    return Plan(
        params,
        base,
        py,
        pyrows.jsonl_rows(params, compact=True),
        compact_counts=counts,
        seq_possible=False,
        proc_possible=False,
    )
