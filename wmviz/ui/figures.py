"""Pure Plotly figure builders for the app: the watermark history, the aligned heap, the
instance heatmap. Plotly, pandas and numpy only: no Streamlit, no Spark, no wall clock.

The x axis of the watermark figure counts steps. The state *after* step s is drawn over
[s, s+1), so a change at step s is the vertical jump at x = s (where the cursor stands), the
initial state (step -1) is visible before step 0, and the state after `last_step` still gets
its own width: every line and open band ends at `last_step + 1`.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from wmviz.core.types import MAX_MS, MIN_MS
from wmviz.ui.figures_common import (
    CURSOR_COLOR,
    MAX_TEXT,
    MIN_TEXT,
    OUTPUT_COLOR,
    POINT_CAP,
    STATUS_COLORS,
    clip_sentinels,
    describe_ms,
    natural_key,
    sentinel_levels,
    thin,
)
from wmviz.ui.figures_heap import heap_figure
from wmviz.ui.figures_heatmap import heatmap_matrix, instance_heatmap

__all__ = ["STATUS_COLORS", "heap_figure", "heatmap_matrix", "instance_heatmap", "watermark_figure"]

_BAND_STATUSES = ("IDLE", "FINISHED")
_LANE_PX = 12  # legible lane labels at 9 px type, so 64 channels need ~770 px of lanes


def watermark_figure(
    history: pd.DataFrame, output: pd.DataFrame, step: int, last_step: int, *, title: str = ""
) -> go.Figure:
    """Every channel's watermark over the steps, the output watermark, the IDLE/FINISHED periods.

    `history` has one row per channel change (`step`, -1 for the initial state; `input`,
    `channel`, `watermark_ms`, `status`, `aligned`); a channel's state holds until its next row,
    and its line starts at its first row. `output` has `step`, `output_wm`, `output_status`, one
    row per step or only the changes. Rows after `last_step` are ignored.

    Top subplot: one step line per channel (`ch 2`, or `L/ch 0` with several inputs) and a thick
    `output` line, MIN/MAX drawn just outside the finite range on labelled dashed lines. Bottom
    subplot: one lane per channel (and one for the output) with `IDLE` and `FINISHED` bars.
    A vertical `cursor` shape at `step` spans both. Long traces keep at most POINT_CAP points,
    exact around the cursor (see `thin`). Hover text: name, step, watermark (with the UTC time
    for epoch milliseconds from the year 2000 on, see EPOCH_FROM_MS), status, "not aligned".
    """
    end = last_step + 1
    hist, names = _channel_rows(history, last_step)
    out_steps, out_wm, out_status = _output_changes(output, last_step)
    wm = hist["watermark_ms"].to_numpy(np.int64)
    levels = sentinel_levels(wm, out_wm)
    lane_names = np.array(["output", *names], dtype=object)

    # Hover text for all channel rows at once: per-lane string building would dominate the time.
    lane = hist["lane"].to_numpy(np.int64)
    steps = hist["step"].to_numpy(np.int64)
    status = hist["status"].fillna("").to_numpy(object)
    extra = np.where(hist["aligned"].to_numpy(bool), "", ", not aligned").astype(object)
    text = _hover(steps, wm, status, extra)
    y = clip_sentinels(wm, levels)
    edges = np.flatnonzero(np.r_[True, lane[1:] != lane[:-1], True]) if len(lane) else np.zeros(1, int)
    traces: list[dict] = []
    for a, b in itertools.pairwise(edges):
        name = str(lane_names[lane[a]])
        traces.append(_line(steps[a:b], y[a:b], text[a:b], name, step, end))
    # The output is thinned before its hover text is built: it may hold a million changes.
    out_y = clip_sentinels(out_wm, levels)
    keep = thin(out_steps, out_y, step, POINT_CAP - 1)
    out_text = _hover(out_steps[keep], out_wm[keep], out_status[keep], "")
    output_line = _line(out_steps[keep], out_y[keep], out_text, "output", step, end)
    output_line["line"] = {"width": 4, "color": OUTPUT_COLOR}
    traces.append(output_line)
    # Status periods of every lane at once, the output (lane 0) first: lanes stay sorted.
    runs = _runs(
        np.r_[np.zeros(len(out_steps), np.int64), lane],
        np.r_[out_steps, steps],
        np.r_[out_status, status],
        end,
    )
    traces += [_band_bars(runs, lane_names, s, end) for s in _BAND_STATUSES]

    # Two stacked y axes on one x axis (cheaper than make_subplots, and the x axis is shared by
    # construction): watermarks on top, one status lane per channel below.
    lanes_px = _LANE_PX * len(lane_names) + 40
    height = 420 + lanes_px + 120
    split = lanes_px / (420 + lanes_px)
    shapes, notes = [], []
    all_wm = np.concatenate([wm, out_wm])
    for value, level, label in ((MAX_MS, levels[1], MAX_TEXT), (MIN_MS, levels[0], MIN_TEXT)):
        if (all_wm == value).any():
            # A sentinel has no place on a linear axis: say in words where it was put.
            shapes.append(
                {"type": "line", "name": label, "xref": "x domain", "x0": 0, "x1": 1, "yref": "y",
                 "y0": level, "y1": level, "line": {"dash": "dash", "color": "#555555", "width": 1}}
            )  # fmt: skip
            notes.append(
                {"x": 1, "xref": "x domain", "y": level, "yref": "y", "text": label, "showarrow": False,
                 "xanchor": "right", "yanchor": "bottom" if value == MAX_MS else "top",
                 "font": {"size": 11, "color": "#555555"}}
            )  # fmt: skip
    shapes.append(
        {"type": "line", "name": "cursor", "x0": step, "x1": step, "xref": "x", "y0": 0, "y1": 1,
         "yref": "paper", "line": {"color": CURSOR_COLOR, "width": 2}}
    )  # fmt: skip
    notes.append(
        {"x": step, "xref": "x", "y": 1, "yref": "paper", "text": f"step {step}", "showarrow": False,
         "yanchor": "bottom", "font": {"color": CURSOR_COLOR}}
    )  # fmt: skip
    layout = {
        "title": {"text": title} if title else None,
        "height": height,
        "barmode": "overlay",
        "hovermode": "closest",
        "uirevision": "watermarks",  # keep the user's zoom while the cursor moves
        "margin": {"t": 60, "r": 20},
        "xaxis": {"title": {"text": "step"}, "anchor": "y2", "range": [-1.5, end + 0.5]},
        "yaxis": {"title": {"text": "watermark (ms)"}, "domain": [split + 0.03, 1], "anchor": "x"},
        "yaxis2": {
            "domain": [0, split], "anchor": "x", "tickmode": "array", "showgrid": False,
            "tickvals": list(range(len(lane_names))), "ticktext": lane_names.tolist(),
            "range": [len(lane_names) - 0.5, -0.5], "tickfont": {"size": 9}, "title": {"text": "status"},
        },
        "shapes": shapes,
        "annotations": notes,
    }  # fmt: skip
    return go.Figure(data=traces, layout=layout)


def _channel_rows(history: pd.DataFrame, last_step: int) -> tuple[pd.DataFrame, list[str]]:
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
    return df, names


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


def _hover(steps, wm, status, extra) -> np.ndarray:
    """`step 5<br>watermark 10<br>IDLE, not aligned` for each point (vectorized); the trace's
    hovertemplate puts its name in front, so the name is not repeated in every string."""
    text = "step " + steps.astype(str).astype(object) + "<br>watermark " + describe_ms(wm)
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
