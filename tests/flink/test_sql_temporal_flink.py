"""SQL's event-time temporal join against real Flink 2.3.0 SQL (`tests/data/sql/temporal_rates.sql`:
an inner and a LEFT `JOIN rates FOR SYSTEM_TIME AS OF o.ts`, rates an upsert table with a primary key).

Each case's rows are drawn from a seed (several currencies, version changes, versions sharing a
time, orders at exactly a version's time, late orders and late rates, and a quiet rates table) and
run for real by `tools.flink.sql.run` (every case in one JVM). wmviz reads each join's config from the
COMPILE PLAN node with its plan reader, and runs the core operator (`tests.support.support_sql_join.py`) on
the same rows, each input fed the watermark the real run reported for the node feeding it (orders:
its source; rates: ChangelogNormalize). Every output row, with its changelog kind, and every
`numLateRecordsDropped` delta must be equal at every step, for both joins. Planted bugs (a version
at exactly the probe's time not taken, late probe rows dropped as FLINK-39719 does, versions never
cleaned) must make the comparison fail on the same runs.

Flink's own `TemporalRowTimeJoinOperatorTest` cases are replayed in tests/sql/test_sql_temporal.py.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable

import pytest

from tests.conftest import require_flink
from tests.support import paths
from tests.support.support_sql_join import (
    Fed,
    StepOut,
    late_drops,
    node_watermarks,
    projected,
    run_operator,
    sink_rows,
)
from wmviz.core import sql_temporal_join as module
from wmviz.core.operator_log import Dropped
from wmviz.core.sql_temporal_join import TemporalRowTimeJoin
from wmviz.core.timetext import TimedText
from wmviz.sql import jars
from wmviz.sql.model import SqlJob
from wmviz.sql.operators import operator_of
from wmviz.sql.plan_json import read_compile_plan
from wmviz.sql.values import cell_ms

pytestmark = pytest.mark.flink

DATA = paths.DATA / "sql"
SCRIPT = DATA / "temporal_rates.sql"
JOINS = {"7": "priced", "10": "priced_or_null"}
"""Join node -> its sink (inner, LEFT)."""
SINK_FIELDS = ("order_id", "currency", "amount", "rate", "order_ts", "rate_ts")
RENAMES = {"order_ts": "ts", "rate_ts": "ts0"}
"""The sink's names of the join's output fields (the Calc between them only renames and casts)."""
CASES = ((11, 36, 26), (28, 36, 26))
"""(seed, lines, the line after which the rates table goes quiet)."""


def _timestamp(seconds: int) -> str:
    minutes, secs = divmod(seconds, 60)
    return f"2026-11-24 10:{minutes:02d}:{secs:02d}.000"


def temporal_rows(rng: random.Random, lines: int, quiet_after: int) -> list[dict]:
    """Orders and rates on a coarse clock (ties between an order and a version are common); a
    third of the rows late (some far behind); every rates row a new rate (ChangelogNormalize drops
    a repeat). After line `quiet_after` the rates table is quiet: only orders come, and wait for
    the end of input."""
    out: list[dict] = []
    clock, rate = 2, 100
    for number in range(lines):
        clock += rng.choice([0, 1, 1, 2, 3])
        currency = rng.choice(["USD", "EUR", "GBP"])
        ts = max(0, clock - (rng.choice([2, 5, 9, 14]) if rng.random() < 0.3 else 0))
        rates = number < quiet_after and rng.random() < 0.4
        if rates:
            rate += 1
            out.append(
                {
                    "table": "rates",
                    "partition": 0,
                    "row": {"currency": currency, "rate": rate, "ts": _timestamp(ts)},
                }
            )
        else:
            row = {"order_id": f"o{number}", "currency": currency, "amount": number, "ts": _timestamp(ts)}
            out.append({"table": "orders", "partition": 0, "row": row})
    return out


def fed_rows(lines: list[dict]) -> list[Fed]:
    """Each line as the join receives it: orders on L, rates on R, at the line's step."""
    return [
        Fed(
            step,
            "L" if line["table"] == "orders" else "R",
            line["row"],
            cell_ms(line["row"]["ts"], "TIMESTAMP", "UTC"),
        )
        for step, line in enumerate(lines)
    ]


