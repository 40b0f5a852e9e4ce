"""SQL's window join against real Flink 2.3.0 SQL (issue 29; wmviz/core/sql_window_join.py).

One job, `tests/data/sql/winjoin_all.sql`, holds six window joins, each over its own pair of tables
(INNER over TUMBLE, LEFT over HOP, RIGHT over CUMULATE, FULL over TUMBLE, SEMI (`IN`) over TUMBLE,
ANTI (`NOT EXISTS`) over HOP), so that one real run (`tools.flink.sql.run`, one JVM for the module)
checks them all, on orders and clicks drawn at random from a seed: three users (several keys), rows
late by a little and a lot on either side (so both `leftNumLateRecordsDropped` and
`rightNumLateRecordsDropped` move), rows on a window's last millisecond and on its first (ties at
window ends), a stretch where one table is quiet (it holds the combined watermark), HOP and
CUMULATE rows in several windows at once, some late in only some of them. `wmviz sql replay`'s own
path (`replay_states` + `replay_lines`, from the COMPILE PLAN fixture) must give the same sink rows
(values, changelog kind), the same per-side drop deltas and the same watermark changes of every
operator and split, step by step. Planted bugs (a window that fires one millisecond late, a late
copy kept, the drops counted on the wrong side, HOP copies in the wrong windows, an outer side not
padded) must make the comparison fail.

Four cases of Flink's own `WindowJoinOperatorTest` (inner, left outer, semi, anti) are replayed in
the core without a JVM by tests/sql/test_sql_window_join.py.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from tests.conftest import require_flink
from tests.flink.test_sql_replay_flink import disagreements, flink_changes, wmviz_changes
from tests.support import paths
from wmviz.core.sql_window_join import SqlWindowJoin
from wmviz.sql import jars
from wmviz.sql.load import read_plan_file
from wmviz.sql.replay import replay_states
from wmviz.sql.rowflow import replay_lines
from wmviz.sql.rows import read_input

pytestmark = pytest.mark.flink

DATA = paths.DATA / "sql"
SCRIPT = "winjoin_all"
JOINS = {
    "inner_tumble": 5000,
    "left_hop": 2000,
    "right_cumulate": 2000,
    "full_tumble": 5000,
    "semi_tumble": 5000,
    "anti_hop": 2000,
}
"""Join (its tables are orders_JOIN, clicks_JOIN, its sink out_JOIN) -> the spacing of its window
ends (TUMBLE's size, HOP's slide, CUMULATE's step)."""
SEED, LINES = 26, 20
"""Lines per join: 6 × 20 lines take one JVM 1.5 to 2.5 minutes on a loaded machine. The seed is one
where every join outputs rows and drops late ones, and some HOP rows are late in some windows only."""


def _timestamp(ms: int) -> str:
    seconds, millis = divmod(ms, 1000)
    minutes, seconds = divmod(seconds, 60)
    return f"2026-11-24 10:{minutes:02d}:{seconds:02d}.{millis:03d}"


def join_rows(rng: random.Random, lines: int, spacing_ms: int, name: str) -> list[dict]:
    """Orders and clicks of u1..u3 for one join: times mostly rising, some late by 1.5 to 9 s, some
    on a window end's last or first millisecond; for a stretch of 4 to 7 lines only one table
    speaks (the quiet one holds the join's watermark)."""
    out: list[dict] = []
    clock = 1000
    quiet, quiet_from = rng.choice(["orders", "clicks"]), rng.randrange(lines // 2)
    quiet_to = quiet_from + rng.randint(4, 7)
    for number in range(lines):
        clock += rng.choice([0, 300, 700, 1000, 2000])
        edge = (clock // spacing_ms) * spacing_ms
        ts = rng.choice([clock, clock, clock, clock - 1500, clock - 4000, clock - 9000, edge - 1, edge])
        ts = max(ts, 0)
        table = rng.choice(["orders", "clicks"])
        if quiet_from <= number < quiet_to:
            table = "clicks" if quiet == "orders" else "orders"
        user, at = rng.choice(["u1", "u2", "u3"]), _timestamp(ts)
        if table == "orders":
            row = {"user_id": user, "order_id": f"o{number}", "amount": rng.choice([5, 10, 20]), "ts": at}
        else:
            row = {"user_id": user, "page": rng.choice(["home", "cart", "pay"]), "ts": at}
        out.append({"table": f"{table}_{name}", "partition": 0, "row": row})
    return out


def all_rows(seed: int) -> list[dict]:
    """Every join's lines, one of each join in turn (each join keeps its own order)."""
    rng = random.Random(seed)
    per_join = [join_rows(rng, LINES, spacing, name) for name, spacing in JOINS.items()]
    return [line for turn in zip(*per_join, strict=True) for line in turn]


@pytest.fixture(scope="module")
def real_run(tmp_path_factory) -> tuple[Path, list[dict]]:
    require_flink(
        "Flink {version}'s SQL runtime", "the window join differential", jars.sql_unavailable_reason
    )
    from tools.flink.sql.run import run_script

    rows = tmp_path_factory.mktemp("window_join") / f"{SCRIPT}.rows.jsonl"
    rows.write_text("".join(json.dumps(line) + "\n" for line in all_rows(SEED)))
    return rows, run_script(DATA / f"{SCRIPT}.sql", rows)


def _replayed(rows: Path) -> list[dict]:
    """The replay's sink rows and drop lines, as the oracle writes them."""
    job = read_plan_file(DATA / f"{SCRIPT}.plan.json")
    replay = read_input(rows)
    return [line.as_json() for line in replay_lines(job, replay, replay_states(job, replay))]


@pytest.fixture(scope="module")
def replayed(real_run) -> list[dict]:
    """The replay without a planted bug, computed once for the module."""
    return _replayed(real_run[0])


def _sides(run, join: str | None = None, mine: list[dict] | None = None) -> tuple[list[dict], list[dict]]:
    """The real run's and the replay's sink rows and drops (of one join's sink and operator, or all);
    `mine`: the replay already computed, else it runs now (under a planted bug)."""
    rows, events = run
    flink = [e for e in events if "sink" in e or "metric" in e]
    mine = _replayed(rows) if mine is None else mine
    if join is None:
        return flink, mine
    return _of(flink, join), _of(mine, join)


def _of(lines: list[dict], join: str) -> list[dict]:
    """The lines of one join: its sink's rows and its operator's drops."""
    operator = _operator_of(read_plan_file(DATA / f"{SCRIPT}.plan.json"), join)
    return [e for e in lines if e.get("sink") == f"out_{join}" or e.get("operator") == operator]


def _operator_of(job, join: str) -> str:
    """Flink's name of the window join whose sink is out_JOIN (`WindowJoin[N]`)."""
    sink = next(n for n in job.nodes if n.flink_type == "stream-exec-sink" and n.table == f"out_{join}")
    joins = [
        n for n in job.nodes if n.flink_type == "stream-exec-window-join" and sink.id in _after(job, n.id)
    ]
    (node,) = joins
    return f"{node.name}[{node.id}]"


def _after(job, start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        current = todo.pop()
        for edge in job.edges:
            if edge.source == current and edge.target not in seen:
                seen.add(edge.target)
                todo.append(edge.target)
    return seen


@pytest.mark.parametrize("join", JOINS)
def test_every_sink_row_and_drop_equals_real_flink(join, real_run, replayed):
    flink, mine = _sides(real_run, join, replayed)
    assert sum("sink" in e for e in flink) >= 5, "the real run gave too few rows to compare"
    assert any("metric" in e for e in flink), "the real run dropped no late row"
    assert mine == flink


def test_every_watermark_equals_real_flink(real_run):
    """Every operator's and split's watermark changes at the same step: each join forwards its
    combined watermark (SQL-WJ6), a quiet table holding it."""
    rows, events = real_run
    job = read_plan_file(DATA / f"{SCRIPT}.plan.json")
    flink = flink_changes(events)
    states = list(replay_states(job, read_input(rows)))
    assert any(key.startswith("node") for key in flink)
    assert disagreements(flink, wmviz_changes(job, states, set(flink))) == []


def test_both_sides_drop_late_rows(real_run, replayed):
    """The seed makes both per-side counters move somewhere (and nothing in numLateRecordsDropped)."""
    flink, _ = _sides(real_run, None, replayed)
    metrics = {e["metric"] for e in flink if "metric" in e}
    assert metrics == {"leftNumLateRecordsDropped", "rightNumLateRecordsDropped"}, metrics


def test_a_window_that_fires_one_millisecond_late_is_caught(real_run, monkeypatch):
    real = SqlWindowJoin.windows_of
    monkeypatch.setattr(
        SqlWindowJoin, "windows_of", lambda self, row: [(s, e + 1) for s, e in real(self, row)]
    )
    flink, mine = _sides(real_run)
    assert mine != flink


def test_a_late_copy_kept_is_caught(real_run, monkeypatch):
    def keep(self, row, side, window, log):
        self.keep_copy(row, side, self.key_of(row, side), window, log)

    monkeypatch.setattr(SqlWindowJoin, "drop_late_copy", keep)
    flink, mine = _sides(real_run)
    assert mine != flink


def test_drops_counted_on_the_wrong_side_are_caught(real_run, monkeypatch):
    from wmviz.core import sql_window_join

    swapped = {"L": sql_window_join.SIDE_METRIC["R"], "R": sql_window_join.SIDE_METRIC["L"]}
    monkeypatch.setattr(sql_window_join, "SIDE_METRIC", swapped)
    flink, mine = _sides(real_run)
    assert mine != flink


def test_hop_copies_in_the_wrong_windows_are_caught(real_run, monkeypatch):
    """HOP rows put in their latest window only, as if TUMBLE by the slide: must fail."""
    real = SqlWindowJoin.windows_of
    monkeypatch.setattr(SqlWindowJoin, "windows_of", lambda self, row: real(self, row)[:1])
    flink, mine = _sides(real_run, "left_hop")
    assert mine != flink


def test_an_outer_side_not_padded_is_caught(real_run, monkeypatch):
    """Every join treated as INNER (no NULL padding; ANTI as SEMI): each outer join and the ANTI
    join must differ from the real run."""
    from dataclasses import replace

    real = SqlWindowJoin.__init__

    def inner(self, config, timers):
        real(self, replace(config, join_type="inner" if config.keeps_right else "semi"), timers)

    monkeypatch.setattr(SqlWindowJoin, "__init__", inner)
    flink, mine = _sides(real_run)
    for join in ("left_hop", "right_cumulate", "full_tumble", "anti_hop"):
        assert _of(mine, join) != _of(flink, join), join
