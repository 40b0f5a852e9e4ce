"""Read and validate a trace on Spark, with exactly the outcome of the pure reader (`read_trace`).

`read_trace_spark` gives the rows as a DataFrame (never collected) or raises the very
`TraceValidationError` `read_trace` raises for the same file: same issues, texts, rows, columns,
order, cap and total.

Design. Each row is first judged by native Spark expressions (`wmviz.spark.native`): a row is *fast*
when they prove the pure validator accepts it with exactly these typed values. The other rows are
re-validated by the pure `TraceBuilder.add_row` on the executors (`wmviz.spark.pyrows`), so their
messages are identical by construction. The whole-file checks (`seq` ties and gaps, `proc_ms` order
per instance, explicit watermarks on generated channels, header columns, inferred channel counts)
are Spark aggregations and window functions worded by the pure code (`wmviz.spark.validate`). The
file-level part (CSV header, JSON Lines config lines, Parquet footer) is read on the driver with the
pure code (`wmviz.spark.sources`).

Row numbers: CSV and JSON Lines lines are numbered as a text editor shows them, from
`spark.read.text` plus per-partition counts; Parquet rows by `_metadata.row_index` + 1.

Hard corners, and how they are met:

* A CSV quoted field spanning lines cannot be numbered line by line: the reader reports
  `a quoted field spans lines; the Spark reader needs one record per line (use --engine local)` on the
  line where it starts, keeps the issues of the rows before it and stops there, as the pure reader
  does at a broken record. (The pure reader would read such a file.)
* Invalid UTF-8 in a CSV file: the pure reader stops where `io.TextIOWrapper`'s 8192-byte chunk with
  the bad byte begins; the driver replays that chunking over the file's bytes to find the same line.
* JSON typing (`12` vs `"12"` vs `12.0`), duplicate keys, escapes, NaN, nested values: only flat
  objects with escape-free strings and unique keys are read natively, with each token's JSON type
  kept; every other line goes to the pure decoder.
* CSV `value` cells become numbers only when their text is the number's canonical form (the pure
  `text_value`); the fast path proves that for canonical ints and for decimals `repr` would write
  (<= 15 significant digits) and leaves any other number-shaped text to Python.
* Parquet column types that Spark reads into values different from pyarrow's (uint64, nanosecond or
  zoned timestamps, decimals, nested, binary...) make the whole file go through the slow path, which
  then reads the row groups with pyarrow on the executors (so the file must be readable there).
  A row group pyarrow cannot read is Spark's error, not the pure reader's `cannot read` issue.
* Payload values JSON cannot hold (Parquet timestamps and the like) are kept in `payload_json` as
  tagged objects that `wmviz.trace.payload.decode_payload` turns back.
* The compact format's instance numbering is a running count over the file (a window without
  partitioning, so that part is not parallel; compact traces are valve-sized).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession

from wmviz.core.scenario import ScenarioConfig
from wmviz.spark import source_parquet, sources
from wmviz.spark.validate import ROW_COLUMNS, Checker  # noqa: F401  (re-exported)
from wmviz.trace.config import load_config_into
from wmviz.trace.errors import IssueCollector
from wmviz.trace.readers import FORMATS, format_of
from wmviz.trace.timefmt import show


@dataclass(frozen=True)
class SparkTrace:
    """A validated trace whose rows stay on Spark.

    `rows` has the columns `ROW_COLUMNS`: `instance`, `input` (canonical), `row` (the pure reader's
    row number), `order` (arrival order within the file: `seq` when rows carry it, else `row`),
    `seq`, `kind` (lower case), `channel` (int), `event_ms`, `watermark_ms`, `status` (upper case),
    `proc_ms`, `key`, `value_json` (`json.dumps` of the value, null when absent) and `payload_json`
    (`json.dumps` of the `[name, value]` pairs, in file order). `valve_channels` and `instances` are
    what `read_trace` resolves for the file; `row_count` counts the rows.
    """

    source: str
    config: ScenarioConfig
    valve_channels: dict[tuple[str, str], int]
    instances: list[str]
    row_count: int
    rows: DataFrame


def read_trace_spark(
    spark: SparkSession,
    path: str | os.PathLike[str],
    config_path: str | os.PathLike[str] | None = None,
    *,
    config: ScenarioConfig | None = None,
) -> SparkTrace:
    """Read and validate a trace file on Spark; the format comes from the extension.

    The config follows `read_trace`'s precedence: `config`, the JSON file `config_path`, the trace's
    own config, else the defaults. Raises `TraceValidationError` with the issues `read_trace` gives.
    """
    if config is not None and config_path is not None:
        raise ValueError("give either config or config_path, not both")
    path = os.fspath(path)
    source = os.path.basename(path)
    collector = IssueCollector(source)
    config_ok = True
    if config_path is not None:
        config, config_ok = load_config_into(config_path, collector)
    fmt = format_of(source)
    if fmt is None:
        known = ", ".join(FORMATS)
        collector.add(
            None, None, f"unknown trace format {show(os.path.splitext(source)[1])}; expected one of {known}"
        )
        raise collector.error()
    _limit_method_size(spark)
    planners = {"csv": sources.plan_csv, "jsonl": sources.plan_jsonl, "parquet": source_parquet.plan_parquet}
    planner = planners[fmt]
    try:
        plan = planner(spark, path, source, collector, config, config_ok)
    except sources.Done:
        raise collector.error() from None
    result = Checker(plan, collector).run()
    return SparkTrace(
        source=source,
        config=plan.params.config,
        valve_channels=result.valve_channels,
        instances=result.instances,
        row_count=result.row_count,
        rows=result.rows,
    )


# Spark's default lets whole-stage code grow to 64 KB per method, but the JVM never JIT-compiles a
# method over 8000 bytes (HugeMethodLimit), so such a stage runs interpreted, ~10x slower. The
# reader's validation expressions make such methods; at 8000 Spark evaluates those stages without
# whole-stage codegen instead (still compiled, per expression). Spark's own tuning advice; best set
# where the session is built (wmviz.spark.session).
_HUGE_METHOD_LIMIT = "spark.sql.codegen.hugeMethodLimit"
_JIT_METHOD_LIMIT = "8000"


def _limit_method_size(spark: SparkSession) -> None:
    """Lower `spark.sql.codegen.hugeMethodLimit` to the JIT's limit, unless someone already chose."""
    if spark.conf.get(_HUGE_METHOD_LIMIT, "65535") == "65535":
        spark.conf.set(_HUGE_METHOD_LIMIT, _JIT_METHOD_LIMIT)
