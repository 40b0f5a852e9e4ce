"""Every time through the one formatter (issue 23): a drop reason is made while the trace runs, in
the core, yet the narration and the dropped-records table write its times in the reader's format,
never as raw epoch numbers; the raw text (transcript, timeline) stays as it was."""

from __future__ import annotations

import re

import pytest

from tests.conftest import REPO
from wmviz.core.story import explain_parts
from wmviz.core.timetext import RAW, TimedText
from wmviz.core.windows import format_window
from wmviz.timeline.cursor import InstanceCursor
from wmviz.timeline.local import build_timeline_local
from wmviz.timeline.store import Timeline
from wmviz.trace.readers import read_trace
from wmviz.ui import state
from wmviz.view import operator_model as om
from wmviz.view.timefmt import TimeFormat

KAFKA = REPO / "tests" / "data" / "kafka-rebalance.csv"
EPOCH = re.compile(r"\b1[0-9]{12}\b")  # a raw epoch-millisecond time


@pytest.fixture(scope="module")
def dropping(tmp_path_factory):
    """The Kafka rebalance (one-minute windows, epoch times): an instance and its first drop step."""
    out = tmp_path_factory.mktemp("kafka") / "tl"
    build_timeline_local(read_trace(KAFKA, KAFKA.with_suffix(".json")), out)
    timeline = Timeline(out)
    for instance in sorted(timeline.meta.instances):
        cursor = InstanceCursor(timeline, instance)
        if len(cursor.events["late drop"]):
            return cursor, int(cursor.events["late drop"][0])
    pytest.fail("the Kafka rebalance drops no record")


def test_a_timed_text_writes_its_times_with_any_formatter_and_raw_as_before():
    window = (1795514460000, 1795514520000)
    why = TimedText.of(lambda t: f"window {format_window(window, t)} at watermark {t(1795514519999)}")
    assert why.text() == f"window {format_window(window)} at watermark 1795514519999"
    assert why.text(TimeFormat()) == (
        "window [2026-11-24 10:01:00.000Z, 2026-11-24 10:02:00.000Z) at watermark 2026-11-24 10:01:59.999Z"
    )
    assert TimedText.plain("a {brace} stays").text(RAW) == "a {brace} stays"


def test_a_drop_reason_reads_in_the_chosen_time_format_in_narration_and_table(dropping):
    cursor, step = dropping
    t = TimeFormat()
    result, _, _ = cursor.explain(step)
    dropped = [part for part in explain_parts(result, t) if " dropped: " in part]
    assert dropped and not EPOCH.search(" ".join(dropped)), dropped
    assert "2026-11-24" in " ".join(dropped)
    for table in (om.dropped_table(cursor, step, t), om.dropped_table(cursor, step, t, so_far=True)):
        reasons = " ".join(table["reason"])
        assert reasons and not EPOCH.search(reasons), reasons
        assert "2026-11-24" in reasons
    raw = om.dropped_table(cursor, step, TimeFormat(mode="ms"))
    assert EPOCH.search(" ".join(raw["reason"]))  # the raw numbers, on request


def test_the_reports_emitted_column_writes_its_watermarks_in_the_chosen_format(tmp_path):
    from wmviz.report import ReportInput, build_report

    sample = REPO / "sample_data" / "idle-partition-pins-watermark.csv"
    out = tmp_path / "tl"
    build_timeline_local(read_trace(sample, sample.with_suffix(".json")), out)
    cursor = InstanceCursor(Timeline(out), "0")
    inp = ReportInput(
        title="idle",
        story_md=None,
        description=None,
        profile=cursor.timeline.meta.profile.value,
        engine="local",
        instance="0",
        step=cursor.count - 1,
        link=None,
        trace_name=sample.name,
        trace_text=sample.read_text(encoding="utf-8"),
        config_json="{}",
        time=TimeFormat(),
    )
    document = build_report(inp, cursor)
    key_steps = document[document.index("<h2>Key steps</h2>") :]
    key_steps = key_steps[: key_steps.index("<h2>", 5)]
    assert "emit W" in key_steps or "<td>W" in key_steps
    assert not re.search(r"W1[0-9]{12}", key_steps), re.findall(r"W1[0-9]{12}", key_steps)[:3]


def test_the_what_if_forms_times_read_as_the_page_shows_them(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("WMVIZ_CACHE", str(tmp_path))
    app = AppTest.from_file(str(REPO / "app.py"), default_timeout=180)
    app.query_params.update({"scenario": "idle-partition-pins-watermark", "engine": "local", "step": "1"})
    app.session_state[state.WHATIF_OPEN] = True  # the form's widgets are drawn while it is open
    app.run()
    assert not app.exception, app.exception
    assert app.text_input(key="whatif_watermark_1").value == "2026-11-21 09:59:58.000Z"
