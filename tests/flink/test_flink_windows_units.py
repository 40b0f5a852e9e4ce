"""Unit checks of the rules the window differential found: Java long arithmetic, Flink's errors and
config checks, the heap timer order and the "fires 2nd of 3" data (no JVM needed)."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tools.flink.valve import jar
from wmviz.cli import commands as cli
from wmviz.core.java.hashorder import JavaHashTable, long_to_int_with_bit_mixing
from wmviz.core.java.longs import java_rem, wrap_long
from wmviz.core.pipeline import InstancePipeline
from wmviz.core.scenario import Kind, ScenarioConfig, TraceRow, WindowConfig
from wmviz.core.story import explain_line
from wmviz.core.timers import TiePosition, TimeDomain, TimerService, ordinal, tie_positions
from wmviz.core.types import MAX_MS, MIN_MS, Profile
from wmviz.core.windows import (
    AssignerError,
    ScenarioError,
    assign_windows,
    assigner_offset,
    cleanup_time,
    max_timestamp,
    offset_config_problem,
    window_start,
    window_start_long,
)
from wmviz.sql import jars
from wmviz.trace.config import parse_config
from wmviz.trace.errors import TraceValidationError
from wmviz.view.operator_model import panes_heading, panes_table

MAX, MIN = MAX_MS, MIN_MS


def test_long_arithmetic_wraps_and_java_remainder_keeps_the_dividends_sign():
    assert wrap_long(MAX + 1) == MIN and wrap_long(MIN - 1) == MAX and wrap_long(5) == 5
    assert java_rem(-7, 5) == -2 and java_rem(7, 5) == 2 and (-7) % 5 == 3


@settings(derandomize=True, max_examples=300, deadline=None)
@given(
    ts=st.integers(-(1 << 63), (1 << 63) - 1)
    | st.integers(-(1 << 62), 1 << 62)
    | st.sampled_from([-(1 << 61), (1 << 61) - 1]),
    offset=st.integers(-(1 << 62), 1 << 62) | st.just(0),
    size=st.integers(1, (1 << 63) - 1) | st.integers(1, 10**6) | st.sampled_from([(1 << 61) - 1, 1 << 61]),
)
def test_the_quick_window_start_equals_javas_step_by_step_start(ts, offset, size):
    assert window_start(ts, offset, size) == window_start_long(ts, offset, size)


def test_windows_at_the_ends_of_long_wrap_as_in_java():
    assert assign_windows(MAX - 1, 5, None) == [(MAX - 2, MIN + 2)]
    assert max_timestamp((MAX - 2, MIN + 2)) == MIN + 1
    # MIN + 1: Java's remainder is negative, the start steps below MIN and wraps to the top.
    assert assign_windows(MIN + 1, 5, None) == [(MAX - 1, MIN + 3)]
    # The cleanup time saturates at MAX instead of overflowing.
    assert cleanup_time((MAX - 7, MAX - 2), 10) == MAX
    assert cleanup_time((0, 5), 3) == 7


def test_flinks_assigner_failures_are_errors_not_silent_results():
    with pytest.raises(AssignerError, match="no timestamp"):
        assign_windows(MIN, 5, None)
    # slide == size is still the sliding assigner: next to MIN its loop wraps and never ends.
    with pytest.raises(AssignerError, match="never finishes"):
        assign_windows(MIN + 5, 5, 5)
    assert assign_windows(MIN + 5, 5, None) == [(MIN + 3, MIN + 8)]


def test_a_sliding_window_with_more_than_ten_million_windows_per_element_is_a_config_error(monkeypatch):
    ok = {"operator": {"type": "window", "size_ms": 10_000_000, "slide_ms": 1}}
    # Flink builds this job; what stops it in wmviz by default is wmviz's own budget, named as such.
    with pytest.raises(TraceValidationError, match="WMVIZ_MAX_WINDOWS_PER_RECORD"):
        parse_config(ok, "c.json")
    monkeypatch.setenv("WMVIZ_MAX_WINDOWS_PER_RECORD", "10000000")
    assert parse_config(ok, "c.json").operator.slide_ms == 1
    bad = {"operator": {"type": "window", "size_ms": 20_000_000, "slide_ms": 1}}
    with pytest.raises(TraceValidationError, match=r"operator\.slide_ms.*size / slide = 20,000,000"):
        parse_config(bad, "c.json")


def test_a_record_at_long_min_in_a_window_job_exits_2_naming_row_and_column(tmp_path, capsys):
    path = tmp_path / "t.jsonl"
    lines = [{"config": {"operator": {"type": "window", "size_ms": 5}}}]
    lines += [
        {"kind": "record", "channel": 0, "event_ms": 1},
        {"kind": "record", "channel": 0, "event_ms": MIN},
    ]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    code = cli.main(["transcript", str(path)])
    err = capsys.readouterr().err
    assert code == 2
    assert "t.jsonl:3: column event_ms" in err and "no timestamp" in err


def _fire_all(service: TimerService, at: int) -> list[str]:
    order = []
    while (fired := service.pop_due(TimeDomain.EVENT, at)) is not None:
        order.append(fired.timer.key)
    return order


def test_equal_timers_fire_in_heap_order_not_by_key():
    service = TimerService()
    for key in ("x", "y", "z"):
        service.register(TimeDomain.EVENT, 4, key, "window_end", (0, 5))
    assert [f.timer.key for f in service.pending()] == ["x", "z", "y"]
    assert _fire_all(service, 4) == ["x", "z", "y"]
    service = TimerService()
    for key in ("b", "a"):
        service.register(TimeDomain.EVENT, 4, key, "window_end", (0, 5))
    assert _fire_all(service, 4) == ["b", "a"]


def test_a_deleted_timer_leaves_the_heap_as_flink_does_and_duplicates_are_one_timer():
    service = TimerService()
    for key in ("a", "b", "c", "d"):
        service.register(TimeDomain.EVENT, 10, key, "p")
    again = service.register(TimeDomain.EVENT, 10, "a", "q")
    assert not again.new and service.pending()[0].purposes == ("p", "q")
    assert service.delete(TimeDomain.EVENT, 10, "a") and not service.delete(TimeDomain.EVENT, 10, "a")
    # Removing the head moves the last element (d) to the top, then sifts it down: d stays.
    assert _fire_all(service, 10) == ["d", "c", "b"]


def test_tie_positions_say_which_of_several_equal_timers_fires_when():
    service = TimerService()
    for key in ("x", "y", "z"):
        service.register(TimeDomain.EVENT, 5000, key, "window_end", (1000, 5001))
    # A later timer changes the heap's shape, and with it the order of the three ties (x, y, z
    # now; x, z, y without it): the order is the heap's, so it is computed, never sorted.
    service.register(TimeDomain.EVENT, 7000, "x", "window_cleanup", (1000, 5001))
    service.register(TimeDomain.PROCESSING, 5000, "x", "cleanup")
    positions = tie_positions(service.pending())
    by_key = {(t.key, t.domain, t.timestamp_ms): p for t, p in positions.items()}
    assert by_key[("y", TimeDomain.EVENT, 5000)] == TiePosition(2, 3, 5000)
    assert by_key[("y", TimeDomain.EVENT, 5000)].describe() == "fires 2nd of 3 at 5000"
    assert by_key[("z", TimeDomain.EVENT, 5000)].describe() == "fires 3rd of 3 at 5000"
    assert by_key[("x", TimeDomain.EVENT, 7000)].describe() == "fires at 7000"
    assert by_key[("x", TimeDomain.PROCESSING, 5000)].describe() == "fires at 5000"
    assert _fire_all(service, 7000) == ["x", "y", "z", "x"]
    assert [ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 22, 101, 111)] == [
        "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "101st", "111th"
    ]  # fmt: skip


def test_pending_is_cached_until_the_heap_changes_and_not_pickled():
    import pickle

    service = TimerService()
    service.register(TimeDomain.EVENT, 1, "a", "p")
    first = service.pending()
    assert service.pending() is first
    service.register(TimeDomain.EVENT, 1, "b", "p")
    assert service.pending() is not first and len(service.pending()) == 2
    copy = pickle.loads(pickle.dumps(service))
    assert copy.state() == service.state() and copy.pending() == service.pending()


def test_one_wheel_download_brings_flink_dist_and_both_table_jars(tmp_path, monkeypatch):
    """The download path, with pip replaced by a fake wheel (no network)."""
    monkeypatch.setattr(jars, "cache_dir", lambda: tmp_path / "cache")  # where jar.py's helpers live
    monkeypatch.delenv(jar.JAR_ENV, raising=False)
    calls = []

    def fake_pip(cmd, **kwargs):
        calls.append(cmd)
        target = Path(cmd[cmd.index("-d") + 1])
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as wheel:
            for name in (jar.JAR_NAME, *jar.SQL_JAR_NAMES):
                wheel.writestr(f"pyflink/lib/{name}", f"jar {name}")
        (target / "apache_flink_libraries-2.3.0-py2.py3-none-any.whl").write_bytes(buffer.getvalue())

        class Done:
            returncode, stdout, stderr = 0, "", ""

        return Done()

    monkeypatch.setattr(jars.subprocess, "run", fake_pip)  # the pip that wmviz.sql.jars runs
    assert jar.table_jar_paths(download=False) is None
    dist = jar.flink_jar_path(download=True)
    assert dist is not None and dist.read_text() == f"jar {jar.JAR_NAME}"
    tables = jar.table_jar_paths(download=True)
    assert tables is not None and [p.read_text() for p in tables] == [f"jar {n}" for n in jar.TABLE_JAR_NAMES]
    assert len(calls) == 1, "flink-dist and the table jars come from one download"
    assert not list((tmp_path / "cache").glob("download-*")) and not list((tmp_path / "cache").glob("*.part"))


# --- session windows and offsets ------------------------------------------------------------------


def test_time_window_hashes_and_hash_set_order_are_the_jdks():
    """Values Flink 2.3.0's `TimeWindow.hashCode` and a JDK 17 `HashSet<TimeWindow>` gave (40 windows
    grow the table to 64 buckets): the order that decides merged sessions' element order."""
    hashes = {(0, 5): -1095023140, (5, 10): 887756089, (0, 15): 887756089, (MAX - 1, MIN + 3): 269157861}
    for (start, end), expected in hashes.items():
        assert long_to_int_with_bit_mixing(wrap_long(start + end)) == expected
    table: JavaHashTable[tuple[int, int]] = JavaHashTable()
    for i in range(40):
        table.add((i * 7 - 50, i * 7 - 45))
    java = "202 48 41 -22 97 13 90 167 125 62 174 209 -15 146 20 181 83 34 132 188 223 -36 6 160 -1 69 27 216"
    java += " -8 195 111 104 139 76 -43 -29 55 118 -50 153"
    assert [w[0] for w in table] == [int(x) for x in java.split()]


