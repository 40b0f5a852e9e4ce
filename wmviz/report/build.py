"""The exported incident report: one self-contained HTML file that opens offline.

It holds what a person needs to hand an incident to someone else: the title and view (profile,
engine, instance, step, share link), the story and description, the key steps narrated, the
watermark chart and the heap as interactive Plotly (plotly.js inlined once, no CDN), the channel
table at the step, and the trace and config themselves. `chart_images` renders the same charts as
PNG through kaleido and the system Chromium.

Pure: plotly, pandas, html and json only (no Streamlit, no Spark), so the app and the tests share it.
Every piece of user text goes through `wmviz.report.html`, which escapes it.
"""

from __future__ import annotations

import os
import re
import shutil
import threading
import warnings
from dataclasses import dataclass
from pathlib import Path

import plotly.graph_objects as go

from wmviz.analysis.compare import first_divergence
from wmviz.core.types import Profile
from wmviz.report.html import (
    CSS,
    Html,
    esc,
    markdown_html,
    paragraphs_html,
    pre_block,
    table,
)
from wmviz.report.steps import key_steps_section as _key_steps_section
from wmviz.report.steps import where_section
from wmviz.timeline.cursor import InstanceCursor
from wmviz.view.checked import scenario_claims
from wmviz.view.figures import heap_figure
from wmviz.view.html_table import channel_table
from wmviz.view.model import ValveView, chart_window, valve_views
from wmviz.view.operator_model import operator_watermark
from wmviz.view.step_chart import step_chart
from wmviz.view.timefmt import DEFAULT, TimeFormat

__all__ = [
    "CompareInput",
    "ReportInput",
    "build_report",
    "chart_images",
]

DEFAULT_BROWSER = "/usr/bin/chromium"
# The modebar's "Produced with Plotly" logo links to plotly.com; a report meant for offline reading
# should not invite a click to the network.
_PLOTLY_CONFIG = {"displaylogo": False, "responsive": True}
_PNG_WIDTH = {"watermarks": 1200}  # the heap keeps kaleido's default width
_KALEIDO_LOCK = threading.Lock()  # kaleido's sync server is one per process; app sessions share it


@dataclass(frozen=True)
class ReportInput:
    """Everything the report shows besides what the cursor holds. Text fields may be user text."""

    title: str
    story_md: str | None
    description: str | None
    profile: str
    engine: str
    instance: str
    step: int
    link: str | None
    trace_name: str
    trace_text: str
    config_json: str | None
    time: TimeFormat = DEFAULT
    """How times read, as on the page the report was taken from."""


@dataclass(frozen=True)
class CompareInput:
    """The other run of a report taken in compare mode: its label, its cursor, its profile, and its
    step for the report's step (None: the what-if deleted that row)."""

    label: str
    cursor: InstanceCursor
    profile: str
    step: int | None


def build_report(inp: ReportInput, cursor: InstanceCursor, compare: CompareInput | None = None) -> str:
    """The incident report as one HTML document (UTF-8 text), self-contained and safe to open:
    every user-supplied string is escaped, and the only scripts are plotly.js (inlined once) and
    one bootstrap per chart. In compare mode (`compare`) it holds both runs: where they diverge,
    both charts and both channel tables."""
    step = _clamp(inp.step, cursor)
    t = inp.time
    profile = _profile(inp.profile)
    views = valve_views(cursor, cursor.state_at(step).pipeline, step, profile or Profile.FLINK_1X_2X, t)
    figures = _figures(cursor, step, views, t)
    output_split = first_divergence(cursor, compare.cursor, output=True, t=t) if compare else None
    state_split = first_divergence(cursor, compare.cursor, t=t) if compare else None
    sections = [
        f"<h1>{esc(inp.title)}</h1>",
        '<p class="note">wmviz incident report: a Flink watermark valve replayed step by step</p>',
        _overview(inp, cursor, step, profile, compare),
    ]
    if inp.story_md and inp.story_md.strip():
        sections += ["<h2>The story</h2>", markdown_html(inp.story_md)]
    if inp.description and inp.description.strip():
        sections += ["<h2>Description</h2>", paragraphs_html(inp.description)]
    sections += where_section(cursor, step, views, t, compare, output_split, state_split)
    divergence = output_split.step if output_split is not None else None
    sections += _key_steps_section(cursor, step, t, divergence)
    if compare is not None and compare.step is not None:
        other_views = _views_of(compare, compare.step, t)
        figures[f"watermarks ({compare.label})"] = step_chart(
            compare.cursor, compare.step, other_views, t, title=f"Watermarks over steps: {compare.label}"
        )
    sections += _charts_section(figures, cursor, step)
    sections += _channels_section(cursor, step, views, t, "this run" if compare else None)
    if compare is not None and compare.step is not None:
        sections += _channels_section(
            compare.cursor, compare.step, _views_of(compare, compare.step, t), t, compare.label
        )
    sections += [f"<h2>The trace: {esc(inp.trace_name)}</h2>", pre_block(inp.trace_text)]
    if inp.config_json:
        sections += ["<h2>The config</h2>", pre_block(inp.config_json)]
    body = "\n".join(sections)
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{esc(inp.title)} · wmviz report</title>\n<style>{CSS}</style>\n</head>\n"
        f"<body>\n{body}\n</body>\n</html>\n"
    )


