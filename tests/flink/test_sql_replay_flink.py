"""`wmviz sql replay` against real Flink 2.3.0 SQL: every watermark of every operator and split.

Each case is a SQL script of `tests/data/sql/` run for real (`tools.flink.sql.run`: a MiniCluster,
stand-in connectors with the real ones' watermark abilities, each line carried through the whole
job before the next, watermarks on event) on rows drawn at random from a seed, and replayed by
wmviz from the script's COMPILE PLAN (the planner's own, committed beside it). Every change of an
operator's watermark and of a split's must be the same, at the same step: the pushed-down
generator (`max(expr)`, no −1, per split, the source the min over its splits), the separate
WatermarkAssigner (from 0, eager past the interval, else at its timer), a computed
`TO_TIMESTAMP_LTZ` rowtime in a zone with daylight saving, the interval join's hold-back and the
end of input. A planted bug (DataStream's −1 in the SQL generator) must make the comparison fail.

Idleness and alignment are not in these runs: they hang on processing time, which a real run
cannot hold still; the assigner's timer and idleness are checked against the real operator with
a controlled clock in tests/flink/test_sql_model_flink.py.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import require_flink
from tests.support import paths
from wmviz.sql import jars
from wmviz.sql.load import read_plan_file
from wmviz.sql.replay import StepState, replay_states, watermark_changes
from wmviz.sql.rows import read_input

pytestmark = pytest.mark.flink

DATA = paths.DATA / "sql"
MIN = -(2**63)


def _timestamp(base_s: float) -> str:
    whole, ms = divmod(round(base_s * 1000), 1000)
    minutes, seconds = divmod(whole, 60)
    return f"2026-11-24 10:{minutes:02d}:{seconds:02d}.{ms:03d}"


def orders_rows(rng: random.Random, lines: int) -> list[dict]:
    """Orders (2-3 partitions), payments (1-2) and refunds, mostly rising times, some rows late."""
    out: list[dict] = [
        {"table": "orders", "partitions": rng.choice([2, 3])},
        {"table": "payments", "partitions": rng.choice([1, 2])},
    ]
    clock = 1.0
    for number in range(lines):
        table = rng.choice(["orders", "orders", "payments", "refunds"])
        clock += rng.choice([0.0, 0.25, 0.5, 1.5, 3.0, 7.0])
        ts = clock - (rng.choice([4.0, 11.0]) if rng.random() < 0.25 else 0.0)
        row = {"order_id": f"o{number % 4}", "ts": _timestamp(max(ts, 0.0))}
        row |= {"orders": {"amount": 1.0}, "payments": {"paid": 1.0}, "refunds": {"refunded": 1.0}}[table]
        partitions = out[0]["partitions"] if table == "orders" else out[1]["partitions"]
        partition = rng.randrange(partitions) if table != "refunds" else 0
        out.append({"table": table, "partition": partition, "row": row})
    return out


def logs_rows(rng: random.Random, lines: int) -> list[dict]:
    """One filesystem table (a separate assigner): jumps below and above the 200 ms interval."""
    out: list[dict] = []
    clock = 5.0
    for _ in range(lines):
        clock += rng.choice([0.05, 0.1, 0.15, 0.2, 0.3, 2.0])
        ts = clock - (3.0 if rng.random() < 0.2 else 0.0)
        row = {"host": rng.choice(["a", "b"]), "sent": 1, "ts": _timestamp(ts)}
        out.append({"table": "logs", "partition": rng.randrange(2), "row": row})
    return out


DST_CHANGE_MS = 1_792_890_000_000
"""2026-10-25 01:00 UTC: Berlin's clocks go back from 03:00 CEST to 02:00 CET."""


def events_rows(rng: random.Random, lines: int) -> list[dict]:
    """Epoch-ms rows across Berlin's change back from summer time (a TO_TIMESTAMP_LTZ rowtime)."""
    out: list[dict] = [{"table": "events", "partitions": 2}]
    clock = DST_CHANGE_MS - 90 * 60_000
    for number in range(lines):
        clock += rng.choice([60_000, 600_000, 1_800_000])
        epoch = clock - (1_200_000 if rng.random() < 0.2 else 0)
        out.append(
            {"table": "events", "partition": rng.randrange(2), "row": {"id": f"e{number}", "epoch_ms": epoch}}
        )
    return out


@dataclass(frozen=True)
class Case:
    script: str
    rows: object
    lines: int
    seed: int


CASES = (
    Case("orders_payments_window", orders_rows, 14, 7),
    Case("filesystem_assigner", logs_rows, 12, 3),
    Case("ltz_rowtime", events_rows, 10, 11),
)


