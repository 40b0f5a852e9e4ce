"""The Spark engine computes exactly what the local engine does: transcripts and timelines."""

from __future__ import annotations

import json
import random

import pytest

from tests.conftest import REPO, case_id, valve_cases
from tests.join_cases import case_config, case_rows, join_cases
from tests.test_timeline import random_valve_trace
from wmviz.core.scenario import Kind, ScenarioConfig, Trace, TraceRow
from wmviz.core.simulate import simulate
from wmviz.core.types import Profile, parse_input
from wmviz.spark.engine import build_timeline_spark, dataframe_from_trace, job_for, transcript_lines
from wmviz.timeline.local import build_timeline_local, timeline_meta
from wmviz.timeline.store import Timeline
from wmviz.trace.readers import read_trace
from wmviz.transcript import transcript_line


def local_lines(trace: Trace, profile: Profile | None = None) -> list[str]:
    with_input = len({r.input for r in trace.rows}) > 1
    operator = trace.config.generator is not None or trace.config.operator.type != "none"
    return [transcript_line(r, with_input=with_input, operator=operator) for r in simulate(trace, profile)]


def spark_lines(spark, trace: Trace, profile: Profile | None = None) -> list[str]:
    with_input = len({r.input for r in trace.rows}) > 1
    operator = trace.config.generator is not None or trace.config.operator.type != "none"
    job = job_for(trace.config, profile or trace.config.profile, trace.valve_channels, 1000)
    return list(
        transcript_lines(
            dataframe_from_trace(spark, list(trace.rows)), job, with_input=with_input, operator=operator
        )
    )


def conformance_as_one_trace() -> Trace:
    """All valve cases without error steps, one instance each, interleaved round-robin."""
    queues, channels = [], {}
    for case in valve_cases():
        if any("error" in step for step in case["steps"]):
            continue
        tokens = [parse_input(t) for step in case["steps"] for t in step["in"]]
        queues.append((case_id(case), tokens))
        channels[(case_id(case), "0")] = case["channels"]
    rows, line = [], 0
    while any(tokens for _, tokens in queues):
        for name, tokens in queues:
            if tokens:
                inp = tokens.pop(0)
                line += 1
                if hasattr(inp, "watermark_ms"):
                    rows.append(
                        TraceRow(
                            line,
                            Kind.WATERMARK,
                            instance=name,
                            channel=inp.channel,
                            watermark_ms=inp.watermark_ms,
                        )
                    )
                else:
                    rows.append(
                        TraceRow(line, Kind.STATUS, instance=name, channel=inp.channel, status=inp.status)
                    )
    return Trace("conformance.jsonl", tuple(rows), ScenarioConfig(), channels)


@pytest.mark.parametrize("profile", list(Profile), ids=lambda p: p.value)
def test_spark_and_local_transcripts_agree_on_every_valve_conformance_case(spark, profile):
    trace = conformance_as_one_trace()
    assert len(trace.instances) == 39
    assert spark_lines(spark, trace, profile) == local_lines(trace, profile)


def test_spark_and_local_transcripts_agree_on_every_interval_join_case(spark, tmp_path):
    for case in join_cases():
        path = tmp_path / f"{case_id(case)}.jsonl"
        lines = [json.dumps({"config": case_config(case)})]
        lines += [json.dumps(r) for rows in case_rows(case) for r in rows]
        path.write_text("\n".join(lines) + "\n")
        trace = read_trace(path)
        assert spark_lines(spark, trace) == local_lines(trace), case_id(case)


@pytest.mark.parametrize("seed", [5, 6])
def test_spark_and_local_transcripts_agree_on_seeded_random_multi_instance_traces(spark, seed):
    trace = random_valve_trace(seed, instances=7, rows=1500)
    assert spark_lines(spark, trace) == local_lines(trace)


def test_spark_and_local_agree_on_every_built_in_sample(spark):
    for path in sorted((REPO / "sample_data").iterdir()):
        if path.suffix not in (".jsonl", ".csv"):
            continue
        config = path.with_suffix(".json")
        trace = read_trace(path, config if config.is_file() else None)
        assert spark_lines(spark, trace) == local_lines(trace), path.name


def test_the_spark_timeline_equals_the_local_timeline_table_by_table(spark, tmp_path):
    trace = random_valve_trace(9, instances=4, rows=800)
    sample = read_trace(REPO / "sample_data" / "early-fire-left-join.jsonl")
    for name, tr in (("random", trace), ("join", sample)):
        build_timeline_local(tr, tmp_path / f"{name}-local", keyframe_every=30)
        job = job_for(tr.config, tr.config.profile, tr.valve_channels, 30)
        steps = {i: sum(1 for r in tr.rows if r.instance == i) for i in tr.instances}
        meta = timeline_meta(tr, tr.config.profile, 30, "spark", steps)
        build_timeline_spark(
            spark, dataframe_from_trace(spark, list(tr.rows)), job, tmp_path / f"{name}-spark", meta
        )
        local, remote = Timeline(tmp_path / f"{name}-local"), Timeline(tmp_path / f"{name}-spark")
        assert remote.meta["instances"] == local.meta["instances"]
        for table in ("steps", "channels", "heap", "timers", "outputs"):
            a, b = local.table(table), remote.table(table)
            assert (a is None) == (b is None), (name, table)
            if a is not None:
                assert b.to_pylist() == a.to_pylist(), (name, table)
        rng = random.Random(1)
        for instance, n in remote.meta["instances"].items():
            for step in {rng.randrange(n) for _ in range(5)} | {n - 1}:
                assert (
                    remote.state_at(instance, step).pipeline.snapshot()
                    == local.state_at(instance, step).pipeline.snapshot()
                )