def _views_of(compare: CompareInput, step: int, t: TimeFormat) -> list[ValveView]:
    """The other run's valves at `step`, its step for the report's (the caller has one)."""
    profile = _profile(compare.profile) or Profile.FLINK_1X_2X
    pipeline = compare.cursor.state_at(step).pipeline
    return valve_views(compare.cursor, pipeline, step, profile, t)


def chart_images(inp: ReportInput, cursor: InstanceCursor) -> dict[str, bytes]:
    """The report's charts as PNG bytes, by chart name (`watermarks`, then `heap`, or `heap-L` and
    `heap-R` for a two-input operator), rendered by kaleido in the system Chromium.

    Never downloads a browser: `BROWSER_PATH` defaults to /usr/bin/chromium, and a missing
    kaleido or browser raises RuntimeError with a message meant for the person who asked.
    """
    os.environ.setdefault("BROWSER_PATH", DEFAULT_BROWSER)
    browser = os.environ["BROWSER_PATH"]
    if not (Path(browser).is_file() or shutil.which(browser)):
        raise RuntimeError(
            f"PNG export needs Chromium, and {browser} was not found: install it (apt-get install "
            "chromium) or point BROWSER_PATH at a Chrome/Chromium binary"
        )
    try:
        import kaleido
    except ImportError as exc:
        raise RuntimeError(
            "PNG export needs the Python package kaleido (pip install kaleido==1.5.0)"
        ) from exc
    step = _clamp(inp.step, cursor)
    profile = _profile(inp.profile) or Profile.FLINK_1X_2X
    views = valve_views(cursor, cursor.state_at(step).pipeline, step, profile, inp.time)
    figures = _figures(cursor, step, views, inp.time)
    images: dict[str, bytes] = {}
    with _KALEIDO_LOCK, warnings.catch_warnings():
        # Plotly passes per-call browser options that a running server ignores, and says so each time.
        warnings.filterwarnings("ignore", message="The kopts argument is ignored")
        # One browser for all charts: each one-shot render would start Chromium again (~5 s each).
        # A server someone else started is left running.
        server = getattr(kaleido, "_global_server", None)
        started = not (server is not None and server.is_running())
        if started:
            kaleido.start_sync_server(silence_warnings=True)
        try:
            for name, fig in figures.items():
                images[name] = fig.to_image(format="png", width=_PNG_WIDTH.get(name))
        except Exception as exc:
            raise RuntimeError(f"PNG export failed in kaleido/Chromium ({browser}): {exc}") from exc
        finally:
            if started:
                kaleido.stop_sync_server(silence_warnings=True)
    return images


# --- sections ---------------------------------------------------------------------------------------


def _overview(
    inp: ReportInput, cursor: InstanceCursor, step: int, profile: Profile | None, compare: CompareInput | None
) -> str:
    """The view the report was taken from, as a two-column table, and the profile warning."""
    profile_text = f"{profile.value}: {profile.describes}" if profile else inp.profile
    t = inp.time
    times = {
        "utc": f"date-times in {t.zone_label} (small values as ms)",
        "relative": f"relative to {t.instant(t.origin_ms) if t.origin_ms is not None else 0}",
        "ms": "raw milliseconds",
    }[t.mode]
    rows = [
        ("profile", profile_text),
        ("engine", inp.engine),
        ("instance", inp.instance),
        ("step", f"{step} (of steps 0–{cursor.count - 1})"),
        ("trace", inp.trace_name),
        ("times", times),
    ]
    if compare is not None:
        mapped = "its row was deleted" if compare.step is None else f"its step {compare.step}"
        rows.append(("compared with", f"{compare.label} (profile {compare.profile}; {mapped})"))
    meta = cursor.timeline.meta
    found = scenario_claims(meta.config, profile or meta.profile)
    rows.append(
        (
            "checked against",
            "; ".join(f"[{'checked' if c.verified else 'modelled'}] {c.line()}" for c in found),
        )
    )
    if inp.link:
        rows.append(("share link", share_link(inp.link)))
    parts = [table([], rows, css_class="meta")]
    if profile is not None and profile is not Profile.FLINK_1X_2X:
        parts.append(
            f'<p class="warning">Profile {esc(profile.value)} is not verified against a running Flink '
            "build; only flink-1.x-2.x is checked against the real Flink 2.3.0 valve.</p>"
        )
    return "\n".join(parts)


