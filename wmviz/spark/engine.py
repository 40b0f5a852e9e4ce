"""The Spark engine: the same reader, checks and simulation as in-process, in Spark's Python workers.

A trace file is read in chunks (`wmviz.trace.sources.plan_trace` on the driver), each chunk by one
task running `read_chunk` + `check_batch` (`mapInArrow`), and the rows are shuffled by instance
(`repartition`) to tasks that check each instance's order and run `run_instance` on it, writing
their timeline parts with pyarrow. Two jobs do it: the first returns only each chunk's facts (its
issues, the largest channel per input, whether its `seq` values increase), which the whole-file
checks and the channel counts need before anything is simulated; the second reads the chunks
again and simulates. Only facts and per-task summaries reach the driver.

A trace already in memory (a built-in incident, an upload, a what-if) takes one job: its rows are
checked on the driver by the reader and handed to Spark as one Arrow table.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from wmviz.timeline.local import instance_groups
from wmviz.timeline.runner import RunSpec, run_instance
from wmviz.timeline.store import TimelineWriter
from wmviz.trace.check import CHECKED_SCHEMA, check_batch
from wmviz.trace.chunks import read_chunk
from wmviz.trace.errors import IssueCollector, TraceIssue
from wmviz.trace.readers import check_context
from wmviz.trace.rowtable import ROW_SCHEMA
from wmviz.trace.sources import TracePlan
from wmviz.trace.wholefile import SeqFacts, check_instances

SUMMARY_DDL = "summary binary"
_SPARK_TYPES = {
    pa.int64(): "long",
    pa.int32(): "int",
    pa.string(): "string",
    pa.bool_(): "boolean",
    pa.binary(): "binary",
}


def spark_ddl(schema: pa.Schema) -> str:
    """An Arrow schema as a Spark DDL string (the row shape is declared once, in Arrow)."""
    return ", ".join(f"`{f.name}` {_SPARK_TYPES[f.type]}" for f in schema)


ROWS_SCHEMA = pa.schema([*CHECKED_SCHEMA, pa.field("order", pa.int64())])
"""Checked rows as the tasks exchange them: every row (valid or not) and its arrival order."""


# ---- job 1: each chunk's facts -------------------------------------------------------------------


@dataclass
class ChunkFacts:
    """What one chunk tells the whole-file checks (merged on the driver)."""

    issues: list[tuple[TraceIssue, int]] = field(default_factory=list)
    total: int = 0
    header_missing: dict[str, dict[str, int]] = field(default_factory=dict)
    max_channel: dict[str, int] = field(default_factory=dict)
    compact: dict[str, int] = field(default_factory=dict)
    seq: SeqFacts = field(default_factory=SeqFacts)
    without_seq: list[int] = field(default_factory=list)
    """The first rows (up to the issue cap) that lack `seq`, in case other rows have it."""
    pairs: set[tuple[str, str]] = field(default_factory=set)
    rows: int = 0


def _checked_tables(plan: TracePlan, index: int, collector: IssueCollector) -> Iterator[tuple[Any, pa.Table]]:
    context = check_context(plan)
    for raw in read_chunk(plan, plan.chunks[index], collector):
        checked = check_batch(raw, context)
        collector.merge(checked.issues)
        yield raw, checked


def chunk_facts(plan: TracePlan) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The `mapInArrow` function of job 1: chunk indexes in, one pickled ChunkFacts per chunk out."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for index in batch.column(0).to_pylist():
                collector = IssueCollector(plan.source)
                facts = ChunkFacts()
                for raw, checked in _checked_tables(plan, index, collector):
                    table = checked.table
                    facts.rows += table.num_rows
                    for column, kinds in checked.header_missing.items():
                        into = facts.header_missing.setdefault(column, {})
                        for label, first in kinds.items():
                            into[label] = min(into.get(label, first), first)
                    for name, channel in checked.max_channel.items():
                        facts.max_channel[name] = max(facts.max_channel.get(name, channel), channel)
                    facts.compact.update(raw.compact_channels)
                    facts.seq = facts.seq.merge(SeqFacts.of(table))
                    has = pc.or_(table.column("seq").is_valid(), table.column("seq_bad"))
                    lacking = table.column("row").filter(pc.invert(has))
                    facts.without_seq.extend(lacking.to_pylist()[: collector.cap - len(facts.without_seq)])
                    valid = table.filter(table.column("valid"))
                    facts.pairs.update(
                        zip(
                            valid.column("instance").to_pylist(),
                            valid.column("input").to_pylist(),
                            strict=True,
                        )
                    )
                facts.issues, facts.total = collector.entries(), collector.total
                yield pa.record_batch([pa.array([pickle.dumps(facts)], pa.binary())], names=["summary"])

    return run


def collect_facts(spark: SparkSession, plan: TracePlan) -> list[ChunkFacts]:
    """Job 1: every chunk's facts, one task per chunk."""
    chunks = _chunk_frame(spark, plan)
    found = chunks.mapInArrow(chunk_facts(plan), SUMMARY_DDL).collect()
    return [pickle.loads(r["summary"]) for r in found]


def _chunk_frame(spark: SparkSession, plan: TracePlan) -> DataFrame:
    """One row per chunk index, each in its own partition (so one task reads one chunk)."""
    count = len(plan.chunks)
    return spark.range(0, count, 1, max(1, count))


# ---- job 2: rows by instance -----------------------------------------------------------------------


