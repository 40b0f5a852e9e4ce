"""`wmviz sql replay` without a JVM: the replay of committed real plans on hand-made rows, what it
refuses by name, bad rows files, and the recording blame reads (the comparison with real Flink is
tests/flink/test_sql_replay_flink.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support import paths
from wmviz.analysis.blame import Walker
from wmviz.cli.commands import main
from wmviz.record.job import read_recording
from wmviz.sql.job_shape import ReplayRefused, groups_of
from wmviz.sql.load import read_plan_file
from wmviz.sql.replay import replay_states, replay_watermarks
from wmviz.sql.rows import read_input

DATA = paths.DATA / "sql"
PLAN = DATA / "orders_payments_window.plan.json"
T0 = 1_795_514_400_000  # 2026-11-24 10:00:00 as a TIMESTAMP's number
MIN, MAX = -(2**63), 2**63 - 1


def rows_file(tmp_path: Path, lines: list[dict]) -> Path:
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def row(table: str, partition: int, ts: str, **values) -> dict:
    return {
        "table": table,
        "partition": partition,
        "row": {"order_id": "o1", "ts": f"2026-11-24 {ts}", **values},
    }


@pytest.fixture
def job():
    return read_plan_file(PLAN)


def test_a_silent_partition_holds_the_source_and_the_join_holds_back_by_its_bound(tmp_path, job):
    rows = rows_file(
        tmp_path,
        [
            {"table": "orders", "partitions": 2},
            row("orders", 0, "10:00:10"),
            row("payments", 0, "10:00:12"),
            row("orders", 1, "10:00:09"),
        ],
    )
    changes = [(c.step, c.node, c.watermark_ms) for c in replay_watermarks(job, read_input(rows))]
    # Step 1: orders' split 0 alone; its split 1 is silent, so the source sends nothing.
    assert not [c for c in changes if c[0] == 1 and c[1] == "1"]
    # Step 2: payments' source is max(ts) − 2 s, no −1.
    assert (2, "3", T0 + 10_000) in changes
    # Step 3: orders' source is the min over its splits (10:00:04 = 10:00:09 − 5 s); the join
    # sends min(orders, payments) − 10 min, and every node after it carries that.
    assert (3, "1", T0 + 4_000) in changes
    assert (3, "5", T0 + 4_000 - 600_000) in changes and (3, "11", T0 + 4_000 - 600_000) in changes
    # The end of input (step 4): every source finishes; the join still holds back its bound.
    assert (4, "1", MAX) in changes and (4, "5", MAX - 600_000) in changes


def test_the_separate_assigner_starts_at_0_and_emits_at_once_past_the_interval(tmp_path, job):
    rows = rows_file(tmp_path, [row("refunds", 0, "10:00:05", refunded=1.0)])
    state = next(iter(replay_states(job, read_input(rows))))
    assert state.nodes["12"] == MIN  # the scan itself sends nothing before it ends
    assert state.nodes["13"] == T0 + 4_000  # WatermarkAssigner: max(ts − 1 s), at once


def test_a_recording_of_the_replay_lets_blame_name_the_table_and_partition(tmp_path):
    rows = rows_file(
        tmp_path,
        [
            {"table": "orders", "partitions": 2},
            row("orders", 0, "10:00:01"),
            row("payments", 0, "10:00:02"),
            row("orders", 1, "10:00:40"),
            row("payments", 0, "10:00:45"),
            row("orders", 1, "10:00:50"),
        ],
    )
    out = tmp_path / "replay.json"
    assert main(["sql", "replay", str(PLAN), str(rows), "--out", str(out)]) == 0
    recording = read_recording(out)
    names = {v.name for v in recording.vertices}
    assert "IntervalJoin [5]" in names and not any(n.startswith("Exchange") for n in names)
    answer = Walker(recording).blame(None, None)
    root = answer.chain[-1]
    assert root.split == "orders-0"
    assert root.vertex in ("1", "TableSourceScan(orders) [1]") and answer.stalled


def test_json_lines_say_what_is_not_replayed_then_every_change(tmp_path, capsys):
    rows = rows_file(tmp_path, [row("payments", 0, "10:00:02")])
    assert main(["sql", "replay", str(PLAN), str(rows), "--json"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    # every sink is replayed (the window after the join runs in series): no note
    assert not [line for line in lines if "note" in line]
    assert not [line for line in lines if line["operator"] == "Exchange"]  # an edge at run time
    assert {"step": 0, "operator": "TableSourceScan(payments)", "node": 3, "watermark": T0} in lines


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ({"table": "orders", "row": {"ts": "yesterday"}}, "line 1, field 'row.ts'"),
        ({"table": "orders", "partition": -1, "row": {}}, "line 1, field 'partition'"),
        ({"table": "nope", "row": {"ts": "2026-11-24 10:00:00"}}, "the job reads no table 'nope'"),
        ({"table": "orders", "row": {"order_id": "x"}}, "has no column 'ts'"),
        ({"table": "orders", "partition": 0}, "line 1, field 'row': is missing"),
    ],
)
def test_a_bad_rows_file_is_one_line_naming_file_line_and_field_exit_2(tmp_path, capsys, line, said):
    rows = rows_file(tmp_path, [line])
    assert main(["sql", "replay", str(PLAN), str(rows)]) == 2
    err = capsys.readouterr().err
    assert said in err and str(rows) in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("plan", "refused"),
    [
        ("alignment_group", "Union"),
        ("source_watermark", "SOURCE_WATERMARK()"),
        ("minibatch", "mini-batch"),
    ],
)
def test_shapes_the_replay_does_not_model_are_refused_by_name(plan, refused):
    job = read_plan_file(DATA / f"{plan}.plan.json")
    with pytest.raises(ReplayRefused, match=refused.replace("(", r"\(").replace(")", r"\)")):
        groups_of(job)
