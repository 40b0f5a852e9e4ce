"""SQL's event-time temporal join in the core (wmviz/core/sql_temporal_join.py), without Flink.

Replayed from Flink's own `TemporalRowTimeJoinOperatorTest` (read with the repository reader, not
copied): `testRowTimeTemporalJoin` and `testRowTimeLeftTemporalJoin` up to their Watermark(8), the
part before the delete version. Where they go on (a -D version at 9, a +U probe row) they do not
translate: wmviz's rows carry no changelog kind (the stand-in upsert source never deletes), and
`testRowTimeTemporalJoinWithStateRetention` needs state retention, which is refused.
The update-before/after pair at 7 is one upsert at 7 here (Flink's map keeps the last row of a time).
"""

from __future__ import annotations

import json
import pickle

import pytest

from tests.support import paths
from tests.support.support_sql_join import Fed, operator_trace
from wmviz.core.operator_log import OutputWatermark
from wmviz.core.rules import GLOSSARY
from wmviz.core.simulate import simulate
from wmviz.core.sql_rows import Fate, RowFate, SqlOutput
from wmviz.core.sql_temporal_join import TemporalRowTimeJoin
from wmviz.core.sql_temporal_join_config import TemporalJoinConfig
from wmviz.core.timers import TimerService
from wmviz.core.windows import ScenarioError
from wmviz.sql.model import OperatorRefused
from wmviz.sql.operators import operator_of
from wmviz.sql.plan_json import read_compile_plan
from wmviz.trace import read_trace
from wmviz.trace.config import parse_config
from wmviz.trace.errors import TraceValidationError

PLAN = paths.DATA / "sql" / "temporal_rates.plan.json"


def harness_config(join: str) -> TemporalJoinConfig:
    """Flink's test rows (t, k, v) on both sides, keyed by k."""
    return TemporalJoinConfig(
        join_type=join,  # type: ignore[arg-type]
        probe_key=("k",),
        build_key=("k",),
        build_columns=("t", "k", "v"),
        build_fields=("t0", "k0", "v0"),
    )


def harness_run(config: TemporalJoinConfig, calls: list[tuple]) -> list[tuple]:
    """Each harness call one step: ("L"/"R", t, k, v) an element, ("WL"/"WR", ms) a watermark.
    Returns the outputs and output watermarks in order, as the harness lists them."""
    fed, marks = [], {"L": {}, "R": {}}
    for step, call in enumerate(calls):
        if call[0] in ("L", "R"):
            side, t, k, v = call
            fed.append(Fed(step, side, {"t": t, "k": k, "v": v}, t))
        else:
            marks[call[0][1]][step] = call[1]
    trace, _ = operator_trace(config, fed, marks)
    out: list[tuple] = []
    for result in simulate(trace):
        for o in result.emit:
            if isinstance(o, OutputWatermark):
                out.append(("W", o.watermark_ms))
            elif isinstance(o, SqlOutput):
                out.append((o.kind.value, *(v for _, v in o.values)))
    return out


FLINK_PREFIX = [
    ("WL", 1), ("WR", 1),
    ("L", 1, "k1", "1a1"), ("R", 2, "k1", "1a2"),
    ("WL", 2), ("WR", 2),
    ("L", 1, "k1", "1a1"), ("L", 3, "k1", "1a3"), ("R", 4, "k2", "2a4"),
    ("WL", 5), ("WR", 5),
    ("L", 6, "k2", "2a3"), ("R", 7, "k2", "2a5"),
    ("WL", 8), ("WR", 9),
]  # fmt: skip


def test_flinks_row_time_temporal_join_up_to_watermark_8():
    """testRowTimeTemporalJoin: the late probe rows at 1 find no version (2 is newer): nothing."""
    assert harness_run(harness_config("inner"), FLINK_PREFIX) == [
        ("W", 1),
        ("W", 2),
        ("+I", 3, "k1", "1a3", 2, "k1", "1a2"),
        ("W", 5),
        ("+I", 6, "k2", "2a3", 4, "k2", "2a4"),
        ("W", 8),
    ]


def test_flinks_row_time_left_temporal_join_up_to_watermark_8():
    """testRowTimeLeftTemporalJoin: a probe row at 1 arriving at watermark 1 is not dropped: it is
    padded at the next advance, and so is the second one arriving at watermark 2."""
    assert harness_run(harness_config("left"), FLINK_PREFIX) == [
        ("W", 1),
        ("+I", 1, "k1", "1a1", None, None, None),
        ("W", 2),
        ("+I", 1, "k1", "1a1", None, None, None),
        ("+I", 3, "k1", "1a3", 2, "k1", "1a2"),
        ("W", 5),
        ("+I", 6, "k2", "2a3", 4, "k2", "2a4"),
        ("W", 8),
    ]


