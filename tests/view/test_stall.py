"""The stall summary at MIN (issue 30, item 2): an output that never leaves MIN while records keep
arriving is stuck like any other, named on the page and shaded on the chart at every step; the
bar a run must reach is set by the trace's other runs, never by the run itself."""

from __future__ import annotations

import json

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.view.test_ui_model import timeline_of
from wmviz.core.types import Profile
from wmviz.timeline.cursor import InstanceCursor
from wmviz.view import stall
from wmviz.view.step_view import step_view
from wmviz.view.timefmt import TimeFormat


def test_a_window_that_never_fires_names_its_output_stuck_at_min_and_shades_it_at_every_step(tmp_path):
    cursor = InstanceCursor(timeline_of(tmp_path, "silent-split-window-never-fires"), "0")
    t = TimeFormat()
    for step in range(cursor.count):
        view = step_view(cursor, step, Profile.FLINK_1X_2X, 3, t)
        shown = (view.stall or "").replace("\\", "")  # the page's text, Markdown escapes undone
        assert shown == (
            f"output stuck at MIN (no watermark yet) for {cursor.count} steps "
            f"(steps 0–{cursor.count - 1}, to the end), held by ch1 from the start"
        ), (step, view.stall)
        shapes = json.loads(view.chart)["layout"].get("shapes", [])
        bands = [s for s in shapes if s.get("name") == "stall"]
        assert len(bands) == 1 and (bands[0]["x0"], bands[0]["x1"]) == (0, cursor.count), (step, shapes)
    (longest,) = stall.longest_stalls(cursor)
    assert (longest.start, longest.end) == (0, cursor.count)


def test_the_other_incidents_keep_their_stalls_and_routine_gaps_stay_unnamed(tmp_path):
    # order-dependent-final-watermark stops at 70 for its last six steps: still a stall.
    cursor = InstanceCursor(timeline_of(tmp_path, "order-dependent-final-watermark"), "0")
    assert [(s.output_ms, s.start, s.end) for s in stall.longest_stalls(cursor)] == [(70, 3, 9)]
    # flink-38477 moves every step or two and ends at MAX: nothing is stuck.
    cursor = InstanceCursor(timeline_of(tmp_path, "flink-38477-zero-output"), "0")
    assert stall.longest_stalls(cursor) == [] and all(stall.stall_at(cursor, s) is None for s in range(8))


@settings(derandomize=True, max_examples=300)
@given(st.lists(st.integers(1, 60), min_size=1, max_size=25))
def test_each_run_s_bar_is_three_times_the_median_of_the_other_runs(lengths):
    ends = np.cumsum(lengths)
    starts = ends - np.array(lengths)
    got = stall._thresholds(starts, ends)
    for i in range(len(lengths)):
        others = lengths[:i] + lengths[i + 1 :]
        routine = stall.STALL_FACTOR * float(np.median(others)) if others else 0.0
        assert got[i] == max(stall.MIN_STALL_STEPS, routine), (lengths, i)
