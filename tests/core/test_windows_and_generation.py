"""Windows, generation and idleness (docs/rules.md, "Windows and watermark generators"): the
11-event example (the events of the incident late-data-allowed-lateness), generation, idleness and
resuming."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wmviz.core.operator_log import OutputWatermark, WindowOutput
from wmviz.core.simulate import simulate
from wmviz.core.types import Status, StatusInput, WatermarkInput
from wmviz.core.windows import assign_windows
from wmviz.trace.readers import read_trace

EVENTS = [1, 3, 2, 6, 4, 5, 7, 3, 9, 3, 12]


def write_trace(tmp_path: Path, config: dict, rows: list[dict]) -> Path:
    path = tmp_path / "trace.jsonl"
    path.write_text("\n".join([json.dumps({"config": config})] + [json.dumps(r) for r in rows]) + "\n")
    return path


def worked_example(tmp_path: Path):
    config = {
        "generator": {"out_of_orderness_ms": 2, "emit": "per-record"},
        "operator": {"type": "window", "size_ms": 5, "allowed_lateness_ms": 1, "aggregate": "list"},
    }
    rows = [{"kind": "record", "channel": 0, "event_ms": ts} for ts in EVENTS]
    return list(simulate(read_trace(write_trace(tmp_path, config, rows)), explain=True))


def test_worked_example_emits_flinks_watermark_column_max_seen_minus_ooo_minus_one(tmp_path):
    results = worked_example(tmp_path)
    after = [[o.watermark_ms for o in r.emit if isinstance(o, OutputWatermark)] for r in results]
    assert after == [[-2], [0], [], [3], [], [], [4], [], [6], [], [9]]


def test_worked_example_fires_drops_and_cleans_up_exactly_as_the_table_says(tmp_path):
    results = worked_example(tmp_path)
    firings = {
        i + 1: [
            (o.start_ms, o.end_ms, list(o.elements), o.late) for o in r.emit if isinstance(o, WindowOutput)
        ]
        for i, r in enumerate(results)
    }
    assert {k: v for k, v in firings.items() if v} == {
        7: [(0, 5, [1, 3, 2, 4], False)],
        8: [(0, 5, [1, 3, 2, 4, 3], True)],
        11: [(5, 10, [6, 5, 7, 9], False)],
    }
    dropped = {i + 1: [d.row.event_ms for d in r.dropped] for i, r in enumerate(results) if r.dropped}
    assert dropped == {10: [3]}
    # [0,5) is cleaned up when W reaches 5, on event 9; [5,10) fires on 9 but is cleaned only at 10.
    cleanups = {
        i + 1: [f.timer.namespace for f in r.timers_fired if "window_cleanup" in f.purposes]
        for i, r in enumerate(results)
    }
    assert {k: v for k, v in cleanups.items() if v} == {9: [(0, 5)]}


def test_the_simplified_convention_would_fire_early_but_wmviz_uses_flinks_value(tmp_path):
    results = worked_example(tmp_path)
    # With maxSeen − ooo the window [0,5) would fire after event 4 with [1, 3, 2]; Flink's does not.
    assert not any(isinstance(o, WindowOutput) for o in results[3].emit)


@pytest.mark.parametrize(
    ("ts", "size", "slide", "expected"),
    [
        (7, 5, None, [(5, 10)]),
        (-1, 5, None, [(-5, 0)]),
        (0, 5, None, [(0, 5)]),
        (7, 10, 5, [(5, 15), (0, 10)]),
        (-3, 10, 5, [(-5, 5), (-10, 0)]),
    ],
)
def test_window_assignment_uses_floor_modulo_and_lists_sliding_windows_latest_first(
    ts, size, slide, expected
):
    assert assign_windows(ts, size, slide) == expected


def idle_scenario(tmp_path: Path, clock_rows: list[int], interval_ms: int = 5000) -> list:
    config = {
        "generator": {
            "out_of_orderness_ms": 0,
            "emit": "per-record",
            "interval_ms": interval_ms,
            "idle_timeout_ms": 10000,
        }
    }
    rows = [{"kind": "record", "channel": 0, "event_ms": 4000, "proc_ms": 4000}]
    rows += [{"kind": "proctime", "proc_ms": p} for p in clock_rows]
    return list(simulate(read_trace(write_trace(tmp_path, config, rows))))


def idle_time(results) -> int:
    times = [p.time_ms for r in results for p in r.probes if StatusInput(0, Status.IDLE) in p.emitted]
    assert len(times) == 1, times
    return times[0]


def test_idleness_example_timeout_10s_interval_5s_goes_idle_at_25s_21s_after_the_last_record(tmp_path):
    results = idle_scenario(tmp_path, [30000])
    assert idle_time(results) == 25000
    assert [em.status for r in results for em in r.out if hasattr(em, "status")] == [Status.IDLE]
    # The probes at 5, 10, 15, 20 and 25 s ran: reset, start the countdown, and the strict `>`.
    assert [p.time_ms for p in results[1].probes] == [5000, 10000, 15000, 20000, 25000, 30000]
    assert results[1].probes[1].countdown_start_ms == 10000


def test_a_long_quiet_clock_jump_declares_idle_at_the_same_probe_as_stepping_probe_by_probe(tmp_path):
    stepped = idle_scenario(tmp_path, list(range(4200, 40001, 200)), interval_ms=200)
    jumped = idle_scenario(tmp_path, [10**9], interval_ms=200)
    assert idle_time(jumped) == idle_time(stepped)
    assert 4000 + 10000 + 200 < idle_time(stepped) < 4000 + 10000 + 3 * 200  # T + I .. T + 3I
    assert len(jumped[1].probes) < 20  # the quiet gap was not replayed probe by probe


def test_a_record_on_an_idle_generated_channel_announces_active_before_the_record(tmp_path):
    config = {
        "generator": {
            "out_of_orderness_ms": 0,
            "emit": "per-record",
            "interval_ms": 1000,
            "idle_timeout_ms": 1000,
        }
    }
    rows = [
        {"kind": "record", "channel": 0, "event_ms": 10, "proc_ms": 0},
        {"kind": "proctime", "proc_ms": 5000},
        {"kind": "record", "channel": 0, "event_ms": 20, "proc_ms": 5000},
    ]
    results = list(simulate(read_trace(write_trace(tmp_path, config, rows))))
    resumed = [vs.valve_input for vs in results[2].valve_steps]
    assert resumed == [StatusInput(0, Status.ACTIVE), WatermarkInput(0, 19)]


def test_periodic_emission_emits_only_on_probes_and_only_when_the_candidate_increased(tmp_path):
    config = {"generator": {"out_of_orderness_ms": 5, "emit": "periodic", "interval_ms": 100}}
    rows = [
        {"kind": "record", "channel": 0, "event_ms": 50, "proc_ms": 10},
        {"kind": "record", "channel": 0, "event_ms": 40, "proc_ms": 60},
        {"kind": "proctime", "proc_ms": 100},
        {"kind": "proctime", "proc_ms": 200},
    ]
    results = list(simulate(read_trace(write_trace(tmp_path, config, rows))))
    assert [r.out for r in results[:2]] == [(), ()]
    assert [vs.valve_input for vs in results[2].valve_steps] == [WatermarkInput(0, 44)]
    assert results[3].valve_steps == ()


def test_a_silent_generated_channel_holds_the_window_back_until_idleness_releases_it(tmp_path):
    config = {
        "channels": {"0": 2},
        "generator": {
            "out_of_orderness_ms": 0,
            "emit": "per-record",
            "interval_ms": 1000,
            "idle_timeout_ms": 3000,
        },
        "operator": {"type": "window", "size_ms": 10, "aggregate": "count"},
    }
    rows = [{"kind": "record", "channel": 0, "event_ms": t, "proc_ms": t * 100} for t in (1, 5, 12, 30)]
    rows.append({"kind": "proctime", "proc_ms": 20000})
    results = list(simulate(read_trace(write_trace(tmp_path, config, rows))))
    fired = [
        (i, o.start_ms, o.result)
        for i, r in enumerate(results)
        for o in r.emit
        if isinstance(o, WindowOutput)
    ]
    assert fired[0][0] == 4  # nothing fires until channel 1 is declared idle by the probes
    assert (fired[0][1], fired[0][2]) == (0, 2)
