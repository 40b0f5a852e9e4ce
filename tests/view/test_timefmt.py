"""The one time formatter (`wmviz.view.timefmt`): what a person reads for every time, on the page, in the
narration, in `explain --time` and in the report."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import REPO
from wmviz.cli import main
from wmviz.core.types import EPOCH_FROM_MS, MAX_MS, MIN_MS
from wmviz.trace.readers import read_trace
from wmviz.trace.timecells import parse_time_ms
from wmviz.view.figures_common import format_many
from wmviz.view.timefmt import TimeFormat, duration, is_epoch, trace_origin

KAFKA = REPO / "tests" / "data" / "kafka-rebalance.csv"
KAFKA_CONFIG = KAFKA.with_suffix(".json")
T0 = 1_795_514_715_000  # 2026-11-24 10:05:15 UTC


def test_epoch_values_read_as_iso_utc_with_milliseconds_small_values_as_plain_numbers():
    t = TimeFormat()
    assert t(T0) == "2026-11-24 10:05:15.000Z"
    assert t(T0 + 250) == "2026-11-24 10:05:15.250Z"
    assert t(10) == "10" and t(-3) == "-3" and t(EPOCH_FROM_MS - 1) == str(EPOCH_FROM_MS - 1)
    assert t(EPOCH_FROM_MS) == "2000-01-01 00:00:00.000Z"
    assert (t(MIN_MS), t(MAX_MS)) == ("MIN", "MAX")
    assert t.with_raw(T0) == "2026-11-24 10:05:15.000Z (1795514715000 ms)" and t.with_raw(10) == "10"


def test_a_time_zone_shows_the_local_clock_with_its_offset_and_daylight_saving():
    berlin = TimeFormat(zone="Europe/Berlin")
    assert berlin(T0) == "2026-11-24 11:05:15.000+01:00"  # winter time
    assert berlin(1_782_986_400_000) == "2026-07-02 12:00:00.000+02:00"  # summer time
    assert TimeFormat(zone="Asia/Kolkata")(T0) == "2026-11-24 15:35:15.000+05:30"
    with pytest.raises(ValueError, match="unknown time zone"):
        TimeFormat(zone="Mars/Olympus")
    with pytest.raises(ValueError, match="time mode"):
        TimeFormat("iso")


@settings(derandomize=True, max_examples=200)
@given(ms=st.integers(EPOCH_FROM_MS, 253_402_300_799_999), zone=st.sampled_from(["UTC", "Europe/Berlin",
       "America/St_Johns", "Asia/Kathmandu", "Australia/Lord_Howe"]))  # fmt: skip
def test_every_readable_instant_reads_back_as_the_same_millisecond(ms, zone):
    # A time copied from the page can be pasted into a trace or the what-if form.
    assert parse_time_ms(TimeFormat(zone=zone)(ms), sentinels=True) == ms


def test_relative_times_are_exact_offsets_from_the_origin():
    t = TimeFormat("relative", origin_ms=T0)
    assert [t(T0 + d) for d in (0, 250, 5_000, 605_000, 605_250, 7_205_000, -1_000)] == [
        "+0", "+250ms", "+5s", "+10m 5s", "+10m 5.250s", "+2h 0m 5s", "-1s",
    ]  # fmt: skip
    assert t(MAX_MS) == "MAX" and t(MIN_MS) == "MIN"
    assert [duration(v) for v in (0, 999, 1000, 60_000, 7_200_000, 90_061_000)] == [
        "0ms", "999ms", "1s", "1m", "2h", "1d 1h 1m 1s",
    ]  # fmt: skip


def test_raw_mode_shows_the_numbers_and_short_mode_leaves_out_the_origins_date():
    assert TimeFormat("ms")(T0) == "1795514715000"
    short = TimeFormat(origin_ms=T0 - 300_000, short=True)
    assert short(T0) == "10:05:15.000Z" and short.day == "2026-11-24"
    assert short(T0 + 86_400_000) == "2026-11-25 10:05:15.000Z"  # another day keeps its date
    assert short.token(T0) == "(10:05:15.000Z)" and short.token(25) == "25"


@pytest.mark.parametrize(
    "t",
    [TimeFormat(), TimeFormat("ms"), TimeFormat("relative", origin_ms=T0), TimeFormat(zone="Asia/Kolkata")],
)
def test_the_charts_vectorized_formatting_agrees_with_the_formatter(t):
    values = np.array([10, -5, EPOCH_FROM_MS - 1, EPOCH_FROM_MS, T0, T0 + 7, MAX_MS, MIN_MS], dtype=np.int64)
    assert format_many(values, t).tolist() == [t(int(v)) for v in values]


def test_axis_ticks_are_round_clock_times_durations_or_numbers():
    values, labels = TimeFormat().ticks(T0, T0 + 605_000)
    assert labels == ["10:06<br>2026-11-24", "10:08", "10:10", "10:12", "10:14"]
    assert all(v % 120_000 == 0 for v in values)
    _, labels = TimeFormat("relative", origin_ms=T0).ticks(T0, T0 + 605_000)
    assert labels == ["+0", "+2m", "+4m", "+6m", "+8m", "+10m"]
    assert TimeFormat().ticks(0, 25) == ([0, 5, 10, 15, 20, 25], ["0", "5", "10", "15", "20", "25"])
    values, labels = TimeFormat(zone="Asia/Kolkata").ticks(T0, T0 + 605_000)
    assert labels[1:] == ["15:38", "15:40", "15:42", "15:44"]  # round on the local clock


def test_the_origin_of_a_trace_is_its_first_finite_time():
    trace = read_trace(KAFKA, KAFKA_CONFIG)
    assert trace_origin(trace) == parse_time_ms("2026-11-24T09:59:55Z", sentinels=False)  # a watermark
    assert is_epoch(trace_origin(trace))


def test_explain_speaks_utc_by_default_and_relative_or_raw_on_request(capsys):
    args = ["explain", str(KAFKA), "--config", str(KAFKA_CONFIG), "--instance", "0", "--step", "159"]
    assert main(args) == 0
    utc = capsys.readouterr().out
    # One header line gives the date; the narration then reads clock times.
    header = [line for line in utc.splitlines() if line.startswith("# ")]
    assert "# times are UTC on 2026-11-24 unless dated" in header
    assert "IDLE@2: ch2 ACTIVE → IDLE" in utc and "it held the minimum 10:05:15.000Z" in utc
    assert "1795514715000" not in utc.split("dropped")[0]
    assert main([*args, "--time", "ms"]) == 0
    assert "1795514715000" in capsys.readouterr().out
    assert main([*args, "--time", "relative"]) == 0
    relative = capsys.readouterr().out
    assert "it held the minimum +5m 20s" in relative and "2026-" not in relative
    # Demo values stay the numbers the built-in incidents write, whatever the mode.
    assert main(["explain", str(REPO / "sample_data" / "flink-38477-zero-output.jsonl"), "--step", "7"]) == 0
    assert "emit WMAX" in capsys.readouterr().out
