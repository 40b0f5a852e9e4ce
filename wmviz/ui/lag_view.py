"""The freshness budget on the job graph page (Streamlit): beside the blame chain, how far the
picked vertex's output is behind and why, at the slider's moment (a table) and over the whole
recording (stacked bars, the moment marked). docs/lag.md says what each cause is."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from wmviz.analysis.blame import BlameError, Walker
from wmviz.analysis.lag_budget import LagBudget
from wmviz.ui import panels
from wmviz.view.lag_figure import budget_headline, budget_rows, lag_figure
from wmviz.view.plain import literal
from wmviz.view.timefmt import TimeFormat

MOMENTS = 60
"""The most moments the bars are computed at (spread over the recording): a budget walks the blame
chain once per moment, and blame's walk back over the samples is most of it (measured: 120
moments of a 12-vertex × 128-subtask × 360-sample recording took 2.1 s after its first blame,
under load; 60 take about half). Worked out once per recording and vertex."""


def lag_panel(walker: Walker, stamp: tuple, vertex: str, at_ms: int, t: TimeFormat) -> None:
    """The budget of `vertex` (an id) at `at_ms`, and its bars over time."""
    st.subheader("How late, and why", anchor=False)
    try:
        now = LagBudget(walker.rec, walker).at(walker.vertex(vertex), at_ms).as_json()
        over = _over_time(walker, stamp, vertex)
    except (BlameError, KeyError) as err:
        st.caption(literal(f"no freshness budget here: {err}"))
        return
    st.markdown(literal(budget_headline(now, t)))
    if now["parts"]:
        panels.frame_table(pd.DataFrame(budget_rows(now)), "job_lag")
    st.plotly_chart(lag_figure(over, t, at_ms), key="job_lag_bars", config={"displayModeBar": False})


@st.cache_resource(show_spinner=False, max_entries=16)
def _over_time(_walker: Walker, stamp: tuple, vertex: str) -> list[dict[str, Any]]:
    """The vertex's budgets over the recording, worked out once per recording (`stamp`: the walker
    is the page's, cached by it) and vertex."""
    budgets = LagBudget(_walker.rec, _walker).over_time(_walker.vertex(vertex), most=MOMENTS)
    return [b.as_json() for b in budgets]
