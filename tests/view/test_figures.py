"""The Plotly figure builders: what each figure shows, checked on the figure's content.

Arrays are read through the trace objects (`fig.data[i].x`), never from `to_dict()`, where
Plotly >= 6 may store them base64-encoded.
"""

from __future__ import annotations

import ast
import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support import paths
from wmviz.core.types import EPOCH_FROM_MS, MAX_MS, MIN_MS
from wmviz.view.figures import (
    STATUS_COLORS,
    ChartMarks,
    heap_figure,
    heatmap_matrix,
    input_frontier,
    instance_heatmap,
    watermark_figure,
)
from wmviz.view.figures_common import (
    HIGHLIGHT_COLOR,
    POINT_CAP,
    ROOT_COLOR,
    describe_ms,
    natural_key,
    sentinel_levels,
    thin,
)
from wmviz.view.figures_heap import EMPTY_HEAP_TEXT
from wmviz.view.timefmt import TimeFormat

UI = paths.REPO / "wmviz" / "view"
HISTORY_COLUMNS = ["step", "input", "channel", "watermark_ms", "status", "aligned"]


def history_frame(rows: list[tuple]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=HISTORY_COLUMNS)


def output_frame(rows: list[tuple]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["step", "output_wm", "output_status"])


def trace(fig, name: str):
    matches = [t for t in fig.data if t.name == name]
    assert len(matches) == 1, f"expected one trace named {name!r}, got {[t.name for t in fig.data]}"
    return matches[0]


def shape(fig, name: str):
    matches = [s for s in fig.layout.shapes if s.name == name]
    assert len(matches) == 1, f"expected one shape named {name!r}"
    return matches[0]


def lane_of(fig, name: str) -> int:
    return fig.layout.yaxis2.tickvals[list(fig.layout.yaxis2.ticktext).index(name)]


def bands(fig, status: str) -> set[tuple[int, int, int]]:
    """(lane, first step, stop step) of every bar of `status`, stop exclusive."""
    bar = trace(fig, status)
    lanes, base, width = (np.asarray(v, dtype=np.int64) for v in (bar.y, bar.base, bar.x))
    return {(int(la), int(b), int(b + w)) for la, b, w in zip(lanes, base, width)}


def all_hover_text(fig) -> list[str]:
    texts = []
    for t in fig.data:
        if t.hovertext is not None:
            texts.extend(np.asarray(t.hovertext, dtype=object).ravel().tolist())
        if t.text is not None:
            texts.extend(np.asarray(t.text, dtype=object).ravel().tolist())
    return [str(x) for x in texts]


# Two channels: ch1 goes IDLE over steps 2-3, ch0 finishes (MAX) at step 5 of 0..6.
SMALL_HISTORY = history_frame(
    [
        (-1, "0", 0, MIN_MS, "ACTIVE", True),
        (-1, "0", 1, MIN_MS, "ACTIVE", True),
        (0, "0", 0, 10, "ACTIVE", True),
        (1, "0", 1, 20, "ACTIVE", True),
        (2, "0", 1, 20, "IDLE", False),
        (4, "0", 1, 20, "ACTIVE", True),
        (5, "0", 0, MAX_MS, "FINISHED", False),
    ]
)
SMALL_OUTPUT = output_frame([(s, wm, "ACTIVE") for s, wm in enumerate([MIN_MS, 10, 10, 10, 10, 20, 20])])


# --- STATUS_COLORS -------------------------------------------------------------------------------


def test_status_colors_name_a_distinct_css_hex_colour_for_each_status():
    assert set(STATUS_COLORS) == {"ACTIVE", "IDLE", "FINISHED"}
    assert all(re.fullmatch(r"#[0-9A-Fa-f]{6}", c) for c in STATUS_COLORS.values())
    assert len(set(STATUS_COLORS.values())) == 3


# --- watermark_figure ----------------------------------------------------------------------------


def test_watermark_figure_draws_the_output_as_a_band_first_and_each_channel_over_it_in_its_own_colour():
    fig = watermark_figure(SMALL_HISTORY, SMALL_OUTPUT, step=3, last_step=6, title="demo")
    lines = [t for t in fig.data if t.type == "scatter"]
    # The output first, wide and translucent: the channel pinning it is drawn on top, not hidden.
    assert [t.name for t in lines] == ["output", "ch 0", "ch 1"]
    assert all(t.line.shape == "hv" for t in lines)
    output = trace(fig, "output")
    assert output.line.width > max(t.line.width for t in lines[1:]) and "rgba" in output.line.color
    colours = [t.line.color for t in lines[1:]]
    assert len(set(colours)) == 2 and all(re.fullmatch(r"#[0-9a-f]{6}", c) for c in colours)
    assert fig.layout.xaxis.title.text == "step"
    assert fig.layout.title.text == "demo"


