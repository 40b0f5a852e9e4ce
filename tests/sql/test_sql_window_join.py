"""SQL's window join in the core (wmviz/core/sql_window_join.py), without a JVM: cases of Flink's own
`WindowJoinOperatorTest` (flink-table-runtime, `operators/join/window/`) replayed, and the plan
reader's refusals by name.

Flink's test feeds rows whose first column is their window's end and a key (`k1`); here a TUMBLE
window of 1 ms holds a row at end − 1, the same window. Its testInnerJoin, testLeftOuterJoin,
testSemiJoin and testAntiJoin (UTC) translate one to one: both watermarks at 1, a row of window end
1 arriving late and dropped (counted on the left side), rows of ends 3, 3 (left), 3 (right),
6 (left), 9 (right), the watermark to 10, rows of ends 12, 15 (left), 15, 15 (right), the watermark
to 13 then 18. The expected rows are Flink's test's, as (left end, right end) pairs.
"""

from __future__ import annotations

import json

import pytest

from tests.support import paths
from tests.support.support_sql_join import Fed, run_operator
from wmviz.core.sql_window_join_config import WindowJoinConfig
from wmviz.sql.load import read_plan_file
from wmviz.sql.model import OperatorRefused
from wmviz.sql.plan_json import read_compile_plan
from wmviz.sql.plan_window_join import read_window_join
from wmviz.trace.config import parse_config

DATA = paths.DATA / "sql"


def _flink_test_case(join_type: str) -> tuple[dict[int, list[tuple]], dict[int, int]]:
    """Step -> the (left end, right end) pairs output, and step -> late drops, of Flink's case."""
    config = WindowJoinConfig(
        join_type=join_type,  # type: ignore[arg-type]
        size_ms=1,
        left_key=("k",),
        right_key=("k",),
        left_columns=("end", "k"),
        right_columns=("end", "k"),
        output_names=("l_end", "l_k", "r_end", "r_k") if join_type not in ("semi", "anti") else (),
    )
    feeds = [(1, "L", 1), (2, "L", 3), (2, "L", 3), (2, "R", 3), (2, "L", 6), (2, "R", 9)]
    feeds += [(4, "L", 12), (4, "L", 15), (4, "R", 15), (4, "R", 15)]
    fed = [Fed(step, side, {"end": end, "k": "k1"}, end - 1) for step, side, end in feeds]
    marks = {0: 1, 3: 10, 5: 13, 6: 18}
    out = run_operator(config, fed, {"L": marks, "R": marks})
    rows = {
        step: [tuple(o.values[i][1] for i in range(len(o.values)) if i in (0, 2) or len(o.values) == 2)
               for o in s.outputs]
        for step, s in out.items() if s.outputs
    }  # fmt: skip
    return rows, {step: s.late_drops for step, s in out.items() if s.late_drops}


def test_flink_inner_join_case():
    rows, drops = _flink_test_case("inner")
    assert drops == {1: 1}
    assert rows == {3: [(3, 3), (3, 3)], 6: [(15, 15), (15, 15)]}


def test_flink_left_outer_join_case():
    rows, drops = _flink_test_case("left")
    assert drops == {1: 1}
    assert rows == {3: [(3, 3), (3, 3), (6, None)], 5: [(12, None)], 6: [(15, 15), (15, 15)]}


def test_flink_semi_join_case():
    rows, drops = _flink_test_case("semi")
    assert drops == {1: 1}
    assert rows == {3: [(3, "k1"), (3, "k1")], 6: [(15, "k1")]}


def test_flink_anti_join_case():
    rows, drops = _flink_test_case("anti")
    assert drops == {1: 1}
    assert rows == {3: [(6, "k1")], 5: [(12, "k1")]}


