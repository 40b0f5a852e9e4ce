"""The lanes under the watermark chart: an `events` lane of markers (status changes, firings,
retractions, drops) and one lane per channel (and one for the output) with its IDLE and FINISHED
periods drawn as bars. Plotly dicts from numpy arrays only, like the rest of the figure builders."""

from __future__ import annotations

import numpy as np

from wmviz.view.figures_common import POINT_CAP, STATUS_COLORS

BAND_STATUSES = ("IDLE", "FINISHED")

EVENT_SYMBOLS = {
    "status change": ("circle", "#E69F00"),
    "timer firing": ("triangle-up", "#009E73"),
    "window firing": ("triangle-up", "#009E73"),
    "retraction": ("diamond", "#b2182b"),
    "late drop": ("x", "#b2182b"),
    "divergence": ("star", "#CC79A7"),
}


def event_markers(events: dict[str, np.ndarray], first: int, last_step: int) -> list[dict]:
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


def status_runs(lane: np.ndarray, steps: np.ndarray, status: np.ndarray, end: int) -> tuple[np.ndarray, ...]:
    """Every IDLE/FINISHED period as (lane, start, stop, status), stop exclusive.

    The rows must be sorted by lane, then step; a lane's last period runs to `end`."""
    new = np.r_[True, (status[1:] != status[:-1]) | (lane[1:] != lane[:-1])] if len(lane) else lane > 0
    lanes, starts, kinds = lane[new], steps[new], status[new]
    last_of_lane = np.r_[lanes[1:] != lanes[:-1], True] if len(lanes) else lanes > 0
    stops = np.where(last_of_lane, end, np.r_[starts[1:], end][: len(starts)])
    band = np.isin(kinds, BAND_STATUSES) & (stops > starts)
    return lanes[band], starts[band], stops[band], kinds[band]


def band_bars(runs: tuple[np.ndarray, ...], lane_names: np.ndarray, status: str, end: int) -> dict:
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
