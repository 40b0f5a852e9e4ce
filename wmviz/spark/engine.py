"""Simulate on Spark: one group per instance, the very same core, ordered by arrival.

Both the timeline and the transcript come from `groupBy("instance").applyInArrow`: each group's
rows are sorted by `order` (seq, else file order) and fed to an InstancePipeline exactly as the
local engine does. Nothing but small summaries reaches the driver; the transcript streams back
sorted with `toLocalIterator`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.dataset as ds
from pyspark.sql import DataFrame, SparkSession

from wmviz.core.pipeline import InstancePipeline
from wmviz.core.scenario import ScenarioConfig, TraceRow
from wmviz.core.simulate import instance_channels, manual_channels_of
from wmviz.core.types import Profile
from wmviz.spark.validate import ROW_COLUMNS
from wmviz.timeline.records import INPUT_COLUMNS, TimelineRecorder, empty_columns, trace_row_from_step
from wmviz.timeline.schema import SCHEMA_VERSION, TABLES, spark_ddl
from wmviz.trace.config import config_to_dict, parse_config


@dataclass(frozen=True)
class EngineJob:
    """Everything a worker needs, small and picklable (the config travels as its JSON dict)."""

    config: dict[str, Any]
    profile: str
    valve_channels: tuple[tuple[str, str, int], ...]
    keyframe_every: int

    def pipeline(self, instance: str, rows: list[TraceRow]) -> InstancePipeline:
        config = parse_config(self.config, "config")
        channels = {(i, n): c for i, n, c in self.valve_channels}
        manual = manual_channels_of(rows) if config.generator is not None else set()
        return InstancePipeline(
            instance,
            config,
            Profile.parse(self.profile),
            instance_channels(channels, config, instance),
            manual,
        )


def job_for(config: ScenarioConfig, profile: Profile, valve_channels: dict, keyframe_every: int) -> EngineJob:
    """Pack the run's parameters for the workers."""
    channels = tuple((i, n, c) for (i, n), c in sorted(valve_channels.items()))
    return EngineJob(config_to_dict(config), profile.value, channels, keyframe_every)


def _rows_of(table) -> tuple[Any, list[int], list[TraceRow]]:
    """The group sorted by arrival, its `order` values, and its TraceRows (built column-wise)."""
    table = table.sort_by("order")
    cols = {name: table.column(name).to_pylist() for name in ROW_COLUMNS}
    names = list(cols)
    rows = [
        trace_row_from_step(dict(zip(names, values, strict=True)))
        for values in zip(*cols.values(), strict=True)
    ]
    return table, cols["order"], rows


def timeline_group(job: EngineJob):
    """The per-instance function of the timeline job (runs on the workers)."""

    def run(table):
        import pyarrow as pa

        from wmviz.timeline.store import columns_to_table

        table, orders, rows = _rows_of(table)
        pipeline = job.pipeline(rows[0].instance, rows)
        columns = empty_columns()
        recorder = TimelineRecorder(columns, job.keyframe_every)
        recorder.start(pipeline)
        fast = pipeline.valve_only
        for step, (order, row) in enumerate(zip(orders, rows, strict=True)):
            if fast:
                out: list = []
                outcome = pipeline.process_valve_only(row, out)
                recorder.record_valve_only(pipeline, step, order, row, outcome, out)
            else:
                recorder.record(pipeline, pipeline.process(step, row, explain=False), order)
        columns["steps"].update({name: table.column(name) for name in INPUT_COLUMNS})
        return pa.concat_tables(columns_to_table(t, columns[t]) for t in TABLES if columns[t]["instance"])

    return run


def transcript_group(job: EngineJob, with_input: bool, operator: bool):
    """The per-instance function of the transcript job: (order, line) pairs."""

    def run(table):
        import pyarrow as pa

        from wmviz.transcript import transcript_line

        _, orders, rows = _rows_of(table)
        pipeline = job.pipeline(rows[0].instance, rows)
        lines = []
        for step, row in enumerate(rows):
            result = pipeline.process(step, row, explain=False)
            lines.append(transcript_line(result, with_input=with_input, operator=operator))
        return pa.table({"order": pa.array(orders, pa.int64()), "line": pa.array(lines, pa.string())})

    return run


def transcript_lines(rows: DataFrame, job: EngineJob, *, with_input: bool, operator: bool) -> Iterator[str]:
    """The transcript, streamed back in arrival order without collecting it at once."""
    out = (
        rows.select(*ROW_COLUMNS)
        .groupBy("instance")
        .applyInArrow(transcript_group(job, with_input, operator), "order long, line string")
    )
    for record in out.orderBy("order").toLocalIterator():
        yield record["line"]


def build_timeline_spark(
    spark: SparkSession, rows: DataFrame, job: EngineJob, out_dir: Path, meta: dict[str, Any]
) -> dict[str, Any]:
    """Write the timeline of `rows` to `out_dir` (the same layout as the local engine)."""
    out = rows.select(*ROW_COLUMNS).groupBy("instance").applyInArrow(timeline_group(job), spark_ddl())
    # Sorting inside each task keeps an instance's rows together, so readers prune row groups.
    (
        out.sortWithinPartitions("table", "instance", "step")
        .write.mode("overwrite")
        .option("parquet.block.size", 8 * 1024 * 1024)
        .partitionBy("table")
        .parquet(str(out_dir))
    )
    counts = dict.fromkeys(TABLES, 0)
    for t in TABLES:
        folder = Path(out_dir) / f"table={t}"
        if folder.is_dir():
            # Parquet footers hold the row counts: no Spark job per table (each costs ~0.5 s).
            counts[t] = ds.dataset(folder, format="parquet").count_rows()
    meta = {"schema_version": SCHEMA_VERSION, "rows": counts, **meta}
    (Path(out_dir) / "meta.json").write_text(json.dumps(meta, indent=2))
    return meta


ROW_DDL = (
    "instance string, input string, row long, order long, seq long, kind string, channel int, event_ms long, "
    "watermark_ms long, status string, proc_ms long, key string, value_json string, payload_json string"
)


def dataframe_from_trace(spark: SparkSession, rows: list[TraceRow]) -> DataFrame:
    """A small in-memory trace as the reader's row DataFrame (tests, and tiny uploads)."""
    records = [
        (
            r.instance,
            r.input,
            r.row,
            r.seq if r.seq is not None else r.row,
            r.seq,
            r.kind.value,
            r.channel,
            r.event_ms,
            r.watermark_ms,
            r.status.value if r.status else None,
            r.proc_ms,
            r.key,
            json.dumps(r.value) if r.value is not None else None,
            json.dumps([list(p) for p in r.payload]),
        )
        for r in rows
    ]
    return spark.createDataFrame(records, schema=ROW_DDL)
