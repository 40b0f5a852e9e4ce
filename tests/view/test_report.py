"""The exported incident report (wmviz.report): content, valid HTML, offline, escaped user text,
the key steps, PNG export, and the file opened in a real headless Chromium with the network cut.

The browser tests skip on a laptop without /usr/bin/chromium (or Playwright); under CI (`CI` set)
they run and fail instead, because CI installs both.
"""

from __future__ import annotations

import html
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import CHROMIUM, CHROMIUM_ARGS, REPO, truthy_env
from wmviz.report import ReportInput, build_report, chart_images, compact_input, key_steps
from wmviz.report.html import TRACE_LIMIT_BYTES, markdown_html, pre_block
from wmviz.timeline.cursor import InstanceCursor
from wmviz.timeline.local import build_timeline_local
from wmviz.timeline.store import Timeline
from wmviz.trace.readers import read_trace
from wmviz.view.model import CHART_STEPS

SAMPLES = REPO / "sample_data"
EVIL = ("<script>alert(1)</script>", '"><img src=x onerror=alert(1)>', "</pre>")
EVIL_TEXT = " ".join(EVIL)
PLOTLY_JS_MARKER = "* plotly.js v"  # the first line of the inlined bundle's licence comment
# plotly.js takes two <script> elements (its config and the bundle); each chart adds one bootstrap.
PLOTLY_JS_SCRIPTS = 2


def _has_playwright() -> bool:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return False
    return True


UNDER_CI = truthy_env("CI")
needs_chromium = pytest.mark.skipif(
    not CHROMIUM.is_file() and not UNDER_CI, reason=f"{CHROMIUM} is missing (apt-get install chromium)"
)
needs_browser = pytest.mark.skipif(
    (not CHROMIUM.is_file() or not _has_playwright()) and not UNDER_CI,
    reason=f"needs {CHROMIUM} and the Python package playwright",
)


# --- fixtures -------------------------------------------------------------------------------------


def _cursor(trace_path: Path, out: Path) -> InstanceCursor:
    build_timeline_local(read_trace(trace_path), out)
    return InstanceCursor(Timeline(out), "0")


def _sample_input(name: str, cursor: InstanceCursor, step: int) -> ReportInput:
    path = SAMPLES / f"{name}.jsonl"
    text = path.read_text(encoding="utf-8")
    config = json.loads(text.splitlines()[0])["config"]
    return ReportInput(
        title=config["name"],
        story_md=path.with_suffix(".md").read_text(encoding="utf-8"),
        description=config.get("description"),
        profile=cursor.timeline.meta.profile.value,
        engine="local",
        instance="0",
        step=step,
        link=f"?scenario={name}&engine=local&step={step}",
        trace_name=path.name,
        trace_text=text,
        config_json=json.dumps(config, indent=2),
    )


@pytest.fixture(scope="module")
def zero_output(tmp_path_factory):
    """FLINK-38477 (one valve, 8 steps) at step 7, the jump to MAX: input, cursor, report."""
    cursor = _cursor(SAMPLES / "flink-38477-zero-output.jsonl", tmp_path_factory.mktemp("zero") / "tl")
    inp = _sample_input("flink-38477-zero-output", cursor, 7)
    return inp, cursor, build_report(inp, cursor)


@pytest.fixture(scope="module")
def join(tmp_path_factory):
    """The interval join with EARLY_FIRE (two valves L and R) at step 7, the retraction."""
    cursor = _cursor(SAMPLES / "early-fire-left-join.jsonl", tmp_path_factory.mktemp("join") / "tl")
    inp = _sample_input("early-fire-left-join", cursor, 7)
    return inp, cursor, build_report(inp, cursor)