def test_a_late_probe_row_joins_nulls_once_its_version_is_cleaned():
    """Versions 0 and 5, watermark 9: the key's timer at 6 cleaned 0 (5 is the newest at or below
    the watermark); a probe row at 3 arriving then gets NULLs, as real Flink 2.3.0 does."""
    calls = [
        ("R", 0, "k", "r0"), ("L", 2, "k", "p2"), ("WL", 1), ("WR", 0),
        ("R", 5, "k", "r5"), ("WR", 5), ("L", 6, "k", "p6"), ("WL", 9), ("WR", 9),
        ("L", 3, "k", "late"), ("WL", 10), ("WR", 10),
    ]  # fmt: skip
    out = harness_run(harness_config("left"), calls)
    assert ("+I", 2, "k", "p2", 0, "k", "r0") in out
    assert ("+I", 6, "k", "p6", 5, "k", "r5") in out
    assert out[-2:] == [("+I", 3, "k", "late", None, None, None), ("W", 10)]
    assert ("+I", 3, "k", "late") not in [o[:4] for o in harness_run(harness_config("inner"), calls)]


def test_a_quiet_build_side_holds_every_probe_row_and_the_output_watermark():
    calls = [("R", 0, "k", "r0"), ("WR", 0)] + [(side, t, "k", f"p{t}") for side, t in [("L", 5), ("L", 9)]]
    calls += [("WL", 20), ("WL", 30)]
    out = harness_run(harness_config("inner"), calls)
    assert out == [("W", 0)]  # the rates side stays at 0: nothing released, the output held at 0
    out = harness_run(harness_config("inner"), [*calls, ("WR", 40)])
    assert out[1:] == [("+I", 5, "k", "p5", 0, "k", "r0"), ("+I", 9, "k", "p9", 0, "k", "r0"), ("W", 30)]


def test_one_fate_per_row_in_words_under_a_glossary_rule():
    calls = [("WL", 4), ("WR", 4), ("L", 3, "k", "late"), ("L", 8, "k", "p"), ("R", 2, "k", "r")]
    fed = [Fed(i, c[0], {"t": c[1], "k": c[2], "v": c[3]}, c[1]) for i, c in enumerate(calls) if len(c) == 4]
    trace, _ = operator_trace(harness_config("inner"), fed, {"L": {0: 4}, "R": {1: 4}})
    fates = [e for r in simulate(trace) for e in r.events if isinstance(e, RowFate)]
    assert [(dict(f.row.payload)["v"], f.fate) for f in fates] == [
        ("late", Fate.ADDED_LATE),
        ("p", Fate.KEPT),
        ("r", Fate.ADDED_LATE),
    ]
    assert "waits for the watermark to pass 8" in fates[1].reason
    assert all(f.rule in GLOSSARY for f in fates)


def test_snapshot_is_complete_and_the_operator_pickles():
    op = TemporalRowTimeJoin(harness_config("inner"), TimerService())
    assert pickle.loads(pickle.dumps(op)).snapshot() == op.snapshot()


def test_the_plan_reader_reads_both_joins_of_the_fixture():
    job = read_compile_plan(json.loads(PLAN.read_text()))
    configs = {n.id: operator_of(n, job) for n in job.nodes if n.flink_type == "stream-exec-temporal-join"}
    assert configs["7"] == TemporalJoinConfig(
        join_type="inner",
        probe_key=("currency",),
        build_key=("currency",),
        build_columns=("currency", "rate", "ts"),
        build_fields=("currency0", "rate", "ts0"),
    )
    assert configs["10"] is not None and configs["10"].join_type == "left"  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("change", "refused"),
    [
        (("joinSpec", "nonEquiCondition"), "beyond the key equality"),
        (("joinSpec", "joinType"), "FULL temporal join"),
        (("isTemporalFunctionJoin",), "temporal table function"),
        (("leftTimeAttributeIndex",), "processing-time"),
    ],
)
def test_the_plan_reader_refuses_what_it_does_not_model_by_name(change, refused):
    doc = json.loads(PLAN.read_text())
    node = next(n for n in doc["nodes"] if n["id"] == 7)
    value = {"nonEquiCondition": {"kind": "CALL"}, "joinType": "FULL"}.get(change[-1], True)
    if change[-1] == "leftTimeAttributeIndex":
        value = 0  # order_id: not a row-time column
    (node[change[0]] if len(change) == 2 else node)[change[-1]] = value
    job = read_compile_plan(doc)
    with pytest.raises(OperatorRefused, match=f"TemporalJoin \\(plan node 7\\): .*{refused}"):
        operator_of(job.node("7"), job)


def test_a_config_by_hand_is_checked_field_by_field():
    operator = {"type": "temporal_join", "probe_key": ["k"], "build_key": ["k", "j"], "build_columns": ["k"]}
    with pytest.raises(TraceValidationError, match=r"operator\.build_key: has 2 columns"):
        parse_config({"operator": operator}, "t.json")
    operator |= {"build_key": ["k"]}
    assert isinstance(parse_config({"operator": operator}, "t.json").operator, TemporalJoinConfig)


def test_a_row_without_its_key_column_is_refused_naming_row_and_column(tmp_path):
    trace = tmp_path / "t.jsonl"
    config = {"channels": {"L": 1, "R": 1}, "operator": {"type": "temporal_join", "probe_key": ["k"]}}
    config["operator"] |= {"build_key": ["k"], "build_columns": ["k", "v"]}
    row = {"kind": "record", "input": "L", "channel": 0, "event_ms": 5, "v": 1}
    trace.write_text(json.dumps({"config": config}) + "\n" + json.dumps(row) + "\n")
    with pytest.raises(ScenarioError, match=r"^row 2: column k: missing: operator\.probe_key names it$"):
        list(simulate(read_trace(trace, None)))
