"""Every instance's output watermark over arrival order, coloured by its lag behind the leader."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from wmviz.core.types import MAX_MS, MIN_MS
from wmviz.ui.figures_common import CURSOR_COLOR, clip_sentinels, describe_ms, natural_key, sentinel_levels


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


def instance_heatmap(matrix: pd.DataFrame, cursor_order: int | None = None) -> go.Figure:
    """A heatmap of `heatmap_matrix`'s output: colour = lag behind the most advanced instance.

    The lag of a cell is the leader's watermark minus its own in the same bucket, with MIN/MAX
    placed just outside the finite range (so the leader is 0 and an instance still at MIN lags
    the most). Hover gives the real watermark (MIN/MAX spelled out), the exact lag in ms and the
    leader. A vertical `cursor` shape marks the bucket containing `cursor_order`.
    """
    layout = {
        "xaxis": {"title": {"text": "arrival order"}},
        # Categories, not numbers, even for instances named "0".."999"; the first one on top.
        "yaxis": {"title": {"text": "instance"}, "type": "category", "autorange": "reversed"},
    }
    values = matrix.to_numpy(np.int64)
    if values.size == 0:
        layout["annotations"] = [
            {"text": "no steps to show", "x": 0.5, "y": 0.5, "xref": "paper", "yref": "paper",
             "showarrow": False}
        ]  # fmt: skip
        return go.Figure(layout=layout)
    instances = np.array([str(i) for i in matrix.index], dtype=object)
    bounds = np.asarray(matrix.columns, dtype=np.int64)

    clipped = clip_sentinels(values, sentinel_levels(values))
    lag = clipped.max(axis=0) - clipped
    leader_row = values.argmax(axis=0)
    leader = values[leader_row, np.arange(values.shape[1])]
    leaders = instances[leader_row][None, :]
    finite = (values != MIN_MS) & (values != MAX_MS) & (leader != MAX_MS)
    # Exact int64 lag where both ends are real times (a span over 2^63 ms is not realistic).
    exact = np.where(finite, leader, 0) - np.where(finite, values, 0)
    lag_text = exact.astype(str).astype(object) + " ms behind instance " + leaders
    lag_text = np.where(
        (leader == MAX_MS) & (values != MAX_MS), "behind instance " + leaders + " at MAX", lag_text
    )
    lag_text = np.where(values == leader, "leading", lag_text)
    lag_text = np.where(values == MIN_MS, "no watermark yet", lag_text)
    # Only the per-cell part goes into the text (instance and bound come from the template):
    # 120,000 long strings would dominate the time to build and to ship the figure.
    text = describe_ms(values.ravel()).reshape(values.shape) + "<br>" + lag_text
    heatmap = {
        "type": "heatmap", "z": lag, "x": bounds, "y": instances.astype(str), "colorscale": "YlOrRd",
        "zmin": 0, "name": "lag", "colorbar": {"title": {"text": "lag behind<br>the leader (ms)"}},
        "hovertext": text.astype(str),
        "hovertemplate": "instance %{y}<br>orders ≤ %{x}<br>watermark %{hovertext}<extra></extra>",
    }  # fmt: skip
    if cursor_order is not None:
        k = min(int(np.searchsorted(bounds, cursor_order, side="left")), len(bounds) - 1)
        layout["shapes"] = [
            {"type": "line", "name": "cursor", "x0": int(bounds[k]), "x1": int(bounds[k]), "y0": 0,
             "y1": 1, "xref": "x", "yref": "paper", "line": {"color": CURSOR_COLOR, "width": 2}}
        ]  # fmt: skip
    layout["height"] = min(900, 180 + 16 * len(instances))
    return go.Figure(data=[heatmap], layout=layout)
