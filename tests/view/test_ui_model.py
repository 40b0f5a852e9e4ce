"""The app's pure parts: the URL round trip, the step cursor, the panel tables and the run cache."""

from __future__ import annotations

import random

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import REPO
from wmviz.core.types import MAX_MS, MIN_MS, Profile
from wmviz.store.runs import RunRequest, run_timeline
from wmviz.timeline.cursor import InstanceCursor
from wmviz.timeline.local import build_timeline_local
from wmviz.timeline.store import Timeline
from wmviz.trace.readers import read_trace
from wmviz.view import model
from wmviz.view import operator_model as om
from wmviz.view.timefmt import TimeFormat
from wmviz.view.url import ViewParams, clamp_step, parse_view, view_query

SAMPLES = REPO / "sample_data"
SCENARIOS = ["flink-38477-zero-output", "early-fire-left-join"]


def timeline_of(tmp_path, name: str, profile: Profile | None = None, keyframe_every: int = 3) -> Timeline:
    path = next(p for p in SAMPLES.iterdir() if p.stem == name and p.suffix != ".json" and p.suffix != ".md")
    config = path.with_suffix(".json")
    trace = read_trace(path, config if config.is_file() else None)
    out = tmp_path / f"tl-{name}-{profile}"
    build_timeline_local(trace, out, profile, keyframe_every=keyframe_every)
    return Timeline(out)


# --- URL -------------------------------------------------------------------------------------------


@settings(derandomize=True, max_examples=200)
@given(
    scenario=st.sampled_from(SCENARIOS),
    profile=st.sampled_from([None, *Profile]),
    engine=st.sampled_from(["spark", "local"]),
    instance=st.one_of(st.none(), st.text(min_size=1, max_size=8)),
    step=st.integers(0, 10**7),
)
def test_a_view_survives_the_round_trip_through_its_query_parameters(
    scenario, profile, engine, instance, step
):
    view = ViewParams(scenario, profile, engine, instance, step)
    assert parse_view(view_query(view), SCENARIOS, SCENARIOS[0]) == view


def test_the_query_always_carries_the_step_so_a_copied_link_lands_on_it():
    assert view_query(ViewParams("flink-38477-zero-output"))["step"] == "0"


@pytest.mark.parametrize(
    ("query", "note"),
    [
        ({"scenario": "nope"}, "unknown scenario 'nope'"),
        ({"profile": "flink-0.9"}, "unknown profile 'flink-0.9'"),
        ({"engine": "flink"}, "unknown engine 'flink'"),
        ({"step": "seven"}, "step 'seven' is not a number"),
        ({"step": "-3"}, "step -3 is negative"),
    ],
)
def test_a_malformed_link_falls_back_to_the_default_and_says_why(query, note):
    view = parse_view(query, SCENARIOS, SCENARIOS[0])
    assert view.scenario in SCENARIOS and view.step >= 0
    assert any(note in n for n in view.notes), view.notes


def test_a_step_past_the_end_is_clamped_to_the_last_step_with_a_note():
    assert clamp_step(12, 8) == (7, "step 12 is past the last step; showing step 7")
    assert clamp_step(3, 8) == (3, None)


# --- the cursor ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", SCENARIOS)
def test_the_cursor_rebuilds_the_same_state_as_the_timeline_at_every_step_in_any_order(tmp_path, name):
    timeline = timeline_of(tmp_path, name)
    cursor = InstanceCursor(timeline, "0")
    steps = list(range(-1, cursor.count))
    random.Random(3).shuffle(steps)
    for step in steps + sorted(steps):  # random jumps, then playing forward from the cache
        assert cursor.state_at(step).pipeline.snapshot() == timeline.state_at("0", step).pipeline.snapshot()


def test_the_cursor_replays_one_row_per_step_when_playing_forward(tmp_path):
    cursor = InstanceCursor(timeline_of(tmp_path, "flink-38477-zero-output", keyframe_every=1000), "0")
    cursor.state_at(2)
    assert cursor.state_at(3).replayed == 1


