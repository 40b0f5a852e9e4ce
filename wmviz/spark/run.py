"""The command line's Spark engine: read, validate and simulate a trace file on Spark."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

from wmviz.core.types import Profile
from wmviz.spark.engine import build_timeline_spark, job_for, transcript_lines
from wmviz.spark.progress import SparkProgress, SparkProgressReport, print_report
from wmviz.spark.reader import read_trace_spark
from wmviz.spark.session import get_spark

DEFAULT_KEYFRAME_EVERY = 1000


def spark_transcript(
    trace: Path, config: Path | None, profile: Profile | None, master: str | None
) -> Iterator[str]:
    """The transcript computed on Spark, streamed in arrival order."""
    spark = get_spark(master)
    strace = read_trace_spark(spark, trace, config)
    job = job_for(
        strace.config, profile or strace.config.profile, strace.valve_channels, DEFAULT_KEYFRAME_EVERY
    )
    with_input = strace.rows.select("input").distinct().count() > 1
    operator = strace.config.generator is not None or strace.config.operator.type != "none"
    yield from transcript_lines(strace.rows, job, with_input=with_input, operator=operator)


def spark_simulate(
    trace: Path,
    config: Path | None,
    profile: Profile | None,
    out_dir: Path,
    master: str | None,
    keyframe_every: int = DEFAULT_KEYFRAME_EVERY,
    progress: Callable[[SparkProgressReport], None] = print_report,
) -> dict:
    """Write the timeline of `trace` to `out_dir`, computed on Spark; returns meta.json's content."""
    from wmviz.timeline.local import timeline_meta_fields
    from wmviz.trace.config import config_to_dict

    spark = get_spark(master)
    strace = read_trace_spark(spark, trace, config)
    chosen = profile or strace.config.profile
    job = job_for(strace.config, chosen, strace.valve_channels, keyframe_every)
    steps = {r["instance"]: r["count"] for r in strace.rows.groupBy("instance").count().collect()}
    meta = timeline_meta_fields(
        strace.source,
        config_to_dict(strace.config),
        chosen,
        keyframe_every,
        "spark",
        steps,
        strace.valve_channels,
    )
    with SparkProgress(spark, "simulate", strace.row_count, progress, every_s=0.5):
        return build_timeline_spark(spark, strace.rows, job, out_dir, meta)
