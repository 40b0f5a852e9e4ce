"""The "Late rows" table beside the step (docs/late-rows.md): the late-row ledger of the instance on
screen, filterable by fate; each row's step is a link to the page's own view at that step (the
URL that carries the whole view, as a shared link does), and the step on screen is highlighted.

The timeline keeps no record fates, so the ledger is the run again in this process
(`wmviz.analysis.late_ledger` over `wmviz.core.simulate`), once per trace and profile for every
session, and only for traces up to `MAX_PAGE_LEDGER_ROWS` rows (`wmviz late` has no limit).
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlencode

import streamlit as st

from wmviz.analysis.late_ledger import PAGE_FILTERS, LedgerRow, build_ledger, operator_name, page_selection
from wmviz.analysis.late_ledger import table_rows as ledger_table_rows
from wmviz.core.scenario import NoOperator
from wmviz.core.simulate import simulate
from wmviz.core.types import Profile
from wmviz.store.runs import file_digest
from wmviz.timeline.meta import TimelineMeta
from wmviz.ui import state
from wmviz.view.html_table import Html, esc, table
from wmviz.view.timefmt import TimeFormat
from wmviz.view.url import ViewParams, view_query

MAX_PAGE_LEDGER_ROWS = 200_000
"""The page runs the trace again for its ledger only up to this many rows."""
MAX_SHOWN = 200
"""Rows drawn at once: the ones nearest the step on screen."""
LEDGER_CLASS = "wmviz-ledger"
NOW_CLASS = "now"
COLUMNS = ("step", "row", "event time", "CURRENT_WATERMARK", "behind", "fate", "rule", "metric", "why")
LEDGER_CSS = f"""<style>
table.{LEDGER_CLASS} tr.{NOW_CLASS} td {{ background: #fff3c4; font-weight: 600; }}
table.{LEDGER_CLASS} {{ width: 100%; }}
table.{LEDGER_CLASS} :is(th, td) {{ overflow-wrap: anywhere; }}
</style>"""


@st.cache_resource(show_spinner="reading each record's fate…", max_entries=8)
def _ledger(trace_path: str, config_path: str | None, digest: str, profile: str) -> list[LedgerRow]:
    """The ledger of a trace under a profile, once per trace bytes for every session."""
    del digest  # part of the cache key only
    from wmviz.trace.readers import read_trace

    trace = read_trace(Path(trace_path), Path(config_path) if config_path else None)
    return build_ledger(simulate(trace, Profile.parse(profile)), operator_name(trace.config))


def late_rows_panel(
    incident, profile: Profile, view: ViewParams, meta: TimelineMeta, instance: str, t: TimeFormat, step: int
) -> None:
    """The "Late rows" box: its fate filter and the table of the instance's records."""
    box = st.container(key=state.LATE_ROWS)
    box.markdown("**Late rows**")
    if isinstance(meta.config.operator, NoOperator):
        box.caption("No operator in this run: records only pass the valve, so no row has a fate.")
        return
    rows = meta.steps
    if rows > MAX_PAGE_LEDGER_ROWS:
        box.caption(
            f"This trace has {rows:,} rows; the page reads each record's fate for up to "
            f"{MAX_PAGE_LEDGER_ROWS:,}. `wmviz late TRACE` lists them all."
        )
        return
    config = str(incident.config_path) if incident.config_path else None
    digest = file_digest(incident.trace_path)
    ledger = _ledger(str(incident.trace_path), config, digest, profile.value)
    choice = box.segmented_control(
        "Show", PAGE_FILTERS, default=PAGE_FILTERS[0], key=state.LATE_FILTER, label_visibility="collapsed"
    )
    chosen = page_selection(ledger, instance, choice or PAGE_FILTERS[0])
    box.caption(_caption(len(chosen), choice or PAGE_FILTERS[0]))
    if chosen:
        box.html(LEDGER_CSS + ledger_html(_nearest(chosen, step), view, step, t))


def _caption(count: int, choice: str) -> str:
    what = {"late": "behind the watermark on arrival, or not simply kept", "all": "every record"}
    said = what.get(choice, choice)
    shown = f"; the {MAX_SHOWN} nearest this step shown" if count > MAX_SHOWN else ""
    return (
        f"{count:,} records ({said}){shown}. CURRENT_WATERMARK is the watermark the operator had "
        "before the row; a step links to that step."
    )


def _nearest(rows: list[LedgerRow], step: int) -> list[LedgerRow]:
    """At most `MAX_SHOWN` rows, those whose steps are nearest `step`, in their order."""
    if len(rows) <= MAX_SHOWN:
        return rows
    keep = sorted(range(len(rows)), key=lambda i: (abs(rows[i].step - step), i))[:MAX_SHOWN]
    return [rows[i] for i in sorted(keep)]


def ledger_html(rows: list[LedgerRow], view: ViewParams, step: int, t: TimeFormat) -> str:
    """The table as escaped HTML: each step a link to the page at that step, the step on screen's
    rows highlighted (`now`)."""
    cells = []
    for entry, shown in zip(rows, ledger_table_rows(rows, t), strict=True):
        query = urlencode(view_query(view.with_step(entry.step)))
        link = Html(f'<a href="?{esc(query)}" target="_self">{entry.step}</a>')
        cells.append([link, *(shown[c] for c in COLUMNS[1:])])
    classes = [NOW_CLASS if entry.step == step else "" for entry in rows]
    return table(COLUMNS, cells, row_classes=classes, css_class=LEDGER_CLASS)
