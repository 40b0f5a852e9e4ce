"""The Tune view (Streamlit): sweep the current trace over a small grid, show the table and the
chart of late share against firing delay, and open a chosen combination as a config what-if.

The grid is the form's `--vary` lines, read by `wmviz.analysis.sweep` like the command line's; it
starts on the trace's own time scale (`default_grid`: a SQL trace's WATERMARK delay too). The
sweep runs in this process only within the page's budget (rows × combinations,
`MAX_PAGE_SWEEP_ROW_RUNS`) and only `MAX_PAGE_SWEEPS` at once per server; a larger one is refused
with the command that runs it on Spark. A point is chosen by a click on the chart or from the
select box; "Open as what-if" makes it compare mode's other run, whose `whatif:` target the page's
link carries.
"""

from __future__ import annotations

import functools
import threading
from pathlib import Path

import pandas as pd
import streamlit as st

from wmviz.analysis.sweep import SweepError, default_grid, grid_size, parse_vary, recommend, run_sweep
from wmviz.analysis.whatif_edit import Configure
from wmviz.analysis.whatif_token import encode_edit
from wmviz.core import budgets
from wmviz.core.errors import Refused
from wmviz.core.settings import MAX_PAGE_SWEEP_ROW_RUNS, MAX_PAGE_SWEEPS
from wmviz.store.runs import file_digest
from wmviz.trace.errors import TraceValidationError
from wmviz.ui import state
from wmviz.ui.bring import spark_threshold_mb
from wmviz.ui.compare_view import WHATIF_PREFIX, resolve_whatif
from wmviz.view.plain import literal
from wmviz.view.tune import never_fired, point_label, readable_table, tune_figure

NO_DEFAULT = (
    "# this trace's config has no watermark delay (a generator's, or a SQL WATERMARK col - INTERVAL …)"
    " nor a window to vary: name the fields to vary"
)
_GRID_FOR = "_tune_grid_for"  # which trace the grid's text was last filled in for


@functools.cache
def _slots() -> threading.BoundedSemaphore:
    """The server's sweeps at once (WMVIZ_MAX_PAGE_SWEEPS, read on the first sweep): every session
    of this process shares it."""
    return threading.BoundedSemaphore(MAX_PAGE_SWEEPS.get())


class SweepRefused(Refused):
    """A sweep the page will not run now (over its budget, or the server busy): the message says why."""


@st.cache_data(show_spinner=False, max_entries=64)
def _facts(trace_path: str, config_path: str | None, digest: str) -> tuple[int, tuple[str, ...]]:
    """The trace's row count and its default grid, once per trace bytes."""
    del digest  # part of the cache key only
    from wmviz.trace.readers import read_trace

    trace = read_trace(Path(trace_path), Path(config_path) if config_path else None)
    return len(trace.rows), tuple(default_grid(trace))


@st.cache_data(show_spinner="sweeping…", max_entries=16)
def _sweep(trace_path: str, config_path: str | None, digest: str, lines: tuple[str, ...]) -> list[dict]:
    """The table, once per (trace bytes, grid); a `SweepRefused` when no slot is free (not cached)."""
    del digest  # part of the cache key only: a changed trace file is swept again

    from wmviz.trace.readers import read_trace

    if not _slots().acquire(timeout=2.0):
        raise SweepRefused(budgets.page_sweeps_busy_reason())
    try:
        trace = read_trace(Path(trace_path), Path(config_path) if config_path else None)
        return run_sweep(trace, [parse_vary(line) for line in lines])
    finally:
        _slots().release()


def check_budget(rows: int, lines: tuple[str, ...]) -> None:
    """A `SweepRefused` naming the budget when the grid over this trace is too large for the page
    (a malformed line is left to the sweep's own message)."""
    combinations = grid_size([parse_vary(line) for line in lines])
    if rows * combinations > MAX_PAGE_SWEEP_ROW_RUNS.get():
        raise SweepRefused(budgets.page_sweep_reason(rows, combinations))


TUNE_OPEN = "tune_box_open"
"""Whether the Tune expander is open (its key): closed, as it nearly always is, a step neither
reads the trace for its grid nor sends the form, only the expander's label."""