@pytest.fixture(scope="module")
def evil(tmp_path_factory):
    """A trace whose config name, description, record key, value and payload column, its file name
    and the story all carry markup; the report is taken at the record's step."""
    folder = tmp_path_factory.mktemp("evil")
    config = {"name": EVIL_TEXT, "description": EVIL_TEXT}
    lines = [
        {"config": config},
        {"kind": "watermark", "channel": 0, "watermark_ms": 5},
        {"kind": "watermark", "channel": 1, "watermark_ms": 7},
        {
            "kind": "record",
            "channel": 0,
            "key": EVIL_TEXT,
            "event_ms": 9,
            "value": EVIL_TEXT,
            "note": EVIL_TEXT,
        },
        {"kind": "status", "channel": 1, "status": "IDLE"},
    ]
    trace = folder / "evil.jsonl"
    trace.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    cursor = _cursor(trace, folder / "tl")
    story = "\n".join(
        [f"## {EVIL[0]}", "", f"A paragraph with {EVIL[1]} and `{EVIL[2]}` in code.", "", f"- `{EVIL[0]}`"]
    )
    inp = ReportInput(
        title=EVIL_TEXT,
        story_md=story,
        description=EVIL_TEXT,
        profile=cursor.timeline.meta.profile.value,
        engine="local",
        instance="0",
        step=2,
        link=f"?scenario={EVIL_TEXT}&step=2",
        trace_name=f"{EVIL_TEXT}.jsonl",
        trace_text=trace.read_text(encoding="utf-8"),
        config_json=json.dumps(config),
    )
    return inp, cursor, build_report(inp, cursor)


@pytest.fixture(scope="module")
def long_trace(tmp_path_factory):
    """2,500 rising watermarks on two channels: the output moves at almost every step, so there are
    far more key steps than the cap, and the trace is longer than the chart's window."""
    folder = tmp_path_factory.mktemp("long")
    trace = folder / "long.jsonl"
    rows = ({"kind": "watermark", "channel": i % 2, "watermark_ms": i} for i in range(2_500))
    trace.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return _cursor(trace, folder / "tl")


# --- helpers ----------------------------------------------------------------------------------------

_VOID = {"meta", "br", "hr", "img", "input", "link", "wbr", "col", "area", "base", "source"}


class _TagChecker(HTMLParser):
    """Every non-void tag closed in order; counts of each start tag; the text of <h1>."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.starts: dict[str, int] = {}
        self.ends: dict[str, int] = {}
        self.h1 = ""

    def handle_starttag(self, tag, attrs):
        self.starts[tag] = self.starts.get(tag, 0) + 1
        if tag not in _VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        self.ends[tag] = self.ends.get(tag, 0) + 1
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:]!r} at {self.getpos()}")
        else:
            self.stack.pop()

    def handle_data(self, data):
        if self.stack and self.stack[-1] == "h1":
            self.h1 += data


def _check_html(document: str) -> _TagChecker:
    checker = _TagChecker()
    checker.feed(document)
    checker.close()
    return checker


def _without_plotly_js(document: str) -> str:
    """The document with plotly.js's own bundle cut out (its code names plotly.com in strings)."""
    start = document.index(PLOTLY_JS_MARKER)
    open_at = document.rindex("<script", 0, start)
    close_at = document.index("</script>", start) + len("</script>")
    return document[:open_at] + document[close_at:]


def _chart_count(cursor: InstanceCursor) -> int:
    return 1 + len(cursor.state_at(0).pipeline.valves)  # the watermark chart and one heap per valve


# --- content --------------------------------------------------------------------------------------


def test_report_narrates_step_seven_of_flink_38477_where_the_valve_emits_wmax(zero_output):
    inp, cursor, document = zero_output
    assert document.startswith("<!DOCTYPE html>")
    assert '<meta charset="utf-8">' in document
    assert f"<h1>{html.escape(inp.title)}</h1>" in document
    assert "emit WMAX" in document
    assert '<tr class="current"><td>7 ◀ this step</td>' in document
    for step in key_steps(cursor, step=7):
        assert f"<td>{step}" in document


def test_report_shows_profile_engine_instance_step_and_the_share_link_as_text(zero_output):
    inp, _, document = zero_output
    assert "<td>flink-1.x-2.x: released Flink" in document
    assert "<td>engine</td><td>local</td>" in document
    assert "<td>instance</td><td>0</td>" in document
    assert "<td>step</td><td>7 (of steps 0–7)</td>" in document
    assert f"<code>{html.escape(inp.link)}</code>" in document
    assert "<a " not in _without_plotly_js(document)  # the link is text: nothing to click to the network


def test_report_renders_the_story_sections_as_headings_and_the_description_as_a_paragraph(zero_output):
    inp, _, document = zero_output
    for title in ("What users saw", "What the valve did", "The fix"):
        assert f"<h3>{title}</h3>" in document
    assert "<li>Step 7: <code>IDLE@1</code>." in document
    assert "## " not in document.split("<h2>The story</h2>")[1].split("<h2>")[0]
    assert f"<p>{html.escape(inp.description)}</p>" in document


