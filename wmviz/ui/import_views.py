"""What the page adds for an imported incident: the source subtasks' split stage, drawn above the
channels it feeds, and the replay check against the watermark the job itself reported.

The tables and sentences are plain values of the step's state (`wmviz.view.imported`, tested
without a browser, and built once per step with the rest of the step in `wmviz.view.step_view`);
`split_stage` and `replay_check` draw them.
"""

from __future__ import annotations

import streamlit as st

from wmviz.view.imported import split_table as split_table  # the page's table, where tests look for it
from wmviz.view.plain import literal
from wmviz.view.step_view import ShownTable

SPLITS_BOX_REM = 9.5
"""The split stage's box: about four rows before it scrolls, so the channels stay above the fold."""
SPLIT_HELP = (
    "Each source subtask (a channel below) reads several splits, each with its own watermark "
    "generator. The subtask sends the minimum over its splits that are not idle, only when it rises "
    "above what it sent before; it goes idle when every split is idle. A split that resumes behind "
    "holds its subtask until it catches up."
)


def split_stage(table: ShownTable) -> None:
    """The split stage above the channel table, when the trace has split readers: the escaped HTML
    built with the step, each cell wrapping (a data grid cut the times at 1440×900)."""
    if table.empty:
        return
    box = st.container(key="split_stage")
    box.markdown("**Source splits → channels**", help=SPLIT_HELP)
    box.html(f'<div class="wmviz-table-box" style="max-height: {SPLITS_BOX_REM}rem">{table.html}</div>')


def replay_check(inferred: str | None, found: tuple[bool, str] | None) -> None:
    """Under the output, on the rows of a recorded or imported trace: whether the row's status was
    inferred (`inferred_text`), and the check against the watermark the job reported
    (`replay_check_text`)."""
    if inferred is not None:
        st.caption(literal(inferred))  # the column's value is the trace's text
    if found is None:
        return
    agrees, text = found
    if agrees:
        st.success(text, icon=":material/check_circle:")
    else:
        st.warning(text, icon=":material/rule:")
