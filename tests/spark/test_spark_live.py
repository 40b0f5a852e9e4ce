"""Live mode: a stateful streaming query stepped one row at a time equals the pure engine.

Every check compares against `simulate` + `transcript_record`, the reference the batch engines
are already held to. The 20-step interleaved test prints the latency per step and asserts none.
"""

from __future__ import annotations

import pytest

from tests.conftest import REPO
from wmviz.core.pipeline import InstancePipeline
from wmviz.core.scenario import Kind, ScenarioConfig, Trace, TraceRow
from wmviz.core.simulate import Simulation
from wmviz.core.types import MAX_MS, Status
from wmviz.spark.live import LiveError, LiveSession, latency_summary
from wmviz.timeline.cursor import InstanceCursor
from wmviz.timeline.local import build_timeline_local
from wmviz.timeline.store import Timeline
from wmviz.timeline.tables import TABLES
from wmviz.timeline.transcript import transcript_record
from wmviz.trace.config import parse_config
from wmviz.trace.errors import TraceValidationError
from wmviz.trace.readers import read_trace

SAMPLES = REPO / "sample_data"
pytestmark = pytest.mark.spark


@pytest.fixture
def open_live(spark, tmp_path):
    """Open live sessions for a test, each in its own work dir, and always stop their queries."""
    sessions: list[LiveSession] = []

    def open_(trace: Trace, **kwargs) -> LiveSession:
        live = LiveSession.from_trace(spark, trace, tmp_path / f"live{len(sessions)}", **kwargs)
        sessions.append(live)
        return live

    yield open_
    for live in sessions:
        live.close()


def pure_run(trace: Trace, **flags) -> tuple[list[dict], Simulation]:
    """The reference: each row's transcript record from the pure engine, and its final pipelines."""
    sim = Simulation(trace)
    return [transcript_record(r, **flags) for r in sim.run()], sim


def step_all(live: LiveSession, rows) -> list[dict]:
    return [live.step(row) for row in rows]


@pytest.mark.parametrize(
    ("sample", "flags"),
    [
        ("flink-38477-zero-output.jsonl", {}),
        ("early-fire-left-join.jsonl", {"with_input": True, "operator": True}),
    ],
    ids=["valve", "interval-join"],
)
def test_each_live_step_equals_the_pure_engine(open_live, sample, flags, tmp_path):
    trace = read_trace(SAMPLES / sample)
    expected, sim = pure_run(trace, **flags)
    live = open_live(trace, **flags)

    got = step_all(live, trace.rows)

    assert got == expected
    if flags.get("operator"):
        # The sample's point: a speculative +I, then -U/+U once the shipment arrives.
        kinds = [e["kind"] for rec in got for e in rec["emit"] if "kind" in e]
        assert {"+I", "-U", "+U"} <= set(kinds)
    # The state Spark kept is the pure engine's, not merely its output.
    assert live.state_of("0").snapshot() == sim.pipelines["0"].snapshot()
    # And what the page shows of the live run is the batch timeline of the same rows, table by
    # table and state by state (the workers ran the batch recorder, one step at a time).
    build_timeline_local(trace, tmp_path / "batch", keyframe_every=1, fast=False)
    batch = Timeline(tmp_path / "batch")
    for table in TABLES:
        want, got_table = batch.table(table), live.timeline.table(table)
        assert (want is None) == (got_table is None), table
        if want is not None:
            if table == "steps":  # a live session counts arrivals itself; the file used line numbers
                want, got_table = want.drop_columns(["order"]), got_table.drop_columns(["order"])
            assert got_table.to_pylist() == want.to_pylist(), table
    cursor = InstanceCursor(live.timeline, "0")
    for step in range(cursor.count):
        assert cursor.state_at(step).pipeline.snapshot() == batch.state_at("0", step).pipeline.snapshot()