def test_channel_line_has_a_point_per_change_and_holds_the_last_state_to_the_end_of_the_last_step():
    fig = watermark_figure(SMALL_HISTORY, SMALL_OUTPUT, step=3, last_step=6)
    ch1 = trace(fig, "ch 1")
    assert np.asarray(ch1.x).tolist() == [-1, 1, 2, 4, 7]
    y = np.asarray(ch1.y)
    assert y[1:].tolist() == [20.0] * 4
    assert y[0] < 10  # MIN, clipped just below the finite range


def test_channel_names_carry_the_input_when_there_are_several_inputs_in_natural_order():
    history = history_frame(
        [
            (-1, "R", 0, MIN_MS, "ACTIVE", True),
            (-1, "L", 1, MIN_MS, "ACTIVE", True),
            (-1, "L", 0, MIN_MS, "ACTIVE", True),
            (0, "L", 0, 5, "ACTIVE", True),
        ]
    )
    fig = watermark_figure(history, output_frame([]), step=0, last_step=0)
    assert [t.name for t in fig.data if t.type == "scatter"] == ["output", "L/ch 0", "L/ch 1", "R/ch 0"]
    assert list(fig.layout.yaxis2.ticktext) == ["events", "output", "L/ch 0", "L/ch 1", "R/ch 0"]


def test_cursor_is_one_vertical_line_at_the_step_spanning_the_whole_figure():
    fig = watermark_figure(SMALL_HISTORY, SMALL_OUTPUT, step=4, last_step=6)
    cursor = shape(fig, "cursor")
    assert (cursor.x0, cursor.x1) == (4, 4)
    assert (cursor.xref, cursor.yref, cursor.y0, cursor.y1) == ("x", "paper", 0, 1)
    # Both subplots hang off the one x axis, so the cursor lines up with both.
    assert {t.xaxis for t in fig.data} == {"x"}
    assert {t.yaxis for t in fig.data} == {"y", "y2"}


def test_idle_and_finished_bands_cover_exactly_the_steps_each_status_held():
    fig = watermark_figure(SMALL_HISTORY, SMALL_OUTPUT, step=3, last_step=6)
    # ch1 is IDLE after steps 2 and 3 (ACTIVE again at 4); ch0 is FINISHED after 5 and 6.
    assert bands(fig, "IDLE") == {(lane_of(fig, "ch 1"), 2, 4)}
    assert bands(fig, "FINISHED") == {(lane_of(fig, "ch 0"), 5, 7)}
    assert trace(fig, "IDLE").marker.color == STATUS_COLORS["IDLE"]
    assert trace(fig, "FINISHED").marker.color == STATUS_COLORS["FINISHED"]
    hover = list(trace(fig, "FINISHED").hovertext)
    assert hover == ["ch 0: FINISHED over steps 5–the end"]


def test_the_output_status_gets_a_lane_of_its_own():
    output = output_frame([(0, 5, "ACTIVE"), (1, 5, "IDLE"), (3, 7, "ACTIVE")])
    fig = watermark_figure(SMALL_HISTORY, output, step=0, last_step=6)
    assert (lane_of(fig, "output"), 1, 3) in bands(fig, "IDLE")


def test_max_and_min_sit_on_labelled_bands_off_the_finite_range_and_the_axis_names_them():
    fig = watermark_figure(SMALL_HISTORY, SMALL_OUTPUT, step=3, last_step=6)
    ch0 = trace(fig, "ch 0")
    y = np.asarray(ch0.y)
    finite_min, finite_max = 10.0, 20.0
    max_band = shape(fig, "MAX (end of time)")
    min_band = shape(fig, "MIN (Long.MIN_VALUE)")
    assert y[-1] == (max_band.y0 + max_band.y1) / 2 and max_band.y0 > finite_max
    assert y[0] == (min_band.y0 + min_band.y1) / 2 and min_band.y1 < finite_min
    # Far enough off the scale that "20 → MAX" cannot read as one more unit: 30 % of the span.
    assert y[-1] - finite_max >= 0.3 * (finite_max - finite_min)
    assert shape(fig, "MAX (end of time) gap").line.dash == "dot"
    notes = {a.text for a in fig.layout.annotations}
    assert {"MAX (end of time) · off the scale", "MIN (Long.MIN_VALUE) · off the scale"} <= notes
    ticks = dict(zip(fig.layout.yaxis.ticktext, fig.layout.yaxis.tickvals))
    assert ticks["MAX"] == y[-1] and ticks["MIN"] == y[0] and "10" in ticks
    assert "watermark MAX (end of time)" in list(ch0.hovertext)[-1]
    assert "watermark MIN (Long.MIN_VALUE)" in ch0.hovertext[0]


