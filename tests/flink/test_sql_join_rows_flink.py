"""An interval join's rows through `wmviz sql replay` against real Flink 2.3.0 SQL (issue 29).

Two scripts of `tests/data/sql/` (an inner and a LEFT interval join of orders and payments, a Calc
after it, one sink) run for real (`tools.flink.sql.run`) on rows drawn at random from a seed: a few
order ids, times mostly rising, some rows seconds behind the watermark. wmviz replays them from
each script's COMPILE PLAN: the core's `IntervalJoin` joins, `wmviz.sql.join_rows` makes each
`JoinOutput` the join node's row, `wmviz.sql.rowflow` carries it through the Calc to the sink.
Every sink row (its changelog kind and values) must equal the real run's, at the same step, and
there must be no late-drop line on either side (Flink's interval join counts none). Planted bugs
(a padded side's NULLs on the wrong side; the join's bounds one ms narrower) must be caught. A
join followed by a window aggregate is replayed in series (tests/flink/test_sql_chain_flink.py).
"""

from __future__ import annotations

import dataclasses
import json
import random
from pathlib import Path

import pytest

from tests.conftest import require_flink
from tests.support import paths
from wmviz.sql import jars
from wmviz.sql.load import read_plan_file
from wmviz.sql.replay import replay_states
from wmviz.sql.rowflow import replay_lines, rows_not_replayed
from wmviz.sql.rows import read_input

pytestmark = pytest.mark.flink

DATA = paths.DATA / "sql"
CASES = {"join_rows_inner": 5, "join_rows_left": 8}
"""Script -> seed of its rows."""
LINES = 36


def _timestamp(at_s: float) -> str:
    whole, ms = divmod(round(at_s * 1000), 1000)
    minutes, seconds = divmod(whole, 60)
    return f"2026-11-24 10:{minutes:02d}:{seconds:02d}.{ms:03d}"


def join_rows(rng: random.Random, lines: int) -> list[dict]:
    """Orders and payments (1-2 partitions each) of three order ids; a quarter of the rows late
    by 2-6 s, some times tied, some payments on the join's bounds."""
    out: list[dict] = [
        {"table": "orders", "partitions": rng.choice([1, 2])},
        {"table": "payments", "partitions": rng.choice([1, 2])},
    ]
    clock = 2.0
    for _ in range(lines):
        table = rng.choice(["orders", "payments"])
        clock += rng.choice([0.0, 0.5, 1.0, 2.0, 3.0])
        ts = clock - (rng.choice([2.0, 3.0, 6.0]) if rng.random() < 0.25 else 0.0)
        row = {"order_id": f"o{rng.randrange(3)}", "ts": _timestamp(max(ts, 0.0))}
        row |= (
            {"amount": float(rng.randrange(1, 9))}
            if table == "orders"
            else {"paid": float(rng.randrange(1, 9))}
        )
        partitions = out[0 if table == "orders" else 1]["partitions"]
        out.append({"table": table, "partition": rng.randrange(partitions), "row": row})
    return out


@pytest.fixture(scope="module")
def real_runs(tmp_path_factory) -> dict[str, tuple[Path, list[dict]]]:
    require_flink(
        "Flink {version}'s SQL runtime", "the interval join rows differential", jars.sql_unavailable_reason
    )
    from tools.flink.sql.run import run_scripts

    given = {}
    for script, seed in CASES.items():
        rows = tmp_path_factory.mktemp(script) / "rows.jsonl"
        lines = join_rows(random.Random(seed), LINES)
        rows.write_text("".join(json.dumps(line) + "\n" for line in lines))
        given[script] = rows
    ran = run_scripts([(DATA / f"{script}.sql", rows) for script, rows in given.items()])  # one JVM
    return {
        script: (rows, [e for e in events if "sink" in e or "metric" in e])
        for (script, rows), events in zip(given.items(), ran, strict=True)
    }


def replayed(script: str, rows: Path) -> list[dict]:
    job = read_plan_file(DATA / f"{script}.plan.json")
    given = read_input(rows)
    return [line.as_json() for line in replay_lines(job, given, replay_states(job, given))]


@pytest.mark.parametrize("script", CASES)
def test_every_join_row_equals_real_flink(script, real_runs):
    rows, flink = real_runs[script]
    assert rows_not_replayed(read_plan_file(DATA / f"{script}.plan.json")) == []
    assert len([e for e in flink if "sink" in e]) >= 5, "the real run joined too few rows to compare"
    assert not [e for e in flink if "metric" in e]  # Flink's interval join counts no late row
    assert replayed(script, rows) == flink


def test_the_draws_pad_unmatched_orders_and_hold_late_rows(real_runs):
    """The draws exercise what they should: padded rows (NULL payment) in the LEFT join, and in
    each rows file rows behind their own table's watermark (its max time so far − 1 s)."""
    assert any(e["row"]["paid"] is None for e in real_runs["join_rows_left"][1] if "sink" in e)
    for rows, _ in real_runs.values():
        highest: dict[str, str] = {}
        late = 0
        for line in map(json.loads, rows.read_text().splitlines()):
            if "row" in line:
                table, ts = line["table"], line["row"]["ts"]
                late += table in highest and ts <= _timestamp(_seconds(highest[table]) - 1.0)
                highest[table] = max(highest.get(table, ts), ts)
        assert late >= 2


def _seconds(text: str) -> float:
    minutes, seconds = text[-9:].split(":")
    return int(minutes) * 60 + float(seconds)


def test_a_padded_side_on_the_wrong_side_is_caught(real_runs, monkeypatch):
    """A LEFT join's unmatched order padded as if it were the payment: the comparison must fail."""
    from wmviz.sql.join_rows import JoinRows

    real_output = JoinRows.output

    def swapped(self, joined):
        if joined.right is None:  # pad the left side instead of the right
            joined = dataclasses.replace(joined, left=None, right=joined.left)
        return real_output(self, joined)

    monkeypatch.setattr(JoinRows, "output", swapped)
    rows, flink = real_runs["join_rows_left"]
    assert replayed("join_rows_left", rows) != flink


def test_bounds_one_ms_narrower_are_caught(real_runs, monkeypatch):
    """The join's upper bound taken as exclusive (`<` for `≤`): some rows on the bound miss."""
    from wmviz.core.interval_join import IntervalJoin

    real_init = IntervalJoin.__init__

    def narrower(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        self.relative = {side: value - 1 for side, value in self.relative.items()}

    monkeypatch.setattr(IntervalJoin, "__init__", narrower)
    caught = [script for script, (rows, flink) in real_runs.items() if replayed(script, rows) != flink]
    assert caught


def test_a_window_aggregate_after_the_join_is_replayed_in_series():
    """The window after the join runs on the join's rows (operators in series; checked against
    real Flink in tests/flink/test_sql_chain_flink.py)."""
    assert rows_not_replayed(read_plan_file(DATA / "orders_payments_window.plan.json")) == []
