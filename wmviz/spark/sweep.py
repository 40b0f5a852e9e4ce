"""A sweep on Spark: every combination over every instance bucket, as one job.

The rows come as the engine's bucket blobs (`rows_frame` for a file, `table_frame` for a trace in
memory: the same reading, checks and shuffle `wmviz.spark.engine` uses for a timeline). The
combinations are dealt into lanes (as many as the job has tasks); each bucket's blobs are paired
with every lane, and the (lane, bucket) units are spread over the tasks, so a sweep of a trace with
one instance still keeps every core busy, while the rows travel and are decoded once per lane, not
once per combination. A task gathers each bucket's blobs (one per chunk the file was read in),
decodes them once, runs `wmviz.analysis.sweep_count.count_instance` (the function the in-process sweep
runs) for each combination of its lanes, and returns the counts; the driver merges them and builds
the very table `run_sweep` does.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from wmviz.analysis.sweep import Vary, combination_config, grid, table_row
from wmviz.analysis.sweep_count import Counts, InstanceInput, count_instance
from wmviz.core.scenario import ScenarioConfig, Trace
from wmviz.core.windows import ScenarioError
from wmviz.spark.engine import SUMMARY_DDL, Transform, _summary, from_buckets, rows_frame, table_frame
from wmviz.spark.progress import SparkProgress, print_report
from wmviz.spark.run import _parallelism, check_file, plan_file
from wmviz.spark.session import get_spark
from wmviz.timeline.local import instance_groups
from wmviz.timeline.progress import Sink
from wmviz.timeline.runner import RunSpec
from wmviz.trace.errors import IssueCollector
from wmviz.trace.rowtable import ROW_SCHEMA, decode_rows
from wmviz.trace.wholefile import check_instances


def _instances_of(
    blobs: list[bytes], order_known: bool
) -> tuple[pa.Table, list[tuple[InstanceInput, pa.Table]]]:
    """A bucket's rows (every blob of it: a file read in several chunks gives one per chunk) sorted
    by (instance, arrival order), and each instance's input."""
    table = from_buckets(iter([pa.RecordBatch.from_pydict({"rows": blobs})]))
    key = "order" if order_known else "row"
    grouped = table.take(pc.sort_indices(table, [("instance", "ascending"), (key, "ascending")]))
    rows = grouped.select(ROW_SCHEMA.names).cast(ROW_SCHEMA)
    return grouped, [
        (InstanceInput.of(name, decode_rows(part)), part) for name, part in instance_groups(rows)
    ]


def _units(batches: Iterator[pa.RecordBatch]) -> dict[int, dict[int, list[bytes]]]:
    """The (bucket, lane, blob) rows a task got, as bucket -> lane -> that bucket's blobs."""
    units: dict[int, dict[int, list[bytes]]] = {}
    for batch in batches:
        for bucket, blob, lane in zip(
            batch.column("bucket").to_pylist(),
            batch.column("rows").to_pylist(),
            batch.column("lane").to_pylist(),
            strict=True,
        ):
            units.setdefault(bucket, {}).setdefault(lane, []).append(blob)
    return units