def test_no_max_line_when_no_watermark_reached_max():
    history = history_frame([(-1, "0", 0, MIN_MS, "ACTIVE", True), (0, "0", 0, 3, "ACTIVE", True)])
    fig = watermark_figure(history, output_frame([(0, 3, "ACTIVE")]), step=0, last_step=0)
    assert not [s for s in fig.layout.shapes if s.name == "MAX (end of time)"]


def test_sentinels_fall_back_to_minus_one_and_one_when_nothing_is_finite():
    history = history_frame([(-1, "0", 0, MIN_MS, "ACTIVE", True), (1, "0", 0, MAX_MS, "FINISHED", False)])
    fig = watermark_figure(history, output_frame([(0, MIN_MS, "ACTIVE")]), step=0, last_step=2)
    assert np.asarray(trace(fig, "ch 0").y).tolist() == [-1.0, 1.0, 1.0]


def test_hover_shows_the_utc_time_for_epoch_milliseconds_and_plain_numbers_for_small_values():
    epoch = 1_764_000_000_000  # 2025-11-24 16:00:00 UTC
    history = history_frame(
        [
            (-1, "0", 0, MIN_MS, "ACTIVE", True),
            (0, "0", 0, epoch, "ACTIVE", True),
            (1, "0", 1, 10, "IDLE", False),
        ]
    )
    fig = watermark_figure(history, output_frame([(0, epoch, "ACTIVE")]), step=0, last_step=1)
    ch0, ch1 = list(trace(fig, "ch 0").hovertext), list(trace(fig, "ch 1").hovertext)
    assert ch0[1] == "step 0<br>watermark 2025-11-24 16:00:00.000Z (1764000000000 ms)<br>ACTIVE"
    assert ch1[0] == "step 1<br>watermark 10<br>IDLE, not aligned"
    # The name is said once per trace, by the template.
    assert trace(fig, "ch 1").hovertemplate == "ch 1<br>%{hovertext}<extra></extra>"


def test_describe_ms_switches_to_utc_exactly_at_the_year_2000():
    text = describe_ms(np.array([EPOCH_FROM_MS - 1, EPOCH_FROM_MS, -5, 0, MAX_MS, MIN_MS]))
    assert text.tolist() == [
        str(EPOCH_FROM_MS - 1),
        f"2000-01-01 00:00:00.000Z ({EPOCH_FROM_MS} ms)",
        "-5",
        "0",
        "MAX (end of time)",
        "MIN (Long.MIN_VALUE)",
    ]


def test_output_given_for_every_step_is_drawn_only_at_its_change_points():
    wm = [MIN_MS] * 10 + [100] * 500 + [250] * 490
    output = output_frame([(s, w, "ACTIVE") for s, w in enumerate(wm)])
    fig = watermark_figure(SMALL_HISTORY, output, step=0, last_step=999)
    out = trace(fig, "output")
    assert np.asarray(out.x).tolist() == [0, 10, 510, 1000]
    assert [h.split("<br>")[0] for h in out.hovertext] == ["step 0", "step 10", "step 510", "step 510"]


def test_rows_after_last_step_are_ignored_and_the_last_row_of_a_step_wins():
    history = history_frame(
        [
            (-1, "0", 0, MIN_MS, "ACTIVE", True),
            (2, "0", 0, 5, "ACTIVE", True),
            (2, "0", 0, 7, "ACTIVE", True),
            (9, "0", 0, 99, "ACTIVE", True),
        ]
    )
    output = output_frame([(2, 5, "ACTIVE"), (2, 7, "ACTIVE"), (9, 99, "ACTIVE")])
    fig = watermark_figure(history, output, step=2, last_step=4)
    assert np.asarray(trace(fig, "ch 0").x).tolist() == [-1, 2, 5]
    assert np.asarray(trace(fig, "ch 0").y)[1] == 7
    assert np.asarray(trace(fig, "output").x).tolist() == [2, 5]
    assert "watermark 7" in trace(fig, "output").hovertext[0]


def test_empty_history_and_output_still_give_a_figure_with_the_cursor_and_empty_bands():
    fig = watermark_figure(history_frame([]), output_frame([]), step=0, last_step=0)
    assert [t.name for t in fig.data] == ["output", "IDLE", "FINISHED"]
    assert len(trace(fig, "output").x) == 0
    assert shape(fig, "cursor").x0 == 0