def feeding_node(job: SqlJob, node_id: str, input_index: int) -> int:
    """The node whose watermark reaches the join's input: its input, past exchanges."""
    source = job.inputs_of(node_id)[input_index].source
    while job.node(source).flink_type == "stream-exec-exchange":
        source = job.inputs_of(source)[0].source
    return int(source)


def mismatches(job: SqlJob, lines: list[dict], events: list[dict]) -> list[str]:
    """Every step where wmviz and the real run differ, for both joins.

    At the end of input both sources finish at once and either's MAX can reach the join first (the
    oracle's lines give each node's watermark per step, not which changed first), so a step where
    both inputs' watermarks change matches if wmviz agrees under either order."""
    problems: list[str] = []
    fed = fed_rows(lines)
    for node_id, sink in JOINS.items():
        config = operator_of(job.node(node_id), job)
        assert config is not None
        marks = {name: node_watermarks(events, feeding_node(job, node_id, i)) for i, name in enumerate("LR")}
        runs = [run_operator(config, fed, marks, order) for order in (("L", "R"), ("R", "L"))]
        theirs, drops = sink_rows(events, sink), late_drops(events, f"TemporalJoin[{node_id}]")
        for step in sorted({s for ours in runs for s in ours} | set(theirs) | set(drops)):
            expected = ([(kind, row) for kind, row in theirs.get(step, [])], drops.get(step, 0))
            got = [_at(ours.get(step)) for ours in runs]
            if expected not in got:
                problems.append(f"{sink} step {step}: wmviz {got[0]} != Flink {expected}")
    return problems


def _at(mine: StepOut | None) -> tuple[list, int]:
    """wmviz's step as the sink shows it: its rows projected, and its late drops."""
    return (projected(mine.outputs, RENAMES, SINK_FIELDS), mine.late_drops) if mine else ([], 0)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> list[tuple[str, list[dict], list[dict]]]:
    """Each case's rows and the real run's events (every case in one JVM)."""
    require_flink(
        "Flink {version}'s SQL jars", "the temporal join's differential test", jars.sql_unavailable_reason
    )
    from tools.flink.sql.run import run_scripts

    given = []
    for seed, lines, quiet_after in CASES:
        rows = temporal_rows(random.Random(seed), lines, quiet_after)
        path = tmp_path_factory.mktemp("temporal") / f"{seed}.rows.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        given.append((seed, rows, path))
    ran = run_scripts([(SCRIPT, path) for _, _, path in given])
    return [(f"seed {seed}", rows, events) for (seed, rows, _), events in zip(given, ran, strict=True)]


@pytest.fixture(scope="module")
def job() -> SqlJob:
    return read_compile_plan(json.loads((DATA / "temporal_rates.plan.json").read_text()))


def test_every_output_row_and_drop_equals_real_flink(runs, job):
    for label, rows, events in runs:
        assert mismatches(job, rows, events) == [], label
    # The draws did test what they claim: late orders padded with NULLs, and outputs at all.
    padded = [
        e
        for _, _, events in runs
        for e in events
        if e.get("sink") == "priced_or_null" and e["row"]["rate"] is None
    ]
    assert padded and any(e.get("sink") == "priced" for _, _, events in runs for e in events)


def _drop_late_probe(self, row, t, state, log):  # FLINK-39719's rule, not 2.3.0's
    log.dropped.append(Dropped(row, TimedText.plain("late"), late=True))


PLANTED: dict[str, tuple[str, Callable]] = {
    "a version at exactly the probe's time is not taken": ("bisect_right", __import__("bisect").bisect_left),
    "late probe rows dropped and counted": ("t2_late_probe_buffered", _drop_late_probe),
    "versions never cleaned": ("t5_clean_versions", lambda *args: None),
}


@pytest.mark.parametrize("bug", list(PLANTED))
def test_a_planted_bug_makes_the_comparison_fail(runs, job, monkeypatch, bug):
    name, replacement = PLANTED[bug]
    monkeypatch.setattr(module if name == "bisect_right" else TemporalRowTimeJoin, name, replacement)
    assert any(mismatches(job, rows, events) for _, rows, events in runs), bug