def two_instance_trace() -> Trace:
    """Instances a (2 channels) and b (3 channels) interleaved on the same channel numbers.

    Were state shared or swapped between them, b's first emission would come from a's channels.
    """
    w, s = Kind.WATERMARK, Kind.STATUS
    cells = [
        ("a", w, 0, 5),
        ("b", w, 0, 100),
        ("a", w, 1, 7),  # a: min(5, 7) -> 5
        ("b", w, 1, 200),
        ("b", s, 2, Status.IDLE),  # b: min(100, 200) -> 100
        ("a", s, 0, Status.IDLE),  # a: only channel 1 left -> 7
        ("b", w, 2, 50),  # b: back, behind its output
        ("a", w, 1, 30),
        ("b", s, 0, Status.IDLE),
    ]
    # Then steady traffic on both, to 20 steps: enough to report a per-step latency.
    cells += [("ab"[i % 2], w, i % 2, 300 + 10 * i) for i in range(11)]
    rows = []
    for line, (instance, kind, channel, arg) in enumerate(cells, start=1):
        extra = {"watermark_ms": arg} if kind is w else {"status": arg}
        rows.append(TraceRow(line, kind, instance=instance, channel=channel, **extra))
    return Trace("two", tuple(rows), ScenarioConfig(), {("a", "0"): 2, ("b", "0"): 3})


def test_interleaved_instances_keep_their_own_state(open_live, capsys):
    trace = two_instance_trace()
    expected, sim = pure_run(trace, with_input=True)
    live = open_live(trace, with_input=True)

    got = step_all(live, trace.rows)

    assert got == expected
    assert [(r["instance"], r["step"]) for r in got][:4] == [("a", 0), ("b", 0), ("a", 1), ("b", 1)]
    assert live.steps == {"a": 10, "b": 10}
    a, b = live.state_of("a"), live.state_of("b")
    assert a.snapshot() == sim.pipelines["a"].snapshot()
    assert b.snapshot() == sim.pipelines["b"].snapshot()
    assert len(a.valves["0"].state().channels) == 2
    assert len(b.valves["0"].state().channels) == 3

    # The latency per step, reported (not asserted: it depends on the host and its load).
    summary = latency_summary(live.latencies_ms)
    assert summary["steps"] == len(live.latencies_ms) == 20
    with capsys.disabled():
        print(
            f"\nlive step latency over {summary['steps']} steps: first {summary['first_ms']:.0f} ms, "
            f"then median {summary['median_ms']:.0f} ms, p90 {summary['p90_ms']:.0f} ms"
        )


def test_hand_injected_inputs_equal_the_pure_pipeline_and_bad_ones_change_nothing(open_live):
    trace = read_trace(SAMPLES / "flink-38477-zero-output.jsonl")
    prefix = Trace(trace.source, trace.rows[:4], trace.config, trace.valve_channels)
    live = open_live(prefix)
    step_all(live, prefix.rows)
    # The pure pipeline, fed the same prefix and then the same extra inputs.
    sim = Simulation(prefix)
    list(sim.run())
    pipeline: InstancePipeline = sim.pipelines["0"]
    line = prefix.rows[-1].row + 1

    idle = TraceRow(line, Kind.STATUS, channel=0, status=Status.IDLE)
    assert live.inject("status", channel=0, status="idle") == transcript_record(
        pipeline.process(4, idle, explain=False)
    )
    assert live.history[-1] == idle
    assert live.state_of("0").snapshot() == pipeline.snapshot()

    # Refused on the driver: nothing reaches the query.
    with pytest.raises(TraceValidationError, match="out of range"):
        live.inject("watermark", channel=9, watermark_ms=1)
    with pytest.raises(TraceValidationError, match="watermark_ms: required"):
        live.inject("watermark", channel=1)
    # Refused by the worker (a watermark row without its watermark): the query survives, and the
    # instance's state and step count are those before the bad row.
    with pytest.raises(LiveError, match="rejected"):
        live.step(TraceRow(99, Kind.WATERMARK, channel=1))

    # Typed cells are read as a trace's: "max" is Long.MAX_VALUE, and must cross Spark exactly.
    top = TraceRow(line + 1, Kind.WATERMARK, channel=1, watermark_ms=MAX_MS)
    assert live.inject("watermark", channel=1, watermark_ms="max") == transcript_record(
        pipeline.process(5, top, explain=False)
    )
    clock = TraceRow(line + 2, Kind.PROCTIME, proc_ms=100)
    expected = transcript_record(pipeline.process(6, clock, explain=False))
    assert live.inject("proctime", proc_ms=100) == expected
    with pytest.raises(TraceValidationError, match="must not decrease"):
        live.inject("proctime", proc_ms=50)
    assert live.state_of("0").snapshot() == pipeline.snapshot()
    assert live.steps == {"0": 7}