def test_report_embeds_plotly_js_exactly_once_and_one_figure_div_per_chart(zero_output, join):
    for _, cursor, document in (zero_output, join):
        charts = _chart_count(cursor)
        assert document.count(PLOTLY_JS_MARKER) == 1
        assert document.count('class="plotly-graph-div"') == charts
        assert document.count("Plotly.newPlot(") == charts
        assert len(re.findall(r"<script\b", document)) == PLOTLY_JS_SCRIPTS + charts
    assert 'id="chart-heap-L"' in join[2] and 'id="chart-heap-R"' in join[2]


def test_report_contains_the_trace_text_and_the_config_in_pre_blocks(zero_output, join):
    for inp, _, document in (zero_output, join):
        assert f"<pre>{html.escape(inp.trace_text)}</pre>" in document
        assert f"<pre>{html.escape(inp.config_json)}</pre>" in document


def test_report_of_the_join_narrates_the_retraction_and_shows_both_valves_channel_tables(join):
    _, _, document = join
    assert "-U(order-1@10000, null) retracts the speculative row" in document
    assert "<td>R: record key=1 value=&quot;shipment-1&quot; event_ms=14000 @0</td>" in document
    assert "<h3>Input L</h3>" in document and "<h3>Input R</h3>" in document
    assert "combined input: watermark 13000, status ACTIVE" in document


def test_report_channel_table_marks_finished_channels_and_the_minimum_at_step_seven(zero_output):
    _, _, document = zero_output
    channels = document.split("<h2>Channels after step 7</h2>")[1].split("<h2>")[0]
    assert channels.count('<td class="status-IDLE">IDLE</td>') == 2
    assert channels.count('<td class="status-ACTIVE">ACTIVE (FINISHED, replayed as MAX)</td>') == 2
    assert channels.count("◀ holds it") == 2
    assert "valve output: watermark MAX, status ACTIVE" in channels


# --- well-formed and offline -----------------------------------------------------------------------


def test_report_parses_as_html_with_every_tag_closed_and_tables_and_pre_balanced(zero_output, join, evil):
    for inp, _, document in (zero_output, join, evil):
        checker = _check_html(document)
        assert checker.errors == []
        assert checker.stack == []
        for tag in ("table", "pre", "script", "figure", "ul"):
            assert checker.starts.get(tag, 0) == checker.ends.get(tag, 0), tag
        assert checker.starts["table"] >= 3 and checker.starts["pre"] == 2
        assert checker.h1 == inp.title  # the escaped title reads back as the user's text


def test_report_loads_no_external_resources_outside_plotly_js_own_code(zero_output, join):
    for _, _, document in (zero_output, join):
        rest = _without_plotly_js(document)
        assert not re.search(r"(src|href)\s*=\s*[\"']?\s*(https?:)?//", rest, re.IGNORECASE)
        assert "http://" not in rest and "https://" not in rest
        assert not re.search(r"<script[^>]*\bsrc=", document, re.IGNORECASE)
        assert "<link" not in document and "@import" not in document


def test_an_absolute_share_link_is_a_link_to_click_and_anything_else_stays_text(zero_output):
    from dataclasses import replace

    inp, cursor, _ = zero_output
    absolute = "http://wmviz.example:8501/?scenario=flink-38477-zero-output&engine=local&step=7"
    document = build_report(replace(inp, link=absolute), cursor)
    href = absolute.replace("&", "&amp;")
    assert f'<a href="{href}" rel="noreferrer noopener"><code>{href}</code></a>' in document
    for other in ("?scenario=x&step=7", "javascript:alert(1)", 'http://a.example/"><script>x</script>'):
        document = build_report(replace(inp, link=other), cursor)
        assert f'<a href="{other}' not in document and "<script>x" not in document


# --- escaping -------------------------------------------------------------------------------------


def test_report_escapes_markup_in_title_description_file_name_key_value_payload_and_story(evil):
    _, _, document = evil
    rest = _without_plotly_js(document)
    assert "<script>alert(1)" not in document
    assert "<img" not in rest
    assert "onerror=alert(1)>" not in document
    assert document.count("</pre>") == document.count("<pre>") == 2
    # The only scripts are plotly.js's two and one bootstrap per chart.
    assert len(re.findall(r"<script\b", document)) == PLOTLY_JS_SCRIPTS + 2
    escaped = html.escape(EVIL_TEXT)
    assert f"<h1>{escaped}</h1>" in document  # title
    assert f"<p>{escaped}</p>" in document  # description
    assert f"<h2>The trace: {escaped}.jsonl</h2>" in document  # file name
    assert f"<td>trace</td><td>{escaped}.jsonl</td>" in document
    assert f"<title>{escaped} · wmviz report</title>" in document
    row = document.split('<tr class="current">')[1].split("</tr>")[0]
    assert f"key={escaped}" in row and f"note={html.escape(json.dumps(EVIL_TEXT))}" in row  # input
    assert f"<li>record {escaped}@9 key={escaped} event_ms=9 on input 0 ch0</li>" in row  # narration
    assert f"<h3>{html.escape(EVIL[0])}</h3>" in document  # story heading
    assert f"<code>{html.escape(EVIL[2])}</code>" in document  # story code span


