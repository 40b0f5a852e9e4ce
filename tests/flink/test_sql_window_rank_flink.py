"""SQL's Window TopN and Window Deduplication over TUMBLE against real Flink 2.3.0 SQL.

Each script of `tests/data/sql/` (window_rank, window_dedup, window_dedup_first, window_rank_ltz)
runs for real by `tools.flink.sql.run` (every script in one JVM) on rows drawn at random from a seed:
several items and bidders, equal prices and equal times (ties), rows late by a little and a lot,
rows on a window's last millisecond; for the LTZ script, hour windows of Europe/Berlin across the
night its clocks go back. `wmviz sql replay`'s own path (`replay_states` + `replay_lines`) must
give the same sink rows (values, rn, changelog kind) and the same `numLateRecordsDropped` deltas,
step by step. Planted bugs (ties broken the other way, a tie in keep-last kept first, a window that
fires one millisecond late, a late row kept, LTZ windows cut in UTC) must make the comparison fail.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from tests.conftest import require_flink
from tests.support import paths
from wmviz.core.sql_window_rank import SqlWindowRank
from wmviz.sql import jars
from wmviz.sql.load import read_plan_file
from wmviz.sql.replay import replay_states
from wmviz.sql.rowflow import replay_lines
from wmviz.sql.rows import read_input

pytestmark = pytest.mark.flink

DATA = paths.DATA / "sql"
SCRIPTS = ("window_rank", "window_dedup", "window_dedup_first", "window_rank_ltz")
SEED, LINES = 29, 45
DST_BACK_MS = 1_792_890_000_000
"""2026-10-25 01:00 UTC: Berlin's clocks go back from 03:00 CEST to 02:00 CET."""


def _timestamp(ms: int) -> str:
    seconds, millis = divmod(ms, 1000)
    minutes, seconds = divmod(seconds, 60)
    return f"2026-11-24 10:{minutes:02d}:{seconds:02d}.{millis:03d}"


def bids_rows(rng: random.Random, lines: int) -> list[dict]:
    """Bids of u1..u3 on items A, B; prices from a small set (ties); times mostly rising, some
    equal to the one before, some late by 1.5 to 9 s, some on a window's last millisecond."""
    out: list[dict] = []
    clock, last = 1000, 1000
    for _ in range(lines):
        clock += rng.choice([0, 300, 700, 1000, 2000])
        ts = rng.choice([clock, clock, clock, last, clock - 1500, clock - 4000, clock - 9000,
                         (clock // 5000) * 5000 + 4999])  # fmt: skip
        ts = max(ts, 0)
        last = ts
        row = {"bidder": rng.choice(["u1", "u2", "u3"]), "item": rng.choice(["A", "B"]),
               "price": rng.choice([5, 10, 10, 20, 30]), "ts": _timestamp(ts)}  # fmt: skip
        out.append({"table": "bids", "partition": 0, "row": row})
    return out


def events_rows(rng: random.Random, lines: int) -> list[dict]:
    """Epoch-ms events across Berlin's change back from summer time, a fifth late by 30 minutes,
    prices from a small set (ties)."""
    out: list[dict] = []
    clock = DST_BACK_MS - 90 * 60_000
    for number in range(lines):
        clock += rng.choice([60_000, 600_000, 1_200_000])
        epoch = clock - (1_800_000 if rng.random() < 0.2 else 0)
        row = {"id": f"e{number}", "price": rng.choice([1, 2, 3, 3]), "epoch_ms": epoch}
        out.append({"table": "events", "partition": 0, "row": row})
    return out


@pytest.fixture(scope="module")
def real_runs(tmp_path_factory) -> dict[str, tuple[Path, list[dict]]]:
    require_flink(
        "Flink {version}'s SQL runtime", "the window TopN differential", jars.sql_unavailable_reason
    )
    from tools.flink.sql.run import run_scripts

    folder = tmp_path_factory.mktemp("window_rank")
    given = {}
    for script in SCRIPTS:
        make = events_rows if script.endswith("_ltz") else bids_rows
        rows = folder / f"{script}.rows.jsonl"
        rows.write_text("".join(json.dumps(line) + "\n" for line in make(random.Random(SEED), LINES)))
        given[script] = rows
    ran = run_scripts([(DATA / f"{script}.sql", rows) for script, rows in given.items()])  # one JVM
    return {script: (rows, events) for (script, rows), events in zip(given.items(), ran, strict=True)}


def _sides(script: str, runs) -> tuple[list[dict], list[dict]]:
    rows, events = runs[script]
    job = read_plan_file(DATA / f"{script}.plan.json")
    flink = [e for e in events if "sink" in e or "metric" in e]
    replay = read_input(rows)
    mine = [line.as_json() for line in replay_lines(job, replay, replay_states(job, replay))]
    return flink, mine


@pytest.mark.parametrize("script", SCRIPTS)
def test_every_sink_row_and_drop_equals_real_flink(script, real_runs):
    flink, mine = _sides(script, real_runs)
    assert sum("sink" in e for e in flink) >= 10, "the real run gave too few rows to compare"
    assert any("metric" in e for e in flink), "the real run dropped no late row"
    assert mine == flink


def test_ties_broken_against_arrival_are_caught(real_runs, monkeypatch):
    """TopN ties taken in reverse arrival order: the comparison must fail."""
    real = SqlWindowRank.emit_top
    monkeypatch.setattr(
        SqlWindowRank, "emit_top", lambda self, k, e, rows, log: real(self, k, e, rows[::-1], log)
    )
    flink, mine = _sides("window_rank", real_runs)
    assert mine != flink


def test_keep_last_keeping_the_first_tie_is_caught(real_runs, monkeypatch):
    """Keep last with a tie kept by the earlier arrival (> in place of >=): must fail."""
    real = SqlWindowRank.replaces

    def strict(self, kept, row):
        return row.event_ms > kept.event_ms if self.config.keep == "last" else real(self, kept, row)

    monkeypatch.setattr(SqlWindowRank, "replaces", strict)
    flink, mine = _sides("window_dedup", real_runs)
    assert mine != flink


@pytest.mark.parametrize("script", SCRIPTS)
def test_a_window_that_fires_one_millisecond_late_is_caught(script, real_runs, monkeypatch):
    real = SqlWindowRank.window_ends_of
    monkeypatch.setattr(SqlWindowRank, "window_ends_of", lambda self, row: [e + 1 for e in real(self, row)])
    flink, mine = _sides(script, real_runs)
    assert mine != flink


def test_a_late_row_kept_is_caught(real_runs, monkeypatch):
    monkeypatch.setattr(SqlWindowRank, "drop_late", lambda self, row, end, log, say: self.keep(row, end, log))
    flink, mine = _sides("window_dedup_first", real_runs)
    assert mine != flink


def test_ltz_windows_cut_in_utc_are_caught(real_runs, monkeypatch):
    """The session zone ignored (windows cut in UTC): the comparison must fail."""
    from wmviz.core.sql_window_time import ShiftZone

    real = SqlWindowRank.__init__

    def in_utc(self, config, timers):
        real(self, config, timers)
        self.zone = ShiftZone("UTC")

    monkeypatch.setattr(SqlWindowRank, "__init__", in_utc)
    flink, mine = _sides("window_rank_ltz", real_runs)
    assert mine != flink
