"""The Tune view's figure: each sweep combination as a point of late share against p95 firing
delay, the Pareto front (no other point is better on both) drawn as a line through its points.

Pure: a Plotly figure dict from the sweep's table (`wmviz.analysis.sweep`), which this view
reads but never imports (the view layer sits below the analyses); no Streamlit.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from wmviz.view.figures_common import plotly_text

FRONT_COLOR = "#d62728"
POINT_COLOR = "#1f77b4"


def pareto_front(table: Sequence[dict[str, Any]]) -> list[int]:
    """Indexes of the rows no other row beats on both late share and p95 firing delay (lower is
    better on each; a row without firings has no delay and is left out)."""
    points = [
        (i, row["late_share"], row["firing_delay_p95_ms"])
        for i, row in enumerate(table)
        if row["firing_delay_p95_ms"] is not None
    ]
    front = []
    for i, share, delay in points:
        beaten = any(s <= share and d <= delay and (s < share or d < delay) for j, s, d in points if j != i)
        if not beaten:
            front.append(i)
    return front


def point_label(row: dict[str, Any], paths: Sequence[str]) -> str:
    """A combination in one line: `generator.out_of_orderness_ms=5000, operator.allowed_lateness_ms=0`."""
    return ", ".join(f"{path}={'none' if row[path] is None else row[path]}" for path in paths)


def tune_figure(table: Sequence[dict[str, Any]], paths: Sequence[str], chosen: int | None = None) -> dict:
    """Late share (x) against p95 firing delay (y) for every combination that fired; the front in
    red, the chosen point ringed. `customdata` holds each point's row index (what a click selects)."""
    front = pareto_front(table)
    fired = [i for i, row in enumerate(table) if row["firing_delay_p95_ms"] is not None]

    def trace(indexes: list[int], name: str, color: str, mode: str) -> dict:
        return {
            "type": "scatter",
            "mode": mode,
            "name": name,
            "x": [table[i]["late_share"] for i in indexes],
            "y": [table[i]["firing_delay_p95_ms"] for i in indexes],
            "customdata": indexes,
            "text": [plotly_text(point_label(table[i], paths)) for i in indexes],  # user-typed fields
            "hovertemplate": "%{text}<br>late share %{x:.4g}<br>p95 firing delay %{y:,} ms<extra></extra>",
            "marker": {"color": color, "size": 10},
        }

    ordered_front = sorted(front, key=lambda i: (table[i]["late_share"], table[i]["firing_delay_p95_ms"]))
    data = [
        trace([i for i in fired if i not in front], "combination", POINT_COLOR, "markers"),
        trace(ordered_front, "Pareto front", FRONT_COLOR, "lines+markers"),
    ]
    if chosen is not None and chosen in fired:
        ring = trace([chosen], "chosen", "rgba(0,0,0,0)", "markers")
        ring["marker"] = {"size": 18, "color": "rgba(0,0,0,0)", "line": {"color": "black", "width": 2}}
        data.append(ring)
    return {
        "data": data,
        "layout": {
            "xaxis": {"title": {"text": "late share (dropped / records)"}, "rangemode": "tozero"},
            "yaxis": {"title": {"text": "p95 firing delay (ms)"}, "rangemode": "tozero"},
            "margin": {"l": 60, "r": 20, "t": 30, "b": 50},
            "height": 380,
            "legend": {"orientation": "h"},
        },
    }