def test_the_cursor_finds_each_kind_of_event_and_the_neighbours_of_a_step(tmp_path):
    cursor = InstanceCursor(timeline_of(tmp_path, "flink-38477-zero-output"), "0")
    assert list(cursor.events["output watermark"]) == [3, 4, 5, 6, 7]
    assert list(cursor.events["status change"]) == [6, 7]
    assert cursor.next_event("output watermark", 4) == 5
    assert cursor.previous_event("output watermark", 3) is None
    assert cursor.next_event("status change", 7) is None
    early = InstanceCursor(timeline_of(tmp_path, "early-fire-left-join"), "0")
    assert list(early.events["retraction"]) == [7]
    assert 6 in early.events["timer firing"]


def test_a_finished_channel_is_remembered_from_the_step_its_status_arrived(tmp_path):
    cursor = InstanceCursor(timeline_of(tmp_path, "flink-38477-zero-output"), "0")
    assert cursor.finished_by(1) == set()
    assert cursor.finished_by(2) == {("0", 2)}
    assert cursor.finished_by(7) == {("0", 2), ("0", 3)}


# --- panel tables ----------------------------------------------------------------------------------


def test_the_channel_table_shows_epoch_watermarks_as_utc_times_and_the_raw_number_beside_them(tmp_path):
    cursor = InstanceCursor(timeline_of(tmp_path, "idle-partition-pins-watermark"), "0")
    t = TimeFormat(origin_ms=model.trace_times(cursor.steps))
    (view,) = model.valve_views(cursor, cursor.state_at(1).pipeline, 1, Profile.FLINK_1X_2X, t)
    assert list(view.channels["watermark"]) == ["2026-11-21 10:00:00.000Z", "2026-11-21 09:59:58.000Z"]
    assert list(view.channels["raw (ms)"]) == ["1795255200000", "1795255198000"]
    # Small demo values need no second column: the readable text is the number.
    small = InstanceCursor(timeline_of(tmp_path, "flink-38477-zero-output"), "0")
    (view,) = model.valve_views(small, small.state_at(1).pipeline, 1, Profile.FLINK_1X_2X)
    assert "raw (ms)" not in view.channels and list(view.channels["watermark"]) == ["10", "12", "MIN", "MIN"]


def test_an_output_card_shows_the_clock_time_with_the_date_in_its_label_and_the_raw_number_on_hover(
    tmp_path,
):
    cursor = InstanceCursor(timeline_of(tmp_path, "idle-partition-pins-watermark"), "0")
    pipeline = cursor.state_at(1).pipeline
    views = model.valve_views(cursor, pipeline, 1, Profile.FLINK_1X_2X)
    (card,) = model.output_cards(views, pipeline, None)
    assert (card.label, card.value, card.raw) == (
        "output watermark · ACTIVE · 2026-11-21",
        "09:59:58.000Z",
        "1795255198000",
    )
    (card,) = model.output_cards(views, pipeline, None, TimeFormat("relative", origin_ms=1_795_255_200_000))
    assert (card.label, card.value) == ("output watermark · ACTIVE", "-2s")


def test_changing_instance_keeps_the_moment_by_arrival_order():
    orders = np.array([0, 2, 5, 9])
    assert [model.step_for_order(orders, o) for o in (0, 1, 2, 4, 5, 100)] == [0, 0, 1, 1, 2, 3]
    assert model.step_for_order(np.array([3, 4]), 1) == 0  # before the instance's first row: step 0


def test_released_flink_shows_a_finished_channel_as_active_at_max_and_flip_38477_as_finished(tmp_path):
    for profile, expected in [(None, "ACTIVE (FINISHED, replayed as MAX)"), (Profile.FLIP_38477, "FINISHED")]:
        cursor = InstanceCursor(timeline_of(tmp_path, "flink-38477-zero-output", profile), "0")
        state = cursor.state_at(3).pipeline
        (view,) = model.valve_views(cursor, state, 3, profile or Profile.FLINK_1X_2X)
        assert view.channels["status"].iloc[2] == expected
        assert not view.channels.isna().any().any()


