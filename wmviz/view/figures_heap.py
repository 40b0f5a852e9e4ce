"""The aligned min-heap drawn as a tree: root (the current minimum) at the top."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import plotly.graph_objects as go

from wmviz.view.figures_common import HIGHLIGHT_COLOR, ROOT_COLOR, STATUS_COLORS, describe_ms, plotly_text
from wmviz.view.timefmt import DEFAULT, TimeFormat

EMPTY_HEAP_TEXT = "no aligned channel (the heap is empty)"
_ASSUMED_WIDTH_PX = 800  # the plot width the label layout plans for (a typical app column)
_LABEL_DROP = 2.2  # levels of height under a crowded level, for its vertical labels
_UNIT_PX = 85  # pixels per level: a vertical 20-character label at 8 px is ~100 px


def heap_figure(
    heap: Sequence[tuple[int, int]],
    *,
    label: Callable[[int], str] = lambda c: f"ch {c}",
    highlight: int | None = None,
    t: TimeFormat = DEFAULT,
) -> go.Figure:
    """The heap in array order (children of i are 2i+1 and 2i+2) as a tree.

    Traces: `edges` (one line segment per parent-child pair, segments separated by None) and
    `nodes` (one marker per entry, text `ch 2<br>10` with MIN/MAX spelled out and
    times formatted by `t`). The root, which
    is the minimum the valve emits, is coloured ROOT_COLOR and annotated; the `highlight`
    channel gets a thick HIGHLIGHT_COLOR ring, or a note when it is not in the heap. Levels are
    spread over the full width, so text shrinks with depth; on a level too narrow for its labels
    side by side (planned for an 800 px plot: 13-digit epoch times from 16 slots on, small
    numbers from 64) each label is drawn vertically under its node as an annotation instead.
    """
    # The figure is made once from plain dicts: each add_trace, add_annotation or update validates
    # the figure again, which cost more than the rest of the drawing.
    layout: dict = {
        "xaxis": {"visible": False, "range": [-0.03, 1.03]},
        "yaxis": {"visible": False},
        "showlegend": False,
        "margin": {"t": 30, "b": 10, "l": 10, "r": 10},
        "hovermode": "closest",
    }
    nodes = list(heap)

    def shown(channel: int) -> str:
        """The channel's label as drawn: a caller's label may hold user text (an input's name)."""
        return plotly_text(label(channel))

    if not nodes:
        empty = {"text": EMPTY_HEAP_TEXT, "x": 0.5, "y": 0.5, "xref": "paper", "yref": "paper",
                 "showarrow": False, "font": {"size": 15}}  # fmt: skip
        return go.Figure(layout={**layout, "annotations": [empty], "height": 160})

    n = len(nodes)
    channels = [c for c, _ in nodes]
    watermarks = np.array([w for _, w in nodes], dtype=np.int64)
    depth = np.array([(i + 1).bit_length() - 1 for i in range(n)])
    slot = np.arange(n) + 1 - 2**depth
    x = (slot + 0.5) / 2**depth
    texts = [f"{shown(c)}<br>{t(int(w))}" for c, w in zip(channels, watermarks)]
    sizes = np.maximum(8, 14 - depth)
    # A level whose labels would not fit side by side (at _ASSUMED_WIDTH_PX, a character being
    # ~0.6 em wide) gets vertical labels under its nodes, and the level below moves down to make
    # room. Small demo watermarks stay horizontal for longer than 13-digit epoch times.
    levels = int(depth.max()) + 1
    longest = np.zeros(levels)
    for i, text in enumerate(texts):
        longest[depth[i]] = max(longest[depth[i]], *(len(part) for part in text.split("<br>")))
    crowded_level = [
        longest[d] * 0.6 * max(8, 14 - d) > _ASSUMED_WIDTH_PX / 2**d * 0.9 for d in range(levels)
    ]
    drops = [_LABEL_DROP if c else 1.0 for c in crowded_level]
    level_y = np.concatenate([[0.0], -np.cumsum(drops[:-1])])
    y = level_y[depth]
    crowded = np.array([crowded_level[d] for d in depth])

    edge_x: list[float | None] = []
    edge_y: list[float | None] = []
    for child in range(1, n):
        parent = (child - 1) // 2
        edge_x += [x[parent], x[child], None]
        edge_y += [y[parent], y[child], None]
    edges = {"type": "scatter", "x": edge_x, "y": edge_y, "mode": "lines", "name": "edges",
             "hoverinfo": "skip", "line": {"color": "#999999", "width": 1}}  # fmt: skip

    colors = [ROOT_COLOR if i == 0 else STATUS_COLORS["ACTIVE"] for i in range(n)]
    ring = [highlight is not None and c == highlight for c in channels]
    described = describe_ms(watermarks, t)
    hover = [
        f"{shown(c)}<br>watermark {described[i]}<br>heap index {i}"
        + (" (root: the current minimum)" if i == 0 else f", parent {shown(channels[(i - 1) // 2])}")
        + ("<br>just changed" if ring[i] else "")
        for i, c in enumerate(channels)
    ]
    points = {
        "type": "scatter", "x": x, "y": y, "mode": "markers+text", "name": "nodes", "text": texts,
        "textposition": "bottom center",
        # Every node keeps its text here; on crowded levels it is drawn by the vertical
        # annotations below instead, so it is transparent in the trace.
        "textfont": {"size": sizes.tolist(),
                     "color": ["rgba(0,0,0,0)" if c else "#222222" for c in crowded]},
        "marker": {
            "size": np.maximum(8, 26 - 3 * depth).tolist(), "color": colors,
            "line": {"width": [4 if r else 1 for r in ring],
                     "color": [HIGHLIGHT_COLOR if r else "#ffffff" for r in ring]},
        },
        "hovertext": hover, "hovertemplate": "%{hovertext}<extra></extra>",
    }  # fmt: skip
    notes = [
        {"x": x[i], "y": y[i], "text": texts[i].replace("<br>", " "), "textangle": -90,
         "showarrow": False, "xanchor": "center", "yanchor": "top", "yshift": -7,
         "font": {"size": int(sizes[i]), "color": "#222222"}}
        for i in np.flatnonzero(crowded)
    ]  # fmt: skip
    notes.append({"x": x[0], "y": y[0], "text": "minimum", "showarrow": True, "ax": 60, "ay": -18,
                  "font": {"color": ROOT_COLOR}})  # fmt: skip
    if highlight is not None and not any(ring):
        notes.append(
            {"text": f"{shown(highlight)} is not in the heap (not aligned)", "x": 0, "y": 0, "xref": "paper",
             "yref": "paper", "xanchor": "left", "yanchor": "bottom", "showarrow": False,
             "font": {"color": HIGHLIGHT_COLOR}}
        )  # fmt: skip
    bottom = level_y[-1] - (_LABEL_DROP - 0.4 if crowded_level[-1] else 0.6)
    layout["yaxis"]["range"] = [bottom, 0.6]
    layout.update(annotations=notes, height=int(120 + _UNIT_PX * (0.6 - bottom)))
    return go.Figure(data=[edges, points], layout=layout)
