"""The SQL replay oracle (`tools.flink.sql.run`) runs job (1) for real on Flink 2.3.0 and reports
watermarks that follow SQL's rule: a pushed-down split's watermark is `max(ts) − delay` of the rows
it has read (exactly; DataStream's bounded out-of-orderness would be one millisecond less), a
source's is the minimum over its splits, the separate WatermarkAssigner's is `max(ts) − delay`
over everything its subtask read; and a second run gives the identical output.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from tests.conftest import require_flink
from tests.support import paths
from tools.flink.sql.run import JobFailed, read_rows, run_script
from wmviz.sql import jars
from wmviz.sql.rows import InputRow, RowsFileError

pytestmark = pytest.mark.flink

DATA = paths.DATA / "sql"
SCRIPT = DATA / "orders_payments_window.sql"
ROWS = DATA / "orders_payments_window.rows.jsonl"
DELAY_MS = {"orders": 5_000, "payments": 2_000, "refunds": 1_000}
"""The scripts' `WATERMARK FOR ts AS ts - INTERVAL 'n' SECOND` delays."""
MAX = 2**63 - 1


def _ms(text: str) -> int:
    return int(datetime.strptime(text, "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=UTC).timestamp() * 1000)


@pytest.fixture(scope="module")
def runs() -> tuple[list[dict], list[dict]]:
    """Job (1) run twice on the same rows (two JVMs, one after the other)."""
    require_flink("Flink {version}'s SQL runtime", "the SQL oracle tests", jars.sql_unavailable_reason)
    return run_script(SCRIPT, ROWS), run_script(SCRIPT, ROWS)


def _expected_split_watermarks() -> dict[tuple[str, int], list[tuple[int, int]]]:
    """Per (table, partition), (step, max(ts) − delay) at each row that raises its maximum."""
    expected: dict[tuple[str, int], list[tuple[int, int]]] = {}
    highest: dict[tuple[str, int], int] = {}
    for line in read_rows(ROWS).lines:
        if not isinstance(line, InputRow) or line.table == "refunds":
            continue
        key, step = (line.table, line.partition), line.step
        ts = _ms(line.values["ts"])
        if ts > highest.get(key, -(2**63)):
            highest[key] = ts
            expected.setdefault(key, []).append((step, ts - DELAY_MS[line.table]))
    return expected


def test_split_watermarks_are_max_ts_minus_delay(runs):
    events, _ = runs
    seen: dict[tuple[str, int], list[tuple[int, int]]] = {}
    for e in events:
        if "split" in e and e["watermark"] != MAX:
            table, partition = e["split"].rsplit("-", 1)
            seen.setdefault((table, int(partition)), []).append((e["step"], e["watermark"]))
    assert seen == _expected_split_watermarks()


def test_a_source_takes_the_minimum_over_its_splits(runs):
    events, _ = runs
    expected = _expected_split_watermarks()
    for table, node in (("orders", 1), ("payments", 3)):
        splits = [k for k in expected if k[0] == table]
        reported = [
            (e["step"], e["watermark"])
            for e in events
            if e.get("node") == node and "split" not in e and "metric" not in e
        ]
        current: dict[tuple[str, int], int] = {}
        wanted, last = [], None
        for step in sorted({s for k in splits for s, _ in expected[k]}):
            for k in splits:
                for s, w in expected[k]:
                    if s == step:
                        current[k] = w
            if len(current) == len(splits) and min(current.values()) != last:
                last = min(current.values())
                wanted.append((step, last))
        assert reported[:-1] == wanted, table
        assert reported[-1] == (read_rows(ROWS).end_step, MAX)  # the end of input


def test_the_separate_assigner_takes_the_max_over_everything_it_read(runs):
    events, _ = runs
    highest, wanted = None, []
    for line in read_rows(ROWS).lines:
        if isinstance(line, InputRow) and line.table == "refunds":
            ts = _ms(line.values["ts"])
            if highest is None or ts > highest:
                highest = ts
                wanted.append((line.step, ts - DELAY_MS["refunds"]))
    reported = [(e["step"], e["watermark"]) for e in events if e.get("operator") == "WatermarkAssigner[13]"]
    assert reported == [*wanted, (read_rows(ROWS).end_step, MAX)]
    # The source before it makes no watermark of its own: only the end of input's MAX.
    assert [e["watermark"] for e in events if e.get("operator") == "Source: refunds[12]"] == [MAX]


def test_sink_rows_and_the_late_drop(runs):
    events, _ = runs
    end = read_rows(ROWS).end_step
    rows = [(e["sink"], e["step"], e["kind"], e["row"]) for e in events if "sink" in e]
    assert rows == [
        (
            "refund_totals",
            9,
            "+I",
            {
                "window_start": "2026-11-24 10:00:00.000",
                "window_end": "2026-11-24 10:00:10.000",
                "refunded": 1.0,
            },
        ),
        (
            "refund_totals",
            end,
            "+I",
            {
                "window_start": "2026-11-24 10:00:10.000",
                "window_end": "2026-11-24 10:00:20.000",
                "refunded": 1.0,
            },
        ),
        (
            "revenue",
            end,
            "+I",
            {
                "window_start": "2026-11-24 10:00:00.000",
                "window_end": "2026-11-24 10:00:10.000",
                "orders": 1,
                "paid": 5.0,
            },
        ),
    ]
    # The late refund (line 10) waits in the local pre-aggregation, which only flushes on a
    # watermark: the global window operator drops it when the end of input's MAX arrives.
    drops = [e for e in events if e.get("metric") == "numLateRecordsDropped"]
    assert drops == [
        {"step": end, "metric": "numLateRecordsDropped", "operator": "GlobalWindowAggregate[16]", "delta": 1}
    ]


def test_operator_names_map_to_plan_nodes(runs):
    events, _ = runs
    plan = json.loads((DATA / "orders_payments_window.plan.json").read_text())
    types = {n["id"]: n["type"] for n in plan["nodes"]}
    for e in events:
        if "node" in e and e["node"] is not None:
            name = e["operator"].removeprefix("Source: ").split("[")[0].split(":")[0]
            kind = types[e["node"]]
            assert kind.startswith("stream-exec-"), e
            if name.startswith("KafkaSource-"):
                assert kind.startswith("stream-exec-table-source-scan"), e


def test_a_second_run_gives_the_identical_output(runs):
    first, second = runs
    assert first == second


def test_proc_ms_is_refused_by_name(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        '{"table": "orders", "partition": 0, "row": {}}\n\n'
        '{"table": "orders", "partition": 0, "row": {}, "proc_ms": 5}\n'
    )
    with pytest.raises(RowsFileError) as caught:
        read_rows(bad)
    assert (caught.value.line, caught.value.field_name) == (3, "proc_ms")


def test_a_bad_value_names_its_line_and_column(tmp_path):
    require_flink("Flink {version}'s SQL runtime", "the SQL oracle tests", jars.sql_unavailable_reason)
    rows = tmp_path / "bad.jsonl"
    rows.write_text(
        '{"table": "orders", "partitions": 2}\n\n'
        '{"table": "orders", "partition": 1, "row": {"ts": "10:00"}}\n'
    )
    with pytest.raises(RowsFileError) as caught:
        run_script(SCRIPT, rows)
    assert (caught.value.line, caught.value.field_name) == (3, "ts"), caught.value


def test_source_watermark_on_kafka_fails_when_the_job_runs(tmp_path):
    """Flink 2.3.0 plans SOURCE_WATERMARK() on a Kafka table (test_sql_planner says how); the
    running job fails at the first row, when the generator evaluates the marker function."""
    require_flink("Flink {version}'s SQL runtime", "the SQL oracle tests", jars.sql_unavailable_reason)
    rows = tmp_path / "one.jsonl"
    rows.write_text(
        '{"table": "orders", "partition": 0, "row": {"order_id": "o1", "ts": "2026-11-24 10:00:01"}}\n'
    )
    with pytest.raises(JobFailed) as caught:
        run_script(DATA / "source_watermark.sql", rows)
    assert caught.value.line == 1 and "SOURCE_WATERMARK()" in caught.value.message


def test_a_job_failing_on_a_later_line_names_that_line(tmp_path):
    """The line named is the one the job failed on, not the first, nor the end of input (beside a
    CPU hog the failure reached the job's result after the settle window)."""
    require_flink("Flink {version}'s SQL runtime", "the SQL oracle tests", jars.sql_unavailable_reason)
    rows = tmp_path / "rows.jsonl"
    lines = [("o1", "5", 1), ("o2", "five", 2), ("o3", "7", 3)]
    rows.write_text("".join(
        json.dumps({"table": "orders", "partition": 0,
                    "row": {"order_id": order, "qty": qty, "ts": f"2026-11-24 10:00:0{second}"}}) + "\n"
        for order, qty, second in lines
    ))  # fmt: skip
    with pytest.raises(JobFailed) as caught:
        run_script(DATA / "cast_fails_on_a_later_line.sql", rows)
    assert caught.value.line == 2 and "'five'" in caught.value.message, caught.value