def test_story_markdown_is_escaped_first_and_only_gains_headings_bullets_paragraphs_and_code():
    story = "\n".join(
        [
            "## What <b>users</b> saw",
            "",
            "First line",
            "continues `W10@0 <i>` here.",
            "",
            "- one `a<b`",
            "  continued",
            "- two & more",
            "",
            "#### Deeper",
            "```",
            "## not a heading </pre>",
            "```",
        ]
    )
    assert markdown_html(story) == "\n".join(
        [
            "<h3>What &lt;b&gt;users&lt;/b&gt; saw</h3>",
            "<p>First line continues <code>W10@0 &lt;i&gt;</code> here.</p>",
            "<ul><li>one <code>a&lt;b</code> continued</li><li>two &amp; more</li></ul>",
            "<h5>Deeper</h5>",
            "<pre><code>## not a heading &lt;/pre&gt;</code></pre>",
        ]
    )


def test_compact_input_names_every_kind_of_row_in_one_line():
    base = {"input": "0", "channel": 2, "payload_json": "[]"}
    assert compact_input({**base, "kind": "watermark", "watermark_ms": 10}) == "W10@2"
    assert compact_input({**base, "input": "L", "kind": "status", "status": "IDLE"}) == "L: IDLE@2"
    assert compact_input({**base, "kind": "proctime", "proc_ms": 500}) == "proctime 500"
    record = {**base, "kind": "record", "key": "k", "value_json": '"v"', "event_ms": 3,
              "payload_json": '[["note", "x"]]'}  # fmt: skip
    assert compact_input(record) == 'record key=k value="v" event_ms=3 @2 note="x"'


# --- long traces ----------------------------------------------------------------------------------


def test_key_steps_are_every_event_step_plus_the_current_step_sorted(zero_output, join):
    _, cursor, _ = zero_output
    assert key_steps(cursor, step=7) == [3, 4, 5, 6, 7]
    assert key_steps(cursor, step=0) == [0, 3, 4, 5, 6, 7]  # a quiet step is narrated when current
    assert key_steps(cursor) == [3, 4, 5, 6, 7]
    _, join_cursor, _ = join
    # output watermark 2, 6, 9; timers 6, 9; the retraction 7
    assert key_steps(join_cursor, step=4) == [2, 4, 6, 7, 9]


def test_key_steps_capping_keeps_the_earliest_quarter_and_those_nearest_the_current_step(long_trace):
    cursor = long_trace
    everything = key_steps(cursor, limit=10**6, step=1_000)
    assert len(everything) > 2_000
    # One rank only (routine output changes): the step, a quarter earliest, the rest nearest it.
    assert key_steps(cursor, limit=8, step=1_000) == [1, 997, 998, 999, 1000, 1001, 1002, 1003]
    capped = key_steps(cursor, step=1_000)
    assert len(capped) == 40 and capped == sorted(capped) and 1_000 in capped
    assert capped[:9] == everything[:9]  # a quarter of the 39 left beside the step
    assert key_steps(cursor, limit=1, step=1_000) == [1_000]
    assert key_steps(cursor, limit=5) == everything[:5]
    assert key_steps(cursor, limit=0, step=1_000) == []
    last = cursor.count - 1
    assert key_steps(cursor, limit=8, step=last)[-6:] == list(range(last - 5, last + 1))


def test_report_of_a_long_trace_caps_the_narrated_steps_and_charts_a_window(long_trace):
    cursor = long_trace
    inp = ReportInput("long", None, None, "flink-1.x-2.x", "local", "0", 1_000, None, "long.jsonl", "", None)
    document = build_report(inp, cursor)
    table = document.split("<h2>Key steps</h2>")[1].split("</table>")[0]
    assert table.count("<tr") == 1 + 40  # the header and the 40 capped steps
    assert f"; 40 of {len(key_steps(cursor, limit=10**6, step=1_000))} shown" in document
    first = 1_000 - CHART_STEPS // 2
    assert f"(steps {first}–{first + CHART_STEPS - 1} of {cursor.count})" in document
    assert "<h2>The story</h2>" not in document and "<h2>The config</h2>" not in document


