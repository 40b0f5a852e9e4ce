"""Run the Spark engine: a trace file (the command line) or a trace in memory (the app) to a timeline.

`spark_simulate` reads, checks and simulates a file in two jobs (`wmviz.spark.engine`);
`spark_simulate_trace` simulates an already validated trace in one. Both raise the very
`TraceValidationError` the local engine raises for the same input, and write the same timeline.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from wmviz.core.scenario import Trace
from wmviz.core.types import Profile
from wmviz.spark.engine import (
    ChunkFacts,
    InstanceJob,
    collect_facts,
    raise_first_stop,
    rows_frame,
    run_instances,
    seq_ties,
    table_frame,
    transcript_lines,
)
from wmviz.spark.progress import SparkProgress, print_report
from wmviz.spark.session import get_spark
from wmviz.timeline.progress import Sink
from wmviz.timeline.runner import RunSpec
from wmviz.timeline.store import timeline_meta_fields, write_meta
from wmviz.trace.check import PHASE_SEQ
from wmviz.trace.config import load_config_into
from wmviz.trace.config_write import config_to_dict
from wmviz.trace.errors import IssueCollector
from wmviz.trace.rowtable import row_table
from wmviz.trace.sources import Blob, TracePlan, plan_trace
from wmviz.trace.wholefile import (
    NO_ROWS_REASON,
    SeqFacts,
    merge_header_missing,
    merge_max_channel,
    report_header_missing,
    seq_missing_reason,
    seq_reused_reason,
    valve_channels,
)

DEFAULT_KEYFRAME_EVERY = 1000


def _parallelism(spark: SparkSession) -> int:
    return max(1, spark.sparkContext.defaultParallelism)


def plan_file(spark: SparkSession, trace: Path, config: Path | None, collector: IssueCollector) -> TracePlan:
    """The file's plan, cut into chunks of a size that keeps every core busy."""
    config_value, config_ok = (None, True)
    if config is not None:
        config_value, config_ok = load_config_into(config, collector)
    size = os.path.getsize(trace)
    tasks = 2 * _parallelism(spark)
    plan = plan_trace(
        Blob(path=str(trace)),
        trace.name,
        collector,
        config_value,
        config_ok,
        chunk_bytes=max(4 << 20, size // tasks + 1),
        chunk_rows=256 << 10,
    )
    if plan is None:
        raise collector.error()
    return plan


@dataclass(frozen=True)
class FileCheck:
    """What job 1 and the whole-file checks found out about a file (its issues are collected)."""

    order_known: bool
    seq_order: bool  # rows carry `seq`, and it is a sound arrival order
    channels: dict[tuple[str, str], int]

    @property
    def instances(self) -> int:
        return len({instance for instance, _ in self.channels})


def check_file(spark: SparkSession, plan: TracePlan, collector: IssueCollector, sink: Sink) -> FileCheck:
    """Job 1 and the whole-file checks."""
    with SparkProgress(spark, "reading and checking", sink):
        facts = collect_facts(spark, plan)
    rows = 0
    for part in facts:
        collector.add_entries(part.issues, part.total)
        rows += part.rows
    if rows == 0 and not collector:
        collector.add(None, None, NO_ROWS_REASON)
    report_header_missing(
        merge_header_missing(f.header_missing for f in facts), plan.unit, plan.header_row, collector
    )
    order_known, seq_used = _check_seq(spark, plan, facts, collector, sink)
    compact: dict[str, int] = {}
    pairs: set[tuple[str, str]] = set()
    for part in facts:
        compact.update(part.compact)
        pairs |= part.pairs
    channels = valve_channels(
        sorted(pairs), plan.config, plan.config_ok, compact, merge_max_channel(f.max_channel for f in facts)
    )
    return FileCheck(order_known, order_known and seq_used, channels)


def _check_seq(
    spark: SparkSession, plan: TracePlan, facts: list[ChunkFacts], collector: IssueCollector, sink: Sink
) -> tuple[bool, bool]:
    """`seq` missing on some rows or used twice: (arrival order known, rows carry seq)."""
    seq = SeqFacts()
    for part in facts:
        seq = seq.merge(part.seq)
    if not seq.used:
        return True, False
    assert seq.first_with_seq is not None
    missing = sorted(row for part in facts for row in part.without_seq)[: collector.cap]
    for row in missing:
        collector.add(row, "seq", seq_missing_reason(plan.unit, seq.first_with_seq), phase=PHASE_SEQ)
    collector.count_more(seq.without_seq - len(missing))
    ties = 0
    if not seq.proves_unique():
        with SparkProgress(spark, "looking for seq values used twice", sink):
            found, ties = seq_ties(rows_frame(spark, plan, True, _parallelism(spark)), collector.cap)
        for row, value, first in found:
            collector.add(row, "seq", seq_reused_reason(value, plan.unit, first), phase=PHASE_SEQ)
        collector.count_more(ties - len(found))
    return seq.broken_cells == 0 and seq.without_seq == 0 and ties == 0, True


def _instance_partitions(spark: SparkSession, instances: int) -> tuple[int, int]:
    """(tasks, buckets) for the instance job: buckets several times the tasks, so Spark's hash of a
    bucket number spreads whole instances evenly over the tasks."""
    tasks = max(1, min(instances, 2 * _parallelism(spark)))
    return tasks, 4 * tasks


def _merge(
    summaries: list[dict[str, Any]], collector: IssueCollector
) -> tuple[dict[str, int], dict[str, int], dict[str, dict[str, Any]]]:
    """The tasks' summaries together: steps per instance, rows per table, and the part files."""
    steps: dict[str, int] = {}
    rows: dict[str, int] = {}
    files: dict[str, dict[str, Any]] = {}
    stopped = []
    for summary in summaries:
        collector.add_entries(summary["issues"], summary["total"])
        stopped.extend(summary.get("stopped", ()))
        steps.update(summary["steps"])
        files.update(summary["files"])
        for table, count in summary["rows"].items():
            rows[table] = rows.get(table, 0) + count
    if not collector:
        raise_first_stop(stopped)
    return steps, rows, files


def spark_simulate(
    trace: Path,
    config: Path | None,
    profile: Profile | None,
    out_dir: Path,
    master: str | None,
    keyframe_every: int = DEFAULT_KEYFRAME_EVERY,
    progress: Sink = print_report,
) -> dict[str, Any]:
    """Read, check and simulate a trace file on Spark into `out_dir`; returns meta.json's content."""
    return spark_simulate_file(get_spark(master), trace, config, profile, out_dir, keyframe_every, progress)


def spark_simulate_file(
    spark: SparkSession,
    trace: Path,
    config: Path | None,
    profile: Profile | None,
    out_dir: Path,
    keyframe_every: int = DEFAULT_KEYFRAME_EVERY,
    progress: Sink = print_report,
) -> dict[str, Any]:
    """`spark_simulate` on a given session."""
    collector = IssueCollector(trace.name)
    plan = plan_file(spark, trace, config, collector)
    checked = check_file(spark, plan, collector, progress)
    chosen = profile or plan.config.profile
    spec = RunSpec.of(plan.config, chosen, checked.channels, keyframe_every)
    job = InstanceJob(
        spec, plan.source, plan.unit, plan.config_ok, checked.order_known, bool(collector), str(out_dir)
    )
    with SparkProgress(spark, "simulating" if not collector else "checking each instance", progress):
        tasks, buckets = _instance_partitions(spark, checked.instances)
        summaries = run_instances(rows_frame(spark, plan, checked.seq_order, buckets), job, tasks)
    steps, rows, files = _merge(summaries, collector)
    collector.raise_if_any()
    fields = timeline_meta_fields(
        plan.source, config_to_dict(plan.config), chosen, keyframe_every, "spark", steps, checked.channels
    )
    return write_meta(out_dir, _all_tables(rows), fields, files)


def _all_tables(rows: dict[str, int]) -> dict[str, int]:
    from wmviz.timeline.tables import TABLES

    return {t: rows.get(t, 0) for t in TABLES}


def spark_simulate_trace(
    spark: SparkSession,
    trace: Trace,
    profile: Profile | None,
    out_dir: Path,
    keyframe_every: int = DEFAULT_KEYFRAME_EVERY,
    progress: Sink = print_report,
) -> dict[str, Any]:
    """Simulate a validated trace held in memory on Spark, in one job; returns meta.json's content."""
    chosen = profile or trace.config.profile
    spec = RunSpec.of(trace.config, chosen, trace.valve_channels, keyframe_every)
    rows = row_table(trace.rows)
    job = InstanceJob(spec, trace.source, "line", True, True, False, str(out_dir))
    instances = len({i for i, _ in trace.valve_channels})
    with SparkProgress(spark, "simulating", progress):
        tasks, buckets = _instance_partitions(spark, instances)
        summaries = run_instances(table_frame(spark, rows, buckets), job, tasks)
    collector = IssueCollector(trace.source)
    steps, counts, files = _merge(summaries, collector)
    collector.raise_if_any()
    fields = timeline_meta_fields(
        trace.source,
        config_to_dict(trace.config),
        chosen,
        keyframe_every,
        "spark",
        steps,
        trace.valve_channels,
    )
    return write_meta(out_dir, _all_tables(counts), fields, files)


def spark_transcript(
    trace: Path,
    config: Path | None,
    profile: Profile | None,
    master: str | None,
    progress: Sink = print_report,
) -> Iterator[str]:
    """The transcript of a trace file computed on Spark, streamed back in arrival order."""
    spark = get_spark(master)
    collector = IssueCollector(trace.name)
    plan = plan_file(spark, trace, config, collector)
    checked = check_file(spark, plan, collector, progress)
    if collector:
        # The per-instance checks (proc_ms order, generated channels) belong in the same report.
        spec = RunSpec.of(plan.config, plan.config.profile, checked.channels, DEFAULT_KEYFRAME_EVERY)
        job = InstanceJob(spec, plan.source, plan.unit, plan.config_ok, checked.order_known, True, None)
        tasks, buckets = _instance_partitions(spark, checked.instances)
        _merge(run_instances(rows_frame(spark, plan, checked.seq_order, buckets), job, tasks), collector)
        collector.raise_if_any()
    chosen = profile or plan.config.profile
    spec = RunSpec.of(plan.config, chosen, checked.channels, DEFAULT_KEYFRAME_EVERY)
    with_input = len({n for _, n in checked.channels}) > 1
    operator = not plan.config.valve_only
    tasks, buckets = _instance_partitions(spark, checked.instances)
    rows = rows_frame(spark, plan, checked.seq_order, buckets)
    yield from transcript_lines(rows, spec, tasks, with_input=with_input, operator=operator)
