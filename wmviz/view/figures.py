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
    sentinel_levels,
    thin,
)
from wmviz.view.figures_heap import heap_figure
from wmviz.view.figures_heatmap import LAG_MODES, heatmap_matrix, input_frontier, instance_heatmap
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

_BAND_STATUSES = ("IDLE", "FINISHED")
_LANE_PX = 12  # legible lane labels at 9 px type, so 64 channels need ~770 px of lanes


@dataclass(frozen=True)
class ChartMarks:
    """What the watermark chart points at besides the lines: the channels holding the minimum at
    the cursor (`(input, channel)`), the steps of each kind of event, the stall at the cursor."""

    holders: tuple[tuple[str, int], ...] = ()
    events: dict[str, np.ndarray] = field(default_factory=dict)
    stall: tuple[int, int, str] | None = None
    """(first step, step after the last, a one-line summary)."""


EVENT_SYMBOLS = {
    "status change": ("circle", "#E69F00"),
    "timer firing": ("triangle-up", "#009E73"),
    "window firing": ("triangle-up", "#009E73"),
    "retraction": ("diamond", "#b2182b"),
    "late drop": ("x", "#b2182b"),
    "divergence": ("star", "#CC79A7"),
}


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
    """Every channel's watermark over the steps, the output watermark, the IDLE/FINISHED periods.

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
    end = last_step + 1
    hist, names, keys = _channel_rows(history, last_step)
    out_steps, out_wm, out_status = _output_changes(output, last_step)
    wm = hist["watermark_ms"].to_numpy(np.int64)
    levels = sentinel_levels(wm, out_wm)
    lane_names = np.array(["output", *names], dtype=object)
    holders = {keys.index(h) + 1 for h in marks.holders if h in keys}

    # The output first, as a band under the channels. It is thinned before its hover text is
    # built: it may hold a million changes.
    out_y = clip_sentinels(out_wm, levels)
    keep = thin(out_steps, out_y, step, POINT_CAP - 1)
    out_text = _hover(out_steps[keep], out_wm[keep], out_status[keep], "", t)
    output_line = _line(out_steps[keep], out_y[keep], out_text, "output", step, end)
    output_line["line"] = {"width": 10, "color": OUTPUT_BAND}
    traces: list[dict] = [output_line]

    # Hover text for all channel rows at once: per-lane string building would dominate the time.
    lane = hist["lane"].to_numpy(np.int64)
    steps = hist["step"].to_numpy(np.int64)
    status = hist["status"].fillna("").to_numpy(object)
    extra = np.where(hist["aligned"].to_numpy(bool), "", ", not aligned").astype(object)
    text = _hover(steps, wm, status, extra, t)
    y = clip_sentinels(wm, levels)
    edges = np.flatnonzero(np.r_[True, lane[1:] != lane[:-1], True]) if len(lane) else np.zeros(1, int)
    notes: list[dict] = []
    for a, b in itertools.pairwise(edges):
        number = int(lane[a])
        name = str(lane_names[number])
        line = _line(steps[a:b], y[a:b], text[a:b], name, step, end)
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
    # Status periods of every lane at once, the output (lane 0) first: lanes stay sorted.
    runs = _runs(
        np.r_[np.zeros(len(out_steps), np.int64), lane],
        np.r_[out_steps, steps],
        np.r_[out_status, status],
        end,
    )
    traces += [_band_bars(runs, lane_names, s, end) for s in _BAND_STATUSES]
    # The first step drawn: -1 (the initial state) for a whole trace, first−1 for a window of it.
    start = int(min(steps.min() if len(steps) else step, out_steps.min() if len(out_steps) else step, step))
    traces += _event_markers(marks.events, start, last_step)

    # Two stacked y axes on one x axis (cheaper than make_subplots, and the x axis is shared by
    # construction): watermarks on top, an events lane and one status lane per channel below.
    lanes_px = _LANE_PX * (len(lane_names) + 1) + 40
    height = 380 + lanes_px + 110
    split = lanes_px / (380 + lanes_px)
    shapes = []
    all_wm = np.concatenate([wm, out_wm])
    finite = all_wm[(all_wm != MIN_MS) & (all_wm != MAX_MS)]
    lo, hi = (float(finite.min()), float(finite.max())) if len(finite) else (levels[0], levels[1])
    tick_values, tick_text = t.ticks(lo, hi) if len(finite) else ([], [])
    span = max(levels[1] - levels[0], 2.0)
    top, bottom = (hi, lo) if len(finite) else (0.0, 0.0)
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
    if marks.stall is not None:
        first, stop, summary = marks.stall
        shapes.append(
            {"type": "rect", "name": "stall", "xref": "x", "x0": max(first, -1), "x1": min(stop, end),
             "yref": "y domain", "y0": 0, "y1": 1, "fillcolor": "rgba(230,159,0,0.13)",
             "line": {"width": 0}, "layer": "below"}
        )  # fmt: skip
        notes.append(
            {"x": max(first, 0), "xref": "x", "y": 1, "yref": "y domain", "text": summary,
             "showarrow": False, "xanchor": "left", "yanchor": "top", "align": "left",
             "font": {"size": 11, "color": "#8a5a00"}, "bgcolor": "rgba(255,255,255,0.8)"}
        )  # fmt: skip
    shapes.append(
        {"type": "line", "name": "cursor", "x0": step, "x1": step, "xref": "x", "y0": 0, "y1": 1,
         "yref": "paper", "line": {"color": CURSOR_COLOR, "width": 2}}
    )  # fmt: skip
    notes.append(
        {"x": step, "xref": "x", "y": 1, "yref": "paper", "text": f"step {step}", "showarrow": False,
         "yanchor": "bottom", "font": {"color": CURSOR_COLOR}}
    )  # fmt: skip
    axis_title = "watermark (ms)"
    if t.mode == "relative":
        axis_title = "watermark (relative to the first time)"
    elif t.mode == "utc" and len(finite) and is_epoch(int(lo)) and is_epoch(int(hi)):
        axis_title = f"watermark ({t.zone_label})"
    layout = {
        # Left-aligned, so it never runs into the legend at the top right.
        "title": {"text": title, "x": 0.01, "xanchor": "left"} if title else None,
        "height": height,
        "barmode": "overlay",
        "hovermode": "closest",
        "uirevision": "watermarks",  # keep the user's zoom while the cursor moves
        "margin": {"t": 60, "r": 20},
        "legend": {"orientation": "h", "yanchor": "bottom", "y": 1.02, "xanchor": "right", "x": 1},
        "xaxis": {"title": {"text": "step"}, "anchor": "y2", "range": [start - 0.5, end + 0.5]},
        "yaxis": {
            "title": {"text": axis_title}, "domain": [split + 0.03, 1], "anchor": "x",
            "tickmode": "array", "tickvals": tick_values, "ticktext": tick_text,
            "range": [levels[0] - span * 0.06, levels[1] + span * 0.06],
        },
        "yaxis2": {
            "domain": [0, split], "anchor": "x", "tickmode": "array", "showgrid": False,
            "tickvals": list(range(-1, len(lane_names))), "ticktext": ["events", *lane_names.tolist()],
            "range": [len(lane_names) - 0.5, -1.5], "tickfont": {"size": 9}, "title": {"text": "status"},
        },
        "shapes": shapes,
        "annotations": notes,
    }  # fmt: skip
    return go.Figure(data=traces, layout=layout)


def _event_markers(events: dict[str, np.ndarray], first: int, last_step: int) -> list[dict]:
    """One marker trace per kind of event on the `events` lane (lane -1), inside the steps drawn
    (at most POINT_CAP markers per kind, thinned evenly)."""
    traces = []
    inside = {}
    for kind, steps in events.items():
        x = np.asarray(steps, dtype=np.int64)
        x = x[(x >= first) & (x <= last_step)]
        if kind in EVENT_SYMBOLS and len(x):
            inside[kind] = x
    for i, (kind, x) in enumerate(inside.items()):
        if len(x) > POINT_CAP:
            x = x[np.linspace(0, len(x) - 1, POINT_CAP).astype(np.int64)]
        symbol, colour = EVENT_SYMBOLS[kind]
        offset = (i - (len(inside) - 1) / 2) * 0.22
        traces.append(
            {"type": "scatter", "x": x, "y": np.full(len(x), -1 + offset), "mode": "markers",
             "name": kind, "marker": {"symbol": symbol, "size": 9, "color": colour,
                                      "line": {"width": 1, "color": colour}},
             "hovertemplate": kind + " at step %{x}<extra></extra>", "xaxis": "x", "yaxis": "y2"}
        )  # fmt: skip
    return traces


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
    names = [f"{i}/ch {c}" if several_inputs else f"ch {c}" for i, c in ordered]
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


def _runs(lane: np.ndarray, steps: np.ndarray, status: np.ndarray, end: int) -> tuple[np.ndarray, ...]:
    """Every IDLE/FINISHED period as (lane, start, stop, status), stop exclusive.

    The rows must be sorted by lane, then step; a lane's last period runs to `end`."""
    new = np.r_[True, (status[1:] != status[:-1]) | (lane[1:] != lane[:-1])] if len(lane) else lane > 0
    lanes, starts, kinds = lane[new], steps[new], status[new]
    last_of_lane = np.r_[lanes[1:] != lanes[:-1], True] if len(lanes) else lanes > 0
    stops = np.where(last_of_lane, end, np.r_[starts[1:], end][: len(starts)])
    band = np.isin(kinds, _BAND_STATUSES) & (stops > starts)
    return lanes[band], starts[band], stops[band], kinds[band]


