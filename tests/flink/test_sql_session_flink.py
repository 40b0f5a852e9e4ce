"""wmviz's SESSION window aggregation (`wmviz/core/sql_session.py`) against real Flink 2.3.0 SQL.

Each script of `tests/data/sql/` (`session_partitioned`: PARTITION BY user_id, a 10 s gap, COUNT(*)
SUM MIN MAX AVG; `session_global`: no PARTITION BY, a 5 s gap, COUNT(*) COUNT(col) SUM) runs for
real (`tools.flink.sql.run`, every script in one JVM) on rows drawn from several seeds, each seed's rows
an hour after the last's: whole seconds (so rows land exactly on a session's end and bridge two
sessions), some rows behind the watermark by less than a gap (they merge into open sessions and
move their start back) and some by more (dropped and counted), several keys, NULL amounts.
wmviz's side reads its config from the plan's own window-aggregate node (`plan_session`) and runs
the core operator driven by `tests/support/support_sql_ops.py` with the real run's input watermarks. Every
output row with its changelog kind, in order, and every `numLateRecordsDropped` delta must be the
same at every step. Planted bugs (sessions that do not merge when they only touch, a late test
one millisecond off, a late row dropped instead of merged) must make the comparison fail.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from tests.conftest import require_flink
from tests.support import paths
from tests.support.support_sql_ops import (
    drive,
    input_watermarks,
    lines_of,
    oracle_answers,
    project,
    timestamp_ms,
)
from wmviz.sql import jars
from wmviz.sql.load import read_plan_file
from wmviz.sql.plan_session import session_config

pytestmark = pytest.mark.flink

DATA = paths.DATA / "sql"
SCRIPTS = {"session_partitioned": ("sessions", ["a", "b", "c"]), "session_global": ("bursts", ["a", "b"])}
SEEDS = (1, 2)
ROWS_PER_SEED = 16


def _text(ms: int) -> str:
    seconds, millis = divmod(ms, 1000)
    hours, rest = divmod(seconds, 3600)
    return f"2026-11-24 {hours:02d}:{rest // 60:02d}:{rest % 60:02d}.{millis:03d}"


FIXED = (
    ("a", 1, 0),
    ("a", 2, 5),
    ("b", 3, 3),
    ("a", 4, 30),
    ("z", 16, 18.001),
    ("y", 17, 24.001),
    ("a", 5, 19),
    ("a", 6, 10),
    ("b", 7, 5),
    ("a", 8, 1),
    ("c", 9, 50),
    ("d", 10, 52),
    ("e", None, 52),
    ("g", 12, 55),
    ("h", 13, 57),
    ("g", 14, 57),
    ("f", 15, 70),
)
"""(key, amount, second) in hour 1 before the seeds: a late row bridging into an open session and
moving its start back twice (a at 19, 10, 1 behind the watermark 28), a late row dropped (b at 5), rows
whose own session ends exactly at the watermark (z at 18.001 under 28 with a 10 s gap, y at 24.001
under 29 with a 5 s gap: dropped) or one millisecond after it (y under 28: added),
sessions of several keys ending at the same millisecond (d, e; g merged, h), a NULL amount."""


def session_rows(keys: list[str]) -> list[dict[str, Any]]:
    """The FIXED rows, then every seed's, seed k in hour k + 1: mostly rising whole seconds, a
    quarter of them behind."""
    out: list[dict[str, Any]] = [
        {
            "table": "clicks",
            "partition": 0,
            "row": {"user_id": k, "amount": a, "ts": _text(3_600_000 + round(s * 1000))},
        }
        for k, a, s in FIXED
    ]
    for seed in SEEDS:
        rng = random.Random(seed)
        clock = (seed + 1) * 3_600_000
        for _ in range(ROWS_PER_SEED):
            clock += rng.choice([0, 1000, 2000, 3000, 5000, 8000, 10_000, 12_000])
            back = rng.choice([3000, 6000, 9000, 14_000, 25_000]) if rng.random() < 0.25 else 0
            amount = None if rng.random() < 0.1 else rng.randrange(1, 20)
            row = {"user_id": rng.choice(keys), "amount": amount, "ts": _text(clock - back)}
            out.append({"table": "clicks", "partition": 0, "row": row})
    return out


@pytest.fixture(scope="module")
def real_runs(tmp_path_factory) -> dict[str, tuple[list[dict], list[dict]]]:
    require_flink(
        "Flink {version}'s SQL runtime", "the SQL SESSION differential", jars.sql_unavailable_reason
    )
    from tools.flink.sql.run import run_scripts

    given = {}
    for script, (_, keys) in SCRIPTS.items():
        rows = session_rows(keys)
        path = tmp_path_factory.mktemp(script) / "rows.jsonl"
        path.write_text("".join(json.dumps(line) + "\n" for line in rows))
        given[script] = (rows, path)
    ran = run_scripts([(DATA / f"{script}.sql", path) for script, (_, path) in given.items()])  # one JVM
    return {script: (rows, events) for (script, (rows, _)), events in zip(given.items(), ran, strict=True)}


def _convert(name: str, value: Any) -> Any:
    return timestamp_ms(value) if name in ("window_start", "window_end") and isinstance(value, str) else value


def compare(script: str, runs) -> list[str]:
    """Every step where wmviz and the real run differ, in words (empty: equal)."""
    rows, events = runs[script]
    sink, _ = SCRIPTS[script]
    job = read_plan_file(DATA / f"{script}.plan.json")
    (node,) = [n for n in job.nodes if n.flink_type == "stream-exec-window-aggregate"]
    (source,) = [n for n in job.nodes if n.flink_type == "stream-exec-table-source-scan"]
    lines = lines_of(rows, "ts")
    mine = drive(session_config(node, job), lines, input_watermarks(events, int(source.id)))
    theirs = oracle_answers(events, sink, int(node.id), len(lines), _convert)
    fields = sorted({f for answer in theirs for _, row in answer.outputs for f in row})
    ours, real = project(mine, fields), project(theirs, fields)
    out = []
    for step, (a, b) in enumerate(zip(ours, real)):
        if a != b or mine[step].late_dropped != theirs[step].late_dropped:
            drops = f"{mine[step].late_dropped} vs {theirs[step].late_dropped}"
            out.append(f"step {step}: wmviz {a}; flink {b}; late drops {drops}")
    return out


@pytest.mark.parametrize("script", list(SCRIPTS))
def test_every_session_row_and_late_drop_equals_real_flink(script, real_runs):
    _, events = real_runs[script]
    sink, _ = SCRIPTS[script]
    outputs = [e for e in events if e.get("sink") == sink]
    drops = sum(e["delta"] for e in events if e.get("metric") == "numLateRecordsDropped")
    # the rows must exercise what the test claims: several sessions, late drops, merges of many rows
    assert len(outputs) >= 10 and drops >= 2, (len(outputs), drops)
    assert any(isinstance(e["row"].get("clicks"), int) and e["row"]["clicks"] >= 3 for e in outputs)
    assert compare(script, real_runs) == []


def test_late_rows_that_merge_are_added_and_said_so(real_runs):
    """A row behind the watermark that touches an open session is added (SQL-S2), in words."""
    rows, events = real_runs["session_partitioned"]
    job = read_plan_file(DATA / "session_partitioned.plan.json")
    (node,) = [n for n in job.nodes if n.flink_type == "stream-exec-window-aggregate"]
    mine = drive(session_config(node, job), lines_of(rows, "ts"), input_watermarks(events, 1))
    fates = [f for answer in mine for f in answer.fates]
    assert len(fates) == len(rows)
    added = [f for f in fates if f.fate.value == "added late"]
    assert added and all("behind the watermark" in f.reason and "added" in f.reason for f in added)
    assert any("joins the open session" in f.reason for f in added)


def test_sessions_that_do_not_merge_when_they_only_touch_are_caught(real_runs, monkeypatch):
    import wmviz.core.sql_session as session

    monkeypatch.setattr(session, "intersects", lambda a, b: a[0] < b[1] and a[1] > b[0])
    assert any(compare(script, real_runs) for script in SCRIPTS)


def test_a_late_test_one_millisecond_off_is_caught(real_runs, monkeypatch):
    from wmviz.core.sql_session import SqlSessionOperator

    monkeypatch.setattr(SqlSessionOperator, "session_has_fired", lambda self, w: w[1] <= self.watermark_ms)
    assert any(compare(script, real_runs) for script in SCRIPTS)


def test_dropping_every_row_behind_the_watermark_is_caught(real_runs, monkeypatch):
    """DataStream's habit planted: a row behind the watermark dropped rather than merged."""
    from wmviz.core.operator_log import Dropped
    from wmviz.core.sql_session import SqlSessionOperator
    from wmviz.core.timetext import TimedText

    real = SqlSessionOperator.on_record

    def on_record(self, input_name, row, log):
        if row.event_ms <= self.watermark_ms:
            log.dropped.append(Dropped(row, TimedText.plain("behind the watermark"), late=True))
            return
        real(self, input_name, row, log)

    monkeypatch.setattr(SqlSessionOperator, "on_record", on_record)
    assert any(compare(script, real_runs) for script in SCRIPTS)