def chunk_rows(
    plan: TracePlan, seq_order: bool
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The `mapInArrow` function that reads and checks chunks again, this time yielding their rows."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for index in batch.column(0).to_pylist():
                for _, checked in _checked_tables(plan, index, IssueCollector(plan.source)):
                    table = checked.table
                    order = table.column("seq") if seq_order else table.column("row")
                    yield from table.append_column("order", order).to_batches()

    return run


def rows_frame(spark: SparkSession, plan: TracePlan, seq_order: bool) -> DataFrame:
    """Every checked row of a planned file, as a DataFrame (read by the tasks)."""
    return _chunk_frame(spark, plan).mapInArrow(chunk_rows(plan, seq_order), spark_ddl(ROWS_SCHEMA))


def table_frame(spark: SparkSession, rows: pa.Table) -> DataFrame:
    """A validated trace held in memory (ROW_SCHEMA) as a DataFrame of ROWS_SCHEMA rows."""
    n = rows.num_rows
    full = pa.table(
        {
            name: rows.column(name) if name in ROW_SCHEMA.names else _filler(name, n)
            for name in ROWS_SCHEMA.names
        },
        schema=ROWS_SCHEMA,
    )
    return spark.createDataFrame(full)


def _filler(name: str, n: int) -> pa.Array:
    if name == "valid":
        return pa.repeat(pa.scalar(True), n)
    return pa.repeat(pa.scalar(False), n)


@dataclass(frozen=True)
class InstanceJob:
    """What the tasks of job 2 do: check each instance's order, then (unless `check_only`) simulate
    it and write its timeline parts into `out_dir`."""

    spec: RunSpec
    source: str
    unit: str
    config_ok: bool
    order_known: bool
    check_only: bool
    out_dir: str | None


def instance_partition(job: InstanceJob) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The `mapInArrow` function of job 2, over one partition of rows (a set of whole instances)."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        table = pa.Table.from_batches(list(batches), schema=ROWS_SCHEMA)
        collector = IssueCollector(job.source)
        summary: dict[str, Any] = {"steps": {}, "rows": {}}
        if table.num_rows:
            key = "order" if job.order_known else "row"
            grouped = table.take(pc.sort_indices(table, [("instance", "ascending"), (key, "ascending")]))
            config = job.spec.config
            check_instances(grouped, config, job.config_ok, job.unit, collector, order_known=job.order_known)
            if not collector and not job.check_only and job.out_dir is not None:
                context = TaskContext.get()
                part = f"part-{context.partitionId() if context else 0:05d}"
                writer = TimelineWriter(Path(job.out_dir), part)
                rows = grouped.select(ROW_SCHEMA.names).cast(ROW_SCHEMA)
                for instance, instance_rows in instance_groups(rows):
                    writer.add(run_instance(job.spec, instance, instance_rows))
                    summary["steps"][instance] = instance_rows.num_rows
                summary["rows"] = writer.finish()
        summary["issues"], summary["total"] = collector.entries(), collector.total
        yield pa.record_batch([pa.array([pickle.dumps(summary)], pa.binary())], names=["summary"])

    return run


def run_instances(rows: DataFrame, job: InstanceJob, partitions: int) -> list[dict[str, Any]]:
    """Job 2: rows shuffled by instance to `partitions` tasks; their summaries."""
    shuffled = rows.repartition(partitions, F.col("instance"))
    found = shuffled.mapInArrow(instance_partition(job), SUMMARY_DDL).collect()
    return [pickle.loads(r["summary"]) for r in found]


def seq_ties(rows: DataFrame, cap: int) -> tuple[list[tuple[int, int, int]], int]:
    """(row, seq, first row using it) of every row reusing a `seq`, the first `cap` by row, and
    how many there are (a Spark aggregation: only run when the chunks' facts cannot rule ties out)."""
    with_seq = rows.where(F.col("seq").isNotNull()).select("row", "seq")
    firsts = with_seq.groupBy("seq").agg(F.min("row").alias("first"), F.count("*").alias("uses"))
    tied = with_seq.join(firsts.where(F.col("uses") > 1), "seq").where(F.col("row") != F.col("first"))
    found = [(r["row"], r["seq"], r["first"]) for r in tied.orderBy("row").limit(cap).collect()]
    total = tied.count() if len(found) >= cap else len(found)
    return found, total


def transcript_partition(
    spec: RunSpec, with_input: bool, operator: bool
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The `mapInArrow` function of a transcript: (arrival order, line) of every row of its instances."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from wmviz.timeline.runner import new_pipeline
        from wmviz.trace.rowtable import TraceRows, decode_rows, grouped_table
        from wmviz.transcript import transcript_line

        table = pa.Table.from_batches(list(batches), schema=ROWS_SCHEMA)
        rows = grouped_table(TraceRows(table.select(ROW_SCHEMA.names).cast(ROW_SCHEMA)))
        for instance, instance_rows in instance_groups(rows):
            trace_rows = decode_rows(instance_rows)
            pipeline = new_pipeline(spec, instance, trace_rows)
            lines = [
                transcript_line(
                    pipeline.process(step, row, explain=False), with_input=with_input, operator=operator
                )
                for step, row in enumerate(trace_rows)
            ]
            yield pa.record_batch(
                [instance_rows.column("order").combine_chunks(), pa.array(lines, pa.string())],
                names=["order", "line"],
            )

    return run


def transcript_lines(
    rows: DataFrame, spec: RunSpec, partitions: int, *, with_input: bool, operator: bool
) -> Iterator[str]:
    """The transcript, streamed back in arrival order without collecting it at once."""
    out = rows.repartition(partitions, F.col("instance")).mapInArrow(
        transcript_partition(spec, with_input, operator), "order long, line string"
    )
    for record in out.orderBy("order").toLocalIterator():
        yield record["line"]
