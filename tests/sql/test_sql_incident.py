"""The SQL incident `sql-silent-partition-holds-the-window`: its trace is what `wmviz sql replay`
makes of the job's own SQL plan and rows, and it does what its story says, for the job as written
and for the fixed job (a 5 s `scan.watermark.idle-timeout`), whose trace comes from its own plan."""

from __future__ import annotations

import dataclasses

from tests.support import paths
from wmviz.core.simulate import simulate
from wmviz.core.types import EmittedWatermark
from wmviz.sql.load import read_plan_file
from wmviz.sql.replay import group_trace
from wmviz.sql.rows import read_input
from wmviz.store.incidents import built_in_incidents

DATA = paths.DATA / "sql"
SLUG = "sql-silent-partition-holds-the-window"
T0 = 1_795_514_400_000
"""2026-11-24 10:00:00 as a TIMESTAMP's number (the wall-clock reading taken as UTC)."""


def emitted(trace) -> list[tuple[int, int]]:
    return [
        (result.step, out.watermark_ms)
        for result in simulate(trace)
        for out in result.out
        if isinstance(out, EmittedWatermark)
    ]


def replayed(script: str):
    job = read_plan_file(DATA / f"{script}.plan.json")
    return group_trace(job, read_input(DATA / "incident_silent_partition.rows.jsonl"), "x")


def test_the_incident_trace_is_the_replay_of_the_jobs_sql():
    trace = built_in_incidents()[SLUG].trace()
    config, rows = replayed("incident_silent_partition")
    assert [dataclasses.replace(r, row=0) for r in trace.rows] == [
        dataclasses.replace(r, row=0) for r in rows
    ]
    assert trace.config.generator == config.generator


def test_the_source_is_held_at_partition_2s_10_00_00_and_no_window_can_fire():
    trace = built_in_incidents()[SLUG].trace()
    assert emitted(trace) == [(2, T0 - 1000), (3, T0 - 500), (4, T0)]
    assert all(r.step <= 18 for r in simulate(trace))


def test_the_fixed_job_marks_partition_2_idle_at_step_6_and_passes_the_first_windows_end_at_step_10():
    trace = built_in_incidents()[SLUG].trace()
    config, _ = replayed("incident_silent_partition_fixed")
    assert config.generator is not None and config.generator.idle_timeout_ms == 5000
    fixed = emitted(
        dataclasses.replace(trace, config=dataclasses.replace(trace.config, generator=config.generator))
    )
    assert fixed[:5] == [(2, T0 - 1000), (3, T0 - 500), (4, T0), (6, T0 + 2500), (6, T0 + 4000)]
    first_past_the_end = next(step for step, wm in fixed if wm >= T0 + 9_999)
    assert first_past_the_end == 10 and dict(fixed)[10] == T0 + 10_000
