"""User text never becomes markup in a chart (issue 33): Plotly.js draws its pseudo-HTML (`<a href>`,
`<span style>`, `<br>`) from every string of a figure and substitutes `%{…}` in a hovertemplate, so
every name that reaches a figure goes through `plotly_text` first. Each figure built from a trace
whose every name is hostile holds none of that text raw, and decoding the entities as Plotly.js
does gives back the name as typed. One browser check looks at the drawn SVG itself."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import plotly.io as pio
import pytest

from wmviz.report import ReportInput, build_report
from wmviz.report.build import CompareInput
from wmviz.timeline.cursor import InstanceCursor
from wmviz.timeline.local import build_timeline_local
from wmviz.timeline.store import Timeline
from wmviz.trace.readers import read_trace
from wmviz.view import figures, model
from wmviz.view.figures_common import plotly_text
from wmviz.view.step_chart import step_chart
from wmviz.view.tune import tune_figure

LINK = '<a href="https://evil.example">x</a>'
BIG = '<span style="font-size:150px">big</span>'
FIELD = "%{x}"
BREAK = "a<br>b & c"
NAMES = (LINK, BIG, FIELD + BREAK)
RAW = ("<a ", "<a>", "<span", 'evil.example">', "<br>b", 'font-size:150px">')
"""What must not be left of the names in a figure's JSON (our own `<br>` never precedes a `b`)."""

_PLOTLY_ENTITY = re.compile(r"&(#\d+|#x[\da-fA-F]+|[a-z]+);")
_NAMED = {"mu": "μ", "amp": "&", "lt": "<", "gt": ">", "nbsp": "\xa0", "times": "×", "plusmn": "±"}
_NAMED["deg"] = "°"


def plotly_shows(text: str) -> str:
    """The characters Plotly.js draws for a string without tags: its entities decoded in one pass,
    as its `convertEntities` does (the named ones it knows, and numeric ones)."""

    def one(match: re.Match) -> str:
        name = match.group(1)
        if name.startswith("#x"):
            return chr(int(name[2:], 16))
        if name.startswith("#"):
            return chr(int(name[1:]))
        return _NAMED.get(name, match.group(0))

    return _PLOTLY_ENTITY.sub(one, text)


def strings(value) -> list[str]:
    """Every string of a figure's JSON, keys excepted."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings(v)]
    if isinstance(value, list | tuple):
        return [s for v in value for s in strings(v)]
    return []


def assert_no_markup(fig, *names: str) -> None:
    """No raw markup from the names in the figure, no hovertemplate with a field from them, and
    each name still drawn as typed somewhere."""
    spec = json.loads(pio.to_json(fig) if not isinstance(fig, dict) else json.dumps(fig, default=list))
    texts = strings(spec)
    for text in texts:
        for raw in RAW:
            assert raw not in text, (raw, text)
    for template in strings([t.get("hovertemplate") for t in spec.get("data", [])]):
        assert re.findall(r"%\{[^}]*\}", template) == re.findall(r"%\{[^}]*\}", _ours(template)), template
    drawn = "\n".join(plotly_shows(t) for t in texts)
    for name in names:
        assert name in drawn, name


def _ours(template: str) -> str:
    """A template with every escaped (user) part removed: what remains is the code's own."""
    return re.sub(r"&#37;\{[^}]*\}", "", template)


def test_plotly_text_escapes_markup_and_fields_and_reads_back_as_typed():
    for name in (*NAMES, "&lt;b&gt; is not <b>", "100%", "ch 0"):
        shown = plotly_text(name)
        assert "<" not in shown and ">" not in shown and "%{" not in shown
        assert plotly_shows(shown) == name
    assert plotly_text("ch 2") == "ch 2"  # plain text is left as it is


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """A trace whose instances are named by the hostile names, one idle channel, built once."""
    tmp = tmp_path_factory.mktemp("hostile-charts")
    rows: list[dict] = [{"config": {"name": LINK, "profile": "flink-1.x-2.x"}}]
    for instance in NAMES:
        for channel, wm in ((0, 1000), (1, 1500), (0, 4000)):
            rows.append({"kind": "watermark", "instance": instance, "channel": channel, "watermark_ms": wm})
        rows.append({"kind": "status", "instance": instance, "channel": 1, "status": "IDLE"})
    path = tmp / f"{BIG}.jsonl".replace("/", "_")
    path.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    build_timeline_local(read_trace(path), tmp / "out")
    return Timeline(tmp / "out")


def test_the_watermark_chart_and_its_title_show_hostile_text_as_text(hostile):
    cursor = InstanceCursor(hostile, LINK)
    step = cursor.count - 1
    views = model.valve_views(cursor, cursor.state_at(step).pipeline, step, model.Profile.FLINK_1X_2X)
    fig = step_chart(cursor, step, views, title=f"Watermarks over steps: {BIG} {FIELD}{BREAK}")
    assert_no_markup(fig, BIG, FIELD + BREAK)


def test_the_heap_draws_a_hostile_label_as_text():
    fig = figures.heap_figure([(0, 10), (1, 20), (2, 30)], label=lambda c: NAMES[c % 3] + str(c), highlight=7)
    assert_no_markup(fig, *NAMES)


def test_the_overview_heatmap_keeps_hostile_instance_names_off_its_axis_and_hover():
    steps = pd.DataFrame(
        {"instance": [n for n in NAMES for _ in range(3)], "order": np.arange(9),
         "output_wm": [1000, 2000, 3000] * 3, "event_ms": np.arange(9) * 1000}
    )  # fmt: skip
    matrix = figures.heatmap_matrix(steps)
    for frontier in (None, figures.input_frontier(steps, np.asarray(matrix.columns))):
        fig = figures.instance_heatmap(matrix, 4, frontier=frontier)
        assert_no_markup(fig, *NAMES)
        (heatmap,) = fig.to_plotly_json()["data"]
        assert [plotly_shows(y) for y in heatmap["y"]] == list(matrix.index)  # the axis reads the names