def test_the_channel_holding_the_minimum_is_marked_and_the_heap_is_in_array_order(tmp_path):
    cursor = InstanceCursor(timeline_of(tmp_path, "flink-38477-zero-output"), "0")
    (view,) = model.valve_views(cursor, cursor.state_at(4).pipeline, 4, Profile.FLINK_1X_2X)
    assert list(view.channels["minimum"]) == ["", model.HOLDS, "", ""]
    assert view.heap[0] == (1, 12)
    assert sorted(view.heap) == [(0, 20), (1, 12), (2, MAX_MS), (3, MAX_MS)]


def test_the_changelog_names_rows_by_value_and_time_and_links_each_retraction_to_the_row_it_corrects(
    tmp_path,
):
    cursor = InstanceCursor(timeline_of(tmp_path, "early-fire-left-join"), "0")
    log = om.changelog_table(cursor, cursor.count - 1)
    retract = log[log["kind"] == "-U"].iloc[0]
    target = log[log["#"] == int(retract["corrects"].lstrip("#"))].iloc[0]
    assert target["kind"] == "+I" and target["cause"] == "early_fire"
    assert (
        (target["left"], target["right"]) == (retract["left"], retract["right"]) == ("order-1@10000", "null")
    )
    assert target["trace rows"] == "L line 2 · R —"  # the trace row one column away
    assert "-U" not in set(om.changelog_table(cursor, 5)["kind"])
    assert om.changelog_so_far(cursor, 7) == "changelog so far: 4 rows (2 +I, 1 -U, 1 +U); 2 at this step"


def test_the_operator_panel_shown_follows_what_happened_at_the_step(tmp_path):
    join = InstanceCursor(timeline_of(tmp_path, "early-fire-left-join"), "0")
    shown = {s: om.panel_choice(join, join.state_at(s).pipeline, s).shown for s in range(join.count)}
    assert shown[7] == om.CHANGELOG  # the retraction
    assert shown[0] == om.TIMERS  # order 1 registers its timers
    windows = InstanceCursor(timeline_of(tmp_path, "late-data-allowed-lateness"), "0")
    choice = {s: om.panel_choice(windows, windows.state_at(s).pipeline, s) for s in range(windows.count)}
    assert choice[9].shown == om.DROPPED and "dropped" in choice[9].reason
    fired = [s for s, c in choice.items() if c.shown == om.WINDOWS]
    assert fired and all(
        "window" in set(windows.outputs[windows.outputs["step"] == s]["kind"]) for s in fired
    )
    assert om.dropped_so_far(windows, windows.count - 1) == len(om.dropped_table(windows, 99, so_far=True))


def test_the_join_cache_says_matched_is_tracked_on_the_outer_side_only(tmp_path):
    cursor = InstanceCursor(timeline_of(tmp_path, "early-fire-left-join"), "0")
    cache = om.join_cache_table(cursor.state_at(7).pipeline)
    inner = cache[cache["side"] == "R (inner)"]
    outer = cache[cache["side"] == "L (outer)"]
    assert set(inner["matched (outer only)"]) == {"not tracked"} and set(inner["joined"]) == {"yes"}
    assert set(outer["matched (outer only)"]) <= {"yes", "no"}
    assert "outer side" in om.MATCHED_HELP


def test_the_timers_table_marks_the_next_due_timer_per_domain(tmp_path):
    cursor = InstanceCursor(timeline_of(tmp_path, "early-fire-left-join"), "0")
    table = om.timers_table(cursor, cursor.state_at(0).pipeline, 0)
    assert "registered now" in set(table["state"])
    pending = table[table["state"].str.startswith("pending")]
    assert list(pending["state"]).count("pending, next due") == 1
    assert pending.iloc[0]["state"] == "pending, next due"


