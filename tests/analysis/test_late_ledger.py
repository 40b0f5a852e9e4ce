"""The late-row ledger (wmviz/analysis/late_ledger.py, docs/late-rows.md): one row per record an
operator received, the watermark it arrived under, its fate, rule and metric, and where it ended."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wmviz.analysis.late_ledger import build_ledger, operator_name, parse_fate, select, table_rows
from wmviz.core.scenario import Kind, NoOperator
from wmviz.core.simulate import Simulation, simulate
from wmviz.core.sql_rows import Fate, RowFate
from wmviz.store.incidents import built_in_incidents
from wmviz.trace.readers import read_trace

WINDOW = {"type": "window", "size_ms": 5, "allowed_lateness_ms": 1, "aggregate": "list"}


def trace_of(tmp_path: Path, operator: dict, rows: list[dict], **config):
    path = tmp_path / "trace.jsonl"
    lines = [json.dumps({"config": {"operator": operator, **config}}), *map(json.dumps, rows)]
    path.write_text("\n".join(lines) + "\n")
    return read_trace(path)


def ledger_of(trace):
    return build_ledger(simulate(trace), operator_name(trace.config))


def rec(ts: int, **cells) -> dict:
    return {"kind": "record", "channel": 0, "event_ms": ts, **cells}


def wm(ms: int, **cells) -> dict:
    return {"kind": "watermark", "channel": 0, "watermark_ms": ms, **cells}


def test_the_eleven_events_one_row_each_late_firing_and_counted_drop():
    trace = built_in_incidents()["late-data-allowed-lateness"].trace()
    ledger = ledger_of(trace)
    assert [e.event_ms for e in ledger] == [1, 3, 2, 6, 4, 5, 7, 3, 9, 3, 12]
    # The watermark before each record: the generator's, which follows the record (so MIN first).
    assert [e.watermark_ms for e in ledger] == [None, -2, 0, 0, 3, 3, 3, 4, 4, 6, 6]
    fates = [(e.fate.fate, e.fate.rule, e.fate.metric) for e in ledger]
    assert fates[7] == (Fate.ADDED_LATE, "Firing", None)
    assert fates[9] == (Fate.DROPPED, "Lateness", "numLateRecordsDropped")
    assert all(f == (Fate.KEPT, "Window assignment", None) for i, f in enumerate(fates) if i not in (7, 9))
    late, dropped = ledger[7], ledger[9]
    assert late.lateness_ms == 1 and dropped.lateness_ms == 3
    assert [(e.step, e.text()) for e in late.endings] == [(7, "late firing of window [0, 5)")]
    first_endings = [e.text() for e in ledger[0].endings]
    assert first_endings == ["firing of window [0, 5)", "late firing of window [0, 5)"]
    assert dropped.endings == [] and ledger[-1].endings == []  # [10, 15) never fires
    assert "numLateRecordsDropped" in dropped.fate.reason


def test_every_record_of_every_built_in_incident_has_exactly_one_row():
    """The contract: one RowFate per record an operator receives (held records on release)."""
    for slug, incident in built_in_incidents().items():
        trace = incident.trace()
        if isinstance(trace.config.operator, NoOperator):
            continue
        records = sorted(r.row for r in trace.rows if r.kind is Kind.RECORD)
        ledger = ledger_of(trace)
        assert sorted(e.row for e in ledger) == records, slug


def test_a_counted_drop_is_exactly_a_late_dropped_record_of_the_step():
    """The ledger's metric agrees with the drops the page already shows (Dropped.late)."""
    for slug, incident in built_in_incidents().items():
        trace = incident.trace()
        if isinstance(trace.config.operator, NoOperator):
            continue
        counted = set()
        for result in simulate(trace):
            counted |= {(result.step, d.row.row) for d in result.dropped if d.late}
        ledger = ledger_of(trace)
        assert {(e.decided_step, e.row) for e in ledger if e.fate.metric} == counted, slug


def test_watermark_before_a_record_is_the_instances_combined_watermark_before_its_step(tmp_path):
    """With explicit watermarks (nothing moves within a record's step before it arrives), the
    watermark a row arrived under is the valve's output after the step before: read here from the
    pipeline itself, not from the ledger's source."""
    rows = [wm(3, channel=0), rec(1, channel=1), wm(4, channel=1), rec(2), wm(9), rec(9, channel=1)]
    rows += [wm(20, channel=1), rec(12), rec(4, channel=1)]
    trace = trace_of(tmp_path, WINDOW, rows, channels={"0": 2})
    sim = Simulation(trace)
    before = {}
    for index, row in enumerate(trace.rows):
        pipeline = sim.pipeline(row.instance)
        watermark = pipeline.output_watermark_ms
        result = pipeline.process(index, row, explain=False)
        if row.kind is Kind.RECORD:
            before[row.row] = watermark
    ledger = ledger_of(trace)
    assert {e.row: e.fate.watermark_ms for e in ledger} == before
    assert [e.watermark_ms for e in ledger] == [None, 3, 4, 9, 9]  # MIN reads as NULL
    assert result is not None


