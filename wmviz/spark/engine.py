"""The Spark engine: the same reader, checks and simulation as in-process, in Spark's Python workers.

A trace file is read in chunks (`wmviz.trace.sources.plan_trace` on the driver), each chunk by one
task running `read_chunk` + `check_batch` (`mapInArrow`). Two jobs do the work:

1. every chunk's facts (its issues, the largest channel per input, whether its `seq` values
   increase, its (instance, input) pairs): what the whole-file checks and the channel counts need
   before anything may be simulated; only these small facts reach the driver;
2. the chunks read and checked again, their rows cut into buckets by instance and each bucket sent
   through Spark's shuffle as one Arrow IPC blob (so the JVM moves a few blobs, never a row), then
   tasks that each take whole instances, check their order and run `run_instance` on them, writing
   their timeline parts with pyarrow. Each task returns a summary.

A trace already in memory (a built-in incident, an upload, a what-if) takes one job: its rows are
checked on the driver by the reader and sent as the same blobs.
"""

from __future__ import annotations

import base64
import itertools
import pickle
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

# Registers how MATCH_RECOGNIZE computes its DEFINE and MEASURES, in the Python workers too.
import wmviz.sql.plan_match  # noqa: F401
from wmviz.core.windows import ScenarioError
from wmviz.timeline.local import instance_groups
from wmviz.timeline.runner import RunSpec, run_instance
from wmviz.timeline.store import TimelineWriter
from wmviz.trace.check import CHECKED_SCHEMA, CheckedBatch, check_batch, conform
from wmviz.trace.chunks import read_chunk
from wmviz.trace.errors import IssueCollector, TraceIssue
from wmviz.trace.raw import RawBatch
from wmviz.trace.readers import check_context
from wmviz.trace.rowtable import ROW_SCHEMA
from wmviz.trace.sources import TracePlan
from wmviz.trace.wholefile import SeqFacts, check_instances

SUMMARY_DDL = "summary binary"
BUCKETS_DDL = "bucket int, rows binary"
_SPARK_TYPES = {
    pa.int64(): "long",
    pa.int32(): "int",
    pa.string(): "string",
    pa.bool_(): "boolean",
    pa.binary(): "binary",
}
ROWS_SCHEMA = pa.schema([*CHECKED_SCHEMA, pa.field("order", pa.int64())])
"""Checked rows as the tasks exchange them: every row (valid or not) and its arrival order."""
Transform = Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]


def spark_ddl(schema: pa.Schema) -> str:
    """An Arrow schema as a Spark DDL string (the row shape is declared once, in Arrow)."""
    return ", ".join(f"`{f.name}` {_SPARK_TYPES[f.type]}" for f in schema)


def _summary(value: Any) -> pa.RecordBatch:
    return pa.record_batch([pa.array([pickle.dumps(value)], pa.binary())], names=["summary"])


def _checked(
    plan: TracePlan, index: int, collector: IssueCollector
) -> Iterator[tuple[RawBatch, CheckedBatch]]:
    context = check_context(plan)
    for raw in read_chunk(plan, plan.chunks[index], collector):
        checked = check_batch(raw, context)
        collector.merge(checked.issues)
        yield raw, checked


def _chunk_frame(spark: SparkSession, plan: TracePlan) -> DataFrame:
    """One row per chunk index, each in its own partition (so one task reads one chunk)."""
    count = len(plan.chunks)
    return spark.range(0, count, 1, max(1, count))


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

    def add(self, raw: RawBatch, checked: CheckedBatch, cap: int) -> None:
        table = checked.table
        self.rows += table.num_rows
        for column, kinds in checked.header_missing.items():
            into = self.header_missing.setdefault(column, {})
            for label, first in kinds.items():
                into[label] = min(into.get(label, first), first)
        for name, channel in checked.max_channel.items():
            self.max_channel[name] = max(self.max_channel.get(name, channel), channel)
        self.compact.update(raw.compact_channels)
        self.seq = self.seq.merge(SeqFacts.of(table))
        if len(self.without_seq) < cap:
            lacking = table.column("row").filter(pc.invert(pc.or_(table["seq"].is_valid(), table["seq_bad"])))
            self.without_seq.extend(lacking.slice(0, cap - len(self.without_seq)).to_pylist())
        valid = table.filter(table.column("valid")).select(["instance", "input"])
        pairs = valid.group_by(["instance", "input"]).aggregate([])
        self.pairs.update(zip(pairs["instance"].to_pylist(), pairs["input"].to_pylist(), strict=True))