def test_tumbling_and_sliding_offsets_shift_window_starts_as_flinks_assigners_do():
    assert assign_windows(1, 5, None, assigner_offset(5, None, 2)) == [(-3, 2)]
    assert assign_windows(3, 5, 2, assigner_offset(5, 2, -1)) == [(3, 8), (1, 6), (-1, 4)]
    assert assign_windows(3, 5, 2) == [(2, 7), (0, 5)]
    # Tumbling uses (offset % size): for Long.MIN_VALUE, -3 with size 5 (Java's remainder).
    assert assigner_offset(5, None, MIN) == -3 and assigner_offset(5, 2, MIN) == MIN
    assert assign_windows(1, 5, None, assigner_offset(5, None, MIN)) == [(-3, 2)]
    assert offset_config_problem(5, None, MIN) is None and offset_config_problem(5, None, -5) is not None


def _session_pipeline(lateness: int) -> InstancePipeline:
    operator = WindowConfig(session_gap_ms=5, allowed_lateness_ms=lateness)
    config = ScenarioConfig(channels={"0": 1}, operator=operator)
    return InstancePipeline("0", config, Profile.FLINK_1X_2X, {"0": 1}, {("0", 0)})


def _rows(*cells: tuple[str, int]) -> list[TraceRow]:
    rows = []
    for i, (what, at) in enumerate(cells, start=1):
        if what == "W":
            rows.append(TraceRow(i, Kind.WATERMARK, channel=0, watermark_ms=at))
        else:
            rows.append(TraceRow(i, Kind.RECORD, channel=0, event_ms=at, key="a", value=what))
    return rows


