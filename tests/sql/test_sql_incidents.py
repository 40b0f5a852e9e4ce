"""The three SQL operator incidents (issue 29): each trace is what `wmviz sql replay` makes of the
job's own SQL plan and rows, the replay's sink rows and late drops equal a real Flink 2.3.0 run of
the same SQL on the same rows (its output kept beside the script, `*.flink.jsonl`, and made again by
the flink-marked test), and each does what its story says, step by step."""

from __future__ import annotations

import dataclasses
import json

import pytest

from tests.conftest import require_flink
from tests.support import paths
from wmviz.analysis.late_ledger import build_ledger, operator_name
from wmviz.core.scenario import Kind, TraceRow
from wmviz.core.simulate import simulate
from wmviz.core.sql_rows import Fate, SqlOutput
from wmviz.sql.load import read_plan_file
from wmviz.sql.replay import group_trace, replay_states
from wmviz.sql.rowflow import replay_lines
from wmviz.sql.rows import read_input
from wmviz.store.incidents import built_in_incidents

DATA = paths.DATA / "sql"
INCIDENTS = {
    # slug: (script, rows)
    "sql-cumulate-late-row-changes-only-open-windows": (
        "incident_cumulate_dead_letter",
        "incident_cumulate_late",
    ),
    "sql-quiet-rates-table-stalls-the-join": ("incident_quiet_rates", "incident_quiet_rates"),
    "sql-over-drops-rows-nobody-saw": ("incident_over_drops", "incident_over_drops"),
}


def plain(row: TraceRow) -> TraceRow:
    """A row without its line number, and a clock row without its input (the trace reader names a
    clock row's input by the operator's first one: `L` at a join)."""
    return dataclasses.replace(row, row=0, input="" if row.kind is Kind.PROCTIME else row.input)


def replay(script: str, rows: str) -> list[dict]:
    job = read_plan_file(DATA / f"{script}.plan.json")
    given = read_input(DATA / f"{rows}.rows.jsonl")
    return [line.as_json() for line in replay_lines(job, given, list(replay_states(job, given)))]


def real(script: str) -> list[dict]:
    lines = (DATA / f"{script}.flink.jsonl").read_text(encoding="utf-8").splitlines()
    return [row for row in map(json.loads, lines) if "sink" in row or "metric" in row]


@pytest.mark.parametrize("slug", INCIDENTS)
def test_the_incident_trace_is_the_replay_of_the_jobs_sql(slug):
    script, rows = INCIDENTS[slug]
    trace = built_in_incidents()[slug].trace()
    config, replayed = group_trace(
        read_plan_file(DATA / f"{script}.plan.json"), read_input(DATA / f"{rows}.rows.jsonl"), "x"
    )
    assert list(map(plain, trace.rows)) == list(map(plain, replayed))
    assert trace.config.operator == config.operator and trace.config.generators == config.generators


@pytest.mark.parametrize("slug", INCIDENTS)
def test_every_sink_row_and_late_drop_equals_the_real_run(slug):
    script, rows = INCIDENTS[slug]
    assert replay(script, rows) == real(script)


def test_a_planted_bug_is_caught(monkeypatch):
    """The comparison bites: an OVER aggregation keeping a row at the watermark (`<` for `≤`)."""
    from wmviz.core.sql_over import OverAggregate

    monkeypatch.setattr(OverAggregate, "o1_is_late", lambda self, ts: ts < self.watermark_ms)
    assert replay("incident_over_drops", "incident_over_drops") != real("incident_over_drops")


INCIDENT_CUMULATE = "sql-cumulate-late-row-changes-only-open-windows"


def fates(slug: str) -> dict[int, tuple[int, Fate]]:
    """Each record's trace line -> (the step its fate was told, its fate)."""
    trace = built_in_incidents()[slug].trace()
    ledger = build_ledger(simulate(trace), operator_name(trace.config))
    return {entry.fate.row.row: (entry.decided_step, entry.fate.fate) for entry in ledger}


