"""The Tune view's figure: each sweep combination as a point of late share against p95 firing
delay, the Pareto front (no other point is better on both) drawn as a line through its points.

Pure: a Plotly figure dict from the sweep's table (`wmviz.analysis.sweep`), which this view
reads but never imports (the view layer sits below the analyses); no Streamlit.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from wmviz.view.figures_common import plotly_text
from wmviz.view.timefmt import TimeFormat, duration

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


def shown_value(path: str, value: Any) -> str:
    """A table or label value as a person reads it: a whole number of a `…_ms` field (a bound, a
    delay, a stall) as a duration (`2s`, `400ms`), none as `none`, anything else as it is."""
    if value is None:
        return "none"
    if path.endswith("_ms") and isinstance(value, int) and not isinstance(value, bool):
        return duration(value)
    return str(value)


def point_label(row: dict[str, Any], paths: Sequence[str]) -> str:
    """A combination in one line: `generator.out_of_orderness_ms=5s, operator.allowed_lateness_ms=0ms`."""
    return ", ".join(f"{path}={shown_value(path, row[path])}" for path in paths)


NEVER_FIRED = "never fired"


def readable_table(table: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The sweep's table with every duration (`…_ms`) written as one, and a combination that never
    fired saying so in its delay columns: the rows the page shows. Shares and counts stay numbers."""
    out = []
    for row in table:
        shown: dict[str, Any] = {}
        for path, value in row.items():
            if path.startswith("firing_delay_") and value is None:
                shown[path] = NEVER_FIRED
            elif path.endswith("_ms") and value is not None:
                shown[path] = shown_value(path, value)
            else:
                shown[path] = value
        out.append(shown)
    return out


def never_fired(table: Sequence[dict[str, Any]]) -> list[int]:
    """Indexes of the rows that fired nothing: they have no delay, so no point on the chart."""
    return [i for i, row in enumerate(table) if row["firing_delay_p95_ms"] is None]


def _delay_axis(delays: Sequence[int]) -> dict[str, Any]:
    """The p95 delay axis, its ticks written as durations (`2s`, not `2k`)."""
    top = max(delays, default=0)
    values, _ = TimeFormat("relative", origin_ms=0).ticks(0, max(top, 1), 5)
    return {
        "title": {"text": "p95 firing delay"}, "rangemode": "tozero", "tickmode": "array",
        "tickvals": values, "ticktext": [duration(int(v)) for v in values],
    }  # fmt: skip


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
            "hovertext": [duration(table[i]["firing_delay_p95_ms"]) for i in indexes],
            "hovertemplate": "%{text}<br>late share %{x:.4g}<br>p95 firing delay %{hovertext}<extra></extra>",
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
    layout: dict[str, Any] = {
        "xaxis": {"title": {"text": "late share (dropped / records)"}, "rangemode": "tozero"},
        "yaxis": _delay_axis([table[i]["firing_delay_p95_ms"] for i in fired]),
        "margin": {"l": 60, "r": 20, "t": 30, "b": 50},
        "height": 380,
        "legend": {"orientation": "h"},
    }
    silent = never_fired(table)
    if silent:
        # A combination with no firing has no delay to plot: say so rather than leave it out unseen.
        layout["annotations"] = [
            {"text": f"{len(silent)} of {len(table)} combinations never fired: not drawn (see the table)",
             "x": 1, "y": 1, "xref": "paper", "yref": "paper", "xanchor": "right", "yanchor": "top",
             "showarrow": False, "font": {"color": "#8a5a00"}, "bgcolor": "rgba(255,255,255,0.8)"}
        ]  # fmt: skip
    return {"data": data, "layout": layout}