def _charts_section(figures: dict[str, go.Figure], cursor: InstanceCursor, step: int) -> list[str]:
    """The charts as interactive Plotly; plotly.js is inlined with the first one only."""
    out = ["<h2>Charts</h2>"]
    for i, (name, fig) in enumerate(figures.items()):
        div = fig.to_html(full_html=False, include_plotlyjs=i == 0, config=_PLOTLY_CONFIG)
        out.append(
            f'<figure class="chart" id="chart-{esc(name)}">\n'
            f"<figcaption>{esc(_caption(name, cursor, step))}</figcaption>\n{div}\n</figure>"
        )
    return out


def _caption(name: str, cursor: InstanceCursor, step: int) -> str:
    if name.startswith("watermarks ("):
        return f"The other run, {name[12:-1]}: every channel's watermark and the output over steps"
    if name == "watermarks":
        first, last = chart_window(cursor.count, step)
        shown = "" if last - first + 1 == cursor.count else f" (steps {first}–{last} of {cursor.count})"
        return f"Every channel's watermark and the output over steps{shown}; the cursor is at step {step}"
    valve = name.partition("-")[2]
    where = f" of input {valve}" if valve else ""
    return f"The aligned min-heap{where} after step {step} (the root is the output candidate)"


def _channels_section(
    cursor: InstanceCursor, step: int, views: list[ValveView], t: TimeFormat, run: str | None = None
) -> list[str]:
    """The channel table of every valve after the step, statuses coloured, the minimum marked."""
    out = [f"<h2>Channels after step {step}{f' ({esc(run)})' if run else ''}</h2>"]
    for view in views:
        if view.input != "0":
            out.append(f"<h3>Input {esc(view.input)}</h3>")
        out.append(channel_table(view.channels))
        out.append(
            f"<p>valve output: watermark {esc(t.with_raw(view.output_wm))}, "
            f"status {esc(view.output_status)}</p>"
        )
    pipeline = cursor.state_at(step).pipeline
    if len(views) > 1:
        out.append(
            f"<p>combined input: watermark {esc(t.with_raw(pipeline.output_watermark_ms))}, "
            f"status {esc(pipeline.output_status.value)}</p>"
        )
    emitted = operator_watermark(cursor, step)
    if emitted is not None:
        out.append(f"<p>the operator's own output watermark: {esc(t.with_raw(emitted))}</p>")
    return out


# --- helpers ----------------------------------------------------------------------------------------


def _figures(
    cursor: InstanceCursor, step: int, views: list[ValveView], t: TimeFormat
) -> dict[str, go.Figure]:
    """The report's charts by name: the watermark history (whole, or a window around `step` for long
    traces, pointing at the channels that hold the minimum) and the heap of every valve after `step`."""
    figures = {"watermarks": step_chart(cursor, step, views, t)}
    record = cursor.row(step)
    for view in views:
        # Only the valve the row arrived at has a channel that just changed.
        highlight = record.get("channel") if str(record.get("input")) == view.input else None
        name = "heap" if len(views) == 1 else f"heap-{view.input}"
        figures[name] = heap_figure(view.heap, highlight=highlight, t=t)
    return figures


def _clamp(step: int, cursor: InstanceCursor) -> int:
    return min(max(int(step), 0), cursor.count - 1)


def _profile(text: str) -> Profile | None:
    try:
        return Profile.parse(text)
    except (ValueError, KeyError):
        return None


def share_link(link: str) -> Html:
    """The view's link: an absolute http(s) address is a link to click from the file (it loads
    nothing by itself); anything else is shown as text, as it would lead nowhere from a file."""
    if re.match(r"https?://[^\s\"'<>]+$", link):
        return Html(f'<a href="{esc(link)}" rel="noreferrer noopener"><code>{esc(link)}</code></a>')
    return Html(f"<code>{esc(link)}</code>")
