"""The Tune view (Streamlit): sweep the current trace over a small grid, show the table and the
chart of late share against firing delay, and open a chosen combination as a config what-if.

The grid is the form's `--vary` lines, read by `wmviz.analysis.sweep` like the command line's; the
sweep runs in this process (a small trace is what the page holds). A point is chosen by a click on
the chart or from the select box; "Open as what-if" makes it compare mode's other run, whose
`whatif:` target the page's link carries.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import streamlit as st

from wmviz.analysis.sweep import SweepError, parse_vary, recommend, run_sweep
from wmviz.analysis.whatif_edit import Configure
from wmviz.analysis.whatif_token import encode_edit
from wmviz.store.runs import file_digest
from wmviz.trace.errors import TraceValidationError
from wmviz.ui import state
from wmviz.ui.compare_view import WHATIF_PREFIX, resolve_whatif
from wmviz.view.plain import literal
from wmviz.view.tune import point_label, tune_figure

DEFAULT_GRID = "generator.out_of_orderness_ms=0,1s,2s,5s\noperator.allowed_lateness_ms=0,1s,5s"


@st.cache_data(show_spinner="sweeping…", max_entries=16)
def _sweep(trace_path: str, config_path: str | None, digest: str, lines: tuple[str, ...]) -> list[dict]:
    """The table, once per (trace bytes, grid)."""
    del digest  # part of the cache key only: a changed trace file is swept again

    from wmviz.trace.readers import read_trace

    trace = read_trace(Path(trace_path), Path(config_path) if config_path else None)
    return run_sweep(trace, [parse_vary(line) for line in lines])


def tune_panel(incident) -> None:
    """The Tune expander for the current trace."""
    with st.expander("Tune: pick the bounds from this trace's own data"):
        with st.form("tune_grid"):
            text = st.text_area("Grid: one FIELD=V1,V2,… per line", DEFAULT_GRID, key="tune_text")
            target = st.number_input("Target late share", 0.0, 1.0, 0.001, format="%.4f", key="tune_target")
            run = st.form_submit_button("Sweep")
        lines = tuple(line.strip() for line in text.splitlines() if line.strip())
        if run:
            st.session_state[state.TUNE_LINES] = lines
        chosen_lines = st.session_state.get(state.TUNE_LINES)
        if not chosen_lines:
            return
        try:
            config = str(incident.config_path) if incident.config_path else None
            digest = file_digest(incident.trace_path)
            table = _sweep(str(incident.trace_path), config, digest, chosen_lines)
        except (SweepError, TraceValidationError, ValueError) as exc:
            st.error(f"That grid cannot be swept: {literal(exc)}")
            return
        paths = [parse_vary(line).path for line in chosen_lines]
        best = recommend(table, target)
        st.caption(
            f"lowest latency with late share ≤ {target:g}: {literal(point_label(best, paths))}"
            if best is not None
            else f"no combination keeps the late share at or below {target:g}"
        )
        labels = [point_label(row, paths) for row in table]
        default = table.index(best) if best is not None else 0
        picked = st.session_state.get(state.TUNE_PICKED, default)
        event = st.plotly_chart(
            tune_figure(table, paths, picked), on_select="rerun", selection_mode="points", key="tune_chart"
        )
        selection = event.get("selection") if hasattr(event, "get") else None
        points = (selection or {}).get("points") or []
        if points and "customdata" in points[0]:
            picked = int(points[0]["customdata"])
            st.session_state[state.TUNE_PICKED] = picked
        index = st.selectbox("Combination", range(len(table)), index=picked, format_func=labels.__getitem__)
        st.dataframe(pd.DataFrame(table), hide_index=True)
        if st.button("Open as what-if", key="tune_open"):
            edit = Configure({path: table[index][path] for path in paths})
            target_id = WHATIF_PREFIX + encode_edit(edit)
            try:
                resolve_whatif(incident, target_id)
            except (ValueError, TraceValidationError) as exc:
                st.error(f"That config cannot be simulated: {literal(exc)}")
                return
            st.session_state[state.PENDING_COMPARE] = target_id
            st.rerun()
