"""SQL's SESSION window aggregation without a JVM: two of Flink's own unit tests replayed, the
operator's snapshot, its hand-written config and the plan reader on the committed plans.

Replayed from Flink's `UnslicingWindowAggOperatorTest` (flink-table-runtime, its UTC variant):
`testEventTimeSessionWindows` (two keys, rows out of order, a late row that still joins key2's
open session, a row late for every session dropped: one `numLateRecordsDropped`) and
`testSessionWindowsWithoutPartitionKey` (no key: rows of any key share one session list). Their
aggregate is `SUM(v)` and `COUNT(*)`; the tests' snapshot-and-restore in the middle is replayed by
pickling the operator with its timers and going on with the copy. The changelog and
processing-time cases do not translate (wmviz's rows are inserts; SESSION here is event time).
"""

from __future__ import annotations

import json
import pickle
from typing import Any

import pytest

from tests.support import paths
from tests.support.support_sql_ops import Line, drive
from wmviz.core.operator_log import StepLog
from wmviz.core.scenario import Kind, TraceRow
from wmviz.core.sql_aggregates import parse_call
from wmviz.core.sql_session import SqlSessionOperator
from wmviz.core.sql_session_config import SqlSessionConfig
from wmviz.core.timers import TimeDomain, TimerService
from wmviz.sql.load import read_plan_file
from wmviz.sql.model import OperatorRefused
from wmviz.sql.plan_session import session_config
from wmviz.trace.config import parse_config
from wmviz.trace.errors import TraceValidationError

DATA = paths.DATA / "sql"
SUM_COUNT = (parse_call("SUM(v) AS s"), parse_call("COUNT(*) AS n"))


def _config(keys: tuple[str, ...]) -> SqlSessionConfig:
    return SqlSessionConfig(gap_ms=3000, partition_by=keys, aggregates=SUM_COUNT)


def _replay(config: SqlSessionConfig, script: list[tuple[str, Any]]) -> tuple[list, int]:
    """Steps ("row", (key, ts)) and ("wm", ms), as Flink's harness feeds them: outputs and drops."""
    lines: list[Line | None] = []
    watermarks: dict[int, int] = {}
    for what, value in script:
        if what == "row":
            lines.append(Line({"k": value[0], "v": 1}, value[1]))
        else:
            lines.append(None)
            watermarks[len(lines) - 1] = value
    answers = drive(config, lines, watermarks)
    return [values for a in answers for _, values in a.outputs], sum(a.late_dropped for a in answers)


def test_flinks_event_time_session_windows():
    rows = [("key2", 3999), ("key2", 3000), ("key1", 20), ("key1", 0), ("key1", 999)]
    rows += [("key2", 1998), ("key2", 1999), ("key2", 1000)]
    script = [("row", r) for r in rows] + [("wm", 999), ("wm", 1999), ("wm", 2999), ("wm", 3999)]
    script += [("row", ("key2", 3500)), ("wm", 4999), ("row", ("key1", 999)), ("wm", 5999), ("wm", 6999)]
    script += [("wm", 7999), ("wm", 8999)]
    outputs, dropped = _replay(_config(("k",)), script)
    assert outputs == [
        {"k": "key1", "s": 3, "n": 3, "window_start": 0, "window_end": 3999},
        {"k": "key2", "s": 6, "n": 6, "window_start": 1000, "window_end": 6999},
    ]
    assert dropped == 1


def test_flinks_session_windows_without_partition_key():
    script = [("row", ("key2", 3999)), ("row", ("key1", 20)), ("wm", 999), ("row", ("key3", 2990))]
    script += [("wm", 1999), ("wm", 6999)]
    outputs, dropped = _replay(_config(()), script)
    assert outputs == [{"s": 3, "n": 3, "window_start": 20, "window_end": 6999}]
    assert dropped == 0


def _row(number: int, key: str, ts: int) -> TraceRow:
    return TraceRow(number, Kind.RECORD, event_ms=ts, payload=(("k", key), ("v", 1)))


