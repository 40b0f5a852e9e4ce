"""The freshness budget (`wmviz.analysis.lag_budget`): each cause on a hand-made recording whose
answer is known from how it was made, the parts always adding up to the total, and the built-in
whole-job incident naming the cause a person would.

The hand-made job: one source subtask reading at wall-clock pace `BEHIND` ms behind, feeding (over
forward edges) an operator and then an output vertex; each test gives the vertices a config
(docs/lag.md) and reads the budget of the output vertex at a moment.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import REPO
from wmviz.analysis.lag_budget import CAUSES, LagBudget, bound_ms, fired_end, window_in_name
from wmviz.core.scenario import GeneratorConfig, WindowConfig
from wmviz.core.types import MAX_MS
from wmviz.record.job import (
    Edge,
    JobFormatError,
    JobRecording,
    Vertex,
    read_recording,
    to_json,
    write_recording,
)
from wmviz.record.job_config import JobConfig
from wmviz.trace.config import parse_config

T0 = 1_795_633_200_000  # on a whole minute
SRC, MID, OUT = Vertex("s", "src", 1), Vertex("m", "mid", 1), Vertex("o", "out", 1)
BUILT_IN = REPO / "sample_data" / "jobs" / "silent-split-holds-the-whole-job.json"


def chain(
    configs: dict[str, dict],
    behind: int = 7001,
    samples: int = 20,
    mid_hold: int = 0,
    stop_at: int | None = None,
    clock: str = "wall",
    idle_ms: bool = False,
) -> JobRecording:
    """src → mid → out, a sample a second; src's watermark `behind` ms behind the wall clock (frozen
    from sample `stop_at`, its `sourceIdleTime` growing from then when `idle_ms`); mid's output
    `mid_hold` below its input; out forwards mid."""
    rec = JobRecording("j", (SRC, MID, OUT), (Edge("s", "m", "FORWARD"), Edge("m", "o", "FORWARD")))
    for i in range(samples):
        t = T0 + i * 1000
        frozen = min(i, stop_at) if stop_at is not None else i
        wm = T0 + frozen * 1000 - behind
        rec.add(("s", 0, "currentOutputWatermark", None), t, wm)
        if idle_ms:
            rec.add(("s", 0, "sourceIdleTime", None), t, (i - frozen) * 1000)
        rec.add(("m", 0, "currentOutputWatermark", None), t, wm - mid_hold)
        rec.add(("o", 0, "currentOutputWatermark", None), t, wm - mid_hold)
    rec.config = JobConfig(clock, {vid: parse_config(obj, vid) for vid, obj in configs.items()})  # type: ignore[arg-type]
    return rec


def budget_of(rec: JobRecording, at: int | None = None):
    return LagBudget(rec).at(rec.vertex("o"), at)


def parts(budget) -> dict[str, int]:
    return {c: ms for c, ms in budget.by_cause().items() if ms}


def kinds(budget) -> dict[str, str]:
    return {p.cause: p.kind for p in budget.parts}


SOURCE_5S = {"s": {"generator": {"preset": "flip27", "out_of_orderness_ms": 5000}}}


def test_the_bound_is_flinks_newest_minus_bound_minus_one():
    assert bound_ms(GeneratorConfig(out_of_orderness_ms=5000)) == 5001
    assert bound_ms(GeneratorConfig(out_of_orderness_ms=0)) == 1
    assert bound_ms(GeneratorConfig.with_preset("sql-source")) is None  # an expression's: not computed


def test_out_of_orderness_and_backlog():
    # 7,001 ms behind the wall clock with a 5 s bound: 5,001 ms are the bound, 2,000 ms backlog.
    budget = budget_of(chain(SOURCE_5S))
    assert budget.total_ms == 7001 and budget.reference == "wall clock"
    assert parts(budget) == {"out-of-orderness": 5001, "backlog": 2000}
    assert kinds(budget) == {"out-of-orderness": "derived", "backlog": "measured"}


def test_without_a_config_the_whole_gap_is_the_upstream_backlog():
    assert parts(budget_of(chain({}))) == {"backlog": 7001}


def test_a_root_closer_than_its_bound_leaves_a_negative_unexplained():
    # The watermarks sit exactly 5 s behind: a real Flink source with a 5 s bound sits 5 s + 1 ms.
    budget = budget_of(chain(SOURCE_5S, behind=5000))
    assert parts(budget) == {"out-of-orderness": 5001, "unexplained": -1}
    assert sum(p.ms for p in budget.parts) == budget.total_ms == 5000


def test_a_frozen_source_is_a_stall_after_ten_seconds_and_a_backlog_before():
    rec = chain(SOURCE_5S, stop_at=5)
    early, late = budget_of(rec, T0 + 9000), budget_of(rec, T0 + 19000)
    assert parts(early) == {"out-of-orderness": 5001, "backlog": 7001 - 5001 + 4000}
    assert parts(late) == {"out-of-orderness": 5001, "stall": 7001 - 5001 + 14000}
    assert "has not moved for 14s" in next(p.why for p in late.parts if p.cause == "stall")


def test_the_idle_timeout_takes_the_quiet_time_up_to_timeout_plus_two_probe_intervals():
    idle = {"s": {"generator": {"out_of_orderness_ms": 5000, "idle_timeout_ms": 3000, "interval_ms": 500}}}
    rec = chain(idle, stop_at=5, idle_ms=True)
    waiting, waited = budget_of(rec, T0 + 7000), budget_of(rec, T0 + 19000)
    # 2 s quiet: all of it is the timeout's wait (measured).
    assert parts(waiting) == {"out-of-orderness": 5001, "idle timeout": 2000, "backlog": 2000}
    assert kinds(waiting)["idle timeout"] == "measured"
    # 14 s quiet: past 3 s + 2 × 500 ms Flink has declared it idle; mid and out read only idle channels, so
    # nothing moves the output on: all of it is a stall, and blame's ending says why.
    assert parts(waited) == {"stall": 21001}
    assert "every input channel of 'out' subtask 0 is idle" in waited.parts[0].why
    # No timeout configured: the same quiet time is all stall.
    assert "idle timeout" not in parts(budget_of(chain(SOURCE_5S, stop_at=5, idle_ms=True), T0 + 19000))


def test_a_tumbling_window_waits_for_its_end():
    window = {**SOURCE_5S, "o": {"operator": {"type": "window", "size_ms": 60_000}}}
    # At T0 + 19 s the output's watermark is T0 + 19,000 − 7,001 = T0 + 11,999: the window ending
    # at T0 fired (T0 − 1 ≤ watermark); the next ends at T0 + 60 s. 12,000 ms of event time wait.
    budget = budget_of(chain(window))
    assert parts(budget) == {"window": 12_000, "out-of-orderness": 5001, "backlog": 2000}
    assert budget.total_ms == 7001 + 12_000 and kinds(budget)["window"] == "derived"


def test_a_sliding_window_waits_for_its_next_slide():
    assert fired_end(WindowConfig(size_ms=60_000, slide_ms=10_000), T0 + 11_999) == T0 + 10_000
    assert fired_end(WindowConfig(size_ms=60_000, slide_ms=10_000), T0 + 9_999) == T0 + 10_000
    assert fired_end(WindowConfig(size_ms=60_000, slide_ms=10_000), T0 + 9_998) == T0
    assert fired_end(WindowConfig(size_ms=60_000, offset_ms=15_000), T0 + 20_000) == T0 + 15_000
    assert fired_end(WindowConfig(session_gap_ms=1000), T0) is None


def test_an_interval_joins_hold_back_is_the_join_bound():
    join = {**SOURCE_5S, "m": {"operator": {"type": "interval_join", "lower_ms": -2000, "upper_ms": 3000}}}
    budget = budget_of(chain(join, mid_hold=3000))
    assert parts(budget) == {"join bound": 3000, "out-of-orderness": 5001, "backlog": 2000}
    why = next(p.why for p in budget.parts if p.cause == "join bound")
    assert "max(A, B) = 3s" in why


def test_a_hold_back_without_a_join_is_unexplained():
    budget = budget_of(chain(SOURCE_5S, mid_hold=3000))
    assert parts(budget) == {"unexplained": 3000, "out-of-orderness": 5001, "backlog": 2000}
    assert next(p.where for p in budget.parts if p.cause == "unexplained") == "mid subtask 0"


def split_job(paused_per_sample: int) -> JobRecording:
    """A source subtask of two splits, `a` 30 s behind and paused by alignment `paused_per_sample`
    ms of every second, `b` level with the wall clock; a window behind it."""
    rec = JobRecording("j", (SRC, OUT), (Edge("s", "o", "FORWARD"),))
    for i in range(20):
        t = T0 + i * 1000
        rec.add(("s", 0, "currentWatermark", "a"), t, t - 30_000)
        rec.add(("s", 0, "currentWatermark", "b"), t, t - 1)
        rec.add(("s", 0, "accumulatedIdleTimeMs", "a"), t, 0)
        rec.add(("s", 0, "accumulatedIdleTimeMs", "b"), t, 0)
        rec.add(("s", 0, "accumulatedPausedTimeMs", "a"), t, i * paused_per_sample)
        rec.add(("s", 0, "currentOutputWatermark", None), t, t - 30_000)
        rec.add(("o", 0, "currentOutputWatermark", None), t, t - 30_000)
    rec.config = JobConfig("wall", {"s": parse_config({"generator": {"out_of_orderness_ms": 0}}, "s")})
    return rec


def test_an_alignment_pause_of_the_root_split_is_measured():
    budget = budget_of(split_job(250))
    # Held by split a since the first sample: 19 samples × 250 ms paused.
    assert parts(budget) == {"out-of-orderness": 1, "alignment pause": 4750, "backlog": 30_000 - 1 - 4750}
    assert budget.parts[0].where == "src subtask 0 split a"
    assert "alignment pause" not in parts(budget_of(split_job(0)))


def test_on_the_event_clock_the_reference_is_the_newest_event_time():
    # Without a wall clock: split b's newest event is its watermark + 1 ms (bound 0), 30 s ahead of a.
    rec = split_job(0)
    rec.config = JobConfig("event", rec.config.vertices)
    budget = budget_of(rec)
    assert budget.reference == "newest event time" and budget.reference_ms == budget.at_ms
    assert budget.total_ms == 30_000


def test_a_finished_vertex_is_not_late():
    rec = chain(SOURCE_5S)
    rec.add(("o", 0, "taskFinished", None), T0 + 19_000, 1)
    budget = budget_of(rec)
    assert budget.watermark_ms == MAX_MS and budget.total_ms == 0 and budget.parts == ()


@pytest.mark.parametrize("at", [None, T0 + 5000, T0 + 12_000])
def test_the_parts_always_add_up_to_the_total(at):
    configs = {
        **SOURCE_5S,
        "m": {"operator": {"type": "interval_join", "lower_ms": 0, "upper_ms": 1000}},
        "o": {"operator": {"type": "window", "size_ms": 10_000, "slide_ms": 5000}},
    }
    for rec in (chain(configs, stop_at=3, mid_hold=1500, idle_ms=True), chain({}, behind=-50)):
        budget = budget_of(rec, at)
        assert sum(p.ms for p in budget.parts) == budget.total_ms
        assert {p.cause for p in budget.parts} <= set(CAUSES)


def test_the_config_travels_with_the_recording_and_a_bad_one_is_named(tmp_path: Path):
    rec = chain({**SOURCE_5S, "o": {"operator": {"type": "window", "size_ms": 60_000}}})
    write_recording(rec, tmp_path / "r.json")
    again = read_recording(tmp_path / "r.json")
    assert again.config == rec.config and to_json(again) == to_json(rec)
    body = to_json(rec)
    for config, message in [
        ({"vertices": {"s": {"generator": {"out_of_ordernes_ms": 5}}}}, "config.vertices.s: field generator"),
        ({"vertices": {"zz": {}}}, "config.vertices.zz: vertex 'zz' is not in the plan"),
        ({"clock": "sundial"}, "config.clock: 'sundial' is not one of wall, event"),
        ({"clocks": "wall"}, "config: unknown field 'clocks'"),
        ([], "config: expected an object"),
    ]:
        (tmp_path / "bad.json").write_text(json.dumps({**body, "config": config}))
        with pytest.raises(JobFormatError, match=f"^bad.json: {message}"):
            read_recording(tmp_path / "bad.json")


def test_the_built_in_job_names_the_cause_a_person_would():
    """The silent-split incident (its story: payments subtask 1 lags a minute until 300 s, then the
    orders split orders-5 stops and holds everything). A person names the lagging payments subtask
    as the backlog first, then the silent split as the stall; the bound and the 1-minute window
    are the rest."""
    rec = read_recording(BUILT_IN)
    lb = LagBudget(rec)
    first = rec.times()[0]
    before, after = lb.at(None, first + 200_000), lb.at(None, rec.times()[-1])
    for budget in (before, after):
        assert budget.vertex == "Window: revenue -> Sink: warehouse"
        assert sum(p.ms for p in budget.parts) == budget.total_ms
    top = max(before.parts, key=lambda p: p.ms)
    assert (top.cause, top.where) == ("backlog", "Source: payments subtask 1")
    # At 200 s the window's watermark sits 1 ms past a minute's end: that window has just fired.
    assert parts(before) == {"window": 1, "out-of-orderness": 2001, "backlog": 57_999}
    top = max(after.parts, key=lambda p: p.ms)
    assert (top.cause, top.where) == ("stall", "Source: orders subtask 2 split orders-5")
    assert parts(after) == {"window": 30_001, "out-of-orderness": 5001, "stall": 304_999}
    assert "unexplained" not in parts(after)


def test_blame_and_the_budget_take_a_sources_own_idleness_timeout():
    """Two sources into one output: `quiet` stops at sample 5 (its `sourceIdleTime` growing), `busy`
    runs 1 s behind. The recording names no idleness; `quiet`'s config gives 3 s: past 3 s + 2 ×
    200 ms without a record it is idle, so blame walks to `busy` instead, and the budget with it."""
    quiet, busy = Vertex("q", "quiet", 1), Vertex("b", "busy", 1)
    rec = JobRecording("j", (quiet, busy, OUT), (Edge("q", "o", "HASH"), Edge("b", "o", "HASH")))
    for i in range(20):
        t = T0 + i * 1000
        rec.add(("q", 0, "currentOutputWatermark", None), t, T0 + min(i, 5) * 1000)
        rec.add(("q", 0, "sourceIdleTime", None), t, max(0, i - 5) * 1000)
        rec.add(("b", 0, "currentOutputWatermark", None), t, t - 1000)
        rec.add(("o", 0, "currentOutputWatermark", None), t, min(T0 + min(i, 5) * 1000, t - 1000))
    assert LagBudget(rec).at(OUT, None).blame.chain[-1].vertex == "quiet"  # no timeout: it holds
    rec.config = JobConfig("wall", {"q": parse_config({"generator": {"idle_timeout_ms": 3000}}, "q")})
    waiting, idle = LagBudget(rec).at(OUT, T0 + 8000), LagBudget(rec).at(OUT, T0 + 19_000)
    assert waiting.blame.chain[-1].vertex == "quiet"  # 3 s quiet: not yet 3.4 s
    assert parts(waiting)["idle timeout"] == 2999  # 3 s quiet, less its 0 ms bound's 1 ms
    assert idle.blame.chain[-1].vertex == "busy"
    assert "idle timeout" not in parts(idle)


def test_without_a_config_the_window_is_read_from_the_assigner_flink_names_it_by():
    # Flink 2.3.0 describes a window operator as Window(<assigner as it prints itself>, <trigger>, ...).
    named = Vertex("o", "Window(SlidingEventTimeWindows(60000, 10000), EventTimeTrigger, Sum) -> Sink: x", 1)
    assert window_in_name(named) == WindowConfig(size_ms=60_000, slide_ms=10_000)
    assert window_in_name(
        Vertex("o", "x", 1, ("Window(TumblingEventTimeWindows(1000), EventTimeTrigger)",))
    ) == (WindowConfig(size_ms=1000))
    assert window_in_name(Vertex("o", "Window(EventTimeSessionWindows(5000), EventTimeTrigger)", 1)) is None
    rec = chain(SOURCE_5S)
    rec.vertices = (
        SRC,
        MID,
        Vertex("o", "Window(TumblingEventTimeWindows(60000), EventTimeTrigger, Sum)", 1),
    )
    budget = LagBudget(rec).at(rec.vertex("o"), None)
    assert parts(budget)["window"] == 12_000  # as with the config (test_a_tumbling_window_waits_for_its_end)
    assert "(its name in the plan)" in next(p.why for p in budget.parts if p.cause == "window")


def test_the_sql_incident_replayed_names_its_silent_partition(tmp_path: Path, capsys):
    """The built-in SQL incident (sql-silent-partition-holds-the-window: partition 2 of `clicks`
    falls quiet, no idle timeout) replayed by `wmviz sql replay` into a job recording: its sample
    times are the replay's processing times from 0, no wall clock, so the budget measures from the
    newest event time, and names what a person would, the quiet partition's stall."""
    from wmviz import cli

    sql = REPO / "tests" / "data" / "sql"
    out = tmp_path / "replayed.json"
    argv = [
        "sql",
        "replay",
        str(sql / "incident_silent_partition.sql"),
        str(sql / "incident_silent_partition.rows.jsonl"),
    ]
    assert cli.main([*argv, "--out", str(out)]) == 0
    capsys.readouterr()
    rec = read_recording(out)
    assert rec.config.clock is None
    budget = LagBudget(rec).at(None, None)
    assert budget.reference == "newest event time"
    assert parts(budget) == {"stall": budget.total_ms} and budget.total_ms == 23_500
    assert budget.parts[0].where == "TableSourceScan(clicks) [1] subtask 0 split clicks-2"
