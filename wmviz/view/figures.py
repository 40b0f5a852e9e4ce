"""Pure Plotly figure builders for the app: the watermark history, the aligned heap, the
instance heatmap. Plotly, pandas and numpy only: no Streamlit, no Spark, no wall clock.

The x axis of the watermark figure counts steps. The state *after* step s is drawn over
[s, s+1), so a change at step s is the vertical jump at x = s (where the cursor stands), the
initial state (step -1) is visible before step 0, and the state after `last_step` still gets
its own width: every line and open band ends at `last_step + 1`.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from wmviz.core.types import MAX_MS, MIN_MS
from wmviz.view.figures_common import (
    CHANNEL_COLORS,
    CURSOR_COLOR,
    MAX_TEXT,
    MIN_TEXT,
    OUTPUT_BAND,
    POINT_CAP,
    STATUS_COLORS,
    clip_sentinels,
    describe_ms,
    natural_key,
    plotly_text,
    sentinel_levels,
    thin,
)
from wmviz.view.figures_heap import heap_figure
from wmviz.view.figures_heatmap import LAG_MODES, heatmap_matrix, input_frontier, instance_heatmap
from wmviz.view.figures_lanes import BAND_STATUSES, band_bars, event_markers, status_runs
from wmviz.view.timefmt import DEFAULT, TimeFormat, is_epoch

__all__ = [
    "LAG_MODES",
    "STATUS_COLORS",
    "ChartMarks",
    "heap_figure",
    "heatmap_matrix",
    "input_frontier",
    "instance_heatmap",
    "watermark_figure",
]

_LANE_PX = 12  # legible lane labels at 9 px type, so 64 channels need ~770 px of lanes


@dataclass(frozen=True)
class ChartMarks:
    """What the watermark chart points at besides the lines: the channels holding the minimum at
    the cursor (`(input, channel)`), the steps of each kind of event, the stall at the cursor."""

    holders: tuple[tuple[str, int], ...] = ()
    events: dict[str, np.ndarray] = field(default_factory=dict)
    stall: tuple[int, int, str] | None = None
    """(first step, step after the last, a one-line summary)."""


def watermark_figure(
    history: pd.DataFrame,
    output: pd.DataFrame,
    step: int,
    last_step: int,
    *,
    title: str = "",
    t: TimeFormat = DEFAULT,
    marks: ChartMarks | None = None,
) -> go.Figure:
    """The figure of `watermark_spec`."""
    return go.Figure(**watermark_spec(history, output, step, last_step, title=title, t=t, marks=marks))


def watermark_spec(
    history: pd.DataFrame,
    output: pd.DataFrame,
    step: int,
    last_step: int,
    *,
    title: str = "",
    t: TimeFormat = DEFAULT,
    marks: ChartMarks | None = None,
) -> dict:
    """The figure's `data` and `layout`, as plain values (`go.Figure(**spec)` makes the figure;
    `unchecked_figure` makes it without Plotly's validation). Every channel's watermark over the
    steps, the output watermark, the IDLE/FINISHED periods.

    `history` has one row per channel change (`step`, -1 for the initial state; `input`,
    `channel`, `watermark_ms`, `status`, `aligned`); a channel's state holds until its next row,
    and its line starts at its first row. `output` has `step`, `output_wm`, `output_status`, one
    row per step or only the changes. Rows after `last_step` are ignored.

    Top subplot: the `output` as a wide grey band drawn first, and over it one coloured step line
    per channel (`ch 2`, or `L/ch 0` with several inputs), so the channel that pins the output is
    seen on top of it; MIN/MAX sit on labelled bands off the finite range (SENTINEL_GAP); the y axis
    is labelled by `t` (clock times for epoch values). With `marks`, the channels holding the
    minimum at the cursor are drawn thicker and ringed there, and a stall is shaded and named.
    Bottom subplot: an `events` lane of markers (status changes, firings, retractions, drops),
    then one lane per channel (and one for the output) with `IDLE` and `FINISHED` bars.
    A vertical `cursor` shape at `step` spans both. Long traces keep at most POINT_CAP points,
    exact around the cursor (see `thin`). Hover text: name, step, watermark readable and raw,
    status, "not aligned".
    """
    marks = marks or ChartMarks()
    hist, names, keys = _channel_rows(history, last_step)
    out_steps, out_wm, out_status = _output_changes(output, last_step)
    rows = _LaneRows.of(hist)
    canvas = _Canvas(step, last_step + 1, sentinel_levels(rows.wm, out_wm), t)
    lane_names = np.array(["output", *names], dtype=object)
    holders = {keys.index(h) + 1 for h in marks.holders if h in keys}

    traces = [_output_band(canvas, out_steps, out_wm, out_status)]
    lines, notes = _channel_lines(canvas, rows, lane_names, holders)
    traces += lines
    # Status periods of every lane at once, the output (lane 0) first: lanes stay sorted.
    runs = status_runs(
        np.r_[np.zeros(len(out_steps), np.int64), rows.lane],
        np.r_[out_steps, rows.step],
        np.r_[out_status, rows.status],
        canvas.end,
    )
    traces += [band_bars(runs, lane_names, s, canvas.end) for s in BAND_STATUSES]
    # The first step drawn: -1 (the initial state) for a whole trace, first−1 for a window of it.
    start = int(
        min(rows.step.min() if len(rows.step) else step, out_steps.min() if len(out_steps) else step, step)
    )
    traces += event_markers(marks.events, start, last_step)

    value_axis, shapes, sentinel_notes = _value_axis(canvas, np.concatenate([rows.wm, out_wm]))
    notes += sentinel_notes
    if marks.stall is not None:
        shapes.append(_stall_band(marks.stall, canvas.end))
        notes.append(_stall_note(marks.stall))
    shapes.append(_cursor_line(step))
    notes.append(_cursor_note(step))
    # Two stacked y axes on one x axis (cheaper than make_subplots, and the x axis is shared by
    # construction): watermarks on top, an events lane and one status lane per channel below.
    lanes_px = _LANE_PX * (len(lane_names) + 1) + 40
    split = lanes_px / (380 + lanes_px)
    layout = {
        # Left-aligned, so it never runs into the legend at the top right.
        "title": {"text": plotly_text(title), "x": 0.01, "xanchor": "left"} if title else None,
        "height": 380 + lanes_px + 110,
        "barmode": "overlay",
        "hovermode": "closest",
        "uirevision": "watermarks",  # keep the user's zoom while the cursor moves
        "margin": {"t": 60, "r": 20},
        "legend": {"orientation": "h", "yanchor": "bottom", "y": 1.02, "xanchor": "right", "x": 1},
        "xaxis": {"title": {"text": "step"}, "anchor": "y2", "range": [start - 0.5, canvas.end + 0.5]},
        "yaxis": {**value_axis, "domain": [split + 0.03, 1], "anchor": "x"},
        "yaxis2": {
            "domain": [0, split], "anchor": "x", "tickmode": "array", "showgrid": False,
            "tickvals": list(range(-1, len(lane_names))), "ticktext": ["events", *lane_names.tolist()],
            "range": [len(lane_names) - 0.5, -1.5], "tickfont": {"size": 9}, "title": {"text": "status"},
        },
        "shapes": shapes,
        "annotations": notes,
    }  # fmt: skip
    return {"data": traces, "layout": layout}


def unchecked_figure(spec: dict) -> go.Figure:
    """`go.Figure(**spec)` without Plotly's validation of every property as it is built (its
    private `_validate` switch): for a figure only turned into JSON (the page's step, once per
    step), where the validation took a third to a half of the chart's time and coerces nothing
    the JSON does not carry anyway (`tests/ui/test_step_chart_unchecked.py`: the same figure)."""
    return go.Figure(**spec, _validate=False)


@dataclass(frozen=True)
class _Canvas:
    """What every part of the watermark figure is drawn against."""

    step: int
    """The cursor: thinning keeps every point around it."""
    end: int
    """`last_step + 1`: where every line and open band stops."""
    levels: tuple[float, float]
    """Where MIN and MAX are drawn (`sentinel_levels`)."""
    t: TimeFormat


@dataclass(frozen=True)
class _LaneRows:
    """The channel rows of `_channel_rows` as arrays, sorted by lane then step."""

    lane: np.ndarray
    step: np.ndarray
    wm: np.ndarray
    status: np.ndarray
    """"" for a missing status."""
    extra: np.ndarray
    """", not aligned" or "", for the hover text."""

    @staticmethod
    def of(hist: pd.DataFrame) -> _LaneRows:
        return _LaneRows(
            lane=hist["lane"].to_numpy(np.int64),
            step=hist["step"].to_numpy(np.int64),
            wm=hist["watermark_ms"].to_numpy(np.int64),
            status=hist["status"].fillna("").to_numpy(object),
            extra=np.where(hist["aligned"].to_numpy(bool), "", ", not aligned").astype(object),
        )


def _output_band(canvas: _Canvas, steps: np.ndarray, wm: np.ndarray, status: np.ndarray) -> dict:
    """The output watermark as a wide grey line, drawn first so the channels lie on top of it. It
    is thinned before its hover text is built: it may hold a million changes."""
    y = clip_sentinels(wm, canvas.levels)
    keep = thin(steps, y, canvas.step, POINT_CAP - 1)
    text = _hover(steps[keep], wm[keep], status[keep], "", canvas.t)
    band = _line(steps[keep], y[keep], text, "output", canvas.step, canvas.end)
    band["line"] = {"width": 10, "color": OUTPUT_BAND}
    return band


def _channel_lines(
    canvas: _Canvas, rows: _LaneRows, lane_names: np.ndarray, holders: set[int]
) -> tuple[list[dict], list[dict]]:
    """One coloured step line per channel, the `holders` (lane numbers) thicker and ringed at the
    cursor with a note saying so; returns the traces and the notes."""
    # Hover text for all channel rows at once: per-lane string building would dominate the time.
    text = _hover(rows.step, rows.wm, rows.status, rows.extra, canvas.t)
    y = clip_sentinels(rows.wm, canvas.levels)
    lane, steps, step = rows.lane, rows.step, canvas.step
    edges = np.flatnonzero(np.r_[True, lane[1:] != lane[:-1], True]) if len(lane) else np.zeros(1, int)
    traces: list[dict] = []
    notes: list[dict] = []
    for a, b in itertools.pairwise(edges):
        number = int(lane[a])
        name = str(lane_names[number])
        line = _line(steps[a:b], y[a:b], text[a:b], name, step, canvas.end)
        colour = CHANNEL_COLORS[(number - 1) % len(CHANNEL_COLORS)]
        line["line"] = {"width": 3.5 if number in holders else 1.8, "color": colour}
        traces.append(line)
        if number in holders:
            at = int(np.searchsorted(steps[a:b], step, side="right")) - 1
            value = y[a:b][max(at, 0)]
            traces.append(
                {"type": "scatter", "x": [step], "y": [value], "mode": "markers", "showlegend": False,
                 "name": f"{name} holds the minimum", "hoverinfo": "skip", "xaxis": "x", "yaxis": "y",
                 "marker": {"symbol": "circle-open", "size": 18, "line": {"width": 3, "color": colour}}}
            )  # fmt: skip
            notes.append(
                {"x": step, "y": value, "xref": "x", "yref": "y", "text": f"{name} holds the minimum",
                 "showarrow": True, "ax": 50, "ay": 28 + 18 * len(notes), "font": {"color": colour},
                 "arrowcolor": colour, "bgcolor": "rgba(255,255,255,0.85)"}
            )  # fmt: skip
    return traces, notes


def _value_axis(canvas: _Canvas, all_wm: np.ndarray) -> tuple[dict, list[dict], list[dict]]:
    """The watermark axis (its title, ticks and range), and for MIN and MAX when drawn, the
    labelled bands off the finite range (shapes and notes)."""
    levels, t = canvas.levels, canvas.t
    finite = all_wm[(all_wm != MIN_MS) & (all_wm != MAX_MS)]
    lo, hi = (float(finite.min()), float(finite.max())) if len(finite) else (levels[0], levels[1])
    ticks, labels = t.ticks(lo, hi) if len(finite) else ([], [])
    tick_values: list[float] = list(ticks)
    tick_text = list(labels)
    span = max(levels[1] - levels[0], 2.0)
    top, bottom = (hi, lo) if len(finite) else (0.0, 0.0)
    shapes: list[dict] = []
    notes: list[dict] = []
    for value, level, label in ((MAX_MS, levels[1], MAX_TEXT), (MIN_MS, levels[0], MIN_TEXT)):
        if (all_wm == value).any():
            # A sentinel has no place on a linear axis: a labelled band off the finite range says
            # in words where it was put, and the axis labels it with the word.
            half = span * 0.035
            shapes.append(
                {"type": "rect", "name": label, "xref": "x domain", "x0": 0, "x1": 1, "yref": "y",
                 "y0": level - half, "y1": level + half, "fillcolor": "rgba(120,120,120,0.12)",
                 "line": {"width": 0}, "layer": "below"}
            )  # fmt: skip
            edge = (top + level) / 2 if value == MAX_MS else (bottom + level) / 2
            shapes.append(
                {"type": "line", "name": f"{label} gap", "xref": "x domain", "x0": 0, "x1": 1,
                 "yref": "y", "y0": edge, "y1": edge, "line": {"dash": "dot", "color": "#999999", "width": 1}}
            )  # fmt: skip
            notes.append(
                {"x": 0, "xref": "x domain", "y": level, "yref": "y", "showarrow": False,
                 "text": f"{label} · off the scale", "xanchor": "left", "yanchor": "middle",
                 "font": {"size": 11, "color": "#444444"}}
            )  # fmt: skip
            tick_values.append(level)
            tick_text.append("MAX" if value == MAX_MS else "MIN")
    axis_title = "watermark (ms)"
    if t.mode == "relative":
        axis_title = "watermark (relative to the first time)"
    elif t.mode == "utc" and len(finite) and is_epoch(int(lo)) and is_epoch(int(hi)):
        axis_title = f"watermark ({t.zone_label})"
    axis = {
        "title": {"text": axis_title}, "tickmode": "array", "tickvals": tick_values, "ticktext": tick_text,
        "range": [levels[0] - span * 0.06, levels[1] + span * 0.06],
    }  # fmt: skip
    return axis, shapes, notes


def _stall_band(stall: tuple[int, int, str], end: int) -> dict:
    first, stop, _ = stall
    return {"type": "rect", "name": "stall", "xref": "x", "x0": max(first, -1), "x1": min(stop, end),
            "yref": "y domain", "y0": 0, "y1": 1, "fillcolor": "rgba(230,159,0,0.13)",
            "line": {"width": 0}, "layer": "below"}  # fmt: skip


def _stall_note(stall: tuple[int, int, str]) -> dict:
    first, _, summary = stall  # names inputs and channels: user text
    return {"x": max(first, 0), "xref": "x", "y": 1, "yref": "y domain", "text": plotly_text(summary),
            "showarrow": False, "xanchor": "left", "yanchor": "top", "align": "left",
            "font": {"size": 11, "color": "#8a5a00"}, "bgcolor": "rgba(255,255,255,0.8)"}  # fmt: skip


def _cursor_line(step: int) -> dict:
    return {"type": "line", "name": "cursor", "x0": step, "x1": step, "xref": "x", "y0": 0, "y1": 1,
            "yref": "paper", "line": {"color": CURSOR_COLOR, "width": 2}}  # fmt: skip


def _cursor_note(step: int) -> dict:
    return {"x": step, "xref": "x", "y": 1, "yref": "paper", "text": f"step {step}", "showarrow": False,
            "yanchor": "bottom", "font": {"color": CURSOR_COLOR}}  # fmt: skip


def _channel_rows(history: pd.DataFrame, last_step: int) -> tuple[pd.DataFrame, list[str], list]:
    """The history sorted by lane then step, one row per (channel, step), and the lane names.

    Lane 0 is the output; channels follow in natural input order ("2" before "10"), then by
    channel number. Of several rows for one channel and step the last wins (the state after it).
    """
    cols = ["step", "input", "channel", "watermark_ms", "status", "aligned"]
    df = history.loc[history["step"] <= last_step, cols].astype({"input": str, "channel": np.int64})
    keys = df[["input", "channel"]].drop_duplicates()
    ordered = sorted(zip(keys["input"], keys["channel"]), key=lambda k: (natural_key(k[0]), k[1]))
    several_inputs = len({i for i, _ in ordered}) > 1
    # Drawn as trace names, lane ticks, hover text and notes: an input's name is user text.
    names = [plotly_text(f"{i}/ch {c}") if several_inputs else f"ch {c}" for i, c in ordered]
    lanes = pd.DataFrame(ordered, columns=["input", "channel"]).assign(lane=np.arange(1, len(ordered) + 1))
    df = df.merge(lanes, on=["input", "channel"], how="left", sort=False)
    df = df.sort_values(["lane", "step"], kind="stable").drop_duplicates(["lane", "step"], keep="last")
    return df, names, [(str(i), int(c)) for i, c in ordered]


def _output_changes(output: pd.DataFrame, last_step: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Steps, watermarks and statuses of the rows of `output` that change something.

    A million steps usually hold far fewer changes; drawing only those keeps the line exact
    without thinning. Of several rows for one step the last wins."""
    steps = output["step"].to_numpy(np.int64)
    wm = output["output_wm"].to_numpy(np.int64)
    status = output["output_status"].to_numpy(object)
    if len(steps) == 0:
        return steps, wm, status
    rising = np.diff(steps)
    if (rising < 0).any():
        order = np.argsort(steps, kind="stable")
        steps, wm, status = steps[order], wm[order], status[order]
        rising = np.diff(steps)
    if (rising == 0).any() or steps[-1] > last_step:
        last = np.r_[rising != 0, True] & (steps <= last_step)
        steps, wm, status = steps[last], wm[last], status[last]
    changed = np.r_[True, (wm[1:] != wm[:-1]) | (status[1:] != status[:-1])]
    status = status[changed]
    status[pd.isna(status)] = ""  # a missing status must not read "None" or "nan" in a hover
    return steps[changed], wm[changed], status