def chunk_facts(plan: TracePlan) -> Transform:
    """The `mapInArrow` function of job 1: chunk indexes in, one pickled ChunkFacts per chunk out."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for index in batch.column(0).to_pylist():
                collector = IssueCollector(plan.source)
                facts = ChunkFacts()
                for raw, checked in _checked(plan, index, collector):
                    facts.add(raw, checked, collector.cap)
                facts.issues, facts.total = collector.entries(), collector.total
                yield _summary(facts)

    return run


def collect_facts(spark: SparkSession, plan: TracePlan) -> list[ChunkFacts]:
    """Job 1: every chunk's facts, one task per chunk."""
    found = _chunk_frame(spark, plan).mapInArrow(chunk_facts(plan), SUMMARY_DDL).collect()
    return [pickle.loads(r["summary"]) for r in found]


# ---- rows cut into buckets of whole instances ---------------------------------------------------


def bucket_of(instances: pa.Array | pa.ChunkedArray, buckets: int) -> np.ndarray:
    """Each row's bucket: a hash of its instance that every process computes alike (CRC-32;
    Python's own string hash differs from process to process)."""
    encoded = pc.dictionary_encode(instances)
    if isinstance(encoded, pa.ChunkedArray):
        encoded = encoded.combine_chunks()
    per_name = np.array(
        [zlib.crc32(name.encode("utf-8")) % buckets for name in encoded.dictionary.to_pylist()], np.int32
    )
    return per_name[encoded.indices.to_numpy(zero_copy_only=False)]


def to_buckets(table: pa.Table, buckets: int) -> Iterator[pa.RecordBatch]:
    """(bucket, Arrow IPC bytes of the bucket's rows) for each bucket that has rows."""
    if not table.num_rows:
        return
    slot = bucket_of(table.column("instance"), buckets)
    order = np.argsort(slot, kind="stable")
    grouped, slots = table.take(pa.array(order)), slot[order]
    bounds = [0, *(np.flatnonzero(slots[1:] != slots[:-1]) + 1).tolist(), len(slots)]
    for start, end in itertools.pairwise(bounds):
        sink = pa.BufferOutputStream()
        part = grouped.slice(start, end - start)
        with pa.ipc.new_stream(sink, part.schema) as writer:
            writer.write_table(part)
        yield pa.record_batch(
            [
                pa.array([int(slots[start])], pa.int32()),
                pa.array([sink.getvalue().to_pybytes()], pa.binary()),
            ],
            names=["bucket", "rows"],
        )


def from_buckets(batches: Iterator[pa.RecordBatch]) -> pa.Table:
    """The rows of every bucket blob a task received, as one table."""
    tables = []
    for batch in batches:
        for blob in batch.column("rows").to_pylist():
            tables.append(pa.ipc.open_stream(blob).read_all())
    if not tables:
        return ROWS_SCHEMA.empty_table()
    return conform(pa.concat_tables(tables, promote_options="permissive"), ROWS_SCHEMA)