def test_behind_the_watermark_but_its_window_still_open_is_kept_and_listed_as_late(tmp_path):
    """`ts <= CURRENT_WATERMARK(ts)` is not the window's test: a row at 6 under watermark 7 lands
    in [5, 10), which has not fired, so it is simply kept; `late_only` still lists it."""
    trace = trace_of(tmp_path, WINDOW, [wm(7), rec(6), rec(8), wm(20)])
    ledger = ledger_of(trace)
    first, second = ledger
    assert first.fate.fate is Fate.KEPT and first.lateness_ms == 1 and first.late
    assert second.fate.fate is Fate.KEPT and second.lateness_ms is None and not second.late
    assert select(ledger, late_only=True) == [first]


def test_a_row_at_the_watermark_on_its_windows_last_ms_is_dropped_though_not_behind_it(tmp_path):
    """docs/late-rows.md: `ts < CURRENT_WATERMARK(ts)` misses it, the window's test drops it."""
    op = {"type": "window", "size_ms": 5, "aggregate": "count"}
    (entry,) = ledger_of(trace_of(tmp_path, op, [wm(4), rec(4), wm(20)]))
    assert (entry.fate.fate, entry.fate.metric) == (Fate.DROPPED, "numLateRecordsDropped")
    assert entry.watermark_ms == entry.event_ms == 4 and entry.lateness_ms is None
    assert entry.late  # at the watermark: --late-only lists it


def test_sliding_row_only_its_later_windows_take_is_added_late(tmp_path):
    op = {"type": "window", "size_ms": 10, "slide_ms": 5, "aggregate": "count"}
    trace = trace_of(tmp_path, op, [wm(9), rec(7), wm(30)])
    (entry,) = ledger_of(trace)
    assert (entry.fate.fate, entry.fate.rule, entry.fate.metric) == (Fate.ADDED_LATE, "Lateness", None)
    assert "[5, 15) took it" in entry.fate.reason
    assert [e.text() for e in entry.endings] == ["firing of window [5, 15)"]


def test_a_row_in_a_gap_of_a_sliding_window_is_dropped_uncounted(tmp_path):
    op = {"type": "window", "size_ms": 5, "slide_ms": 10, "aggregate": "count"}
    trace = trace_of(tmp_path, op, [rec(7), wm(30)])
    (entry,) = ledger_of(trace)
    assert (entry.fate.fate, entry.fate.metric) == (Fate.DROPPED, None)
    assert "gap" in entry.fate.reason


def test_a_late_click_that_merges_into_an_open_session_is_added_late():
    trace = built_in_incidents()["late-click-merges-sessions"].trace()
    ledger = ledger_of(trace)
    bridging = next(e for e in ledger if e.event_ms == 45_000)
    assert (bridging.fate.fate, bridging.fate.rule) == (Fate.ADDED_LATE, "Lateness")
    assert bridging.watermark_ms == 74_999 and bridging.lateness_ms == 29_999
    assert "open session, now [0, 110000)" in bridging.fate.reason
    assert [e.text() for e in bridging.endings] == ["firing of window [0, 110000) of key user-7"]
    assert [e.fate.fate for e in ledger].count(Fate.ADDED_LATE) == 1


@pytest.mark.parametrize(
    ("join", "fate", "rule", "ending"),
    [
        ("inner", Fate.DROPPED, "A5", None),
        ("left", Fate.ADDED_LATE, "A6", "+I padded with nulls (pad_not_cached)"),
    ],
)
def test_a_join_row_too_late_to_be_cached(tmp_path, join, fate, rule, ending):
    """TimeIntervalJoin (Flink 2.3.0) has no late-record metric: the inner drop is uncounted."""
    op = {"type": "interval_join", "join": join, "lower_ms": -5, "upper_ms": 5}
    rows = [wm(100, input="L"), wm(100, input="R"), rec(10, input="L", key="k"), rec(200, input="R", key="k")]
    trace = trace_of(tmp_path, op, rows, channels={"L": 1, "R": 1})
    late, on_time = ledger_of(trace)
    assert (late.fate.fate, late.fate.rule, late.fate.metric) == (fate, rule, None)
    assert late.watermark_ms == 100 and late.lateness_ms == 90
    assert [e.text() for e in late.endings] == ([ending] if ending else [])
    assert (on_time.fate.fate, on_time.fate.rule) == (Fate.KEPT, "A5")
    assert late.operator == f"{join} interval join"


