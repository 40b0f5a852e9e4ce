"""SQL's Window TopN and Window Deduplication in the core (wmviz/core/sql_window_rank.py), without
Flink: each rule alone (the real runs are tests/flink/test_sql_window_rank_flink.py), a config written
by hand and its cross-field rules, snapshots and a pickled copy."""

from __future__ import annotations

import pickle

import pytest

from tests.sql.test_sql_windows import run_steps_on
from tests.support import paths
from tests.support.support_sql_window_ops import Step, pipeline_of, run_steps
from wmviz.core.sql_rows import Fate
from wmviz.core.sql_window_rank_config import WindowDedupConfig, WindowRankConfig
from wmviz.trace.config import parse_config

TOP2 = WindowRankConfig(
    size_ms=10, partition_by=("k",), columns=("k", "p", "window_start", "window_end"),
    order_by=("p",), descending=("p",), top=2, rank_column="rn",
)  # fmt: skip


def _bids(*items: tuple[str, int, int]) -> list[tuple[dict, int]]:
    return [({"k": key, "p": price}, ts) for key, price, ts in items]


def test_top_n_at_window_end_ties_in_arrival_order():
    """SQL-R2, SQL-R3: nothing before the window's end; then by price DESC, equal prices in arrival
    order, the third row of a tie not emitted."""
    steps = [Step(_bids(("a", 5, 1), ("a", 9, 2), ("a", 9, 3), ("a", 9, 4)), 8), Step((), 9)]
    before, at_end = run_steps(TOP2, steps)
    assert before.outputs == []
    assert [(o.value("p"), o.value("rn"), o.rows) for o in at_end.outputs] == [(9, 1, (2,)), (9, 2, (3,))]
    assert at_end.outputs[0].value("window_end") == "1970-01-01 00:00:00.010"


def test_a_row_of_a_fired_window_is_dropped_and_counted():
    """SQL-R1: late on arrival (watermark ≥ end − 1): dropped, counted, said so."""
    outcomes = run_steps(TOP2, [Step(_bids(("a", 1, 3)), 9), Step(_bids(("a", 7, 5)), None)])
    assert [o.late_dropped for o in outcomes] == [0, 1]
    (fate,) = outcomes[1].fates
    assert fate.fate is Fate.DROPPED and fate.rule == "SQL-R1" and fate.metric == "numLateRecordsDropped"
    assert fate.reason == "late: its window [0, 10) has fired (watermark 9): dropped"


@pytest.mark.parametrize(("keep", "kept"), [("first", 1), ("last", 3)])
def test_deduplication_ties_first_arrival_first_last_arrival_last(keep, kept):
    """SQL-R4: rows 1 and 3 share the time 2; row 2 is later, row 4 earlier than both."""
    config = WindowDedupConfig(size_ms=10, partition_by=("k",), keep=keep)
    rows = _bids(("a", 1, 2), ("a", 2, 7 if keep == "first" else 1), ("a", 3, 2))
    (outcome,) = run_steps(config, [Step(rows, 9)])
    assert [o.rows for o in outcome.outputs] == [(kept,)]


def test_a_config_written_by_hand_is_read_and_checked():
    operator = {"type": "window_rank", "size_ms": 5000, "partition_by": ["item"], "order_by": ["price"],
                "descending": ["price"], "top": 3, "rank_column": "rn"}  # fmt: skip
    config = parse_config({"operator": operator}, "by hand")
    assert isinstance(config.operator, WindowRankConfig) and config.operator.top == 3
    with pytest.raises(Exception, match="not an order_by column"):
        parse_config({"operator": {**operator, "descending": ["bidder"]}}, "by hand")
    with pytest.raises(Exception, match="offset"):
        parse_config({"operator": {"type": "window_dedup", "size_ms": 10, "offset_ms": 10}}, "by hand")


def test_equal_snapshots_and_a_pickled_copy():
    first, second = pipeline_of(TOP2), pipeline_of(TOP2)
    steps = [Step(_bids(("a", 1, 3), ("b", 2, 14)), 9), Step(_bids(("a", 1, 1)), 12)]
    for pipeline in (first, second):
        run_steps_on(pipeline, steps)
    assert first.sql_operator is not None and second.sql_operator is not None
    assert first.sql_operator.snapshot() == second.sql_operator.snapshot()
    assert first.sql_operator.live_rows() == {2}  # row 1 emitted at 9, row 4 late
    copy = pickle.loads(pickle.dumps(first))
    assert copy.sql_operator.snapshot() == first.sql_operator.snapshot()


def test_the_replay_of_the_kept_real_run_agrees_without_flink():
    """`wmviz sql replay` of tests/data/sql/window_rank (hand-written bids: three tied at 30, a
    row on a window's last millisecond, late rows) gives the sink rows and drops of the real
    Flink 2.3.0 run kept beside it (`window_rank.flink.jsonl`, made by
    `python -m tools.flink.sql.run tests/data/sql/window_rank.sql tests/data/sql/window_rank.rows.jsonl`)."""
    import json

    from wmviz.sql.load import read_plan_file
    from wmviz.sql.replay import replay_states
    from wmviz.sql.rowflow import replay_lines
    from wmviz.sql.rows import read_input

    data = paths.DATA / "sql"
    kept = [json.loads(line) for line in (data / "window_rank.flink.jsonl").read_text().splitlines()]
    flink = [e for e in kept if "sink" in e or "metric" in e]
    job, replay = read_plan_file(data / "window_rank.plan.json"), read_input(data / "window_rank.rows.jsonl")
    mine = [line.as_json() for line in replay_lines(job, replay, replay_states(job, replay))]
    assert len(flink) == 10 and mine == flink