def _hover(steps, wm, status, extra, t: TimeFormat = DEFAULT) -> np.ndarray:
    """`step 5<br>watermark 10<br>IDLE, not aligned` for each point (vectorized); the trace's
    hovertemplate puts its name in front, so the name is not repeated in every string."""
    text = "step " + steps.astype(str).astype(object) + "<br>watermark " + describe_ms(wm, t)
    return text + "<br>" + np.asarray(status, object) + extra


def _line(x: np.ndarray, y: np.ndarray, text: np.ndarray, name: str, cursor: int, end: int) -> dict:
    """One "hv" step line, thinned to POINT_CAP points and held until `end`."""
    keep = thin(x, y, cursor, POINT_CAP - 1)  # one point is left for the extension to `end`
    x, y, text = x[keep], y[keep], text[keep]
    if len(x) and x[-1] < end:
        # The last state holds to the end of the last step; the hover repeats what it says.
        x, y, text = np.append(x, end), np.append(y, y[-1]), np.append(text, text[-1])
    return {
        "type": "scatter", "x": x, "y": y, "mode": "lines", "line_shape": "hv", "name": name,
        # A str array: a list would be validated item by item, and an object array is
        # deep-copied item by item when the figure is built.
        "hovertext": text.astype(str), "hovertemplate": name + "<br>%{hovertext}<extra></extra>",
        "xaxis": "x", "yaxis": "y",
    }  # fmt: skip