def test_trace_longer_than_two_megabytes_is_truncated_at_a_line_with_a_note():
    line = "instance,kind,channel,watermark_ms,<x>\n"
    text = line * (TRACE_LIMIT_BYTES // len(line) + 1_000)
    block = pre_block(text)
    total = len(text.encode())
    match = re.search(r"truncated: (\d+) of (\d+) bytes shown", block)
    assert match and int(match.group(2)) == total
    shown = int(match.group(1))
    assert shown <= TRACE_LIMIT_BYTES and shown % len(line) == 0  # whole lines only
    assert block.count("&lt;x&gt;") == shown // len(line)
    assert pre_block("short <x>") == "<pre>short &lt;x&gt;</pre>"


# --- PNG export and the browser -------------------------------------------------------------------


@needs_chromium
def test_chart_images_renders_every_chart_as_a_png_through_kaleido_and_chromium(join):
    inp, cursor, _ = join
    images = chart_images(inp, cursor)
    assert list(images) == ["watermarks", "heap-L", "heap-R"]
    for name, data in images.items():
        assert data.startswith(b"\x89PNG\r\n\x1a\n"), name
        assert len(data) > 2_000, name


def test_chart_images_raises_a_clear_runtime_error_without_chromium_or_kaleido(zero_output, monkeypatch):
    inp, cursor, _ = zero_output
    monkeypatch.setenv("BROWSER_PATH", "/nonexistent/chromium")
    with pytest.raises(RuntimeError, match=r"needs Chromium.*/nonexistent/chromium"):
        chart_images(inp, cursor)
    monkeypatch.setenv("BROWSER_PATH", str(CHROMIUM) if CHROMIUM.is_file() else "/bin/sh")
    monkeypatch.setitem(__import__("sys").modules, "kaleido", None)  # `import kaleido` fails
    with pytest.raises(RuntimeError, match="kaleido"):
        chart_images(inp, cursor)


@needs_browser
@pytest.mark.parametrize("case", ["zero_output", "join", "evil"])
def test_report_file_opens_offline_in_headless_chromium_and_every_chart_renders(case, request, tmp_path):
    from playwright.sync_api import sync_playwright

    inp, cursor, document = request.getfixturevalue(case)
    path = tmp_path / "report.html"
    path.write_text(document, encoding="utf-8")
    blocked, errors, dialogs = [], [], []

    def only_files(route):
        if route.request.url.startswith("file://"):
            route.continue_()
        else:
            blocked.append(route.request.url)
            route.abort()

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1300, "height": 900})
            page.route("**/*", only_files)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            page.goto(path.as_uri())
            charts = _chart_count(cursor)
            page.wait_for_function(
                f"document.querySelectorAll('.js-plotly-plot').length === {charts}", timeout=30_000
            )
            assert page.locator("h1").inner_text() == inp.title
            assert page.title() == f"{inp.title} · wmviz report"
            assert page.evaluate("document.querySelectorAll('.js-plotly-plot').length") == charts
            assert page.evaluate("document.querySelectorAll('.js-plotly-plot .main-svg').length") >= charts
            assert page.evaluate("document.querySelectorAll('img').length") == 0
        finally:
            browser.close()
    assert blocked == [] and errors == [] and dialogs == []


# --- colours, compare mode, ranked key steps, stories (issue 12) -------------------------------------

CHANNEL_RGB = {"ch 0": (0x1F, 0x77, 0xB4), "ch 1": (0xD6, 0x27, 0x28), "ch 2": (0x2C, 0xA0, 0x2C)}


def _plotly_data(document: str) -> list[list[dict]]:
    """The `data` argument of every Plotly.newPlot call in the document."""
    out = []
    for match in re.finditer(r"Plotly\.newPlot\(\s*\"[^\"]+\",\s*(\[.*?\]),\s*\{", document, re.DOTALL):
        out.append(json.loads(match.group(1)))
    return out