def outputs(slug: str) -> list[tuple[int, dict]]:
    trace = built_in_incidents()[slug].trace()
    return [(r.step, dict(e.values)) for r in simulate(trace) for e in r.events if isinstance(e, SqlOutput)]


def test_cumulate_a_late_order_changes_only_the_windows_not_yet_fired():
    fired = [
        (step, row["window_end"], row["orders"], row["revenue"]) for step, row in outputs(INCIDENT_CUMULATE)
    ]
    assert fired[:3] == [
        (4, "2026-11-24 10:00:05.000", 2, 15),
        (10, "2026-11-24 10:00:10.000", 5, 43),
        (16, "2026-11-24 10:00:15.000", 8, 52),
    ]
    told = fates(INCIDENT_CUMULATE)
    assert told[8] == (10, Fate.ADDED_LATE)  # o4, line 8: in [00, 10) and [00, 15), not [00, 05)
    assert told[16] == (16, Fate.ADDED_LATE)  # o8
    assert told[20] == (20, Fate.DROPPED)  # o10: told when the local pre-aggregator hands it on


def test_quiet_rates_hold_every_order_until_a_rate_changes():
    priced = [
        (step, row["order_id"], row["rate"]) for step, row in outputs("sql-quiet-rates-table-stalls-the-join")
    ]
    assert priced == [(12, "o1", 108), (12, "o2", 108), (12, "o3", 108), (16, "o4", 110), (16, "o5", 110)]


def test_over_drops_a_row_10_ms_out_of_order_and_one_tied_with_another_user():
    told = fates("sql-over-drops-rows-nobody-saw")
    dropped = sorted(row for row, (_, fate) in told.items() if fate is Fate.DROPPED)
    assert dropped == [8, 14] and told[8][0] == 6 and told[14][0] == 12


KEPT = ("incident_cumulate_dead_letter", "incident_quiet_rates", "incident_over_drops")
"""The scripts whose real run is kept beside them as `*.flink.jsonl`."""


@pytest.fixture(scope="module")
def kept_runs() -> dict[str, list[dict]]:
    """Each kept script run again on real Flink 2.3.0 on its rows, all in one JVM."""
    from wmviz.sql import jars

    require_flink("Flink 2.3.0's SQL runtime", "the SQL incidents' real runs", jars.sql_unavailable_reason)
    from tools.flink.sql.run import run_scripts

    rows = {script: next(r for s, r in INCIDENTS.values() if s == script) for script in KEPT}
    ran = run_scripts([(DATA / f"{script}.sql", DATA / f"{rows[script]}.rows.jsonl") for script in KEPT])
    return dict(zip(KEPT, ran, strict=True))


@pytest.mark.flink
@pytest.mark.parametrize("script", KEPT)
def test_the_kept_real_runs_are_what_flink_does_now(script, kept_runs):
    """The `*.flink.jsonl` beside each script is real Flink 2.3.0's output, made again here."""
    ran = [row for row in kept_runs[script] if "sink" in row or "metric" in row]
    assert ran == real(script)


def test_the_dead_letter_query_catches_two_orders_the_windows_still_counted():
    """`WHERE ts < CURRENT_WATERMARK(ts)` writes o4, o8 and o10 (lines 4, 8, 10 of the rows file;
    the real run's `late_orders` rows say the same): o4 and o8 were added to windows not yet fired,
    so only o10 was lost, and none of the dropped rows is missed."""
    from wmviz.sql.dead_letter import dead_letter_accounts

    job = read_plan_file(DATA / "incident_cumulate_dead_letter.plan.json")
    given = read_input(DATA / "incident_cumulate_late.rows.jsonl")
    states = list(replay_states(job, given))
    (account,) = dead_letter_accounts(job, list(replay_lines(job, given, states)), states)
    assert account.as_json() == {
        "dead_letter": "late_orders",
        "caught": [4, 8, 10],
        "counted_anyway": [4, 8],
        "missed": [],
    }
    assert dead_letter_accounts(read_plan_file(DATA / "incident_over_drops.plan.json"), [], states) == []
