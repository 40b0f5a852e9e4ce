"""`wmviz sql replay` carries rows to the sinks (wmviz/sql/rowflow.py), without Flink: the lines
it prints, what it names as not replayed, and the inputs it refuses by name. Equality with real
Flink is tests/flink/test_sql_windows_flink.py's."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support import paths
from wmviz.cli.commands import main
from wmviz.sql.load import read_plan_file
from wmviz.sql.rowflow import rows_not_replayed

DATA = paths.DATA / "sql"


def _rows(tmp_path: Path, stamps: list[tuple[str, str]]) -> Path:
    path = tmp_path / "rows.jsonl"
    lines = [
        {"table": "clicks", "partition": 0, "row": {"user_id": user, "amount": 2, "ts": f"2026-11-24 {ts}"}}
        for user, ts in stamps
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_json_lines_give_each_sink_row_and_late_drop_at_its_step(tmp_path, capsys):
    """One-phase TUMBLE-like CUMULATE: a row late for every window of its slice is dropped at once."""
    rows = _rows(tmp_path, [("a", "10:00:01"), ("b", "10:00:30"), ("a", "10:00:02")])
    assert main(["sql", "replay", str(DATA / "win_cumulate_one_phase.plan.json"), str(rows), "--json"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert not [line for line in lines if "note" in line]
    sink = [line for line in lines if "sink" in line]
    assert sink[0] == {
        "sink": "per_window", "step": 1, "kind": "+I",
        "row": {"user_id": "a", "window_start": "2026-11-24 10:00:00.000",
                "window_end": "2026-11-24 10:00:05.000", "n": 1, "total": 2, "smallest": 2},
    }  # fmt: skip
    assert [line["row"]["window_end"][-12:] for line in sink if line["row"]["user_id"] == "a"] == [
        "10:00:05.000", "10:00:10.000", "10:00:15.000", "10:00:20.000"
    ]  # fmt: skip
    drops = [line for line in lines if "metric" in line]
    assert drops == [
        {"step": 2, "metric": "numLateRecordsDropped", "operator": "WindowAggregate[3]", "delta": 1}
    ]


def test_the_text_says_rows_and_drops_in_words(tmp_path, capsys):
    rows = _rows(tmp_path, [("a", "10:00:01"), ("b", "10:00:30"), ("a", "10:00:02")])
    assert main(["sql", "replay", str(DATA / "win_cumulate_one_phase.plan.json"), str(rows)]) == 0
    out = capsys.readouterr().out
    assert "  per_window receives +I (user_id=a, window_start=2026-11-24 10:00:00.000," in out
    assert "  WindowAggregate[3] drops 1 late row (numLateRecordsDropped)" in out


def test_what_is_not_replayed_is_named_per_sink():
    """The join's revenue is replayed (a window aggregate after the interval join: operators in
    series, wmviz/sql/chain.py), and so is the refunds' window."""
    assert rows_not_replayed(read_plan_file(DATA / "orders_payments_window.plan.json")) == []
    # a TIMESTAMP_LTZ rowtime computed by a Calc before the window: COUNT(*) reads no column
    assert rows_not_replayed(read_plan_file(DATA / "ltz_rowtime.plan.json")) == []


def test_a_column_named_split_is_refused_by_name(tmp_path, capsys):
    path = tmp_path / "rows.jsonl"
    line = {
        "table": "clicks",
        "partition": 0,
        "row": {"user_id": "a", "amount": 1, "ts": "2026-11-24 10:00:01", "split": 3},
    }
    path.write_text(json.dumps(line) + "\n")
    assert main(["sql", "replay", str(DATA / "win_tumble.plan.json"), str(path)]) == 2
    assert "line 1: column 'split' of table clicks" in capsys.readouterr().err