def _band_bars(runs: tuple[np.ndarray, ...], lane_names: np.ndarray, status: str, end: int) -> dict:
    """One horizontal bar per period of `status`: base = first step, length = its steps."""
    mine = runs[3] == status
    lane, start, stop = (a[mine] for a in runs[:3])
    count = np.ones(len(lane), np.int64)
    if len(lane) > POINT_CAP:
        # Too many bars to draw: merge neighbours on a lane across the shortest gaps first.
        # Lane changes always break; of the gaps within lanes, the k widest do too, ties
        # picked in a low-discrepancy order (multiples of the golden ratio) so that equal gaps
        # are merged evenly along the lane, not all at its end.
        gap = start[1:] - stop[:-1]
        breaks = lane[1:] != lane[:-1]
        within = np.flatnonzero(~breaks)
        k = max(0, POINT_CAP - 1 - int(breaks.sum()))
        spread = (within * 0.6180339887498949) % 1.0
        breaks[within[np.lexsort((spread, -gap[within]))[:k]]] = True
        first = np.flatnonzero(np.r_[True, breaks])
        count = np.diff(np.r_[first, len(lane)])
        stop = np.maximum.reduceat(stop, first)
        lane, start = lane[first], start[first]
    last = np.where(stop >= end, "the end", (stop - 1).astype(str).astype(object))
    text = lane_names[lane] + f": {status} over steps " + start.astype(str).astype(object) + "–" + last
    text = np.where(count > 1, text + " (" + count.astype(str).astype(object) + " periods merged)", text)
    return {
        "type": "bar", "y": lane, "x": stop - start, "base": start, "orientation": "h", "width": 0.8,
        "name": status, "marker": {"color": STATUS_COLORS[status]}, "hovertext": text.astype(str),
        "hovertemplate": "%{hovertext}<extra></extra>", "xaxis": "x", "yaxis": "y2",
    }  # fmt: skip
