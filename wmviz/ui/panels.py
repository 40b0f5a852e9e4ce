"""The panels of one step (Streamlit). Each takes plain values and lays them out; the content comes
from `wmviz.ui.model` and `wmviz.ui.figures`, which are tested without Streamlit.

User text (trace values, keys, payloads, names) is only ever shown through `st.dataframe`, `st.text`
or `st.code`, never as markdown or HTML.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from wmviz.core.pipeline import StepResult
from wmviz.core.story import explain_parts
from wmviz.core.types import format_ms
from wmviz.timeline.cursor import InstanceCursor
from wmviz.ui import figures, model
from wmviz.ui.figures import STATUS_COLORS


def _status_style(value: str) -> str:
    for status, colour in STATUS_COLORS.items():
        if isinstance(value, str) and value.startswith(status):
            return f"background-color: {colour}; color: white"
    return ""


def input_panel(cursor: InstanceCursor, step: int) -> None:
    """The input that just arrived, and the narration of what it did."""
    st.subheader(f"Step {step}: the input")
    record = cursor.row(step)
    st.dataframe(model.input_table(record), hide_index=True, width="stretch", key="input_table")


def narration_panel(result: StepResult) -> None:
    """What the valve and operator did at this step, rule by rule (the same text as `explain`)."""
    st.subheader("What happened")
    st.text("\n".join(f"• {part}" for part in explain_parts(result)))


def output_panel(
    views: list[model.ValveView], combined: tuple[int, str] | None, operator: int | None
) -> None:
    """The emitted output watermark and status (per valve, and combined for two inputs), and the
    watermark the operator itself sends downstream."""
    columns = st.columns(len(views) + (1 if combined else 0) + (1 if operator is not None else 0))
    for column, view in zip(columns, views, strict=False):
        label = "output watermark" if len(views) == 1 else f"input {view.input}: valve output"
        column.metric(label, model.watermark_text(view.output_wm), help=model.utc_text(view.output_wm))
        column.caption(f"status {view.output_status} · {model.utc_text(view.output_wm)}")
    if combined is not None:
        columns[len(views)].metric("combined watermark (min of L and R)", model.watermark_text(combined[0]))
        columns[len(views)].caption(f"status {combined[1]} · {model.utc_text(combined[0])}")
    if operator is not None:
        columns[-1].metric("operator output watermark (downstream)", model.watermark_text(operator))
        columns[-1].caption(model.utc_text(operator))


def valve_panel(view: model.ValveView, changed_channel: int | None) -> None:
    """The channel table and the aligned min-heap drawn as a tree."""
    left, right = st.columns([3, 2])
    with left:
        title = "Channels" if view.input == "0" else f"Channels of input {view.input}"
        st.markdown(f"**{title}**")
        styled = view.channels.style.map(_status_style, subset=["status"])
        st.dataframe(styled, hide_index=True, width="stretch", key=f"channels_{view.input}")
    with right:
        st.markdown("**Aligned min-heap** (the root is the output candidate)")
        fig = figures.heap_figure(view.heap, highlight=changed_channel)
        st.plotly_chart(fig, width="stretch", key=f"heap_{view.input}", config={"displayModeBar": False})


def watermark_chart(history: pd.DataFrame, output: pd.DataFrame, step: int, last_step: int) -> None:
    """Every channel's watermark and the output over steps, IDLE/FINISHED as bands, a cursor."""
    fig = figures.watermark_figure(history, output, step, last_step, title="Watermarks over steps")
    st.plotly_chart(fig, width="stretch", key="watermark_chart")


def operator_panels(cursor: InstanceCursor, pipeline, step: int) -> None:
    """Timers, window panes, the join changelog and drops, as tabs (only those the scenario has)."""
    names = ["Timers"]
    panes = model.panes_table(pipeline)
    cache = model.join_cache_table(pipeline)
    if panes is not None:
        names.append("Window panes")
    if cache is not None:
        names.append("Join changelog")
    names.append("Dropped records")
    tabs = dict(zip(names, st.tabs(names), strict=True))
    with tabs["Timers"]:
        timers = model.timers_table(cursor, pipeline, step)
        if timers.empty:
            st.caption("No timer is pending, registered or fired at this step.")
        st.dataframe(timers, hide_index=True, width="stretch", key="timers_table")
    if panes is not None:
        with tabs["Window panes"]:
            st.caption(f"Operator event time: {format_ms(pipeline.operator.watermark_ms)}")
            st.dataframe(panes, hide_index=True, width="stretch", key="panes_table")
            st.markdown("**Firings so far**")
            st.dataframe(
                model.window_firings_table(cursor, step), hide_index=True, width="stretch", key="firings"
            )
    if cache is not None:
        with tabs["Join changelog"]:
            log = model.changelog_table(cursor, step)
            styled = log.style.map(_kind_style, subset=["kind"]) if not log.empty else log
            st.dataframe(styled, hide_index=True, width="stretch", key="changelog_table")
            st.caption("`corrects` links each -U to the row number (#) of the row it retracts.")
            st.markdown("**Rows the join still caches**")
            st.dataframe(cache, hide_index=True, width="stretch", key="join_cache")
    with tabs["Dropped records"]:
        dropped = model.dropped_table(cursor, step)
        if dropped.empty:
            st.caption("Nothing was dropped at this step.")
        st.dataframe(dropped, hide_index=True, width="stretch", key="dropped_table")


_KIND_COLOURS = {"+I": "#1b7837", "-U": "#b2182b", "+U": "#2166ac"}


def _kind_style(value: str) -> str:
    colour = _KIND_COLOURS.get(value)
    return f"background-color: {colour}; color: white" if colour else ""


def overview_panel(matrix: pd.DataFrame, cursor_order: int) -> None:
    """Every instance's output watermark over arrival order, to find the stuck subtask."""
    st.plotly_chart(figures.instance_heatmap(matrix, cursor_order), width="stretch", key="overview")
