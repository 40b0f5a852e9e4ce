"""The freshness budget over time: one stacked bar per sample moment, one colour per cause.

Pure: a Plotly figure dict from the budgets as plain rows (`Budget.as_json()` of
`wmviz.analysis.lag_budget`, which this view reads but never imports: the view layer sits below the
analyses); no Streamlit. Each bar's parts add up to its moment's total (an "unexplained" part,
negative when the derived parts claim more than was measured, is drawn below the axis, never
left out). Vertex and split names come from the recording: every one reaches Plotly through
`figures_common.plotly_text`.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from typing import Any

from wmviz.view.figures_common import CURSOR_COLOR, plotly_text
from wmviz.view.timefmt import TimeFormat, duration

CAUSE_COLORS: dict[str, str] = {
    # Okabe-Ito, so causes stay apart under colour-vision deficiencies; unexplained is grey.
    "out-of-orderness": "#56B4E9",
    "idle timeout": "#E69F00",
    "window": "#009E73",
    "join bound": "#F0E442",
    "alignment pause": "#CC79A7",
    "backlog": "#0072B2",
    "stall": "#D55E00",
    "unexplained": "#999999",
}
"""Each cause's colour, in the order the bars stack them (the analysis's `CAUSES`)."""
FALLBACK_COLOR = "#000000"


def lag_rows(budgets: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each moment's milliseconds per cause (a cause absent there is 0) beside its time and total."""
    rows = []
    for budget in budgets:
        row: dict[str, Any] = {"at_ms": budget["at_ms"], "total_ms": budget["total_ms"]}
        for part in budget["parts"]:
            row[part["cause"]] = row.get(part["cause"], 0) + part["ms"]
        rows.append(row)
    return rows


def lag_figure(
    budgets: Sequence[dict[str, Any]], t: TimeFormat | None = None, cursor_ms: int | None = None
) -> dict[str, Any]:
    """Stacked bars of each moment's budget, a cause a trace (only the causes that appear), the
    moment `cursor_ms` marked. Hover: the cause, its share, measured or derived, and where."""
    t = t or TimeFormat("utc")
    times = [b["at_ms"] for b in budgets]
    seen = {p["cause"] for b in budgets for p in b["parts"]}
    causes = [c for c in CAUSE_COLORS if c in seen] + sorted(seen - set(CAUSE_COLORS))
    width = min((b - a for a, b in pairwise(times)), default=1000) * 0.8
    data = []
    for cause in causes:
        ys, hover = [], []
        for budget in budgets:
            mine = [p for p in budget["parts"] if p["cause"] == cause]
            ys.append(sum(p["ms"] for p in mine))
            hover.append(
                "<br>".join(
                    plotly_text(f"{cause}: {duration(p['ms'])} ({p['kind']}) at {p['where']}") for p in mine
                )
                + f"<br>{plotly_text(t(budget['at_ms']))}: {plotly_text(duration(budget['total_ms']))} in all"
                if mine
                else ""
            )
        data.append(
            {
                "type": "bar",
                "name": plotly_text(cause),
                "x": times,
                "y": ys,
                "width": width,
                "marker": {"color": CAUSE_COLORS.get(cause, FALLBACK_COLOR)},
                "hovertext": hover,
                "hovertemplate": "%{hovertext}<extra></extra>",
            }
        )
    tops = [b["total_ms"] for b in budgets] + [min(0, *(p["ms"] for b in budgets for p in b["parts"]))]
    lo, hi = min(tops, default=0), max(tops, default=1)
    y_values, _ = TimeFormat("relative", origin_ms=0).ticks(lo, max(hi, 1), 5)
    x_values, x_text = t.ticks(min(times, default=0), max(times, default=1), 6)
    layout: dict[str, Any] = {
        "barmode": "relative",
        "bargap": 0,
        "xaxis": {"title": {"text": "moment"}, "tickmode": "array", "tickvals": x_values, "ticktext": x_text},
        "yaxis": {
            "title": {"text": "behind the reference"},
            "tickmode": "array",
            "tickvals": y_values,
            "ticktext": [duration(int(v)) for v in y_values],
        },
        "margin": {"l": 70, "r": 20, "t": 40, "b": 50},
        "height": 320,
        "legend": {"orientation": "h", "traceorder": "normal", "y": 1.02, "yanchor": "bottom", "x": 0},
    }
    if cursor_ms is not None:
        layout["shapes"] = [
            {"type": "line", "x0": cursor_ms, "x1": cursor_ms, "yref": "paper", "y0": 0, "y1": 1,
             "line": {"color": CURSOR_COLOR, "width": 2, "dash": "dot"}}
        ]  # fmt: skip
    return {"data": data, "layout": layout}


def budget_rows(budget: dict[str, Any]) -> list[dict[str, str]]:
    """One moment's budget as table rows, largest part first: the cause, how much (and its share of
    the total), measured or derived, where and why."""
    total = budget["total_ms"]
    return [
        {
            "cause": part["cause"],
            "behind": duration(part["ms"]),
            "share": f"{100 * part['ms'] / total:.1f}%" if total else "",
            "kind": part["kind"],
            "where": part["where"],
            "why": part["why"],
        }
        for part in sorted(budget["parts"], key=lambda p: -abs(p["ms"]))
    ]


def budget_headline(budget: dict[str, Any], t: TimeFormat) -> str:
    """The total in one sentence (plain text: the page escapes it)."""
    return (
        f"{budget['vertex']} subtask {budget['subtask']} is {duration(budget['total_ms'])} behind the "
        f"{budget['reference']} at {t(budget['at_ms'])}; its watermark is {t(budget['watermark_ms'])}"
    )