def flink_changes(events: list[dict]) -> dict[str, list[tuple[int, int]]]:
    """The oracle's watermark changes, keyed `node <id>` or `split <id>`."""
    out: dict[str, list[tuple[int, int]]] = {}
    for event in events:
        if "watermark" not in event:
            continue
        key = f"split {event['split']}" if "split" in event else f"node {event['node']}"
        out.setdefault(key, []).append((event["step"], event["watermark"]))
    return out


def wmviz_changes(job, states: list[StepState], reported: set[str]) -> dict[str, list[tuple[int, int]]]:
    """wmviz's changes in the same keys, for the nodes Flink reports (an exchange is no operator)."""
    out: dict[str, list[tuple[int, int]]] = {}
    for change in watermark_changes(job, states):
        out.setdefault(f"node {change.node}", []).append((change.step, change.watermark_ms))
    last: dict[str, int] = {}
    for state in states:
        for (_, split), (watermark, _) in state.splits.items():
            key = f"split {split}"
            if watermark != last.get(key, MIN):
                last[key] = watermark
                out.setdefault(key, []).append((state.step, watermark))
    return {key: seq for key, seq in out.items() if key in reported}


def disagreements(flink: dict, mine: dict) -> list[str]:
    return [
        f"{key}: flink {flink.get(key)} wmviz {mine.get(key)}"
        for key in sorted(set(flink) | set(mine))
        if flink.get(key) != mine.get(key)
    ]


@pytest.fixture(scope="module")
def real_runs(tmp_path_factory) -> dict[str, tuple[Path, list[dict]]]:
    require_flink("Flink {version}'s SQL runtime", "the SQL replay differential", jars.sql_unavailable_reason)
    from tools.flink.sql.run import run_scripts

    given = {}
    for case in CASES:
        rows = tmp_path_factory.mktemp(case.script) / "rows.jsonl"
        lines = case.rows(random.Random(case.seed), case.lines)  # type: ignore[operator]
        rows.write_text("".join(json.dumps(line) + "\n" for line in lines))
        given[case.script] = rows
    ran = run_scripts([(DATA / f"{script}.sql", rows) for script, rows in given.items()])  # one JVM
    return {script: (rows, events) for (script, rows), events in zip(given.items(), ran, strict=True)}


def _compare(case: str, runs) -> list[str]:
    rows, events = runs[case]
    job = read_plan_file(DATA / f"{case}.plan.json")
    flink = flink_changes(events)
    states = list(replay_states(job, read_input(rows)))
    return disagreements(flink, wmviz_changes(job, states, set(flink)))


@pytest.mark.parametrize("case", [c.script for c in CASES])
def test_every_watermark_equals_real_flink(case, real_runs):
    assert len(flink_changes(real_runs[case][1])) >= 3, "the real run reported too few watermarks to compare"
    assert _compare(case, real_runs) == []


def test_a_planted_minus_one_in_the_sql_generator_is_caught(real_runs, monkeypatch):
    """DataStream's `− 1` planted in the pushed-down generator: the comparison must fail."""
    from wmviz.core.sql_generator import SqlSourceGenerator

    real = SqlSourceGenerator.expression_value_ms
    monkeypatch.setattr(
        SqlSourceGenerator, "expression_value_ms", lambda self, event_ms: real(self, event_ms) - 1
    )
    assert _compare("orders_payments_window", real_runs) != []


def test_a_join_that_forgets_its_hold_back_is_caught(real_runs, monkeypatch):
    """The interval join's output not held back by its bounds: the comparison must fail."""
    from wmviz.core.interval_join import IntervalJoin

    monkeypatch.setattr(IntervalJoin, "hold_back_ms", property(lambda self: 0))
    assert _compare("orders_payments_window", real_runs) != []


@pytest.mark.parametrize("case", [c.script for c in CASES])
def test_every_replayed_sink_row_and_drop_equals_real_flink(case, real_runs):
    """The rows of the sinks `wmviz sql replay` replays (`rows_not_replayed` names the others: the
    interval join's revenue) and the drops of the operators it runs: the refunds' and the logs'
    window aggregates after a separate assigner, the LTZ hour windows."""
    from wmviz.sql.rowflow import group_rows, replay_lines, rows_not_replayed

    rows, events = real_runs[case]
    job = read_plan_file(DATA / f"{case}.plan.json")
    refused = {note.split(" ")[2] for note in rows_not_replayed(job)}
    operators = {plan.operator for plan in group_rows(job) if plan.operator is not None}
    flink = [
        e
        for e in events
        if e.get("sink", "") not in refused and ("sink" in e or e.get("operator") in operators)
    ]
    flink = [e for e in flink if "sink" in e or "metric" in e]
    replay = read_input(rows)
    mine = [line.as_json() for line in replay_lines(job, replay, replay_states(job, replay))]
    assert [e for e in flink if "sink" in e], "the real run gave no row of a replayed sink to compare"
    assert mine == flink
