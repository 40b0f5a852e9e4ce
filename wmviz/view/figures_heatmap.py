"""Every instance's output watermark over arrival order, coloured by how far it lags: behind the
leading instance, or (absolute) behind the newest input time seen so far."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from wmviz.core.types import MAX_MS, MIN_MS
from wmviz.view.figures_common import (
    CURSOR_COLOR,
    clip_sentinels,
    describe_ms,
    natural_key,
    plotly_texts,
    sentinel_levels,
)
from wmviz.view.timefmt import DEFAULT, TimeFormat, duration


def heatmap_matrix(steps: pd.DataFrame, buckets: int = 120) -> pd.DataFrame:
    """Each instance's last `output_wm` at or before the upper bound of each order bucket.

    `steps` has `instance`, `order` (global arrival order) and `output_wm`. The orders from the
    smallest to the largest are split into `buckets` equal-width buckets (fewer when there are
    fewer distinct order values than buckets, so no two columns share a bound); the columns
    (named "order") are each bucket's inclusive integer upper bound, the last one the largest
    order. The index ("instance") is in natural order ("2" before "10"). A cell is MIN_MS before
    the instance's first step. int64 throughout, so MIN/MAX and epoch times stay exact.
    """
    order = steps["order"].to_numpy(np.int64)
    wm = steps["output_wm"].to_numpy(np.int64)
    codes, names = pd.factorize(steps["instance"].astype(str), sort=False)
    if len(order) == 0:
        return pd.DataFrame(
            np.empty((0, 0), np.int64), index=pd.Index([], name="instance", dtype=object),
            columns=pd.Index([], name="order", dtype=np.int64),
        )  # fmt: skip
    lo, hi = int(order.min()), int(order.max())
    count = int(max(1, min(buckets, hi - lo + 1)))
    width = hi - lo + 1
    bounds = np.array([lo + width * k // count - 1 for k in range(1, count + 1)], dtype=np.int64)

    if (np.diff(order) < 0).any():
        by_order = np.argsort(order, kind="stable")
        order, wm, codes = order[by_order], wm[by_order], codes[by_order]
    cell = codes.astype(np.int64) * count + np.searchsorted(bounds, order, side="left")
    # The last row of each (instance, bucket) cell: the first occurrence in the reversed rows.
    cells, first_reversed = np.unique(cell[::-1], return_index=True)
    mat = np.full((len(names), count), MIN_MS, dtype=np.int64)
    mat.flat[cells] = wm[len(wm) - 1 - first_reversed]
    # Carry each instance's watermark into the later buckets where it has no step.
    source = np.full(mat.shape, -1, dtype=np.int64)
    source.flat[cells] = np.asarray(cells) % count
    source = np.maximum.accumulate(source, axis=1)
    filled = np.take_along_axis(mat, np.maximum(source, 0), axis=1)
    filled[source < 0] = MIN_MS

    rank = sorted(range(len(names)), key=lambda i: natural_key(names[i]))
    return pd.DataFrame(
        filled[rank], index=pd.Index([names[i] for i in rank], name="instance", dtype=object),
        columns=pd.Index(bounds, name="order"),
    )  # fmt: skip


def input_frontier(steps: pd.DataFrame, bounds: np.ndarray) -> np.ndarray:
    """The newest input time seen over all instances up to each bucket bound: the largest finite
    `event_ms` or `watermark_ms` of the rows with `order` ≤ the bound (MIN_MS before any).

    What "absolute" lag is measured against: when every instance stalls while data keeps arriving,
    the lag of all of them grows, which lag behind the leader (itself stalled) cannot show."""
    order = steps["order"].to_numpy(np.int64)
    times = np.full(len(order), MIN_MS, dtype=np.int64)
    for column in ("event_ms", "watermark_ms"):
        if column in steps:
            values = steps[column]
            present = values.notna().to_numpy()
            v = np.full(len(order), MIN_MS, dtype=np.int64)
            v[present] = values[present].astype(np.int64).to_numpy()
            v[(v == MAX_MS)] = MIN_MS
            times = np.maximum(times, v)
    by_order = np.argsort(order, kind="stable")
    running = np.maximum.accumulate(times[by_order]) if len(order) else times
    at = np.searchsorted(order[by_order], np.asarray(bounds, dtype=np.int64), side="right") - 1
    return np.where(at >= 0, running[np.maximum(at, 0)] if len(running) else MIN_MS, MIN_MS)


LAG_MODES = ("behind the leading instance", "behind the newest input (absolute)")


def instance_heatmap(
    matrix: pd.DataFrame,
    cursor_order: int | None = None,
    *,
    frontier: np.ndarray | None = None,
    t: TimeFormat = DEFAULT,
) -> go.Figure:
    """A heatmap of `heatmap_matrix`'s output: colour = how far each instance lags.

    Without `frontier` the lag of a cell is the leader's watermark minus its own in the same
    bucket (the leader is 0; a stall of every instance shows no lag). With `frontier`
    (`input_frontier`, "absolute" mode) it is the newest input time seen so far minus the
    watermark, so a stall of all instances shows as lag growing in every row. MIN/MAX are placed
    just outside the finite range (an instance still at MIN lags the most). The colour bar is
    labelled in durations (`10s`, `2m`); hover gives the real watermark (`t`, raw beside it), the
    exact lag and what it is measured against. A vertical `cursor` shape marks the bucket
    containing `cursor_order`.
    """
    layout = {
        "xaxis": {"title": {"text": "arrival order"}},
        # Categories, not numbers, even for instances named "0".."999"; the first one on top.
        "yaxis": {"title": {"text": "instance"}, "type": "category", "autorange": "reversed"},
        "showlegend": False,
        "margin": {"r": 120},
    }
    values = matrix.to_numpy(np.int64)
    if values.size == 0:
        layout["annotations"] = [
            {"text": "no steps to show", "x": 0.5, "y": 0.5, "xref": "paper", "yref": "paper",
             "showarrow": False}
        ]  # fmt: skip
        return go.Figure(layout=layout)
    # The categories of the y axis are its tick labels, and `%{y}` in the hover: user text, so
    # each is the text Plotly shows as it is (`plotly_text`), not markup.
    instances = plotly_texts(np.array([str(i) for i in matrix.index], dtype=object))
    bounds = np.asarray(matrix.columns, dtype=np.int64)

    if frontier is None:
        clipped = clip_sentinels(values, sentinel_levels(values))
        lag = clipped.max(axis=0) - clipped
        leader_row = values.argmax(axis=0)
        leader = values[leader_row, np.arange(values.shape[1])]
        against = ("instance " + instances[leader_row])[None, :]
        reference = np.broadcast_to(leader, values.shape)
    else:
        reference = np.broadcast_to(np.asarray(frontier, dtype=np.int64), values.shape)
        clipped = clip_sentinels(values, sentinel_levels(values, reference))
        ref_clipped = clip_sentinels(reference, sentinel_levels(values, reference))
        lag = np.maximum(ref_clipped - clipped, 0)
        against = np.full((1, values.shape[1]), "the newest input", dtype=object)
    finite = (values != MIN_MS) & (values != MAX_MS) & (reference != MAX_MS) & (reference != MIN_MS)
    # Exact int64 lag where both ends are real times (a span over 2^63 ms is not realistic).
    exact = np.where(finite, reference, 0) - np.where(finite, values, 0)
    raw_ms = np.where(np.abs(exact) >= 1000, " (" + exact.astype(str).astype(object) + " ms)", "")
    lag_text = _durations(exact) + raw_ms + " behind " + against
    lag_text = np.where((reference == MAX_MS) & (values != MAX_MS), "behind " + against + " at MAX", lag_text)
    lag_text = np.where(values >= reference, "leading" if frontier is None else "caught up", lag_text)
    lag_text = np.where(values == MIN_MS, "no watermark yet", lag_text)
    # Only the per-cell part goes into the text (instance and bound come from the template):
    # 120,000 long strings would dominate the time to build and to ship the figure.
    text = describe_ms(values.ravel(), t).reshape(values.shape) + "<br>" + lag_text
    top = float(lag.max()) if lag.size else 0.0
    ticks = _duration_ticks(top)
    title = "lag behind<br>the leader" if frontier is None else "lag behind<br>the newest input"
    heatmap = {
        "type": "heatmap", "z": lag, "x": bounds, "y": instances.astype(str), "colorscale": "YlOrRd",
        "zmin": 0, "name": "lag",
        "colorbar": {"title": {"text": title, "side": "top"}, "thickness": 18, "len": 1, "x": 1.02,
                     "tickvals": ticks, "ticktext": [duration(int(v)) for v in ticks], "outlinewidth": 0},
        "hovertext": text.astype(str),
        "hovertemplate": "instance %{y}<br>orders ≤ %{x}<br>watermark %{hovertext}<extra></extra>",
    }  # fmt: skip
    if cursor_order is not None:
        k = min(int(np.searchsorted(bounds, cursor_order, side="left")), len(bounds) - 1)
        layout["shapes"] = [
            {"type": "line", "name": "cursor", "x0": int(bounds[k]), "x1": int(bounds[k]), "y0": 0,
             "y1": 1, "xref": "x", "yref": "paper", "line": {"color": CURSOR_COLOR, "width": 2}}
        ]  # fmt: skip
    layout["height"] = min(900, max(300, 200 + 16 * len(instances)))
    return go.Figure(data=[heatmap], layout=layout)


def _durations(values: np.ndarray) -> np.ndarray:
    """`duration` of every value, one call per distinct value (lags repeat a lot)."""
    unique, inverse = np.unique(values, return_inverse=True)
    return np.array([duration(int(v)) for v in unique], dtype=object)[inverse].reshape(values.shape)


def _duration_ticks(top: float, count: int = 5) -> list[int]:
    """Round durations from 0 to `top` for the colour bar."""
    if top <= 0:
        return [0]
    values, _ = TimeFormat("relative", origin_ms=0).ticks(0, top, count)
    return values
