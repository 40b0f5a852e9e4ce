"""SQL's Window TopN and Window Deduplication over HOP and CUMULATE against real Flink 2.3.0 SQL.

`tests/data/sql/window_rank_sliding.sql` holds four jobs, each on its own table of the same bids,
so one real run (one JVM for the module) checks them all: the top 2 bids per item over HOP (10 s
sliding by 5 s) and over CUMULATE (5 s steps up to 15 s), each bidder's first bid over HOP and last
bid over CUMULATE. Flink's window table function copies a row into every window holding it (in
its assigner's order: HOP from the latest start back, CUMULATE from the smallest end up) and
drops nothing; the TopN and dedup operators judge each copy on its own window: a copy whose
window has fired is dropped and counted (one count per copy), the others are kept (SQL-R5).

The bids are drawn as in tests/flink/test_sql_window_rank_flink.py (several items and bidders, ties of
price and time, rows late by a little and a lot, rows on a window's last millisecond), each bid
sent to the four tables in turn. `wmviz sql replay`'s own path (`replay_states` + `replay_lines`)
must give the same sink rows (values, rn, changelog kind) and `numLateRecordsDropped` deltas, step
by step. Planted bugs (a copy late for one window dropping the row from all its windows; a
CUMULATE window's start taken as its end minus the largest size; HOP windows one millisecond
late) must make the comparison fail.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from tests.conftest import require_flink
from tests.flink.test_sql_window_rank_flink import bids_rows
from tests.support import paths
from wmviz.core.sql_window_rank import SqlWindowRank
from wmviz.sql import jars
from wmviz.sql.load import read_plan_file
from wmviz.sql.replay import replay_states
from wmviz.sql.rowflow import group_rows, replay_lines, rows_not_replayed
from wmviz.sql.rows import read_input

pytestmark = pytest.mark.flink

DATA = paths.DATA / "sql"
SCRIPT = "window_rank_sliding"
TABLES = {"hop_bids": "top_hop", "cum_bids": "top_cum", "hop_first": "first_hop", "cum_last": "last_cum"}
"""Table -> the sink its job writes."""
SEED, BIDS = 31, 36


@pytest.fixture(scope="module")
def real_run(tmp_path_factory) -> tuple[Path, list[dict]]:
    what = "the HOP/CUMULATE window TopN differential"
    require_flink("Flink {version}'s SQL runtime", what, jars.sql_unavailable_reason)
    from tools.flink.sql.run import run_script

    lines = [{**bid, "table": table} for bid in bids_rows(random.Random(SEED), BIDS) for table in TABLES]
    rows = tmp_path_factory.mktemp(SCRIPT) / "rows.jsonl"
    rows.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return rows, [e for e in run_script(DATA / f"{SCRIPT}.sql", rows) if "sink" in e or "metric" in e]


def replayed(rows: Path) -> list[dict]:
    job = read_plan_file(DATA / f"{SCRIPT}.plan.json")
    given = read_input(rows)
    return [line.as_json() for line in replay_lines(job, given, replay_states(job, given))]


def differing(rows: Path, flink: list[dict]) -> set[str]:
    """The sinks whose rows, or whose operator's late drops, differ from the real run's."""
    job = read_plan_file(DATA / f"{SCRIPT}.plan.json")
    operators = {plan.operator: plan.routes[0].sink for plan in group_rows(job)}
    mine = replayed(rows)

    def of(lines: list[dict], sink: str) -> list[dict]:
        return [e for e in lines if e.get("sink") == sink or operators.get(e.get("operator")) == sink]

    return {sink for sink in TABLES.values() if of(mine, sink) != of(flink, sink)}


def test_every_sink_row_and_drop_equals_real_flink(real_run):
    rows, flink = real_run
    assert rows_not_replayed(read_plan_file(DATA / f"{SCRIPT}.plan.json")) == []
    for sink in TABLES.values():
        assert sum(e.get("sink") == sink for e in flink) >= 10, f"too few {sink} rows to compare"
    assert len({e["operator"] for e in flink if "metric" in e}) == 4, "each job must drop late copies"
    assert replayed(rows) == flink


def test_a_row_late_for_one_window_is_kept_for_the_others(real_run):
    """The draws hit the rule that sets HOP and CUMULATE apart: some row's copy is late (dropped,
    counted) while another copy of it is kept, so the comparison covers SQL-R5."""
    rows, _ = real_run
    job = read_plan_file(DATA / f"{SCRIPT}.plan.json")
    given = read_input(rows)
    rules = {fate.rule for state in replay_states(job, given) for fate in state.fates.values()}
    assert "SQL-R5" in rules


def test_a_copy_late_for_one_window_dropping_the_whole_row_is_caught(real_run, monkeypatch):
    real = SqlWindowRank.on_record

    def whole_row(self, input_name, row, log):
        ends = self.window_ends_of(row)
        if any(self.zone.fired(end, self.progress) for end in ends):
            for end in ends:
                self.drop_late(row, end, log, say=end == ends[0])
            return
        real(self, input_name, row, log)

    monkeypatch.setattr(SqlWindowRank, "on_record", whole_row)
    assert differing(*real_run) == set(TABLES.values())


def test_a_cumulate_start_off_by_its_steps_is_caught(real_run, monkeypatch):
    monkeypatch.setattr(SqlWindowRank, "start_of", lambda self, end: end - self.config.size_ms)
    assert {"top_cum", "last_cum"} <= differing(*real_run)


def test_hop_windows_a_millisecond_late_are_caught(real_run, monkeypatch):
    real = SqlWindowRank.window_ends_of

    def later(self, row):
        ends = real(self, row)
        return [end + 1 for end in ends] if self.config.window == "hop" else ends

    monkeypatch.setattr(SqlWindowRank, "window_ends_of", later)
    assert {"top_hop", "first_hop"} <= differing(*real_run)
