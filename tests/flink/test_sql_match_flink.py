"""MATCH_RECOGNIZE against real Flink 2.3.0 SQL (CepOperator and flink-cep's NFA).

Two scripts of `tests/data/sql/` run for real by `tools.flink.sql.run` (one JVM each) on rows drawn
at random from a seed: two symbols, prices on a small random walk (equal prices, rises and
drops), times mostly rising with ties, some late by 1.5 to 9 s (behind the watermark: dropped and
counted), gaps past the WITHIN bound. `match_basic`: `A D+ U` WITHIN 10 s, SKIP PAST LAST ROW,
FIRST/LAST/COUNT/SUM measures. `match_quant`: `S C? M* B{2,3} E` WITHIN 8 s, SKIP TO NEXT ROW,
PREV and LAST(B.price, 1) in DEFINE, MIN/MAX measures (AVG over INT is planned as
CAST(SUM / COUNT), a division the replay refuses by name). `wmviz sql replay`'s own path
(`replay_states` + `replay_lines`) must give the same sink rows and the same
`numLateRecordsDropped` deltas, step by step. Planted bugs (a row on the watermark kept, rows of
WITHIN ignored, a completed match not waiting for an
earlier partial one) must make the comparison fail.

Flink's own operator test (`CEPOperatorTest`, read with read_file) is stored only in an old
version written with `followedBy` (relaxed contiguity), which SQL's strict patterns cannot express;
its watermark-forwarding case is replayed in `test_sql_match.py`, its late-record count is what
the rows on the watermark here check against the real run.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from tests.conftest import require_flink
from tests.support import paths
from wmviz.core.sql_match import SqlMatch
from wmviz.core.sql_match_nfa import Matcher
from wmviz.sql import jars
from wmviz.sql.load import read_plan_file
from wmviz.sql.replay import replay_states
from wmviz.sql.rowflow import replay_lines
from wmviz.sql.rows import read_input

pytestmark = pytest.mark.flink

DATA = paths.DATA / "sql"
SCRIPTS = ("match_basic", "match_quant")
SEED, LINES = 22, 40


def _timestamp(ms: int) -> str:
    seconds, millis = divmod(ms, 1000)
    minutes, seconds = divmod(seconds, 60)
    return f"2026-11-24 10:{minutes:02d}:{seconds:02d}.{millis:03d}"


def ticks_rows(rng: random.Random, lines: int) -> list[dict]:
    """Ticks of symbols a and b: prices that rise by one or jump to 1..6 (equal prices too),
    times mostly rising (ties, some on the watermark, some late by 1.5 to 9 s, now and then a gap
    of 9 s past the WITHIN bound)."""
    out: list[dict] = []
    clock = 1000
    price = {"a": 3, "b": 3}
    for _ in range(lines):
        clock += rng.choice([0, 0, 500, 1000, 1000, 2000, 9000])
        ts = rng.choice([clock, clock, clock, clock, clock - 1000, clock - 1500, clock - 9000])
        sym = rng.choice(["a", "a", "b"])
        price[sym] = rng.choice([1, 2, 3, 3, 4, 5, 6]) if rng.random() < 0.5 else price[sym] + 1
        row = {"sym": sym, "price": price[sym], "ts": _timestamp(max(ts, 0))}
        out.append({"table": "ticks", "partition": 0, "row": row})
    return out


@pytest.fixture(scope="module")
def real_runs(tmp_path_factory) -> dict[str, tuple[Path, list[dict]]]:
    require_flink(
        "Flink {version}'s SQL runtime", "the MATCH_RECOGNIZE differential", jars.sql_unavailable_reason
    )
    from tools.flink.sql.run import run_script

    folder = tmp_path_factory.mktemp("match")
    runs = {}
    for script in SCRIPTS:
        rows = folder / f"{script}.rows.jsonl"
        rows.write_text("".join(json.dumps(line) + "\n" for line in ticks_rows(random.Random(SEED), LINES)))
        runs[script] = (rows, run_script(DATA / f"{script}.sql", rows))
    return runs


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
    assert sum("sink" in e for e in flink) >= 2, "the real run gave too few matches to compare"
    assert any("metric" in e for e in flink), "the real run dropped no late row"
    assert mine == flink


def test_a_row_on_the_watermark_kept_is_caught(real_runs, monkeypatch):
    """SQL-MR1 with `<` in place of `<=`: a row at the watermark would wait; must fail."""
    monkeypatch.setattr(SqlMatch, "mr1_is_late", lambda self, ts: ts < self.watermark_ms)
    assert any(f != m for f, m in (_sides(s, real_runs) for s in SCRIPTS))


def test_within_ignored_is_caught(real_runs, monkeypatch):
    """SQL-MR4 never timing a partial match out: must fail."""
    monkeypatch.setattr(Matcher, "mr4_advance_time", lambda self, time_ms: [])
    assert any(f != m for f, m in (_sides(s, real_runs) for s in SCRIPTS))


def test_matches_not_waiting_for_earlier_partials_is_caught(real_runs, monkeypatch):
    """SQL-MR7 releasing a completed match while an earlier partial match lives: must fail."""
    real = Matcher.mr7_release

    def eager(self):
        kept, self.partials = self.partials, []
        released = real(self)
        self.partials = kept
        return released

    monkeypatch.setattr(Matcher, "mr7_release", eager)
    assert any(f != m for f, m in (_sides(s, real_runs) for s in SCRIPTS))