def test_the_planner_plans_session_in_one_phase_and_the_reader_takes_window_time(tmp_path):
    """TWO_PHASE does not split SESSION into local and global aggregates (one WindowAggregate);
    a SELECT of window_time gives the `Rowtime` window property the reader maps to window_time."""
    require_flink(
        "Flink {version}'s SQL planner", "the SQL SESSION planner check", jars.sql_unavailable_reason
    )
    from wmviz.sql.plan_json import read_compile_plan
    from wmviz.sql.planner import compile_scripts

    base = (DATA / "session_partitioned.sql").read_text()
    two_phase = tmp_path / "two_phase.sql"
    two_phase.write_text("SET 'table.optimizer.agg-phase-strategy' = 'TWO_PHASE';\n" + base)
    timed = tmp_path / "window_time.sql"
    timed.write_text(
        base.replace("mean INT\n", "mean INT,\n  window_time TIMESTAMP(3)\n")
        .replace("AVG(amount) AS mean\n", "AVG(amount) AS mean, window_time\n")
        .replace("window_start, window_end;", "window_start, window_end, window_time;")
    )
    compiled = compile_scripts([two_phase, timed])
    explain = compiled[0].explain  # type: ignore[union-attr]
    physical = explain.split("== Optimized Execution Plan ==")[1]
    assert physical.count("WindowAggregate(") == 1 and "LocalWindowAggregate" not in physical
    job = read_compile_plan(json.loads(compiled[1].plan_json))  # type: ignore[union-attr]
    (node,) = [n for n in job.nodes if n.flink_type == "stream-exec-window-aggregate"]
    assert session_config(node, job).properties == ("window_start", "window_end", "window_time")
