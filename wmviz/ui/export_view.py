"""Export (Streamlit): the self-contained HTML incident report and PNG images of its charts.

Both are built only when the person clicks, for the step on screen then, and saved by a second
click (`downloads`), from a fresh cursor: the page's cursor belongs to the step view.
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from urllib.parse import urlencode

import streamlit as st

from wmviz.analysis.compare import step_map
from wmviz.core.settings import BASE_URL
from wmviz.report import CompareInput, ReportInput, build_report, chart_images
from wmviz.timeline.cursor import InstanceCursor
from wmviz.timeline.meta import TimelineMeta
from wmviz.timeline.store import Timeline
from wmviz.trace.config_write import config_to_dict
from wmviz.trace.sources import format_of
from wmviz.ui.downloads import Built, build_then_save
from wmviz.view.timefmt import DEFAULT, TimeFormat
from wmviz.view.url import ShownView, ViewParams, view_query

_TEXT_LIMIT = 2_000_000


def trace_text(trace_path: Path, config_path: Path | None) -> str:
    """The trace as text for the report: the file itself, or a CSV rendering of a Parquet file."""
    if format_of(trace_path.name) == "parquet":
        from wmviz.trace.readers import read_trace  # when a report is built: the first page never is
        from wmviz.trace.writers import write_trace_bytes

        return write_trace_bytes(read_trace(trace_path, config_path), "csv").decode("utf-8", "replace")
    with open(trace_path, "rb") as f:
        data = f.read(_TEXT_LIMIT + 1)  # the report truncates anyway; never read a huge file whole
    return data.decode("utf-8", "replace")


def base_url() -> str:
    """Where this app is reached, for a report's share link that is clicked from a file: the
    configured `WMVIZ_BASE_URL` (behind a proxy that rewrites the host), else the URL the browser
    asked for (`st.context.url`, without its query), else "" (a relative link)."""
    configured = BASE_URL.get() or ""
    seen = configured or st.context.url or ""
    return seen.split("?", 1)[0].split("#", 1)[0]


def export_buttons(
    incident, meta: TimelineMeta, timeline_path: str, shown: ShownView, other=None, t: TimeFormat = DEFAULT
) -> None:
    """Export buttons for the report (HTML) and the chart images (PNG, zipped), of the view on
    screen when clicked (`shown`). In compare mode (`other`, a `compare_view.OtherRun`) the report
    holds both runs and where they diverge."""
    config = config_to_dict(meta.config)
    instance = shown.view.instance
    assert instance is not None, "the page names the instance it shows before it offers an export"
    base = base_url()  # read here: the report is built on another thread, without the request

    def report_input(view: ViewParams) -> ReportInput:
        return ReportInput(
            title=incident.title,
            story_md=incident.story_md or None,
            description=meta.config.description or None,
            profile=meta.profile.value,
            engine=meta.engine,
            instance=instance,
            step=view.step,
            link=f"{base}?{urlencode(view_query(view))}",
            trace_name=incident.trace_path.name,
            trace_text=trace_text(incident.trace_path, incident.config_path),
            config_json=json.dumps(config, indent=2),
            time=t,
        )

    def cursor() -> InstanceCursor:
        return InstanceCursor(Timeline(Path(timeline_path)), instance)

    def compared(mine: InstanceCursor, step: int) -> CompareInput | None:
        if other is None:
            return None
        theirs = InstanceCursor(other.cursor.timeline, instance)
        mapped = step if other.edit is None else step_map(other.edit, mine.count, instance=instance)(step)
        if mapped is not None and mapped >= theirs.count:
            mapped = None
        return CompareInput(other.label, theirs, other.profile.value, mapped)

    def html() -> Built:
        view, mine = shown.view, cursor()  # the step on screen at the click, read once
        data = build_report(report_input(view), mine, compared(mine, view.step)).encode("utf-8")
        return Built(data, f"the report of step {view.step}")

    def pngs() -> Built:
        view = shown.view
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w") as zf:
            for name, data in chart_images(report_input(view), cursor()).items():
                zf.writestr(f"{name}-step-{view.step}.png", data)
        return Built(out.getvalue(), f"the charts of step {view.step}")

    # One name per incident, whatever the step: a link or a person's folder finds it again.
    stem = f"wmviz-{incident.slug}" + ("-compare" if other is not None else "")
    report = "Export the incident report (HTML, opens offline)"
    build_then_save(report, html, f"{stem}.html", "text/html", "report")
    build_then_save("Export the charts (PNG, zip)", pngs, f"{stem}-charts.zip", "application/zip", "pngs")