def test_generated_and_manual_channels_match_the_batch_split(open_live):
    """With a generator, which channels are manual is fixed when an instance starts, as in a batch run."""
    config = parse_config({"generator": {"out_of_orderness_ms": 0}, "channels": {"0": 2}}, "test")
    rows = (
        TraceRow(1, Kind.RECORD, channel=0, event_ms=10),
        TraceRow(2, Kind.WATERMARK, channel=1, watermark_ms=8),
        TraceRow(3, Kind.RECORD, channel=0, event_ms=20),
        TraceRow(4, Kind.WATERMARK, channel=1, watermark_ms=30),
    )
    trace = Trace("gen", rows, config, {("0", "0"): 2})
    expected, _ = pure_run(trace, operator=True)
    # from_trace declares channel 1 manual. This test also covers Spark's built-in file source.
    live = open_live(trace, operator=True, source="files")

    assert step_all(live, rows) == expected
    with pytest.raises(TraceValidationError, match="declared in manual_channels"):
        live.inject("watermark", channel=0, watermark_ms=40)
    with pytest.raises(TraceValidationError, match="takes no records"):
        live.inject("record", channel=1, event_ms=40)
    assert len(live.latencies_ms) == len(rows)


def test_transform_with_state_steps_the_same_as_apply_in_pandas_with_state(open_live):
    """The newer stateful API (bench/live_step.py measures it) runs the one stateful function:
    the same transcript and state as the pure engine."""
    trace = read_trace(SAMPLES / "flink-38477-zero-output.jsonl")
    trace = Trace(trace.source, trace.rows[:8], trace.config, trace.valve_channels)
    expected, sim = pure_run(trace)
    live = open_live(trace, stateful_api="transformWithStateInPandas")
    assert step_all(live, trace.rows) == expected
    assert live.state_of("0").snapshot() == sim.pipelines["0"].snapshot()


def _sink_failing(monkeypatch, times: int) -> list[int]:
    """Plant a failure in the live query's sink: its second micro-batch raises, `times` times in a
    row (each restart replays that batch). Returns the batch ids that failed."""
    from wmviz.spark import live_query

    original = live_query._Inbox.on_batch
    failed: list[int] = []
    calls = iter(range(10**6))

    def on_batch(self, batch, batch_id: int) -> None:
        if next(calls) >= 1 and len(failed) < times:
            failed.append(batch_id)
            raise RuntimeError("a planted sink failure")
        original(self, batch, batch_id)

    monkeypatch.setattr(live_query._Inbox, "on_batch", on_batch)
    return failed


def test_a_query_that_stops_in_a_step_is_restarted_and_the_run_still_equals_the_pure_engine(
    open_live, monkeypatch
):
    """A busy machine can fail a micro-batch for Spark's own reasons (a Python worker that does not
    connect back within its 10 s; local mode retries no task): the step restarts the query from its
    checkpoint once, the batch is replayed, and the run goes on as if nothing had happened."""
    trace = read_trace(SAMPLES / "flink-38477-zero-output.jsonl")
    expected, sim = pure_run(trace)
    failed = _sink_failing(monkeypatch, times=1)
    live = open_live(trace)

    assert step_all(live, trace.rows) == expected
    assert len(failed) == 1
    assert live.state_of("0").snapshot() == sim.pipelines["0"].snapshot()


def test_a_query_that_stops_twice_in_one_step_fails_that_step_and_says_why(open_live, monkeypatch):
    trace = read_trace(SAMPLES / "flink-38477-zero-output.jsonl")
    failed = _sink_failing(monkeypatch, times=2)
    live = open_live(trace)
    live.step(trace.rows[0])
    with pytest.raises(LiveError, match=r"the live query stopped: (.|\n)*a planted sink failure"):
        live.step(trace.rows[1])
    assert len(failed) == 2
