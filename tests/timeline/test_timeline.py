"""The timeline dataset: every table written, and the state at any step rebuilt from keyframes."""

from __future__ import annotations

import random

import pytest

from tests.conftest import REPO
from wmviz.core.scenario import IntervalJoinConfig, Kind, ScenarioConfig, Trace, TraceRow
from wmviz.core.simulate import Simulation
from wmviz.core.types import Status
from wmviz.timeline.local import build_timeline_local
from wmviz.timeline.recorder import decode_out
from wmviz.timeline.store import Timeline, TimelineError
from wmviz.timeline.transcript import transcript_record
from wmviz.trace.readers import read_trace

SAMPLES = sorted(p for p in (REPO / "sample_data").iterdir() if p.suffix in (".jsonl", ".csv"))


def load_sample(path):
    config = path.with_suffix(".json")
    return read_trace(path, config if config.is_file() else None)


def random_valve_trace(seed: int, instances: int = 5, rows: int = 600) -> Trace:
    rng = random.Random(seed)
    out, wms = [], {}
    clock = 0
    for line in range(1, rows + 1):
        inst, ch = str(rng.randrange(instances)), rng.randrange(4)
        roll = rng.random()
        if roll < 0.04:
            clock += rng.randrange(0, 50)
            out.append(TraceRow(line, Kind.PROCTIME, instance=inst, proc_ms=clock))
        elif roll < 0.08:
            out.append(
                TraceRow(
                    line,
                    Kind.RECORD,
                    instance=inst,
                    channel=ch,
                    event_ms=rng.randrange(100),
                    key="k",
                    value=rng.choice([1, "x", 2.5]),
                    payload=(("note", "n"),),
                )
            )
        elif roll < 0.18:
            out.append(
                TraceRow(
                    line,
                    Kind.STATUS,
                    instance=inst,
                    channel=ch,
                    status=rng.choice([Status.IDLE, Status.ACTIVE, Status.FINISHED]),
                )
            )
        else:
            wms[(inst, ch)] = wms.get((inst, ch), 0) + rng.randrange(-3, 20)
            out.append(
                TraceRow(line, Kind.WATERMARK, instance=inst, channel=ch, watermark_ms=wms[(inst, ch)])
            )
    channels = {(str(i), "0"): 4 for i in range(instances)}
    return Trace("random.jsonl", tuple(out), ScenarioConfig(), channels)


def straight_states(trace: Trace, wanted: set[tuple[str, int]]) -> dict[tuple[str, int], tuple]:
    sim = Simulation(trace)
    states = {}
    for result in sim.run():
        if (result.instance, result.step) in wanted:
            states[(result.instance, result.step)] = sim.pipelines[result.instance].snapshot()
    return states


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.stem)
def test_state_rebuilt_from_keyframes_equals_a_straight_run_at_every_step_of_each_sample(sample, tmp_path):
    trace = load_sample(sample)
    build_timeline_local(trace, tmp_path / "tl", keyframe_every=3)
    timeline = Timeline(tmp_path / "tl")
    counts = timeline.meta.instances
    wanted = {(i, s) for i, n in counts.items() for s in range(n)}
    expected = straight_states(trace, wanted)
    for (instance, step), state in expected.items():
        rebuilt = timeline.state_at(instance, step)
        assert rebuilt.replayed <= 2
        assert rebuilt.pipeline.snapshot() == state, (instance, step)


def test_random_steps_of_a_multi_instance_trace_rebuild_exactly_and_replay_few_rows(tmp_path):
    trace = random_valve_trace(7)
    build_timeline_local(trace, tmp_path / "tl", keyframe_every=25)
    timeline = Timeline(tmp_path / "tl")
    rng = random.Random(3)
    wanted = {(i, rng.randrange(n)) for i, n in timeline.meta.instances.items() for _ in range(8)}
    expected = straight_states(trace, wanted)
    assert len(set(expected.values())) > len(expected) // 2  # the snapshot really tracks state
    for (instance, step), state in expected.items():
        rebuilt = timeline.state_at(instance, step)
        assert rebuilt.replayed < 25
        assert rebuilt.pipeline.snapshot() == state


