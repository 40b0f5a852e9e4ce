"""The watermark chart of one run at one step, pointing at the culprit: the channels that hold the
minimum, the events, the stall the output is in. Pure (no Streamlit): the page, compare mode and
the report draw the same figure."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from wmviz.timeline.cursor import InstanceCursor
from wmviz.view import figures, model, stall
from wmviz.view.timefmt import DEFAULT, TimeFormat


def step_chart(
    cursor: InstanceCursor,
    step: int,
    views: list[model.ValveView],
    t: TimeFormat = DEFAULT,
    *,
    histories: tuple[pd.DataFrame, pd.DataFrame] | None = None,
    title: str = "Watermarks over steps",
    extra_events: dict | None = None,
) -> go.Figure:
    """The figure of `step_chart_spec`."""
    return go.Figure(
        **step_chart_spec(cursor, step, views, t, histories=histories, title=title, extra_events=extra_events)
    )


def step_chart_spec(
    cursor: InstanceCursor,
    step: int,
    views: list[model.ValveView],
    t: TimeFormat = DEFAULT,
    *,
    histories: tuple[pd.DataFrame, pd.DataFrame] | None = None,
    title: str = "Watermarks over steps",
    extra_events: dict | None = None,
) -> dict:
    """The chart's `data` and `layout` at `step` (the whole run, or CHART_STEPS around `step` for
    long runs).

    `histories` are the cursor's channel and output histories when the caller keeps them cached;
    `extra_events` adds marker kinds (compare mode's `divergence`)."""
    first, last = model.chart_window(cursor.count, step)
    history, output = histories or (cursor.channel_history(), cursor.output_history())
    holders = model.holders(views)
    found = stall.stall_at(cursor, step, holders)
    events = {k: v for k, v in cursor.events.items() if k != "output watermark"}
    events.update(extra_events or {})
    marks = figures.ChartMarks(
        holders=tuple(holders),
        events=events,
        stall=(found.start, found.end, stall.stall_text(found, cursor.count, t)) if found else None,
    )
    shown_history, shown_output = model.history_window(history, output, first, last)
    return figures.watermark_spec(shown_history, shown_output, step, last, title=title, t=t, marks=marks)
