"""The built-in incident `fast-partition-paused-by-alignment`: two source subtasks of one alignment
group, the one reading live orders runs more than the max drift ahead of the one replaying a
backlog and is PAUSED (its records held back) until the slow one catches up. Checked on wmviz's
simulation, on the page (streamlit.testing), and on the real Flink 2.3.0 SourceOperator through the
alignment differential's harness (tools/flink/record/alignment.py), the incident's own rows and
config turned into that harness's trace."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import REPO, require_flink
from tests.support.html_tables import read_tables
from tools.flink.record.alignment import AlignTrace, Harness, align_config, first_difference, flink_steps
from tools.flink.valve.jar import flink_jar_path
from tools.flink.window.idleness import sent_tokens
from wmviz.core.scenario import Kind, Trace
from wmviz.core.simulate import simulate
from wmviz.core.step_result import StepResult
from wmviz.core.story import explain_step
from wmviz.core.types import EmittedWatermark, StatusInput, WatermarkInput
from wmviz.store.incidents import built_in_incidents

SLUG = "fast-partition-paused-by-alignment"
PAUSE_STEP, RESUME_STEP = 6, 13  # the steps the story names
CAUSE = (
    "subtask 0 PAUSED: 20s ahead of the group watermark 11999 (group orders, max drift 10s), "
    "held by split orders-1 of subtask 1"
)


def _trace() -> Trace:
    return built_in_incidents()[SLUG].trace()


def _with_alignment(trace: Trace, **changes) -> Trace:
    generator = trace.config.generator
    assert generator is not None and generator.alignment is not None
    generator = replace(generator, alignment=replace(generator.alignment, **changes))
    return replace(trace, config=replace(trace.config, generator=generator))


def _run(trace: Trace) -> list[StepResult]:
    return list(simulate(trace, None, explain=True))


def _paused_steps(results: list[StepResult]) -> list[int]:
    return [r.step for r in results if " PAUSED: " in explain_step(r)]


def test_the_fast_subtask_is_paused_with_its_cause_its_records_held_and_read_once_the_slow_one_catches_up():
    results = _run(_trace())
    texts = [explain_step(r) for r in results]
    assert _paused_steps(results)[0] == PAUSE_STEP
    assert CAUSE in texts[PAUSE_STEP]
    assert "split orders-0 of subtask 0 PAUSED: 20s ahead" in texts[PAUSE_STEP]
    held = [
        r.step for r, text in zip(results, texts, strict=True) if "held back: subtask 0 is PAUSED" in text
    ]
    assert held == [6, 8, 11]  # live-4, live-5 and live-6; orders-1's records are read meanwhile
    resumed = [r.step for r, text in zip(results, texts, strict=True) if "subtask 0 resumed" in text]
    assert resumed == [RESUME_STEP]
    assert "the group orders now allows up to 35999" in texts[RESUME_STEP]
    assert "reads the records it held back (lines 8, 10, 13)" in texts[RESUME_STEP]
    # Nothing of subtask 0 reaches the valve while it waits; the output follows orders-1 throughout.
    sent_while_paused = [
        vs.valve_input
        for r in results[PAUSE_STEP + 1 : RESUME_STEP + 1]
        for vs in r.valve_steps
        if isinstance(vs.valve_input, WatermarkInput | StatusInput) and vs.valve_input.channel == 0
    ]
    assert sent_while_paused == []
    assert [e.watermark_ms for e in results[-1].out if isinstance(e, EmittedWatermark)] == []
    assert WatermarkInput(0, 34_999) in [vs.valve_input for vs in results[-1].valve_steps]
    output = [e.watermark_ms for r in results for e in r.out if isinstance(e, EmittedWatermark)]
    assert output[-1] == 25_999


def test_the_storys_fix_a_larger_drift_pauses_nothing_and_no_sampling_ring_pauses_at_step_2():
    assert _paused_steps(_run(_with_alignment(_trace(), max_drift_ms=30_000))) == []
    assert _paused_steps(_run(_with_alignment(_trace(), buffer_size=0)))[0] == 2


# --- the page ------------------------------------------------------------------------------------


@pytest.fixture
def page(tmp_path, monkeypatch):
    monkeypatch.setenv("WMVIZ_CACHE", str(tmp_path))
    app = AppTest.from_file(str(REPO / "app.py"), default_timeout=300)
    app.query_params["scenario"] = SLUG
    app.query_params["engine"] = "local"
    app.query_params["step"] = str(PAUSE_STEP)
    app.run()
    assert not app.exception, app.exception
    return app


def test_the_page_shows_the_paused_split_and_subtask_with_the_cause_and_that_alignment_is_checked(page):
    narration = next(t.value for t in page.text if t.value.startswith("•"))
    assert CAUSE in narration
    splits = next(  # the split stage: an HTML table that wraps (issue 30), not a data grid
        table.frame
        for element in page.get("html")
        for table in read_tables(element.value)
        if {"split", "status", "holds"} <= set(table.frame.columns)
    )
    status = dict(zip(splits["split"], splits["status"], strict=True))
    assert status == {"orders-0": "PAUSED", "orders-1": "ACTIVE"}
    holds = dict(zip(splits["split"], splits["holds"], strict=True))
    assert holds == {"orders-0": "holds subtask 0", "orders-1": "holds subtask 1"}
    label = next(c for c in page.caption if "engine local" in c.value)
    checked = re.search(r"checked against Flink [\d.]+: ([^.]*)", label.value)
    assert checked is not None and "watermark alignment" in checked.group(1), label.value
    assert "tests/flink/test_flink_alignment.py" in label.proto.help


# --- the real Flink SourceOperator -----------------------------------------------------------------


def align_trace_of(trace: Trace) -> AlignTrace:
    """The incident as the alignment harness's trace; refuses what that harness would run otherwise."""
    config = trace.config
    generator = config.generator
    assert generator is not None and generator.alignment is not None
    splits = dict(generator.splits)
    subtasks = tuple(tuple(splits[channel]) for channel in range(config.channels["0"]))
    rows = []
    for row in trace.rows:
        assert row.proc_ms is not None
        if row.kind is Kind.PROCTIME:
            rows.append((row.proc_ms, None, None, None))
        else:
            assert row.kind is Kind.RECORD and row.channel is not None
            rows.append((row.proc_ms, int(row.channel), str(dict(row.payload)["split"]), row.event_ms))
    alignment = generator.alignment
    aligned = AlignTrace(
        SLUG,
        subtasks,
        generator.out_of_orderness_ms,
        generator.interval_ms,
        alignment.update_interval_ms,
        alignment.max_drift_ms,
        alignment.buffer_size,
        generator.idle_timeout_ms,
        tuple(rows),
    )
    harness = align_config(aligned)
    assert harness.channels == config.channels, "the harness would run other channels"
    assert harness.generator == replace(generator, alignment=replace(alignment, group="g")), (
        "the harness would run another generator (the group's name it does not need)"
    )
    return aligned


@pytest.mark.flink
def test_real_flink_pauses_holds_and_resumes_the_incident_as_wmviz_does():
    require_flink("real Flink {version} SourceOperator", "the alignment incident check")
    aligned = align_trace_of(_trace())
    harness = Harness(jar=flink_jar_path())
    try:
        steps, problems = flink_steps(harness, aligned)
    finally:
        harness.close()
    assert first_difference(aligned, steps, problems) is None, first_difference(aligned, steps, problems)
    # The incident itself (its group name, its own pipeline) sends what Flink's subtasks sent...
    results = _run(_trace())
    assert [sent_tokens(r) for r in results] == [s.sent for s in steps]
    # ... and Flink's subtask 0 waits, its split paused, exactly from the pause to the resume.
    waiting = [i for i, s in enumerate(steps) if "0:wait" in s.state]
    assert waiting == list(range(PAUSE_STEP, RESUME_STEP))
    assert all("0:paused=orders-0" in steps[i].state for i in waiting)
    held = f"0:R{PAUSE_STEP + 1}"  # the harness numbers rows from 1, without the config line
    assert held not in steps[PAUSE_STEP].read and held in steps[RESUME_STEP].read