def test_steps_table_reproduces_the_transcript_and_channel_table_holds_only_changes(tmp_path):
    trace = random_valve_trace(11, instances=3, rows=300)
    build_timeline_local(trace, tmp_path / "tl", keyframe_every=50)
    timeline = Timeline(tmp_path / "tl")
    steps = timeline.table("steps").sort_by("order").to_pylist()
    expected = [transcript_record(r) for r in Simulation(trace).run()]
    assert [
        {"step": s["step"], "instance": s["instance"], "out": decode_out(s["out_json"])} for s in steps
    ] == expected
    changes = timeline.table("channels").to_pylist()
    assert 0 < len(changes) <= len(steps)
    heap = timeline.table("heap").to_pylist()
    assert {h["event"] for h in heap} <= {"join", "leave", "move"}


def test_explain_at_a_step_gives_the_same_story_as_explaining_the_whole_run(tmp_path):
    trace = load_sample(REPO / "sample_data" / "early-fire-left-join.jsonl")
    build_timeline_local(trace, tmp_path / "tl", keyframe_every=4)
    timeline = Timeline(tmp_path / "tl")
    full = list(Simulation(trace).run(explain=True))
    for result in full:
        again, _ = timeline.explain_at(result.instance, result.step)
        assert again.emit == result.emit and again.out == result.out
        assert [v.account for v in again.valve_steps] == [v.account for v in result.valve_steps]


def test_timer_and_output_tables_follow_the_join(tmp_path):
    trace = load_sample(REPO / "sample_data" / "early-fire-left-join.jsonl")
    assert trace.config.operator == IntervalJoinConfig(
        join="left",
        lower_ms=-5000,
        upper_ms=9000,
        early_fire_delay_ms=3000,
        time_mode="rowtime",
    )
    build_timeline_local(trace, tmp_path / "tl")
    timeline = Timeline(tmp_path / "tl")
    fired = [t for t in timeline.table("timers").to_pylist() if t["event"] == "fired"]
    assert [(t["step"], t["purposes"], t["at_ms"]) for t in fired][:1] == [(6, "early_fire", 13000)]
    outputs = timeline.table("outputs").to_pylist()
    assert [(o["step"], o["kind"], o["cause"]) for o in outputs if o["kind"] != "wm"] == [
        (4, "+I", "match"),
        (6, "+I", "early_fire"),
        (7, "-U", "retract"),
        (7, "+U", "match"),
    ]


def test_opening_a_directory_that_is_not_a_timeline_says_so(tmp_path):
    with pytest.raises(TimelineError, match="not a wmviz timeline"):
        Timeline(tmp_path)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_valve_only_fast_path_writes_exactly_the_timeline_of_the_general_path(seed, tmp_path):
    trace = random_valve_trace(seed, instances=4, rows=500)
    build_timeline_local(trace, tmp_path / "fast", keyframe_every=40, fast=True)
    build_timeline_local(trace, tmp_path / "slow", keyframe_every=40, fast=False)
    fast, slow = Timeline(tmp_path / "fast"), Timeline(tmp_path / "slow")
    for table in ("steps", "channels", "heap", "timers", "outputs"):
        a, b = fast.table(table), slow.table(table)
        assert (a is None) == (b is None), table
        if a is not None:
            assert a.to_pylist() == b.to_pylist(), table
    for instance, n in fast.meta.instances.items():
        for step in (-1, n // 3, n - 1):
            assert (
                fast.state_at(instance, step).pipeline.snapshot()
                == slow.state_at(instance, step).pipeline.snapshot()
            )


def test_a_parquet_payload_json_cannot_hold_survives_the_local_timeline_and_its_replay(tmp_path):
    import datetime as dt

    import pyarrow as pa
    import pyarrow.parquet as pq

    from wmviz.trace.readers import read_trace

    path = tmp_path / "t.parquet"
    seen = [dt.datetime(2026, 1, 1), dt.datetime(2026, 1, 2)]
    pq.write_table(
        pa.table(
            {
                "kind": ["watermark", "watermark"],
                "channel": [0, 1],
                "watermark_ms": [10, 12],
                "seen_at": pa.array(seen, pa.timestamp("ms")),
            }
        ),
        path,
    )
    trace = read_trace(path)
    build_timeline_local(trace, tmp_path / "tl")
    replayed = Timeline(tmp_path / "tl").explain_at("0", 1)[0].row
    assert replayed.payload == trace.rows[1].payload
