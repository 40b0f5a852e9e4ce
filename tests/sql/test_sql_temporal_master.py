"""SQL-T8: the event-time temporal join's late probe rows under the `flink-master` profile.

FLINK-39719 (apache/flink PR 28229, merged after 2.3.0) makes `TemporalRowTimeJoinOperator` drop a
probe row whose time is at or behind the operator's current (combined) watermark when it arrives,
and count it in `numLateRecordsDropped`: it is never joined, nor padded with NULLs on a LEFT join,
and registers no timer. The rule was read in apache/flink's newest stored source of the operator
(`TemporalRowTimeJoinOperatorV2.processElement1`, which carries the change; the stored
`TemporalRowTimeJoinOperator.java` versions predate it), and the released 2.3.0 jar was checked by
javap to have no such check (its `processElement1` stores every probe row). Modelled, not checked
against a release: no released jar has it. Released Flink (the default profile) keeps SQL-T2.

The rows are Flink's own `TemporalRowTimeJoinOperatorTest` prefix (tests/sql/test_sql_temporal.py
replays it for 2.3.0), where probe rows at 1 arrive at watermarks 1 and 2: the PR says it adjusted
those tests; here they are dropped and counted rather than padded.
"""

from __future__ import annotations

import dataclasses

from tests.sql.test_sql_temporal import FLINK_PREFIX, harness_config
from tests.support.support_sql_join import Fed, operator_trace
from wmviz.core.operator_log import OutputWatermark
from wmviz.core.rules import GLOSSARY
from wmviz.core.simulate import simulate
from wmviz.core.sql_rows import LATE_METRIC, Fate, RowFate, SqlOutput
from wmviz.core.types import Profile
from wmviz.view.checked import scenario_claims


def run(join: str, calls: list[tuple], profile: Profile) -> tuple[list[tuple], int, list[RowFate]]:
    """The outputs and output watermarks in order, the late drops counted, and the fates logged."""
    fed, marks = [], {"L": {}, "R": {}}
    for step, call in enumerate(calls):
        if call[0] in ("L", "R"):
            side, t, k, v = call
            fed.append(Fed(step, side, {"t": t, "k": k, "v": v}, t))
        else:
            marks[call[0][1]][step] = call[1]
    trace, _ = operator_trace(harness_config(join), fed, marks)
    trace = dataclasses.replace(trace, config=dataclasses.replace(trace.config, profile=profile))
    out: list[tuple] = []
    late, fates = 0, []
    for result in simulate(trace):
        for o in result.emit:
            if isinstance(o, OutputWatermark):
                out.append(("W", o.watermark_ms))
            elif isinstance(o, SqlOutput):
                out.append((o.kind.value, *(v for _, v in o.values)))
        late += sum(1 for d in result.dropped if d.late)
        fates += [e for e in result.events if isinstance(e, RowFate)]
    return out, late, fates


def test_the_late_probe_rows_of_flinks_left_join_test_are_dropped_and_counted():
    """testRowTimeLeftTemporalJoin's probe rows at 1, arriving at watermarks 1 and 2: padded with
    NULLs in 2.3.0 (SQL-T2), dropped and counted under flink-master (SQL-T8); the rest unchanged."""
    released, released_late, _ = run("left", FLINK_PREFIX, Profile.FLINK_1X_2X)
    master, master_late, fates = run("left", FLINK_PREFIX, Profile.FLINK_MASTER)
    padded = ("+I", 1, "k1", "1a1", None, None, None)
    assert released.count(padded) == 2 and released_late == 0
    assert [o for o in released if o != padded] == master
    assert master_late == 2
    dropped = [f for f in fates if f.rule == "SQL-T8"]
    assert [f.fate for f in dropped] == [Fate.DROPPED, Fate.DROPPED]
    assert all(f.metric == LATE_METRIC for f in dropped)


def test_a_row_at_the_watermark_is_late_and_one_after_it_is_not():
    """Late means time ≤ the combined watermark (the smaller of both inputs'): at 5 with both
    inputs at 5 it is dropped; at 6 it waits and joins the version at 4."""
    calls = [("R", 4, "k", "r4"), ("WL", 5), ("WR", 5), ("L", 5, "k", "at"), ("L", 6, "k", "after"),
             ("WL", 7), ("WR", 7)]  # fmt: skip
    out, late, _ = run("inner", calls, Profile.FLINK_MASTER)
    assert late == 1
    assert ("+I", 6, "k", "after", 4, "k", "r4") in out
    assert not [o for o in out if o[:4] == ("+I", 5, "k", "at")]
    # the combined watermark is the smaller input's: with the build side at 3, a probe row at 5 waits
    calls = [("R", 2, "k", "r2"), ("WL", 5), ("WR", 3), ("L", 5, "k", "p5"), ("WL", 7), ("WR", 7)]
    out, late, _ = run("inner", calls, Profile.FLINK_MASTER)
    assert late == 0 and ("+I", 5, "k", "p5", 2, "k", "r2") in out


def test_the_released_profile_keeps_buffering_and_counts_nothing():
    calls = [("R", 4, "k", "r4"), ("WL", 5), ("WR", 5), ("L", 5, "k", "at"), ("WL", 7), ("WR", 7)]
    out, late, fates = run("inner", calls, Profile.FLINK_1X_2X)
    assert late == 0 and ("+I", 5, "k", "at", 4, "k", "r4") in out
    assert [f.rule for f in fates if f.row.payload[2][1] == "at"] == ["SQL-T2"]


def test_the_rule_is_in_the_glossary_and_labelled_modelled():
    assert "SQL-T8" in GLOSSARY
    config = operator_trace(harness_config("left"), [], {})[0].config
    master = [c for c in scenario_claims(config, Profile.FLINK_MASTER) if "late probe" in c.subject]
    assert [c.verified for c in master] == [False]
    assert "modelled, not checked against a release" in master[0].statement
    assert not [c for c in scenario_claims(config, Profile.FLINK_1X_2X) if "late probe" in c.subject]
