"""Watermark alignment (wmviz/core/alignment.py): the coordinator's step, who is PAUSED and why,
records held back until resumed, and the idleness clock stopped while paused (FLINK-35886).
The subtask and split side is checked against Flink's SourceOperator in
tests/flink/test_flink_alignment.py; the coordinator's step is modelled (wmviz/view/checked.py says so)."""

from __future__ import annotations

from wmviz.core.alignment import Announcement, PauseClock, Report, announce
from wmviz.core.pipeline import InstancePipeline
from wmviz.core.scenario import AlignmentConfig, GeneratorConfig, Kind, ScenarioConfig, TraceRow
from wmviz.core.story import explain_step
from wmviz.core.types import MAX_MS, Profile, Status, StatusInput
from wmviz.timeline import keyframe
from wmviz.view.checked import scenario_claims


def test_the_coordinator_takes_the_minimum_report_plus_the_drift_saturating_at_max():
    reports = [Report(0, 100_000, "a"), Report(1, 60_000, "b"), Report(2, MAX_MS)]
    assert announce(reports, 30_000) == Announcement(60_000, 90_000, Report(1, 60_000, "b"))
    assert announce([Report(0, MAX_MS - 5)], 30_000).max_allowed_ms == MAX_MS
    assert announce([], 30_000) == Announcement(MAX_MS, MAX_MS, None)


def _pipeline(idle_timeout_ms: int | None = None, buffer_size: int = 0) -> InstancePipeline:
    """Sampling off by default (buffer 0, Flink before 2.3): each update compares the latest."""
    generator = GeneratorConfig.flip27(
        interval_ms=1000,
        idle_timeout_ms=idle_timeout_ms,
        splits=((0, ("orders-0", "orders-1")), (1, ("orders-5",))),
        alignment=AlignmentConfig(group="orders", max_drift_ms=30_000, buffer_size=buffer_size),
    )
    config = ScenarioConfig(channels={"0": 2}, generator=generator)
    return InstancePipeline("0", config, Profile.FLINK_1X_2X, {"0": 2}, set())


def _record(row: int, channel: int, split: str, event_ms: int, proc_ms: int) -> TraceRow:
    return TraceRow(
        row, Kind.RECORD, channel=channel, event_ms=event_ms, proc_ms=proc_ms, payload=(("split", split),)
    )


def test_a_subtask_ahead_is_paused_its_records_held_and_read_once_the_group_catches_up():
    pipeline = _pipeline()
    rows = [
        _record(1, 0, "orders-0", 100_000, 500),
        _record(2, 0, "orders-1", 100_000, 500),
        _record(3, 1, "orders-5", 60_000, 500),
        TraceRow(4, Kind.PROCTIME, proc_ms=2500),
        _record(5, 0, "orders-0", 101_000, 2600),
        _record(6, 1, "orders-5", 80_000, 2700),
        TraceRow(7, Kind.PROCTIME, proc_ms=4500),
    ]
    texts = [explain_step(pipeline.process(step, row, explain=True)) for step, row in enumerate(rows)]
    reader = pipeline.generators[("0", 0)]
    assert (
        "subtask 0 PAUSED: 40s ahead of the group watermark 59999 (group orders, max drift 30s), "
        "held by split orders-5 of subtask 1" in texts[3]
    )
    assert "split orders-1 of subtask 0 PAUSED" in texts[3]
    assert "record (line 5) held back: subtask 0 is PAUSED" in texts[4]
    assert "subtask 0 resumed" in texts[6] and "reads the records it held back (lines 5)" in texts[6]
    assert not reader.paused and not reader.held
    assert reader.splits["orders-0"].generator.max_seen_ms == 101_000  # read after it was resumed
    restored = keyframe.decode(keyframe.encode(pipeline))
    assert restored.snapshot() == pipeline.snapshot()


def _idles(pipeline: InstancePipeline, rows: list[TraceRow]) -> list[int]:
    """The steps at which channel 0 was sent IDLE."""
    out = []
    for step, row in enumerate(rows):
        result = pipeline.process(step, row, explain=False)
        if any(vs.valve_input == StatusInput(0, Status.IDLE) for vs in result.valve_steps):
            out.append(step)
    return out


def _quiet_while_paused() -> list[TraceRow]:
    rows = [_record(1, 0, "orders-0", 100_000, 500), _record(2, 0, "orders-1", 100_000, 500)]
    rows += [_record(3 + i, 1, "orders-5", 60_000, 500 + 1000 * i) for i in range(8)]
    return rows


def test_a_paused_subtask_does_not_go_idle_because_it_was_told_to_wait(monkeypatch):
    """Subtask 0 is paused and sees nothing for 7 s, longer than its 3 s idle timeout: its
    idleness clock is stopped, so it never goes IDLE. With clocks that keep running (the bug
    FLINK-35886 fixed), it does."""
    assert _idles(_pipeline(idle_timeout_ms=3000), _quiet_while_paused()) == []
    monkeypatch.setattr(PauseClock, "pause", lambda self, now_ms: None)
    assert _idles(_pipeline(idle_timeout_ms=3000), _quiet_while_paused()) != []


def test_the_page_and_explain_say_what_of_alignment_is_checked_and_what_is_modelled():
    config = _pipeline().config
    claim = next(c for c in scenario_claims(config) if c.subject == "watermark alignment")
    assert claim.verified and claim.suite == "tests/flink/test_flink_alignment.py"
    assert "SourceOperator" in claim.statement and "coordinator's step" in claim.statement
    assert "modelled" in claim.statement


def test_the_pages_split_table_shows_paused_splits_and_subtasks():
    from wmviz.ui import import_views
    from wmviz.view.timefmt import TimeFormat

    pipeline = _pipeline()
    rows = [
        _record(1, 0, "orders-0", 100_000, 500),
        _record(2, 0, "orders-1", 100_000, 500),
        _record(3, 1, "orders-5", 60_000, 500),
        TraceRow(4, Kind.PROCTIME, proc_ms=2500),
    ]
    for step, row in enumerate(rows):
        pipeline.process(step, row, explain=False)
    table = import_views.split_table(pipeline, TimeFormat("utc"))
    assert table is not None
    status = dict(zip(table["split"], table["status"], strict=True))
    assert status == {"orders-0": "PAUSED", "orders-1": "PAUSED", "orders-5": "ACTIVE"}


def _paused_at(buffer_size: int) -> list[int]:
    """The steps after which subtask 0 is paused: it gets 40 s ahead at 500 ms, updates run every
    second, one clock tick a second."""
    pipeline = _pipeline(buffer_size=buffer_size)
    rows = [
        _record(1, 0, "orders-0", 100_000, 500),
        _record(2, 0, "orders-1", 100_000, 500),
        _record(3, 1, "orders-5", 60_000, 500),
    ]
    rows += [TraceRow(4 + i, Kind.PROCTIME, proc_ms=1000 * (i + 1)) for i in range(5)]
    out = []
    for step, row in enumerate(rows):
        pipeline.process(step, row, explain=False)
        if pipeline.generators[("0", 0)].paused:
            out.append(step)
    return out


def test_the_sampling_ring_pauses_a_subtask_only_after_it_has_been_ahead_for_buffer_size_updates():
    """Flink 2.3's pipeline.watermark-alignment.buffer-size: the watermark of `buffer_size` updates
    ago is compared (the first watermark is sent at the 1000 ms probe, sampled at that update)."""
    assert _paused_at(0)[0] == 3
    assert _paused_at(1)[0] == 3
    assert _paused_at(3)[0] == 5