def tune_panel(incident) -> None:
    """The Tune expander for the current trace, its contents drawn only while it is open."""
    st.session_state[TUNE_OPEN] = st.session_state.get(TUNE_OPEN, False)
    expander = st.expander(
        "Tune: pick the bounds from this trace's own data", key=TUNE_OPEN, on_change="rerun"
    )
    if not expander.open:
        return
    with expander:
        config = str(incident.config_path) if incident.config_path else None
        try:
            size = incident.trace_path.stat().st_size
            if size > spark_threshold_mb() * 2**20:
                # The page reads and runs only traces this small in its own process (as `bring` does).
                st.caption(
                    f"This trace ({size / 2**20:,.1f} MB) is larger than the page reads in its own "
                    f"process ({spark_threshold_mb():g} MB, WMVIZ_SPARK_UPLOAD_MB): sweep it on Spark "
                    "with `python -m wmviz sweep TRACE --vary … --engine spark --out table.csv`."
                )
                return
            digest = file_digest(incident.trace_path)
            rows, default = _facts(str(incident.trace_path), config, digest)
        except (TraceValidationError, ValueError, OSError) as exc:
            st.error(f"This trace cannot be swept: {literal(exc)}")
            return
        if st.session_state.get(_GRID_FOR) != digest:
            # A new trace: its own scale, not the last trace's grid.
            st.session_state[_GRID_FOR] = digest
            st.session_state[state.TUNE_TEXT] = "\n".join(default) if default else NO_DEFAULT
            st.session_state.pop(state.TUNE_LINES, None)
            st.session_state.pop(state.TUNE_PICKED, None)
        with st.form("tune_grid"):
            text = st.text_area("Grid: one FIELD=V1,V2,… per line", key=state.TUNE_TEXT)
            target = st.number_input("Target late share", 0.0, 1.0, 0.001, format="%.4f", key="tune_target")
            run = st.form_submit_button("Sweep")
        lines = tuple(
            line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("#")
        )
        if run:
            st.session_state[state.TUNE_LINES] = lines
            st.session_state.pop(state.TUNE_PICKED, None)  # a pick belongs to the grid it was made in
        chosen_lines = st.session_state.get(state.TUNE_LINES)
        if not chosen_lines:
            return
        try:
            check_budget(rows, chosen_lines)
            table = _sweep(str(incident.trace_path), config, digest, chosen_lines)
        except SweepRefused as exc:
            st.warning(str(exc))
            return
        except (SweepError, TraceValidationError, ValueError) as exc:
            st.error(f"That grid cannot be swept: {literal(exc)}")
            return
        _show_table(incident, table, [parse_vary(line).path for line in chosen_lines], target)


def _show_table(incident, table: list[dict], paths: list[str], target: float) -> None:
    """The recommendation, the chart, the pick and the table of a swept grid."""
    best = recommend(table, target)
    st.caption(
        f"lowest latency with late share ≤ {target:g}: {literal(point_label(best, paths))}"
        if best is not None
        else f"no combination keeps the late share at or below {target:g}"
    )
    silent = never_fired(table)
    if silent:
        st.caption(
            f"{len(silent)} of {len(table)} combinations never fired (no window closed or join row came "
            "out), so they have no delay and no point on the chart: "
            + literal("; ".join(point_label(table[i], paths) for i in silent))
        )
    labels = [point_label(row, paths) for row in table]
    default = table.index(best) if best is not None else 0
    picked = picked_row(st.session_state.get(state.TUNE_PICKED), len(table), default)
    event = st.plotly_chart(
        tune_figure(table, paths, picked), on_select="rerun", selection_mode="points", key="tune_chart"
    )
    selection = event.get("selection") if hasattr(event, "get") else None
    points = (selection or {}).get("points") or []
    if points and "customdata" in points[0]:
        picked = picked_row(points[0]["customdata"], len(table), picked)
    st.session_state[state.TUNE_PICKED] = picked
    index = st.selectbox("Combination", range(len(table)), index=picked, format_func=labels.__getitem__)
    st.dataframe(pd.DataFrame(readable_table(table)), hide_index=True)
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


def picked_row(value, count: int, default: int) -> int:
    """A picked row index that is one of this table's (`count` rows), else `default`: a pick made
    in another grid, or a chart selection left from one, must not outlive it."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)  # a chart's customdata may come back as a JSON number
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < count:
        return value
    return default