def test_the_chart_window_covers_short_traces_whole_and_long_ones_around_the_step():
    assert model.chart_window(10, 4) == (0, 9)
    assert model.chart_window(1_000_000, 500_000, 2000) == (499_000, 500_999)
    assert model.chart_window(1_000_000, 10, 2000) == (0, 1999)
    assert model.chart_window(1_000_000, 999_999, 2000) == (998_000, 999_999)


def test_the_chart_window_starts_each_channel_in_the_state_it_had_on_entry():
    history = pd.DataFrame(
        {
            "step": [-1, -1, 3, 8, 12],
            "input": ["0"] * 5,
            "channel": [0, 1, 0, 1, 0],
            "watermark_ms": [MIN_MS, MIN_MS, 5, 7, 9],
            "status": ["ACTIVE"] * 5,
            "aligned": [True] * 5,
        }
    )
    output = pd.DataFrame({"step": range(20), "output_wm": range(20), "output_status": ["ACTIVE"] * 20})
    h, o = model.history_window(history, output, 10, 15)
    assert h.sort_values(["step", "channel"])[["step", "channel", "watermark_ms"]].values.tolist() == [
        [9, 0, 5],
        [9, 1, 7],
        [12, 0, 9],
    ]
    assert o["step"].tolist() == list(range(10, 16))


# --- the run cache ---------------------------------------------------------------------------------


def test_a_run_is_simulated_once_and_then_read_from_the_cache(tmp_path):
    trace = SAMPLES / "flink-38477-zero-output.jsonl"
    seen = []
    first = run_timeline(RunRequest(trace, None, None, "local"), seen.append, tmp_path)
    assert [r.phase for r in seen][-1] == "simulating" and seen[-1].fraction == 1.0
    assert seen[-1].line() == "simulating: 1 of 1 instances (100%)"
    seen.clear()
    again = run_timeline(RunRequest(trace, None, None, "local"), seen.append, tmp_path)
    assert again.path == first.path and not seen
    other = run_timeline(RunRequest(trace, None, Profile.FLIP_38477, "local"), None, tmp_path)
    assert other.path != first.path and other.meta.profile.value == "flip-38477"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("run-")]  # no half-written run left


def test_a_damaged_cache_entry_is_never_served_it_is_simulated_again(tmp_path, capsys):
    trace = SAMPLES / "flink-38477-zero-output.jsonl"
    first = run_timeline(RunRequest(trace, None, None, "local"), None, tmp_path)
    part = next(first.path.glob("table=steps/*.parquet"))
    part.write_bytes(part.read_bytes()[:-20])  # truncated, as a full disk or a crash would leave it
    seen = []
    again = run_timeline(RunRequest(trace, None, None, "local"), seen.append, tmp_path)
    assert seen, "the damaged entry was simulated again, not served"
    assert "damaged" in capsys.readouterr().err
    again.verify()
    (again.path / "table=steps" / "part-99999.parquet").write_bytes(b"not wmviz's")
    seen.clear()
    run_timeline(RunRequest(trace, None, None, "local"), seen.append, tmp_path)
    assert seen, "a part file wmviz did not write makes the entry damaged too"


def test_the_cache_keeps_to_its_budget_by_evicting_the_least_recently_used(tmp_path):
    import os
    import time

    from wmviz.store.runs import enforce_budget

    trace = SAMPLES / "flink-38477-zero-output.jsonl"
    runs = [run_timeline(RunRequest(trace, None, p, "local"), None, tmp_path) for p in Profile]
    for age, run in enumerate(runs):  # the first made is the least recently used
        os.utime(run.path / ".last-used", (time.time() - 100 + age, time.time() - 100 + age))
    run_timeline(RunRequest(trace, None, Profile.FLINK_1X_2X, "local"), None, tmp_path)  # used again now

    def size(run):
        return sum(p.stat().st_size for p in run.path.rglob("*") if p.is_file())

    # Room for two of the three: the least recently used one that is not being kept goes.
    removed = enforce_budget(
        tmp_path, keep=runs[2].path, budget_mb=(size(runs[0]) + size(runs[2]) + 1) / 2**20
    )
    assert removed == [runs[1].path]
    assert runs[0].path.is_dir() and runs[2].path.is_dir()