def test_a_null_key_matches_nothing_and_is_padded():
    """SQL-WJ5: rows whose key is NULL share a window yet never match: a FULL join pads both."""
    config = WindowJoinConfig(
        join_type="full", size_ms=5, left_key=("k",), right_key=("k",),
        left_columns=("k", "a"), right_columns=("k", "b"), output_names=("k", "a", "k0", "b"),
    )  # fmt: skip
    fed = [Fed(0, "L", {"k": None, "a": 1}, 1), Fed(0, "R", {"k": None, "b": 2}, 2)]
    out = run_operator(config, fed, {"L": {1: 10}, "R": {1: 10}})
    values = [dict(o.values) for s in out.values() for o in s.outputs]
    assert values == [{"k": None, "a": 1, "k0": None, "b": None}, {"k": None, "a": None, "k0": None, "b": 2}]


@pytest.mark.parametrize(
    ("script", "join_type", "window"),
    [
        ("winjoin_inner_tumble", "inner", "tumble"),
        ("winjoin_left_hop", "left", "hop"),
        ("winjoin_right_cumulate", "right", "cumulate"),
        ("winjoin_full_tumble", "full", "tumble"),
        ("winjoin_semi_tumble", "semi", "tumble"),
        ("winjoin_anti_hop", "anti", "hop"),
    ],
)
def test_the_plan_reader_reads_every_join_type_flink_plans(script, join_type, window):
    job = read_plan_file(DATA / f"{script}.plan.json")
    node = next(n for n in job.nodes if n.flink_type == "stream-exec-window-join")
    config = read_window_join(node, job)
    assert (config.join_type, config.window, config.left_key, config.right_key) == (
        join_type, window, ("user_id",), ("user_id",),
    )  # fmt: skip
    assert config.left_columns[-2:] == ("window_start", "window_end")


def _refusal(script: str, edit) -> str:
    """The reader's refusal of `script`'s plan after `edit` changed its JSON."""
    raw = json.loads((DATA / f"{script}.plan.json").read_text())
    edit(raw)
    job = read_compile_plan(raw)
    node = next(n for n in job.nodes if n.flink_type == "stream-exec-window-join")
    with pytest.raises(OperatorRefused) as refused:
        read_window_join(node, job)
    return str(refused.value)


def _join_node(raw: dict) -> dict:
    return next(n for n in raw["nodes"] if n["type"].startswith("stream-exec-window-join"))


def test_a_condition_beyond_the_key_is_refused_by_name():
    def edit(raw):
        _join_node(raw)["joinSpec"]["nonEquiCondition"] = {"kind": "LITERAL", "value": True}

    assert "a join condition beyond the key equality is not modelled" in _refusal(
        "winjoin_inner_tumble", edit
    )


def test_a_null_safe_key_is_refused_by_name():
    def edit(raw):
        _join_node(raw)["joinSpec"]["filterNulls"] = [False]

    assert "IS NOT DISTINCT FROM" in _refusal("winjoin_inner_tumble", edit)


def test_a_where_before_the_join_is_refused_by_name():
    def edit(raw):
        calc = next(n for n in raw["nodes"] if n["type"].startswith("stream-exec-calc") and n["id"] == 3)
        calc["condition"] = {"kind": "LITERAL", "value": True}

    assert "a WHERE before a window join is not modelled" in _refusal("winjoin_inner_tumble", edit)


def test_a_config_written_by_hand_is_read_and_its_cross_field_rules_checked():
    operator = {"type": "window_join", "join_type": "left", "window": "hop", "size_ms": 6000,
                "slide_ms": 2000, "left_key": ["user_id"], "right_key": ["user_id"],
                "left_columns": ["user_id", "window_start"],
                "right_columns": ["user_id", "page"]}  # fmt: skip
    config = parse_config({"operator": operator}, "by hand")
    assert isinstance(config.operator, WindowJoinConfig) and config.operator.slide_ms == 2000
    with pytest.raises(Exception, match="multiple"):
        parse_config({"operator": {**operator, "slide_ms": 4000}}, "by hand")
    with pytest.raises(Exception, match="pair up"):
        parse_config({"operator": {**operator, "right_key": ["user_id", "page"]}}, "by hand")
    with pytest.raises(Exception, match="output_names"):
        parse_config({"operator": {**operator, "output_names": ["a"]}}, "by hand")
