"""Planning a Parquet trace for the Spark reader: the footer on the driver, the rows as a `Plan`.

Column types Spark reads exactly as pyarrow does take the fast path (`wmviz.spark.native`); any other
makes the whole file go through the pure reader on the executors (`wmviz.spark.pyrows`). Rows are
numbered by `_metadata.row_index` + 1, as the pure reader numbers them.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from wmviz.core.scenario import ScenarioConfig
from wmviz.spark import native, pyrows
from wmviz.spark.native import NULL_STRING, Raw
from wmviz.spark.sources import Done, Plan
from wmviz.trace.errors import IssueCollector
from wmviz.trace.readers import parquet_footer
from wmviz.trace.validate import STANDARD_COLUMNS


def spark_readable(arrow_type: Any) -> bool:
    """Whether Spark reads a column of this Arrow type into values equal to pyarrow's `to_pylist`."""
    import pyarrow as pa

    t = arrow_type
    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_integer(t):
        return t != pa.uint64()  # Spark reads uint64 as a decimal
    if pa.types.is_timestamp(t):
        return t.unit in ("s", "ms", "us") and t.tz in (None, "UTC")
    return (
        pa.types.is_float32(t)
        or pa.types.is_float64(t)
        or pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_boolean(t)
    )


def _parquet_raw(column: str, dtype: T.DataType, float_json: str) -> Raw:
    """A Parquet cell as Spark read it (NaN is absent, as in the pure reader).

    `float_json` is the column holding `json.dumps` of a float column's value (a UDF): only `value`
    and payload read it, so validation never runs the UDF.
    """
    present = f"({column} IS NOT NULL)"
    if isinstance(dtype, T.LongType | T.IntegerType | T.ShortType | T.ByteType):
        return Raw(present, "i", f"CAST({column} AS STRING)", f"CAST({column} AS BIGINT)")
    if isinstance(dtype, T.DoubleType | T.FloatType):
        d = f"CAST({column} AS DOUBLE)"
        whole = f"({d} = floor({d}) AND abs({d}) <= {2**53})"
        inf = f"(CASE WHEN {d} = double('inf') THEN 1 WHEN {d} = double('-inf') THEN -1 END)"
        lng = f"(CASE WHEN {whole} THEN CAST({d} AS BIGINT) END)"
        return Raw(f"({column} IS NOT NULL AND NOT isnan({d}))", "f", float_json, lng, inf)
    if isinstance(dtype, T.StringType):
        return Raw(present, "s", column, clean=False)
    if isinstance(dtype, T.TimestampType | T.TimestampNTZType):
        micros = f"unix_micros(CAST({column} AS TIMESTAMP))"
        return Raw(present, "t", lng=f"(CASE WHEN {micros} % 1000 = 0 THEN div({micros}, 1000) END)")
    return Raw(present, "x")


def _parquet_payload(name: str, column: str, dtype: T.DataType, raw: Raw) -> tuple[tuple[str, str, str], str]:
    """(`native.payload_json` piece, whether the fast path can write it) for a payload column."""
    if isinstance(dtype, T.StringType):
        text, is_str = column, "TRUE"
    elif isinstance(dtype, T.BooleanType):
        text, is_str = f"(CASE WHEN {column} THEN 'true' ELSE 'false' END)", "FALSE"
    elif isinstance(dtype, T.TimestampType | T.TimestampNTZType):
        # A datetime needs a tagged JSON object: the slow path writes it.
        return (name, NULL_STRING, "FALSE"), f"NOT {raw.present}"
    else:
        text, is_str = raw.text, "FALSE"  # ints and floats
    return (name, f"(CASE WHEN {raw.present} THEN {text} END)", is_str), "TRUE"


def plan_parquet(
    spark: SparkSession,
    path: str,
    source: str,
    collector: IssueCollector,
    config: ScenarioConfig | None,
    config_ok: bool,
) -> Plan:
    import pyarrow as pa
    import pyarrow.parquet as pq

    # The file-level part of wmviz.trace.readers._read_parquet, with its messages.
    with open(path, "rb") as stream:
        try:
            pf = pq.ParquetFile(stream)
        except (pa.ArrowException, OSError) as exc:
            collector.add(None, None, f"not a readable Parquet file: {exc}")
            raise Done from None
        with pf:
            schema = pf.schema_arrow
            names, seen, config, config_ok = parquet_footer(pf, collector, config, config_ok)
            sizes = [pf.metadata.row_group(i).num_rows for i in range(pf.metadata.num_row_groups)]
    config = config or ScenarioConfig()
    params = pyrows.RowParams(source, config, config_ok, tuple(seen), None, False, "row")
    possible = {"seq_possible": "seq" in seen, "proc_possible": "proc_ms" in seen}
    readable = (
        len({n.lower() for n in names}) == len(names)  # Spark matches column names case-insensitively
        and not any(n.startswith("_metadata") for n in names)
        and all(spark_readable(f.type) for f in schema)
    )
    df = None
    if readable and names:
        try:
            df = spark.read.parquet(path).select(
                (F.col("_metadata.row_index") + 1).alias("_row"),
                *[F.col(native.c(n)).alias(f"_c{i}") for i, n in enumerate(names)],
            )
        except Exception:  # a type or name this Spark cannot read after all: the pyarrow fallback
            df = None
    if df is None:
        starts = [sum(sizes[:i]) for i in range(len(sizes))]
        parallel = max(1, min(len(sizes), spark.sparkContext.defaultParallelism))
        groups = spark.range(len(sizes), numPartitions=parallel)
        fn = pyrows.parquet_row_groups(params, path, names, starts)
        return Plan(params, None, {}, fn, py_all=groups, **possible)

    dtypes = [df.schema[f"_c{i}"].dataType for i in range(len(names))]
    is_float = [isinstance(t, T.DoubleType | T.FloatType) for t in dtypes]
    if any(is_float):
        float_json = native.float_json_udf()
        df = df.withColumns(
            {f"_f{i}": float_json(F.col(f"_c{i}").cast("double")) for i in range(len(names)) if is_float[i]}
        )
    raws = [_parquet_raw(f"_c{i}", t, f"_f{i}" if is_float[i] else NULL_STRING) for i, t in enumerate(dtypes)]
    std: dict[str, Raw] = {}
    pieces, oks = [], []
    for i, name in enumerate(names):
        if name in STANDARD_COLUMNS:
            std[name] = raws[i]
        else:
            piece, ok = _parquet_payload(name, f"_c{i}", dtypes[i], raws[i])
            pieces.append(piece)
            oks.append(ok)
    df = df.withColumn("payload_json", F.expr(native.payload_json(pieces)))
    base = native.row_model(df, std, config, config_ok, csv=False, payload_ok=" AND ".join(oks) or "TRUE")
    py = {"row": "_row", **{f"c{i}": f"_c{i}" for i in range(len(names))}}
    return Plan(params, base, py, pyrows.parquet_rows(params, names), **possible)