def test_a_late_record_bridging_a_fired_session_is_told_and_the_panel_shows_the_merged_session():
    pipeline = _session_pipeline(lateness=10)
    rows = _rows(("x", 0), ("y", 10), ("W", 20), ("z", 5))
    results = [pipeline.process(i, row, explain=True) for i, row in enumerate(rows)]
    line = explain_line(results[-1])
    assert "session [5, 15) of key a grows: the record's window [5, 10) touches session [10, 15)" in line
    assert "already at its max timestamp 14 or past it, so it fires again at once (late)" in line
    assert "window [5, 15) fires again for a late element with ['y', 'z']" in line
    assert panes_heading(pipeline) == "Live sessions now"
    panes = panes_table(pipeline)
    assert panes is not None and panes.to_dict("records") == [
        {
            "key": "a",
            "window": "[5, 15)",
            "session": "merged 1 time",
            "contents": '"y", "z"',
            "records": 2,
            "fires when watermark ≥": "14",
            "cleaned when watermark ≥": "24",
            "state": "fired, kept for late data",
        }
    ]


def test_a_merge_into_a_session_whose_cleanup_was_capped_stops_the_run_naming_flinks_failure():
    pipeline = _session_pipeline(lateness=10)
    rows = _rows(("x", MAX - 8), ("W", MAX - 2), ("y", MAX - 12))
    for i, row in enumerate(rows[:2]):
        pipeline.process(i, row, explain=True)
    with pytest.raises(ScenarioError, match="UnsupportedOperationException") as failure:
        pipeline.process(2, rows[2], explain=True)
    assert failure.value.column == "event_ms" and "wraps past Long.MAX_VALUE" in failure.value.reason
