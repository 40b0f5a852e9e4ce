"""Operators in series through `wmviz sql replay` against real Flink 2.3.0 SQL (issue 29).

`tests/data/sql/chain_series.sql` holds four chains, each on its own tables, so one real run (one
JVM for the module) checks them all:
- an inner interval join of orders and payments feeding a 5-second TUMBLE aggregate (the issue's
  "join -> window"); the window runs on the join's output watermark, held back by its bounds;
- 2-second TUMBLE counts per user (clicks) feeding a 10-second TUMBLE on their `window_time` (a
  cascade of window aggregates);
- bookings priced by an event-time temporal join feeding a 5-second TUMBLE per currency;
- sales summed per item in 5-second TUMBLE windows feeding a Window TopN written as a separate
  query (the 2 best items per window, on the windows the aggregate attached to its rows).
The rows are drawn from a seed per chain and interleaved at random: times mostly rising, a share
late by a little and a lot, rows on a window's last millisecond, ties. wmviz replays the script's
COMPILE PLAN through `replay_states` + `replay_lines` (the first operator in its group's pipeline,
the second in its own pipeline fed the first one's rows and output watermarks, `wmviz.sql.chain`):
every sink row (values and changelog kind) and every `numLateRecordsDropped` delta must equal the
real run's, step by step. Planted bugs (the watermark a firing forwards reaching the next operator
before the rows that firing made; the next operator a second ahead of what the first forwards)
must make the comparison fail.

Flink's own tests of these shapes, whose queries the chains follow (their fixed rows are not
replayed; these run on randomised ones): `WindowAggregateITCase`'s
`testCascadeEventTimeTumbleWindowWithOffset` (a TUMBLE TVF on the window_time of another) and
`IntervalJoinITCase`'s `testRowTimeInnerJoinWithWindowAggregateOnFirstTime` (a window aggregate
over a row-time interval join; there the legacy group window, here the TVF).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from tests.conftest import require_flink
from tests.support import paths
from wmviz.sql import jars
from wmviz.sql.chain import StageRun
from wmviz.sql.load import read_plan_file
from wmviz.sql.replay import replay_states
from wmviz.sql.rowflow import group_rows, replay_lines, rows_not_replayed
from wmviz.sql.rows import read_input

pytestmark = pytest.mark.flink

DATA = paths.DATA / "sql"
SCRIPT = "chain_series"
SEEDS = {"join": 7, "cascade": 12, "temporal": 3, "topn": 21}
"""Chain -> the seed of its rows."""
LINES = 40
"""Rows per chain."""
SINKS = {
    "join": "paid_per_window",
    "cascade": "per_ten",
    "temporal": "priced_per_window",
    "topn": "best_items",
}


def _timestamp(ms: int) -> str:
    seconds, millis = divmod(max(ms, 0), 1000)
    minutes, seconds = divmod(seconds, 60)
    return f"2026-11-24 10:{minutes:02d}:{seconds:02d}.{millis:03d}"


def _late(rng: random.Random, clock: int) -> int:
    """A time near the clock: mostly on it, some behind by a little or a lot, some on a 5-second
    window's last millisecond."""
    return rng.choice(
        [clock, clock, clock, clock - 1200, clock - 4000, clock - 9000, (clock // 5000) * 5000 + 4999]
    )


def join_window_rows(rng: random.Random, lines: int) -> list[dict]:
    """Orders and their payments (a payment 2 s before to 3 s after its order, or outside)."""
    out: list[dict] = []
    clock, opened = 1000, []
    for number in range(lines):
        clock += rng.choice([0, 300, 700, 1500])
        if opened and rng.random() < 0.55:
            order_id, order_ms = rng.choice(opened)
            ts = order_ms + rng.choice([-2000, -500, 0, 1000, 3000, 3500])
            row = {"order_id": order_id, "paid": float(rng.randrange(1, 9)), "ts": _timestamp(ts)}
            out.append({"table": "payments", "partition": 0, "row": row})
        else:
            ts = _late(rng, clock)
            opened.append((f"o{number % 9}", ts))
            row = {"order_id": f"o{number % 9}", "amount": float(rng.randrange(1, 20)), "ts": _timestamp(ts)}
            out.append({"table": "orders", "partition": 0, "row": row})
    return out


def cascade_rows(rng: random.Random, lines: int) -> list[dict]:
    out: list[dict] = []
    clock = 500
    for _ in range(lines):
        clock += rng.choice([0, 400, 900, 1700])
        row = {"user_id": rng.choice(["u1", "u2", "u3"]), "amount": rng.randrange(1, 6),
               "ts": _timestamp(_late(rng, clock))}  # fmt: skip
        out.append({"table": "clicks", "partition": 0, "row": row})
    return out


def temporal_window_rows(rng: random.Random, lines: int) -> list[dict]:
    """Orders and rate versions; every rates row a new rate (ChangelogNormalize drops a repeat);
    the rates table goes quiet for the last fifth (the join, and the window, wait for the end)."""
    out: list[dict] = []
    clock, rate = 1000, 100
    for number in range(lines):
        clock += rng.choice([0, 500, 1000, 2000])
        currency = rng.choice(["USD", "EUR"])
        ts = _late(rng, clock)
        if number < lines * 4 // 5 and rng.random() < 0.4:
            rate += 1
            row: dict = {"currency": currency, "rate": rate, "ts": _timestamp(ts)}
            out.append({"table": "rates", "partition": 0, "row": row})
        else:
            row = {"booking_id": f"b{number}", "currency": currency, "amount": number, "ts": _timestamp(ts)}
            out.append({"table": "bookings", "partition": 0, "row": row})
    return out


def sales_rows(rng: random.Random, lines: int) -> list[dict]:
    """Sales of a few items (equal totals are common: ties in the TopN), some late."""
    out: list[dict] = []
    clock = 500
    for _ in range(lines):
        clock += rng.choice([0, 400, 900, 1700])
        row = {
            "item": rng.choice("ABCD"),
            "amount": rng.choice([1, 2, 2, 3]),
            "ts": _timestamp(_late(rng, clock)),
        }
        out.append({"table": "sales", "partition": 0, "row": row})
    return out


DRAWS = {
    "join": join_window_rows,
    "cascade": cascade_rows,
    "temporal": temporal_window_rows,
    "topn": sales_rows,
}


def all_rows(seed: int = 0) -> list[dict]:
    """Each chain's rows from its seed, interleaved at random (each chain's own order kept)."""
    queues = {chain: DRAWS[chain](random.Random(s), LINES) for chain, s in SEEDS.items()}
    rng, out = random.Random(seed), []
    while any(queues.values()):
        chain = rng.choice([name for name, rows in queues.items() if rows])
        out.append(queues[chain].pop(0))
    return out


@pytest.fixture(scope="module")
def real_run(tmp_path_factory) -> tuple[Path, list[dict]]:
    require_flink(
        "Flink {version}'s SQL runtime", "the operators-in-series differential", jars.sql_unavailable_reason
    )
    from tools.flink.sql.run import run_script

    rows = tmp_path_factory.mktemp(SCRIPT) / "rows.jsonl"
    rows.write_text("".join(json.dumps(line) + "\n" for line in all_rows()))
    events = run_script(DATA / f"{SCRIPT}.sql", rows)
    return rows, [e for e in events if "sink" in e or "metric" in e]


def replayed(rows: Path) -> list[dict]:
    job = read_plan_file(DATA / f"{SCRIPT}.plan.json")
    given = read_input(rows)
    return [line.as_json() for line in replay_lines(job, given, replay_states(job, given))]


def differing(rows: Path, flink: list[dict]) -> set[str]:
    """The chains whose sink rows differ from the real run's (drops: by the operator's sink)."""
    mine = replayed(rows)
    return {
        chain
        for chain, sink in SINKS.items()
        if [e for e in mine if e.get("sink") == sink] != [e for e in flink if e.get("sink") == sink]
    }


def test_every_chain_is_replayed_in_series():
    """No sink of the script is left out, and each chain's second operator runs as a stage."""
    job = read_plan_file(DATA / f"{SCRIPT}.plan.json")
    assert rows_not_replayed(job) == []
    stages = [stage for plan in group_rows(job) for stage in plan.stages]
    assert len(stages) == 4 and all(stage.spec is not None for stage in stages)


def test_every_row_and_drop_equals_real_flink(real_run):
    rows, flink = real_run
    for sink in SINKS.values():
        assert len([e for e in flink if e.get("sink") == sink]) >= 4, f"too few {sink} rows to compare"
    assert replayed(rows) == flink


def test_the_second_operators_drop_late_rows(real_run):
    """The comparison covers a stage's late rule, not only its firing: Flink counts late rows on
    the second operator of a chain."""
    job = read_plan_file(DATA / f"{SCRIPT}.plan.json")
    second = {stage.spec.operator for plan in group_rows(job) for stage in plan.stages if stage.spec}
    assert second & {e["operator"] for e in real_run[1] if "metric" in e}


def test_a_watermark_before_its_rows_is_caught(real_run, monkeypatch):
    """Planted bug: the watermark a firing forwards reaches the next operator before the rows that
    firing made (it must come after them)."""
    real_feed = StageRun.feed

    def watermarks_first(self, flow):
        return real_feed(self, sorted(flow, key=lambda item: not isinstance(item, int)))

    monkeypatch.setattr(StageRun, "feed", watermarks_first)
    assert differing(*real_run)


def test_a_stage_a_second_ahead_is_caught(real_run, monkeypatch):
    """Planted bug: the next operator's watermark 1 s ahead of what the first forwards (as if the
    join's output watermark were not held back by its bounds)."""
    real_feed = StageRun.feed

    def ahead(self, flow):
        return real_feed(
            self, [item + 1000 if isinstance(item, int) and item < 2**62 else item for item in flow]
        )

    monkeypatch.setattr(StageRun, "feed", ahead)
    assert {"join", "cascade"} <= differing(*real_run)