def test_every_channel_of_the_report_chart_has_its_own_colour_and_a_legend_entry(zero_output):
    _, _, document = zero_output
    watermarks = next(d for d in _plotly_data(document) if any(t.get("name") == "ch 0" for t in d))
    lines = [t for t in watermarks if t.get("name", "").startswith("ch ") and t.get("mode") == "lines"]
    colours = {t["name"]: t["line"]["color"] for t in lines}
    assert len(colours) == 4 and len(set(colours.values())) == 4
    assert all(re.fullmatch(r"#[0-9a-f]{6}", c) for c in colours.values())
    assert all(t.get("showlegend", True) for t in lines)


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    """FLINK-38477 under released Flink against flip-38477, the report taken at step 0."""
    from wmviz.core.types import Profile
    from wmviz.report import CompareInput

    trace = read_trace(SAMPLES / "flink-38477-zero-output.jsonl")
    cursors = []
    for profile in (None, Profile.FLIP_38477):
        out = tmp_path_factory.mktemp("cmp") / "tl"
        build_timeline_local(trace, out, profile)
        cursors.append(InstanceCursor(Timeline(out), "0"))
    inp = _sample_input("flink-38477-zero-output", cursors[0], 0)
    other = CompareInput("profile flip-38477", cursors[1], "flip-38477", 0)
    return inp, cursors, build_report(inp, cursors[0], other)


def test_a_compare_mode_report_holds_both_runs_and_where_they_diverge(compared):
    _, _, document = compared
    where = document.split("<h2>Where it went wrong</h2>")[1].split("<h2>")[0]
    assert "The outputs first differ at step 7" in where and "output 25 IDLE" in where
    assert "The state first differs earlier, at step 2" in where
    assert "this run, step 7" in where and "profile flip-38477, step 7" in where
    assert "emit WMAX" in where and "emits S:IDLE" in where  # both narrations at the divergence
    assert "<h2>Channels after step 0 (this run)</h2>" in document
    assert "<h2>Channels after step 0 (profile flip-38477)</h2>" in document
    assert len(re.findall(r'<figure class="chart" id="chart-watermarks', document)) == 2
    assert "compared with" in document
    key = document.split("<h2>Key steps</h2>")[1].split("</table>")[0]
    assert "first output divergence" in key


def test_key_steps_rank_drops_and_status_changes_above_routine_emissions(tmp_path):
    trace = read_trace(
        REPO / "tests" / "data" / "kafka-rebalance.csv", REPO / "tests" / "data" / "kafka-rebalance.json"
    )
    build_timeline_local(trace, tmp_path / "tl")
    cursor = InstanceCursor(Timeline(tmp_path / "tl"), "1")
    drops = [int(s) for s in cursor.events["late drop"]]
    statuses = [int(s) for s in cursor.events["status change"]]
    assert drops and statuses and len(cursor.events["output watermark"]) > 40
    chosen = key_steps(cursor, limit=8, step=0)
    assert set(drops + statuses) <= set(chosen)  # never buried under the routine emissions
    from wmviz.report import step_reasons

    reasons = step_reasons(cursor)
    assert reasons[drops[0]][0] == "late drop"
    assert any("stall" in r for r in reasons.values())


def test_an_uploaded_story_is_shown_through_the_safe_subset_only(zero_output):
    inp, cursor, _ = zero_output
    from dataclasses import replace

    story = "## What users saw\n**Nothing** fired. <script>alert(1)</script> ![x](http://evil.example/x.png)"
    document = build_report(replace(inp, story_md=story), cursor)
    section = document.split("<h2>The story</h2>")[1].split("<h2>")[0]
    assert "<strong>Nothing</strong>" in section and "&lt;script&gt;" in section
    assert "<img" not in section and 'src="http' not in section


@needs_chromium
def test_the_png_export_keeps_every_channel_colour(zero_output):
    from io import BytesIO

    from PIL import Image

    inp, cursor, _ = zero_output
    png = chart_images(inp, cursor)["watermarks"]
    with Image.open(BytesIO(png)) as image:
        # numpy rather than Image.getdata (deprecated in Pillow 12, removed in 14).
        pixels = np.asarray(image.convert("RGB")).reshape(-1, 3).tolist()
        counts = dict.fromkeys(CHANNEL_RGB, 0)
        for pixel in pixels:
            for name, rgb in CHANNEL_RGB.items():
                if all(abs(a - b) <= 12 for a, b in zip(pixel, rgb)):
                    counts[name] += 1
    assert all(n > 150 for n in counts.values()), counts  # each line drawn in its own colour
