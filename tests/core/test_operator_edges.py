"""Regressions for edge cases found in review, each pinned by the input that exposed it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wmviz.core.operator_log import JoinOutput, WindowOutput
from wmviz.core.simulate import simulate
from wmviz.core.story import explain_line
from wmviz.core.types import MAX_MS, EmittedWatermark, Status, StatusInput, WatermarkInput
from wmviz.trace.errors import TraceValidationError
from wmviz.trace.readers import read_trace


def run(tmp_path: Path, config: dict, rows: list[dict], explain: bool = False):
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join([json.dumps({"config": config})] + [json.dumps(r) for r in rows]) + "\n")
    return list(simulate(read_trace(path), explain=explain))


def rec(ev=None, proc=None, ch=0, inp=None, key=None, value=None):
    row = {"kind": "record", "channel": ch}
    for name, v in (("event_ms", ev), ("proc_ms", proc), ("input", inp), ("key", key), ("value", value)):
        if v is not None:
            row[name] = v
    return row


def test_periodic_probes_start_at_one_interval_never_at_time_zero(tmp_path):
    config = {
        "generator": {"out_of_orderness_ms": 0, "emit": "periodic", "interval_ms": 200},
        "operator": {"type": "window", "size_ms": 100},
    }
    results = run(tmp_path, config, [rec(1000, 0), rec(500, 100)])
    assert not results[1].dropped  # no probe at 0 emitted W999 before it


def test_a_long_quiet_jump_after_fresh_activity_goes_idle_when_stepping_would(tmp_path):
    config = {
        "generator": {
            "out_of_orderness_ms": 0,
            "emit": "per-record",
            "interval_ms": 200,
            "idle_timeout_ms": 1000,
        }
    }
    head = [{"kind": "proctime", "proc_ms": 1}, {"kind": "proctime", "proc_ms": 250}, rec(100, 300)]

    def idle_at(tail):
        results = run(tmp_path, config, head + tail)
        return [p.time_ms for r in results for p in r.probes if StatusInput(0, Status.IDLE) in p.emitted]

    stepped = idle_at([{"kind": "proctime", "proc_ms": p} for p in range(400, 3001, 100)])
    assert stepped == [1800]
    assert idle_at([{"kind": "proctime", "proc_ms": 1_000_000}]) == stepped


@pytest.mark.parametrize(
    "operator",
    [
        {"type": "interval_join", "join": "inner", "lower_ms": 0, "upper_ms": 5, "join_time": "proctime"},
        {
            "type": "interval_join",
            "join": "left",
            "lower_ms": 0,
            "upper_ms": 5,
            "early_fire_delay_ms": 3,
            "time_mode": "proctime",
        },
    ],
    ids=["processing-time-join", "cross-domain-early-fire"],
)
def test_records_of_a_join_that_reads_the_clock_must_carry_proc_ms(tmp_path, operator):
    with pytest.raises(TraceValidationError, match="column proc_ms"):
        run(tmp_path, {"operator": operator}, [rec(10, inp="L", key="k"), rec(11, proc=1, inp="R", key="k")])


def test_a_generator_needs_event_ms_even_on_a_processing_time_join(tmp_path):
    config = {
        "generator": {"out_of_orderness_ms": 0},
        "operator": {"type": "interval_join", "lower_ms": 0, "upper_ms": 5, "join_time": "proctime"},
    }
    with pytest.raises(TraceValidationError, match="column event_ms"):
        run(tmp_path, config, [rec(proc=1, inp="L", key="k")])


def test_flip27_released_resume_stays_idle_until_a_higher_watermark_and_then_sends_active_with_it(tmp_path):
    config = {
        "generator": {
            "out_of_orderness_ms": 0,
            "emit": "per-record",
            "interval_ms": 1000,
            "idle_timeout_ms": 1000,
            "resume": "flip27-released",
        }
    }
    rows = [rec(100, 0), {"kind": "proctime", "proc_ms": 5000}, rec(50, 5000), rec(200, 5000)]
    results = run(tmp_path, config, rows)
    assert [vs.valve_input for vs in results[2].valve_steps] == []  # behind 99: still idle downstream
    assert [vs.valve_input for vs in results[3].valve_steps] == [
        StatusInput(0, Status.ACTIVE),
        WatermarkInput(0, 199),
    ]


def test_at_equal_processing_time_timers_fire_before_the_record_and_probes_after_it(tmp_path):
    config = {
        "generator": {"out_of_orderness_ms": 0, "emit": "periodic", "interval_ms": 10},
        "operator": {
            "type": "interval_join",
            "join": "left",
            "lower_ms": -5,
            "upper_ms": 5,
            "early_fire_delay_ms": 17,
            "time_mode": "proctime",
        },
    }
    rows = [
        rec(10, 3, inp="L", key="k", value="l10"),
        rec(100, 4, inp="R", key="k", value="r100"),
        rec(50, 20, inp="L", key="k", value="l50"),
    ]
    results = run(tmp_path, config, rows)
    last = results[2]
    causes = [o.cause.value for o in last.emit if isinstance(o, JoinOutput)]
    assert causes[0] == "early_fire"  # the processing-time timer at 20 ran before the row at 20
    assert {p.time_ms for p in last.probes} == {10}  # L and R probe at 10; the probe at 20 waits


def test_a_record_in_a_gap_between_sliding_windows_is_reported_as_a_gap_not_as_late(tmp_path):
    config = {"operator": {"type": "window", "size_ms": 2, "slide_ms": 5}}
    results = run(tmp_path, config, [rec(3)])
    assert "gap between sliding windows" in results[0].dropped[0].reason


def test_narration_of_a_cached_join_row_with_a_generator_never_claims_there_is_no_generator(tmp_path):
    config = {
        "generator": {"out_of_orderness_ms": 0},
        "operator": {"type": "interval_join", "join": "inner", "lower_ms": -5, "upper_ms": 5},
    }
    results = run(
        tmp_path,
        config,
        [rec(10, inp="L", key="k", value="a"), rec(8, inp="L", key="k", value="b")],
        explain=True,
    )
    line = explain_line(results[1])
    assert "without a generator" not in line
    assert "b@8 is cached on L" in line and "generator ch0: maxSeen 10, candidate 9" in line


def test_a_fired_row_that_expires_unmatched_is_narrated_as_final(tmp_path):
    config = {
        "channels": {"L": 1, "R": 1},
        "operator": {
            "type": "interval_join",
            "join": "left",
            "lower_ms": -5,
            "upper_ms": 9,
            "early_fire_delay_ms": 6,
        },
    }
    rows = [
        rec(10, inp="L", key="k", value="a"),
        {"kind": "watermark", "input": "L", "channel": 0, "watermark_ms": 16},
        {"kind": "watermark", "input": "R", "channel": 0, "watermark_ms": 16},
    ]
    line = explain_line(run(tmp_path, config, rows, explain=True)[2])
    assert "+I(a@10, null), speculative" in line and "a@10 expired unmatched" in line


def test_caching_a_row_at_time_zero_or_below_warns_about_the_cleanup_quirk(tmp_path):
    config = {"operator": {"type": "interval_join", "join": "left", "lower_ms": -5, "upper_ms": 5}}
    results = run(tmp_path, config, [rec(-3, inp="L", key="k", value="a")])
    assert any("C4 warning" in n and "may later vanish without padding" in n for n in results[0].notes)


def test_under_flip_38477_a_finished_input_stays_finished_in_the_two_input_combination(tmp_path):
    config = {
        "profile": "flip-38477",
        "channels": {"L": 1, "R": 1},
        "operator": {"type": "interval_join", "lower_ms": 0, "upper_ms": 5},
    }
    wm = lambda side, v: {"kind": "watermark", "input": side, "channel": 0, "watermark_ms": v}  # noqa: E731
    st = lambda side, s: {"kind": "status", "input": side, "channel": 0, "status": s}  # noqa: E731
    results = run(
        tmp_path, config, [wm("L", 7), wm("R", 3), st("L", "FINISHED"), st("R", "FINISHED"), wm("L", "MAX")]
    )
    combined = [e.watermark_ms for r in results for e in r.out if isinstance(e, EmittedWatermark)]
    assert MAX_MS not in combined  # R finished at 3; only when both reach MAX may it jump


def test_window_firing_narration_names_the_window_contents(tmp_path):
    config = {"operator": {"type": "window", "size_ms": 5}}
    rows = [rec(1), {"kind": "watermark", "channel": 0, "watermark_ms": 10}]
    results = run(tmp_path, config, rows, explain=True)
    assert any(isinstance(o, WindowOutput) for o in results[1].emit)
    assert "window [0, 5) fires with [1]" in explain_line(results[1])