def test_tune_draws_hostile_fields_and_values_as_text():
    table = [
        {LINK: BIG, FIELD: 1, "late_share": 0.1, "firing_delay_p95_ms": 100, "firing_delay_p50_ms": 1},
        {LINK: BREAK, FIELD: 2, "late_share": 0.0, "firing_delay_p95_ms": 900, "firing_delay_p50_ms": 1},
        {LINK: "x", FIELD: 3, "late_share": 0.2, "firing_delay_p95_ms": 200, "firing_delay_p50_ms": 1},
    ]
    assert_no_markup(tune_figure(table, [LINK, FIELD], chosen=0), LINK, BIG, BREAK, FIELD)


def test_the_reports_charts_show_a_hostile_label_as_text(hostile):
    cursor = InstanceCursor(hostile, BIG)
    other = InstanceCursor(hostile, LINK)
    inp = ReportInput(LINK, None, None, "flink-1.x-2.x", "local", BIG, 2, None, "t.jsonl", "", None)
    document = build_report(inp, cursor, CompareInput(f"{LINK} {FIELD}{BREAK}", other, "flink-1.x-2.x", 2))
    scripts = "\n".join(re.findall(r"<script[^>]*>(.*?)</script>", document, flags=re.S))
    charts = [s for s in scripts.split("Plotly.newPlot(")[1:]]
    assert len(charts) >= 3  # this run's chart and heap, the other run's chart
    shown = [_unescaped(chart) for chart in charts]
    for chart in shown:
        for raw in RAW:
            assert raw not in chart, raw
    assert plotly_text(f"{LINK} {FIELD}{BREAK}") in "".join(shown)


def _unescaped(script: str) -> str:
    """A chart's JSON as the page's script holds it, with the escapes its encoder adds undone."""
    escapes = (("\\u003c", "<"), ("\\u003e", ">"), ("\\u0026", "&"), ("\\u002f", "/"), ('\\"', '"'))
    for code, char in (*escapes, ("\\/", "/")):
        script = script.replace(code, char)
    return script


def test_a_bug_planted_in_plotly_text_is_caught(monkeypatch):
    """The checks above can fail: with the escape undone, the heatmap leaks the link."""
    import wmviz.view.figures_heatmap as heatmap_module

    monkeypatch.setattr(heatmap_module, "plotly_texts", lambda values: values)
    steps = pd.DataFrame({"instance": list(NAMES), "order": [0, 1, 2], "output_wm": [1, 2, 3]})
    with pytest.raises(AssertionError):
        assert_no_markup(figures.instance_heatmap(figures.heatmap_matrix(steps)), *NAMES)


# --- in a real browser ------------------------------------------------------------------------------


def test_no_link_or_style_from_a_name_reaches_the_drawn_charts(tmp_path):
    """The page of an upload whose instances are hostile, in Chromium: its charts' SVG (the
    overview heatmap's instance axis, the watermark chart, the heap) holds no `<a>` and no 150 px
    text, and the instance axis reads the names as typed."""
    from urllib.parse import urlencode

    from tests.browser.test_browser_hostile import MISSING
    from tests.support.app_server import chromium, fresh_page, streamlit_app
    from wmviz.store.uploads import store_upload

    if MISSING:
        pytest.skip(f"needs Chromium and Playwright: {MISSING}")
    from playwright.sync_api import expect

    rows: list[dict] = [{"config": {"name": "hostile names", "profile": "flink-1.x-2.x"}}]
    for instance in NAMES:
        for channel, wm in ((0, 1000), (1, 1500), (0, 4000)):
            rows.append({"kind": "watermark", "instance": instance, "channel": channel, "watermark_ms": wm})
    trace = "\n".join(json.dumps(r) for r in rows).encode()
    data = tmp_path / "data"
    env = {"WMVIZ_CACHE": str(data), "WMVIZ_SPARK_START": "lazy"}
    with streamlit_app(tmp_path, env) as url, chromium() as browser:
        stored = store_upload("hostile.jsonl", trace, None, root=data / "uploads")
        with fresh_page(browser, {"width": 1440, "height": 900}, 90_000) as page:
            query = {"trace": stored.digest, "engine": "local", "instance": LINK, "step": 1}
            page.goto(f"{url}/?{urlencode(query)}")
            expect(page.get_by_role("heading", name=re.compile(r"^Step 1 of \d+$"))).to_be_visible()
            plots = page.locator('[data-testid="stPlotlyChart"] .js-plotly-plot')
            expect(plots).to_have_count(3)  # the watermark chart, the heap, the overview
            ticks = page.locator(".js-plotly-plot .yaxislayer-above .ytick text")
            expect(ticks.filter(has_text="evil.example")).to_have_count(1)
            drawn = page.evaluate(
                """() => [...document.querySelectorAll('.js-plotly-plot svg')].map(svg => ({
                    links: svg.querySelectorAll('a').length,
                    big: [...svg.querySelectorAll('[style]')]
                        .filter(e => e.style.fontSize === '150px').length,
                }))"""
            )
            assert drawn and all(d == {"links": 0, "big": 0} for d in drawn), drawn
            labels = set(ticks.evaluate_all("texts => texts.map(t => t.textContent)"))
            assert set(NAMES) <= labels, labels