STATUSES = st.sampled_from(["ACTIVE", "ACTIVE", "IDLE", "FINISHED"])
WATERMARKS = st.one_of(st.integers(-50, 50), st.sampled_from([MIN_MS, MAX_MS, 1_764_000_000_000]))


@st.composite
def histories(draw):
    last_step = draw(st.integers(0, 30))
    rows = []
    for channel in range(draw(st.integers(1, 4))):
        rows.append((-1, "0", channel, MIN_MS, "ACTIVE", True))
        for step in sorted(draw(st.sets(st.integers(0, last_step + 3), max_size=8))):
            rows.append((step, "0", channel, draw(WATERMARKS), draw(STATUSES), draw(st.booleans())))
    output = [(s, draw(WATERMARKS), draw(STATUSES)) for s in range(last_step + 1)]
    return history_frame(rows), output_frame(output), last_step


def statuses_by_step(rows: pd.DataFrame, steps: range) -> list[str]:
    """The status a channel holds after each of `steps`, replayed from its change rows."""
    at = rows["step"].to_numpy()
    held = np.searchsorted(at, np.asarray(steps), side="right") - 1
    return rows["status"].to_numpy()[held].tolist()


@settings(derandomize=True, max_examples=60, deadline=None)
@given(histories())
def test_bands_and_hover_agree_with_a_step_by_step_replay_of_any_history(case):
    history, output, last_step = case
    fig = watermark_figure(history, output, step=last_step // 2, last_step=last_step)
    drawn = [*history.loc[history["step"] <= last_step, "watermark_ms"], *output["output_wm"]]
    finite = [v for v in drawn if v not in (MIN_MS, MAX_MS)]
    steps = range(-1, last_step + 1)
    for status in ("IDLE", "FINISHED"):
        covered = {(lane, s) for lane, a, b in bands(fig, status) for s in range(a, b)}
        expected = set()
        for channel, rows in history[history["step"] <= last_step].groupby("channel"):
            lane = lane_of(fig, f"ch {channel}")
            held = statuses_by_step(rows, steps)
            expected |= {(lane, s) for s, h in zip(steps, held) if h == status}
        out_lane = lane_of(fig, "output")
        expected |= {(out_lane, s) for s in range(last_step + 1) if output["output_status"][s] == status}
        assert covered == expected
    for text in all_hover_text(fig):
        assert "nan" not in text.lower() and "None" not in text
    for t in fig.data:
        if t.type == "scatter":
            y = np.asarray(t.y, dtype=float)
            assert np.isfinite(y).all()
            for value, hover in zip(y, t.hovertext):
                if "MAX (end of time)" in hover and finite:
                    assert value > max(finite)
                if "MIN (Long.MIN_VALUE)" in hover and finite:
                    assert value < min(finite)


def test_a_million_output_steps_and_fifty_thousand_changes_stay_under_the_point_cap_exact_near_cursor():
    rng = np.random.default_rng(7)
    steps, channels, changes = 1_000_000, 64, 50_000
    at = np.sort(rng.choice(steps, changes, replace=False))
    history = pd.concat(
        [
            history_frame([(-1, "0", c, MIN_MS, "ACTIVE", True) for c in range(channels)]),
            pd.DataFrame(
                {
                    "step": at,
                    "input": "0",
                    "channel": rng.integers(0, channels, changes),
                    "watermark_ms": 1_700_000_000_000 + at * 10,
                    "status": rng.choice(["ACTIVE", "IDLE", "FINISHED"], changes, p=[0.9, 0.08, 0.02]),
                    "aligned": True,
                }
            ),
        ],
        ignore_index=True,
    )
    wm = 1_700_000_000_000 + np.arange(steps) * 3  # a change at every step: nothing to compress
    wm[123_456] = MAX_MS  # a one-step spike far from the cursor must survive the thinning
    output = pd.DataFrame({"step": np.arange(steps), "output_wm": wm, "output_status": "ACTIVE"})
    cursor = 600_000
    fig = watermark_figure(history, output, step=cursor, last_step=steps - 1)
    assert len(fig.data) == channels + 3
    assert all(len(t.x) <= POINT_CAP for t in fig.data)
    out = trace(fig, "output")
    x = np.asarray(out.x)
    near = x[(x >= cursor - 1000) & (x <= cursor + 1000)]
    assert near.tolist() == list(range(cursor - 1000, cursor + 1001))
    assert 123_456 in x.tolist()
    band = shape(fig, "MAX (end of time)")
    assert np.asarray(out.y).max() == (band.y0 + band.y1) / 2


def test_more_status_periods_than_the_cap_are_merged_evenly_and_still_cover_every_idle_step():
    steps = 2 * (POINT_CAP + 5000)  # IDLE at every even step: POINT_CAP + 5000 one-step periods
    history = pd.DataFrame(
        {
            "step": np.arange(-1, steps),
            "input": "0",
            "channel": 0,
            "watermark_ms": 0,
            "status": np.where(np.arange(-1, steps) % 2 == 0, "IDLE", "ACTIVE"),
            "aligned": True,
        }
    )
    fig = watermark_figure(history, output_frame([]), step=0, last_step=steps - 1)
    idle = sorted(bands(fig, "IDLE"))
    assert len(idle) <= POINT_CAP
    covered = np.zeros(steps + 1, bool)
    for _, a, b in idle:
        assert a % 2 == 0 and b % 2 == 1  # a merged bar starts and ends with an IDLE period
        covered[a:b] = True
    assert covered[0:steps:2].all()
    # Every period is in exactly one bar: a merged bar's hover says how many it holds.
    held = [
        int(re.search(r"\((\d+) periods merged\)", h).group(1)) if "merged" in h else 1
        for h in trace(fig, "IDLE").hovertext
    ]
    assert sum(held) == POINT_CAP + 5000 and max(held) > 1
    # Merging is spread along the lane: no single bar swallows a large share of the periods.
    assert max(b - a for _, a, b in idle) < steps // 100


def test_a_missing_output_status_never_reads_none_or_nan_in_the_hover():
    output = pd.DataFrame({"step": [0, 1], "output_wm": [5, 6], "output_status": [None, "IDLE"]})
    fig = watermark_figure(SMALL_HISTORY, output, step=0, last_step=6)
    for text in all_hover_text(fig):
        assert "None" not in text and "nan" not in text.lower()


# --- thinning and helpers ------------------------------------------------------------------------


@settings(derandomize=True, max_examples=60, deadline=None)
@given(st.integers(1, 5000), st.integers(30, 400), st.integers(-10, 6000), st.integers(0, 2**32 - 1))
def test_thin_keeps_ends_extremes_and_the_cursor_window_within_the_cap(n, cap, cursor, seed):
    rng = np.random.default_rng(seed)
    x = np.arange(n) * 2
    y = rng.normal(size=n).cumsum()
    keep = thin(x, y, cursor, cap)
    assert len(keep) == n if n <= cap else len(keep) <= cap
    assert (np.diff(keep) > 0).all()
    assert keep[0] == 0 and keep[-1] == n - 1
    assert y.argmax() in keep and y.argmin() in keep
    if n > cap:
        at = int(np.searchsorted(x, cursor))
        window = set(range(max(0, at - cap // 8), min(n, at + cap // 8)))
        assert window <= set(keep.tolist())


def test_sentinel_levels_sit_thirty_percent_of_the_span_outside_the_finite_values():
    assert sentinel_levels(np.array([MIN_MS, 0, 100, MAX_MS])) == (-30.0, 130.0)
    assert sentinel_levels(np.array([5]), np.array([MAX_MS])) == (4.0, 6.0)
    assert sentinel_levels(np.array([MIN_MS]), np.array([], dtype=np.int64)) == (-1.0, 1.0)


def test_natural_key_orders_numbers_by_value():
    assert sorted(["10", "2", "sub-10", "sub-2", "1"], key=natural_key) == ["1", "2", "10", "sub-2", "sub-10"]


# --- heap_figure ---------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 2, 3, 7, 64, 128])
def test_heap_tree_has_n_nodes_and_n_minus_one_edges_with_the_root_on_top_and_highlighted(n):
    heap = [(c, 100 + c) for c in range(n)]
    fig = heap_figure(heap)
    nodes, edges = trace(fig, "nodes"), trace(fig, "edges")
    assert len(nodes.x) == n
    ex = list(edges.x)
    assert ex.count(None) == n - 1 and len(ex) == 3 * (n - 1)
    y = np.asarray(nodes.y)
    assert y[0] == y.max() and (y[1:] < y[0]).all()
    colors = list(nodes.marker.color)
    assert colors[0] == ROOT_COLOR and ROOT_COLOR not in colors[1:]
    # Every edge joins a parent to the child one level below it, children of i at 2i+1, 2i+2.
    ey = list(edges.y)
    for child in range(1, n):
        parent = (child - 1) // 2
        seg = slice(3 * (child - 1), 3 * (child - 1) + 2)
        assert ex[seg] == [nodes.x[parent], nodes.x[child]]
        assert ey[seg] == [y[parent], y[child]]


def test_heap_node_text_is_label_then_watermark_with_max_and_min_spelled_out():
    fig = heap_figure([(2, 10), (0, MAX_MS), (1, MIN_MS)], label=lambda c: f"L/ch {c}")
    assert list(trace(fig, "nodes").text) == ["L/ch 2<br>10", "L/ch 0<br>MAX", "L/ch 1<br>MIN"]
    hover = list(trace(fig, "nodes").hovertext)
    assert "MAX (end of time)" in hover[1] and "current minimum" in hover[0]


def test_heap_highlight_rings_the_changed_channel_and_notes_one_missing_from_the_heap():
    fig = heap_figure([(2, 10), (0, 20), (1, 30)], highlight=1)
    line = trace(fig, "nodes").marker.line
    assert list(line.color) == ["#ffffff", "#ffffff", HIGHLIGHT_COLOR]
    assert line.width[2] > line.width[0]
    missing = heap_figure([(2, 10)], highlight=5)
    assert "ch 5 is not in the heap (not aligned)" in [a.text for a in missing.layout.annotations]


def test_empty_heap_shows_a_note_instead_of_a_tree():
    fig = heap_figure([])
    assert len(fig.data) == 0
    assert [a.text for a in fig.layout.annotations] == [EMPTY_HEAP_TEXT]
    assert EMPTY_HEAP_TEXT == "no aligned channel (the heap is empty)"


def test_heap_text_shrinks_with_depth_and_crowded_levels_get_vertical_labels_under_their_nodes():
    fig = heap_figure([(c, 1_700_000_000_000 + c) for c in range(128)], t=TimeFormat("ms"))
    nodes = trace(fig, "nodes")
    sizes = list(nodes.textfont.size)
    assert sizes[0] > sizes[127] >= 8
    assert sizes == sorted(sizes, reverse=True)
    vertical = [a for a in fig.layout.annotations if a.textangle == -90]
    hidden = [i for i, c in enumerate(nodes.textfont.color) if c == "rgba(0,0,0,0)"]
    # 13-digit watermarks do not fit 16 to a row: levels 4 and deeper (nodes 15..127) go vertical.
    assert hidden == list(range(15, 128))
    assert [a.text for a in vertical] == [nodes.text[i].replace("<br>", " ") for i in hidden]
    assert [(a.x, a.y) for a in vertical] == [(nodes.x[i], nodes.y[i]) for i in hidden]
    # Room for the vertical labels: a crowded level sits further below its parents.
    y = np.asarray(nodes.y)
    assert y[0] - y[1] == 1.0 and y[15] - y[31] > 2


def test_a_small_heap_of_small_numbers_keeps_every_label_horizontal():
    fig = heap_figure([(c, c) for c in range(31)])
    assert not [a for a in fig.layout.annotations if a.textangle == -90]
    assert "rgba(0,0,0,0)" not in list(trace(fig, "nodes").textfont.color)


# --- heatmap_matrix / instance_heatmap -----------------------------------------------------------


def test_heatmap_matrix_takes_each_instance_last_watermark_at_or_before_each_bucket_bound():
    steps = pd.DataFrame(
        {
            "instance": ["10", "2", "10", "2", "10", "2"],
            "order": [0, 1, 2, 3, 4, 5],
            "output_wm": [100, 5, 110, MAX_MS, 120, 7],
        }
    )
    m = heatmap_matrix(steps, buckets=3)
    assert list(m.index) == ["2", "10"]
    assert m.index.name == "instance" and m.columns.name == "order"
    assert list(m.columns) == [1, 3, 5]
    assert m.loc["2"].tolist() == [5, MAX_MS, 7]
    assert m.loc["10"].tolist() == [100, 110, 120]
    assert (m.dtypes == np.int64).all()


def test_heatmap_matrix_is_min_before_an_instance_first_step_and_carries_values_forward():
    steps = pd.DataFrame(
        {"instance": ["a", "a", "b"], "order": [0, 1, 9], "output_wm": [3, 4, 50]}
    )  # fmt: skip
    m = heatmap_matrix(steps, buckets=5)
    assert list(m.columns) == [1, 3, 5, 7, 9]
    assert m.loc["a"].tolist() == [4, 4, 4, 4, 4]
    assert m.loc["b"].tolist() == [MIN_MS, MIN_MS, MIN_MS, MIN_MS, 50]


def test_heatmap_matrix_never_has_more_columns_than_distinct_orders():
    steps = pd.DataFrame({"instance": ["x", "x"], "order": [4, 5], "output_wm": [1, 2]})
    m = heatmap_matrix(steps)
    assert list(m.columns) == [4, 5]


@settings(derandomize=True, max_examples=80, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["0", "1", "2", "10"]), st.integers(0, 60), WATERMARKS),
        min_size=1,
        max_size=40,
    ),
    st.integers(1, 12),
)
def test_heatmap_matrix_agrees_with_a_row_by_row_reference(rows, buckets):
    steps = pd.DataFrame(rows, columns=["instance", "order", "output_wm"])
    m = heatmap_matrix(steps, buckets)
    ordered = steps.sort_values("order", kind="stable")
    for instance in m.index:
        mine = ordered[ordered["instance"] == instance]
        for bound in m.columns:
            upto = mine[mine["order"] <= bound]
            expected = upto["output_wm"].iloc[-1] if len(upto) else MIN_MS
            assert m.loc[instance, bound] == expected
    assert list(m.index) == sorted(steps["instance"].unique(), key=natural_key)


def test_heatmap_matrix_handles_a_million_rows_over_a_thousand_instances():
    n = 1_000_000
    steps = pd.DataFrame(
        {"instance": (np.arange(n) % 1000).astype(str), "order": np.arange(n), "output_wm": np.arange(n)}
    )
    m = heatmap_matrix(steps)
    assert m.shape == (1000, 120)
    assert m.index[:3].tolist() == ["0", "1", "2"]
    assert m.iloc[:, -1].tolist() == list(range(n - 1000, n))


def test_instance_heatmap_colours_lag_behind_the_leader_zero_for_the_leader():
    matrix = pd.DataFrame(
        [[MIN_MS, 10, 20], [5, 30, MAX_MS], [5, 12, 13]],
        index=pd.Index(["0", "1", "2"], name="instance"),
        columns=pd.Index([10, 20, 30], name="order"),
    )
    fig = instance_heatmap(matrix, cursor_order=15)
    heat = fig.data[0]
    z = np.asarray(heat.z, dtype=float)
    assert z[1].tolist()[:2] == [0.0, 0.0]  # instance 1 leads buckets 0 (tied) and 1
    assert z[2, 0] == 0.0 and z[2, 1] == 18.0  # 30 - 12
    assert z[0, 0] > 0 and (z >= 0).all()
    assert z[2, 2] == z[:, 2].max()  # the stuck instance stands out against MAX
    assert fig.layout.xaxis.title.text == "arrival order"
    assert fig.layout.yaxis.title.text == "instance"
    assert shape(fig, "cursor").x0 == 20  # order 15 falls in the bucket (10, 20]
    hover = np.asarray(heat.hovertext, dtype=object)
    assert hover[0, 0] == "MIN (Long.MIN_VALUE)<br>no watermark yet"
    assert hover[1, 2] == "MAX (end of time)<br>leading"
    assert hover[2, 1] == "12<br>18ms behind instance 1"
    assert hover[2, 2] == "13<br>behind instance 1 at MAX"
    assert not any("nan" in str(h).lower() for h in hover.ravel())


def test_instance_heatmap_cursor_clamps_to_the_first_and_last_bucket():
    matrix = heatmap_matrix(
        pd.DataFrame({"instance": ["a"] * 4, "order": [0, 1, 2, 3], "output_wm": [1] * 4}), 2
    )
    assert shape(instance_heatmap(matrix, -5), "cursor").x0 == 1
    assert shape(instance_heatmap(matrix, 99), "cursor").x0 == 3
    assert not instance_heatmap(matrix).layout.shapes


def test_instance_heatmap_of_an_empty_matrix_says_so():
    fig = instance_heatmap(heatmap_matrix(pd.DataFrame({"instance": [], "order": [], "output_wm": []})))
    assert len(fig.data) == 0 and fig.layout.annotations[0].text == "no steps to show"


# --- purity --------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", sorted(UI.glob("figures*.py")), ids=lambda p: p.name)
def test_figure_modules_import_neither_streamlit_nor_pyspark_and_never_read_the_wall_clock(path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        for name in names:
            assert name.split(".")[0] not in ("streamlit", "pyspark", "time", "datetime"), name
        if isinstance(node, ast.Attribute):
            assert node.attr not in ("now", "utcnow", "today", "time_ns"), node.attr


# --- pointing at the culprit (issue 12) -----------------------------------------------------------


def test_the_channel_holding_the_minimum_is_drawn_thicker_and_ringed_at_the_cursor():
    marks = ChartMarks(holders=(("0", 1),))
    fig = watermark_figure(SMALL_HISTORY, SMALL_OUTPUT, step=3, last_step=6, marks=marks)
    assert trace(fig, "ch 1").line.width > trace(fig, "ch 0").line.width
    ring = trace(fig, "ch 1 holds the minimum")
    assert list(ring.x) == [3] and list(ring.y) == [20.0] and ring.marker.symbol == "circle-open"
    assert ring.marker.line.color == trace(fig, "ch 1").line.color
    assert "ch 1 holds the minimum" in [a.text for a in fig.layout.annotations]


def test_events_get_markers_on_their_own_lane_and_a_stall_is_shaded_and_named():
    events = {"late drop": np.array([2, 5]), "retraction": np.array([4]), "status change": np.array([])}
    marks = ChartMarks(events=events, stall=(1, 5, "output stuck at 10 for 4 steps"))
    fig = watermark_figure(SMALL_HISTORY, SMALL_OUTPUT, step=3, last_step=6, marks=marks)
    drops, retractions = trace(fig, "late drop"), trace(fig, "retraction")
    assert list(drops.x) == [2, 5] and list(retractions.x) == [4]
    assert {drops.yaxis, retractions.yaxis} == {"y2"} and abs(drops.y[0] - lane_of(fig, "events")) < 0.5
    assert drops.marker.symbol != retractions.marker.symbol
    assert not [t for t in fig.data if t.name == "status change"]  # no such event: no legend entry
    stall = shape(fig, "stall")
    assert (stall.x0, stall.x1) == (1, 5)
    assert "output stuck at 10 for 4 steps" in [a.text for a in fig.layout.annotations]


def test_the_y_axis_reads_clock_times_for_epoch_watermarks_in_the_chosen_zone():
    epoch = 1_795_514_715_000  # 2026-11-24 10:05:15 UTC
    history = history_frame(
        [(-1, "0", 0, MIN_MS, "ACTIVE", True), (0, "0", 0, epoch, "ACTIVE", True),
         (5, "0", 0, epoch + 600_000, "ACTIVE", True)]
    )  # fmt: skip
    output = output_frame([(0, epoch, "ACTIVE"), (5, epoch + 600_000, "ACTIVE")])
    fig = watermark_figure(history, output, step=0, last_step=6)
    assert fig.layout.yaxis.title.text == "watermark (UTC)"
    assert "10:08" in fig.layout.yaxis.ticktext and "MIN" in fig.layout.yaxis.ticktext
    berlin = watermark_figure(history, output, step=0, last_step=6, t=TimeFormat(zone="Europe/Berlin"))
    assert (
        berlin.layout.yaxis.title.text == "watermark (Europe/Berlin)"
        and "11:08" in berlin.layout.yaxis.ticktext
    )
    raw = watermark_figure(history, output, step=0, last_step=6, t=TimeFormat("ms"))
    assert raw.layout.yaxis.title.text == "watermark (ms)"


def test_absolute_mode_shows_a_stall_of_every_instance_that_lag_behind_the_leader_hides():
    # Both instances stop at 100 while the input runs on to 400: equal, so neither lags the other.
    steps = pd.DataFrame(
        {
            "instance": ["0", "1"] * 4,
            "order": np.arange(8),
            "output_wm": [100, 100, 100, 100, 100, 100, 100, 100],
            "event_ms": [100, 100, 200, 200, 300, 300, 400, 400],
            "watermark_ms": [None] * 8,
        }
    )
    matrix = heatmap_matrix(steps, buckets=4)
    leader = np.asarray(instance_heatmap(matrix).data[0].z, dtype=float)
    assert (leader == 0).all()
    frontier = input_frontier(steps, np.asarray(matrix.columns))
    assert frontier.tolist() == [100, 200, 300, 400]
    fig = instance_heatmap(matrix, frontier=frontier)
    z = np.asarray(fig.data[0].z, dtype=float)
    assert z[:, 0].tolist() == [0, 0] and z[:, -1].tolist() == [300, 300]  # growing in every row
    assert "behind the newest input" in fig.data[0].hovertext[0][-1]
    bar = fig.data[0].colorbar
    assert bar.thickness >= 15 and bar.len == 1 and list(bar.ticktext)[-1].endswith("ms")


def test_a_window_of_a_long_trace_is_drawn_from_its_first_step_with_only_its_own_events():
    history = history_frame([(999, "0", 0, 5, "ACTIVE", True), (1500, "0", 0, 9, "ACTIVE", True)])
    output = output_frame([(s, 5, "ACTIVE") for s in range(1000, 2000)])
    marks = ChartMarks(events={"late drop": [3, 1200, 5000], "retraction": [10]})
    fig = watermark_figure(history, output, step=1200, last_step=1999, marks=marks)
    assert tuple(fig.layout.xaxis.range) == (998.5, 2000.5)
    assert list(trace(fig, "late drop").x) == [1200]
    assert not [t for t in fig.data if t.name == "retraction"]