def chunk_rows(plan: TracePlan, seq_order: bool, buckets: int) -> Transform:
    """The `mapInArrow` function that reads and checks chunks again, yielding their rows in buckets."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for index in batch.column(0).to_pylist():
                for _, checked in _checked(plan, index, IssueCollector(plan.source)):
                    table = checked.table
                    order = table.column("seq") if seq_order else table.column("row")
                    yield from to_buckets(table.append_column("order", order), buckets)

    return run


def rows_frame(spark: SparkSession, plan: TracePlan, seq_order: bool, buckets: int) -> DataFrame:
    """Every checked row of a planned file, in bucket blobs (read and checked by the tasks)."""
    return _chunk_frame(spark, plan).mapInArrow(chunk_rows(plan, seq_order, buckets), BUCKETS_DDL)


def table_frame(spark: SparkSession, rows: pa.Table, buckets: int) -> DataFrame:
    """A validated trace held in memory (ROW_SCHEMA) in bucket blobs, built on the driver."""
    n = rows.num_rows
    full = rows.append_column("valid", pa.repeat(pa.scalar(True), n))
    full = full.append_column("seq_bad", pa.repeat(pa.scalar(False), n)).select(ROWS_SCHEMA.names)
    blobs = list(to_buckets(conform(full, ROWS_SCHEMA), buckets))
    if not blobs:
        return spark.createDataFrame([], BUCKETS_DDL)
    return spark.createDataFrame(pa.Table.from_batches(blobs))


def seq_ties(rows: DataFrame, cap: int) -> tuple[list[tuple[int, int, int]], int]:
    """(row, seq, first row using it) of every row reusing a `seq`, the first `cap` by row, and how
    many there are: a Spark aggregation, run only when the chunks' facts cannot rule ties out."""

    def unpack(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        table = from_buckets(batches).select(["row", "seq"])
        yield from table.filter(table.column("seq").is_valid()).to_batches()

    with_seq = rows.mapInArrow(unpack, "row long, seq long")
    firsts = with_seq.groupBy("seq").agg(F.min("row").alias("first"), F.count("*").alias("uses"))
    tied = with_seq.join(firsts.where(F.col("uses") > 1), "seq").where(F.col("row") != F.col("first"))
    found = [(r["row"], r["seq"], r["first"]) for r in tied.orderBy("row").limit(cap).collect()]
    total = tied.count() if len(found) >= cap else len(found)
    return found, total


# ---- job 2: whole instances per task -----------------------------------------------------------


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


def instance_partition(job: InstanceJob) -> Transform:
    """The `mapInArrow` function of job 2, over the bucket blobs one task received."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        table = from_buckets(batches)
        collector = IssueCollector(job.source)
        summary: dict[str, Any] = {"steps": {}, "rows": {}, "files": {}, "stopped": []}
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
                    try:
                        writer.add(run_instance(job.spec, instance, instance_rows))
                    except ScenarioError as err:  # the driver raises it, as the local engine does
                        summary["stopped"].append((_order_of(instance_rows, err), err))
                        continue
                    summary["steps"][instance] = instance_rows.num_rows
                summary["rows"] = writer.finish()
                summary["files"] = writer.files()
        summary["issues"], summary["total"] = collector.entries(), collector.total
        yield _summary(summary)

    return run


def _order_of(instance_rows: pa.Table, err: ScenarioError) -> int:
    """The arrival order of the row a ScenarioError names (its place among every instance's rows)."""
    at = pc.index(instance_rows.column("row"), err.row.row).as_py()
    return int(instance_rows.column("order")[at].as_py()) if at >= 0 else 0


def raise_first_stop(stopped: list[tuple[int, ScenarioError]]) -> None:
    """The ScenarioError of the row that arrived first, as the local engine stops at it."""
    if stopped:
        raise min(stopped, key=lambda entry: entry[0])[1]


def run_instances(rows: DataFrame, job: InstanceJob, partitions: int) -> list[dict[str, Any]]:
    """Job 2: bucket blobs shuffled to `partitions` tasks (whole instances each); their summaries."""
    shuffled = rows.repartition(partitions, F.col("bucket"))
    found = shuffled.mapInArrow(instance_partition(job), SUMMARY_DDL).collect()
    return [pickle.loads(r["summary"]) for r in found]


def transcript_partition(spec: RunSpec, with_input: bool, operator: bool) -> Transform:
    """The `mapInArrow` function of a transcript: (arrival order, line) of every row of its instances."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from wmviz.timeline.runner import new_pipeline
        from wmviz.timeline.transcript import transcript_line
        from wmviz.trace.rowtable import TraceRows, decode_rows, grouped_table

        table = from_buckets(batches)
        rows = grouped_table(TraceRows(table.select(ROW_SCHEMA.names).cast(ROW_SCHEMA)))
        for instance, instance_rows in instance_groups(rows):
            trace_rows = decode_rows(instance_rows)
            pipeline = new_pipeline(spec, instance, trace_rows)
            lines = []
            try:
                for step, row in enumerate(trace_rows):
                    result = pipeline.process(step, row, explain=False)
                    lines.append(transcript_line(result, with_input=with_input, operator=operator))
            except ScenarioError as err:  # in its row's place: the driver raises it there
                lines.append(_STOPPED + base64.b64encode(pickle.dumps(err)).decode("ascii"))
            orders = instance_rows.column("order").combine_chunks().slice(0, len(lines))
            yield pa.record_batch([orders, pa.array(lines, pa.string())], names=["order", "line"])

    return run


def transcript_lines(
    rows: DataFrame, spec: RunSpec, partitions: int, *, with_input: bool, operator: bool
) -> Iterator[str]:
    """The transcript, streamed back in arrival order without collecting it at once."""
    out = rows.repartition(partitions, F.col("bucket")).mapInArrow(
        transcript_partition(spec, with_input, operator), "order long, line string"
    )
    for record in out.orderBy("order").toLocalIterator():
        line = record["line"]
        if line.startswith(_STOPPED):
            raise pickle.loads(base64.b64decode(line[len(_STOPPED) :]))
        yield line


_STOPPED = "\x00stopped:"
"""Starts a transcript line that is a pickled ScenarioError (no JSON line starts with a NUL)."""