def _advance(op: SqlSessionOperator, timers: TimerService, watermark: int, log: StepLog) -> None:
    op.on_watermark(watermark, log)
    while (fired := timers.pop_due(TimeDomain.EVENT, watermark)) is not None:
        op.on_timer(fired, log)
    op.output_watermark(watermark, log)


def test_a_snapshot_restored_behaves_the_same():
    """Flink's tests snapshot and restore mid-run; a pickled copy must go on exactly as the original."""
    timers = TimerService()
    op = SqlSessionOperator(_config(("k",)), timers)
    log = StepLog()
    for number, (key, ts) in enumerate([("key2", 3999), ("key1", 20), ("key2", 1000), ("key1", 0)]):
        op.on_record("0", _row(number, key, ts), log)
    _advance(op, timers, 1999, log)
    copy_op, copy_timers = pickle.loads(pickle.dumps((op, timers)))
    assert copy_op.snapshot() == op.snapshot() and copy_op.live_rows() == op.live_rows() == {0, 1, 2, 3}
    logs = []
    for operator, service in ((op, timers), (copy_op, copy_timers)):
        after = StepLog()
        operator.on_record("0", _row(9, "key2", 3500), after)
        _advance(operator, service, 9999, after)
        logs.append(after.split()[0])
    assert logs[0] == logs[1] and len(logs[0]) == 3  # two sessions and the watermark


def test_a_hand_written_config_is_read_and_its_mistakes_named(tmp_path):
    operator = {"type": "sql_session", "gap_ms": 1000, "partition_by": ["k"], "aggregates": ["count(*) as n"]}
    config = parse_config({"operator": operator}, "c.json")
    assert isinstance(config.operator, SqlSessionConfig)
    assert config.operator.output_fields() == ("k", "n", "window_start", "window_end")
    bad = {**operator, "gap_ms": 0, "properties": ["window_middle"], "aggregates": ["COUNT(*) AS k"]}
    with pytest.raises(TraceValidationError) as err:
        parse_config({"operator": bad}, "c.json")
    text = "\n".join(str(i) for i in err.value.issues)
    assert "operator.gap_ms" in text and "window_middle" in text and "'k' is named twice" in text


@pytest.mark.parametrize(
    ("script", "expected"),
    [
        ("session_partitioned", (10_000, ("user_id",), 5, ("window_start", "window_end"))),
        ("session_global", (5_000, (), 3, ("window_start", "window_end"))),
    ],
)
def test_the_plan_reader_reads_the_window_aggregate_node(script, expected):
    job = read_plan_file(DATA / f"{script}.plan.json")
    (node,) = [n for n in job.nodes if n.flink_type == "stream-exec-window-aggregate"]
    config = session_config(node, job)
    assert (config.gap_ms, config.partition_by, len(config.aggregates), config.properties) == expected


def _refusal(change) -> str:
    job = read_plan_file(DATA / "session_partitioned.plan.json")
    (node,) = [n for n in job.nodes if n.flink_type == "stream-exec-window-aggregate"]
    spec = json.loads(json.dumps(dict(node.spec)))
    change(spec)
    object.__setattr__(node, "spec", spec)
    with pytest.raises(OperatorRefused) as err:
        session_config(node, job)
    return str(err.value)


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (lambda s: s["aggCalls"][0].update(distinct=True), "DISTINCT"),
        (lambda s: s["aggCalls"][1].update(internalName="$FIRST_VALUE$1"), "$FIRST_VALUE$1"),
        (lambda s: s["windowing"]["window"].update(type="TumblingWindow"), "not a SESSION window"),
        (
            lambda s: s["windowing"]["timeAttributeType"].update(type="TIMESTAMP_WITH_LOCAL_TIME_ZONE"),
            "LOCAL",
        ),
        (lambda s: s["windowing"]["window"].update(gap="PT0.0005S"), "finer than a millisecond"),
        (lambda s: s.update(grouping=[]), "grouped by"),
        (lambda s: s.update(needRetraction=True), "retracts"),
    ],
)
def test_the_plan_reader_refuses_what_it_does_not_model_by_name(change, named):
    message = _refusal(change)
    assert named in message and "plan node 3" in message
