"""The built-in incident `late-click-merges-sessions`: a late but allowed record bridges two session
windows of one key, one of which has already fired, and the merged session fires again with every
record. Checked on wmviz's simulation, and on the real Flink 2.3.0 WindowOperator through the
session-window differential's harness (tools/flink/window/), the incident's own records and config
turned into that harness's trace."""

from __future__ import annotations

import pytest

from tests.conftest import require_flink
from tools.flink.valve.jar import flink_jar_path
from tools.flink.window.harness import Record, WindowTrace, run_windows
from tools.flink.window.replay import first_difference, replay, scenario_config
from wmviz.core.operator_log import SessionMerge, WindowOutput
from wmviz.core.scenario import Kind, Trace, WindowConfig
from wmviz.core.simulate import simulate
from wmviz.store.incidents import built_in_incidents

SLUG = "late-click-merges-sessions"


def _trace() -> Trace:
    return built_in_incidents()[SLUG].trace()


def window_trace_of(trace: Trace) -> WindowTrace:
    """The incident as the window harness's trace; refuses what that harness could not run as is."""
    config = trace.config
    operator = config.operator
    assert isinstance(operator, WindowConfig) and operator.session_gap_ms is not None
    assert config.generator is not None and trace.valve_channels == {("0", "0"): 1}
    records = []
    for row in trace.rows:
        assert row.kind is Kind.RECORD and row.key is not None and row.event_ms is not None
        records.append(Record(row.key, row.event_ms))
    window = WindowTrace(
        SLUG,
        0,
        None,
        operator.allowed_lateness_ms,
        operator.aggregate,
        tuple(records),
        out_of_orderness_ms=config.generator.out_of_orderness_ms,
        session_gap_ms=operator.session_gap_ms,
    )
    harness_config = scenario_config(window)
    assert harness_config.generator == config.generator, "the harness would run another generator"
    assert harness_config.operator == operator, "the harness would run another operator"
    return window


def test_the_incident_shows_two_sessions_merging_through_a_late_record():
    results = list(simulate(_trace(), None, explain=True))
    fired = [
        (r.step, e.start_ms, e.end_ms, len(e.elements))
        for r in results
        for e in r.events
        if isinstance(e, WindowOutput)
    ]
    assert (2, 0, 50_000, 2) in fired  # the first session fires with two clicks
    late = results[4]
    assert late.row.event_ms is not None and late.row.event_ms < 74_999  # behind the watermark
    merge = next(e for e in late.events if isinstance(e, SessionMerge))
    assert merge.window == (0, 110_000) and merge.new_window == (45_000, 75_000)
    assert sorted(merge.merged) == [(0, 50_000), (70_000, 110_000)]
    assert merge.timer_ms == 109_999  # not yet due: the merged session fires later, not late
    assert (5, 0, 110_000, 5) in fired  # again, with every click, the first two included


@pytest.mark.flink
def test_real_flink_fires_the_incident_as_wmviz_does():
    require_flink("real Flink {version} window operator", "the session-merge incident check")
    window = window_trace_of(_trace())
    (flink,) = run_windows([window], jar=flink_jar_path())
    assert first_difference(window, flink) is None, first_difference(window, flink)
    merged = [f for f in flink.segments[5] if f[:4] == ("F", "user-7", 0, 110_000)]
    assert len(merged) == 1 and sorted(merged[0][4]) == [0, 1, 2, 3, 4]  # every click, not late
    assert merged[0][5] is False
    assert replay(window).segments == flink.segments