def sweep_partition(
    specs: Sequence[RunSpec], lanes: int, source: str, unit: str, config_ok: bool, order_known: bool
) -> Transform:
    """The `mapInArrow` function over (bucket, rows, lane) units: lane L of a bucket runs the
    combinations L, L + lanes, L + 2 × lanes, … over the bucket's instances. A bucket is decoded
    once per task, whichever lanes of it the task got; its per-instance checks run with lane 0."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        counts: dict[int, Counts] = {}
        stopped: list[tuple[int, int, ScenarioError]] = []
        collector = IssueCollector(source)
        for by_lane in _units(batches).values():
            # Every lane of a bucket carries the same blobs: any one lane's are the bucket's rows.
            grouped, instances = _instances_of(next(iter(by_lane.values())), order_known)
            if 0 in by_lane:
                check_instances(grouped, specs[0].config, config_ok, unit, collector, order_known=order_known)
            for lane in by_lane:
                for combo in range(lane, len(specs), lanes):
                    total = counts.setdefault(combo, Counts())
                    for instance, part in instances:
                        try:
                            total.merge(count_instance(specs[combo], instance))
                        except ScenarioError as err:
                            at = pc.index(part.column("row"), err.row.row).as_py()
                            stopped.append((combo, int(part.column("order")[max(at, 0)].as_py()), err))
        summary: dict[str, Any] = {"counts": counts, "stopped": stopped}
        summary["issues"], summary["total"] = collector.entries(), collector.total
        yield _summary(summary)

    return run


def _with_lanes(spark: SparkSession, rows: DataFrame, lanes: int) -> DataFrame:
    """Every bucket blob once per lane (the small side is broadcast)."""
    indexes = spark.range(lanes).withColumnRenamed("id", "lane").withColumn("lane", F.col("lane").cast("int"))
    return rows.crossJoin(F.broadcast(indexes))


def _run_job(
    spark: SparkSession,
    rows: DataFrame,
    specs: list[RunSpec],
    job: tuple[str, str, bool, bool],
    buckets: int,
    collector: IssueCollector,
    progress: Sink,
) -> list[Counts]:
    source, unit, config_ok, order_known = job
    # Lanes split the combinations so each core gets a share, while a bucket's rows are shipped
    # and decoded once per lane rather than once per combination; (lane, bucket) units outnumber
    # the tasks so that hashing them onto the tasks spreads the work.
    tasks = max(1, min(len(specs) * buckets, 2 * _parallelism(spark)))
    lanes = max(1, min(len(specs), tasks))
    units = _with_lanes(spark, rows, lanes).repartition(tasks, F.col("lane"), F.col("bucket"))
    with SparkProgress(spark, f"sweeping {len(specs):,} combinations", progress):
        found = units.mapInArrow(
            sweep_partition(specs, lanes, source, unit, config_ok, order_known), SUMMARY_DDL
        ).collect()
    merged = [Counts() for _ in specs]
    stopped = []
    for record in found:
        summary = pickle.loads(record["summary"])
        collector.add_entries(summary["issues"], summary["total"])
        stopped.extend(summary["stopped"])
        for combo, counts in summary["counts"].items():
            merged[combo].merge(counts)
    collector.raise_if_any()
    if stopped:
        raise min(stopped, key=lambda entry: (entry[0], entry[1]))[2]
    return merged


def _specs(
    base: ScenarioConfig, varies: Sequence[Vary], channels: dict[tuple[str, str], int]
) -> tuple[list[tuple[Any, ...]], list[RunSpec]]:
    combos = grid(varies)
    configs = [combination_config(base, varies, values) for values in combos]
    return combos, [RunSpec.of(c, c.profile, channels, keyframe_every=1) for c in configs]


def _buckets(spark: SparkSession, instances: int) -> int:
    return max(1, min(instances, 2 * _parallelism(spark)))


def spark_sweep_trace(
    spark: SparkSession, trace: Trace, varies: Sequence[Vary], progress: Sink = print_report
) -> list[dict[str, Any]]:
    """The sweep table of a validated trace in memory, computed on Spark in one job."""
    from wmviz.trace.rowtable import row_table

    combos, specs = _specs(trace.config, varies, trace.valve_channels)
    buckets = _buckets(spark, len(trace.instances))
    rows = table_frame(spark, row_table(trace.rows), buckets)
    collector = IssueCollector(trace.source)
    merged = _run_job(spark, rows, specs, (trace.source, "line", True, True), buckets, collector, progress)
    return [table_row(varies, values, counts) for values, counts in zip(combos, merged, strict=True)]


def spark_sweep_file(
    spark: SparkSession,
    trace: Path,
    config: Path | None,
    varies: Sequence[Vary],
    progress: Sink = print_report,
) -> list[dict[str, Any]]:
    """The sweep table of a trace file: read and checked as `spark_simulate` does (job 1), then
    every combination over every instance in one job."""
    collector = IssueCollector(trace.name)
    plan = plan_file(spark, trace, config, collector)
    if plan.config_ok:  # every combination's config is judged before any row is read
        _specs(plan.config, varies, {})
    checked = check_file(spark, plan, collector, progress)
    collector.raise_if_any()
    combos, specs = _specs(plan.config, varies, checked.channels)
    buckets = _buckets(spark, checked.instances)
    rows = rows_frame(spark, plan, checked.seq_order, buckets)
    job = (plan.source, plan.unit, plan.config_ok, checked.order_known)
    merged = _run_job(spark, rows, specs, job, buckets, collector, progress)
    return [table_row(varies, values, counts) for values, counts in zip(combos, merged, strict=True)]


def spark_sweep(
    trace: Path,
    config: Path | None,
    varies: Sequence[Vary],
    master: str | None,
    progress: Sink = print_report,
) -> list[dict[str, Any]]:
    """`spark_sweep_file` on the session for `master`."""
    return spark_sweep_file(get_spark(master), trace, config, varies, progress)