# --- the stall summary -------------------------------------------------------------------------------


def test_the_stall_summary_names_the_output_its_length_and_the_channel_holding_it(tmp_path):
    from wmviz.view import stall

    data = REPO / "tests" / "data"
    build_timeline_local(
        read_trace(data / "kafka-rebalance.csv", data / "kafka-rebalance.json"), tmp_path / "k"
    )
    cursor = InstanceCursor(Timeline(tmp_path / "k"), "0")
    t = TimeFormat(origin_ms=model.trace_times(cursor.steps))
    (longest, *_) = stall.longest_stalls(cursor)
    inside = (longest.start + longest.end) // 2
    views = model.valve_views(cursor, cursor.state_at(inside).pipeline, inside, Profile.FLINK_1X_2X, t)
    found = stall.stall_at(cursor, inside, model.holders(views))
    assert (found.start, found.end) == (longest.start, longest.end) and found.holders == ("ch2",)
    assert stall.stall_text(found, cursor.count, t) == (
        f"output stuck at 2026-11-24 10:05:15.000Z for {found.steps} steps "
        f"(steps {found.start}–{found.end - 1}), held by ch2 since step {found.held_since}"
    )
    assert found.steps >= 15 and found.held_since <= found.start
    # The routine gaps between watermarks (a few records each) are not stalls.
    assert stall.stall_at(cursor, 20, []) is None
    # At MAX the output is finished, not stuck.
    done = InstanceCursor(timeline_of(tmp_path, "flink-38477-zero-output"), "0")
    assert stall.stall_at(done, 7, []) is None


def test_the_time_display_and_zone_round_trip_through_the_link_and_bad_values_fall_back():
    view = ViewParams("flink-38477-zero-output", time="relative", zone="Europe/Berlin", compare="whatif:abc")
    query = view_query(view)
    assert query["time"] == "relative" and query["tz"] == "Europe/Berlin" and query["compare"] == "whatif:abc"
    assert parse_view(query, SCENARIOS, SCENARIOS[0]) == view
    assert "time" not in view_query(ViewParams("x")) and "tz" not in view_query(ViewParams("x"))
    bad = parse_view({"time": "iso", "tz": "Mars/Base"}, SCENARIOS, SCENARIOS[0])
    assert (bad.time, bad.zone) == ("utc", "UTC") and len(bad.notes) == 2


@pytest.mark.parametrize(
    ("state", "words"),
    [
        ("starting", "4 s so far"),
        ("warming up", "4 s so far"),
        ("ready", "up in 4 s"),
        ("failed", "after 4 s"),
        ("not started", "starts when a run needs it"),  # WMVIZ_SPARK_START=lazy: no clock runs yet
    ],
)
def test_the_spark_box_says_how_long_in_words_that_fit_its_state(state, words):
    from wmviz.spark.service import SparkStatus
    from wmviz.ui.panels import _spark_timing

    assert _spark_timing(SparkStatus(state, "local[*]", None, 4.2)) == words


def test_a_window_firing_says_its_result_not_its_raw_json(tmp_path):
    """Issue 30 (5): the firings table's `result` was the recorded JSON, with the window's start and
    end in raw ms even in relative mode; it now says the value alone (the `window` column says when)."""
    timeline = timeline_of(tmp_path, "late-data-allowed-lateness")
    cursor = InstanceCursor(timeline, "0")
    table = om.window_firings_table(cursor, cursor.count - 1, TimeFormat("relative", origin_ms=0))
    assert not table.empty
    for result in table["result"]:
        assert "{" not in result and '"start"' not in result, result