def test_a_cached_join_row_shows_its_changelog():
    trace = built_in_incidents()["early-fire-left-join"].trace()
    order_1 = ledger_of(trace)[0]
    assert [(e.step, e.text()) for e in order_1.endings] == [
        (6, "+I padded with nulls (early_fire)"),
        (7, "-U padded with nulls (retract)"),
        (7, "+U joined (match)"),
    ]


def test_filters_and_fate_names(tmp_path):
    ledger = ledger_of(built_in_incidents()["late-data-allowed-lateness"].trace())
    assert [e.event_ms for e in select(ledger, fate=Fate.DROPPED)] == [3]
    assert [e.event_ms for e in select(ledger, late_only=True)] == [3, 3]
    assert select(ledger, instance="nope") == []
    assert parse_fate("added-late") is Fate.ADDED_LATE and parse_fate(" Dropped") is Fate.DROPPED
    with pytest.raises(ValueError, match="kept, added-late, dropped"):
        parse_fate("lost")


def test_json_row_says_every_column(tmp_path):
    ledger = ledger_of(built_in_incidents()["late-data-allowed-lateness"].trace())
    assert ledger[9].as_json() == {
        "step": 9,
        "row": ledger[9].row,
        "instance": "0",
        "input": "0",
        "channel": 0,
        "event_ms": 3,
        "watermark_ms": 6,
        "watermark_known": True,
        "lateness_ms": 3,
        "fate": "dropped",
        "operator": "tumbling window",
        "rule": "Lateness",
        "metric": "numLateRecordsDropped",
        "why": ledger[9].fate.reason,
        "decided_step": 9,
        "ended_in": [],
    }


@pytest.mark.parametrize(
    ("name", "operator", "prefix"),
    [
        ("sql-session-late-merge", "sql_session", "SQL-S"),
        ("sql-over-buffer", "over_aggregate", "SQL-O"),
        ("sql-temporal-join", "temporal_join", "SQL-T"),
    ],
)
def test_a_sql_operators_rows_join_the_ledger_with_nothing_more(name, operator, prefix):
    """SQL's operators log RowFate and appear as they are: their rule ids and metrics, and the
    watermark each row arrived under, which the pipeline fills in where the operator does not say
    it (`sql_rows.said_watermark`): never `?`."""
    from tests.conftest import REPO

    trace = read_trace(REPO / "tests" / "data" / "sql" / f"{name}.jsonl")
    ledger = ledger_of(trace)
    assert {e.row for e in ledger} == {r.row for r in trace.rows if r.kind is Kind.RECORD}
    assert {e.operator for e in ledger} == {operator}
    assert all(e.fate.rule.startswith(prefix) for e in ledger)
    assert all(e.watermark_known for e in ledger)
    for entry in ledger:
        if entry.fate.metric is not None:
            assert entry.fate.fate is Fate.DROPPED and entry.event_ms <= entry.watermark_ms


def test_two_phase_rows_sit_at_their_arrival_step_with_the_watermark_they_arrived_under():
    """SQL-W5: with two-phase aggregation the local stage buffers a row and its fate is decided at
    a later flush. The ledger still lists each row at the step it was read, with the watermark the
    pipeline had before that step (read here from the pipeline itself), and says the flush's step."""
    from tests.conftest import REPO

    trace = read_trace(REPO / "sample_data" / "sql-cumulate-late-row-changes-only-open-windows.jsonl")
    sim = Simulation(trace)
    before, read_at, decided = {}, {}, {}
    for index, row in enumerate(trace.rows):
        pipeline = sim.pipeline(row.instance)
        watermark = pipeline.output_watermark_ms
        result = pipeline.process(index, row, explain=False)
        if row.kind is Kind.RECORD:
            before[row.row], read_at[row.row] = watermark, index
        for event in result.events:
            if isinstance(event, RowFate):
                decided[event.row.row] = index
    ledger = ledger_of(trace)
    assert all(e.watermark_known for e in ledger)
    assert {e.row: e.fate.watermark_ms for e in ledger} == before
    assert [e.step for e in ledger] == sorted(read_at.values())
    assert {e.row: e.step for e in ledger} == read_at
    assert {e.row: e.decided_step for e in ledger} == decided
    late = {e.row: (e.step, e.decided_later, e.fate.fate.value) for e in ledger if e.late}
    assert late == {
        8: (6, "fate decided at step 10", "added late"),
        16: (14, "fate decided at step 16", "added late"),
        20: (18, "fate decided at step 20", "dropped"),
    }
    rows = table_rows(ledger)
    assert rows[3]["CURRENT_WATERMARK"] != "?" and rows[3]["why"].endswith("; fate decided at step 10")
