"""The lint of `wmviz plan`, each check planted in an otherwise clean plan, and the watermark
expressions: every shape wmviz evaluates from RexNode JSON and from digest text, and a refusal that
names the shape."""

from __future__ import annotations

import json

import pytest

from tests.support import paths
from wmviz.core.sql_expr import CastTo, Column, Shifted, ToTimestampLtz, UnsupportedExpression, evaluate
from wmviz.sql.digest import parse_expression, rex_tree, to_expr
from wmviz.sql.lint import CHECKS, has_daylight_saving, lint, recognised_planner_error
from wmviz.sql.plan_json import read_compile_plan

PLAN = paths.DATA / "sqlplan" / "orders-payments-refunds.plan.json"


def plan_doc() -> dict:
    return json.loads(PLAN.read_text())


def node(doc: dict, node_id: int) -> dict:
    return next(n for n in doc["nodes"] if n["id"] == node_id)


def codes(doc: dict) -> list[str]:
    return [f.code for f in lint(read_compile_plan(doc))]


def pushdown(doc: dict, node_id: int) -> dict:
    return next(
        a for a in node(doc, node_id)["scanTableSource"]["abilities"] if a["type"] == "WatermarkPushDown"
    )


def test_the_clean_plan_has_only_its_two_findings():
    assert codes(plan_doc()) == ["alignment-without-update-interval", "ignored-watermark-option"]


def test_every_check_has_a_template_that_names_its_fields():
    for check in CHECKS.values():
        assert "{" in check.template, check.code


def test_no_idle_timeout_on_a_kafka_source():
    doc = plan_doc()
    for node_id in (1, 3):
        pushdown(doc, node_id)["idleTimeoutMillis"] = -1
        pushdown(doc, node_id)["watermarkParams"]["sourceIdleTimeout"] = -1
        node(doc, node_id)["scanTableSource"]["table"]["resolvedTable"]["options"].pop(
            "scan.watermark.idle-timeout", None
        )
    job = read_compile_plan(doc)
    found = [f for f in lint(job) if f.code == "no-idle-timeout"]
    assert [f.message.split(":")[0] for f in found] == ["table orders", "table payments"]
    assert "does not say how many partitions" in found[0].message


def test_no_idle_timeout_names_partitions_and_subtasks_when_told(tmp_path, capsys):
    from wmviz.cli import main

    doc = plan_doc()
    pushdown(doc, 1)["idleTimeoutMillis"] = -1
    pushdown(doc, 3)["idleTimeoutMillis"] = -1
    plan = tmp_path / "p.json"
    plan.write_text(json.dumps(doc))
    assert main(["plan", str(plan), "--json", "--partitions", "orders=4", "--parallelism", "2"]) == 0
    lints = json.loads(capsys.readouterr().out)["lint"]
    orders = next(i for i in lints if i["code"] == "no-idle-timeout")
    assert orders["message"].startswith("table orders: no idle timeout, and 4 partitions on 2 subtasks")


def test_a_zero_table_idle_timeout_switches_off_the_global_one():
    doc = plan_doc()
    pushdown(doc, 1)["watermarkParams"]["sourceIdleTimeout"] = 0
    node(doc, 1)["scanTableSource"]["table"]["resolvedTable"]["options"]["scan.watermark.idle-timeout"] = "0"
    orders = read_compile_plan(doc).sources[0]
    assert orders.idle_timeout_ms.value is None and "switches idleness off" in orders.idle_timeout_ms.note
    assert "no-idle-timeout" in codes(doc)


def test_alignment_off_without_a_max_drift():
    doc = plan_doc()
    pushdown(doc, 3)["watermarkParams"]["alignMaxDrift"] = "PT0S"
    node(doc, 3)["scanTableSource"]["table"]["resolvedTable"]["options"].pop(
        "scan.watermark.alignment.max-drift"
    )
    found = [f for f in lint(read_compile_plan(doc)) if f.code == "alignment-off"]
    assert len(found) == 1 and "(no max drift)" in found[0].message


def test_alignment_with_an_update_interval_set_is_not_flagged():
    doc = plan_doc()
    node(doc, 3)["scanTableSource"]["table"]["resolvedTable"]["options"][
        "scan.watermark.alignment.update-interval"
    ] = "1 s"
    assert "alignment-without-update-interval" not in codes(doc)


def test_a_global_idle_timeout_every_source_overrides_is_unused():
    doc = plan_doc()
    doc["nodes"] = [n for n in doc["nodes"] if n["id"] not in (10, 11, 12)]
    doc["edges"] = [e for e in doc["edges"] if e["source"] not in (10, 11)]
    assert "global-idle-timeout-unused" not in codes(doc)  # orders still takes the global one
    pushdown(doc, 1)["watermarkParams"]["sourceIdleTimeout"] = 15_000
    node(doc, 1)["scanTableSource"]["table"]["resolvedTable"]["options"]["scan.watermark.idle-timeout"] = (
        "15 s"
    )
    found = [f for f in lint(read_compile_plan(doc)) if f.code == "global-idle-timeout-unused"]
    assert len(found) == 1 and found[0].message.endswith("(orders, payments)")


def test_an_assigner_source_uses_the_global_idle_timeout():
    doc = plan_doc()
    pushdown(doc, 1)["watermarkParams"]["sourceIdleTimeout"] = 15_000
    assert "global-idle-timeout-unused" not in codes(doc)  # refunds' assigner reads it


def test_a_window_over_a_plain_timestamp_lost_its_time_attribute():
    doc = plan_doc()
    windowing = node(doc, 8)["windowing"]
    windowing["timeAttributeType"] = "TIMESTAMP(3)"
    windowing["isRowtime"] = False
    found = [f for f in lint(read_compile_plan(doc)) if f.code == "time-attribute-lost"]
    assert len(found) == 1 and found[0].message.startswith("WindowAggregate: its window is over ts")


def test_a_proctime_window_is_not_a_lost_time_attribute():
    doc = plan_doc()
    windowing = node(doc, 8)["windowing"]
    windowing["timeAttributeType"] = {
        "type": "TIMESTAMP_WITH_LOCAL_TIME_ZONE",
        "precision": 3,
        "kind": "PROCTIME",
    }
    windowing["isRowtime"] = False
    assert "time-attribute-lost" not in codes(doc)


def test_planner_errors_of_a_lost_time_attribute_are_recognised():
    message = (  # as Flink 2.3.0's planner refuses a TUMBLE over a regular join's CAST rowtime
        "Error while applying rule StreamPhysicalWindowTableFunctionRule(in:LOGICAL,out:STREAM_PHYSICAL), "
        "args [rel#1269:FlinkLogicalTableFunctionScan.LOGICAL.any.None: 0.[NONE]]\n"
        "The window function requires the timecol is a time attribute type, but is TIMESTAMP(3)."
    )
    found = recognised_planner_error(message)
    assert found is not None and found.code == "time-attribute-lost"
    assert found.message.startswith(
        "the planner: The window function requires the timecol is a time attribute type, but is TIMESTAMP(3);"
    )
    assert recognised_planner_error("Object 'nope' not found") is None


@pytest.mark.parametrize(
    ("zone", "flagged"), [("Europe/Berlin", True), ("Asia/Shanghai", False), ("UTC", False)]
)
def test_ltz_windows_in_a_zone_with_daylight_saving(zone, flagged):
    doc = plan_doc()
    aggregate = node(doc, 8)
    aggregate["windowing"]["timeAttributeType"] = {
        "type": "TIMESTAMP_WITH_LOCAL_TIME_ZONE",
        "precision": 3,
        "kind": "ROWTIME",
    }
    aggregate["configuration"]["table.local-time-zone"] = zone
    assert ("ltz-window-dst" in codes(doc)) is flagged


def test_the_default_zone_is_said_to_be_unknown():
    doc = plan_doc()
    aggregate = node(doc, 8)
    aggregate["windowing"]["timeAttributeType"] = {
        "type": "TIMESTAMP_WITH_LOCAL_TIME_ZONE",
        "kind": "ROWTIME",
    }
    aggregate["configuration"]["table.local-time-zone"] = "default"
    found = [f for f in lint(read_compile_plan(doc)) if f.code == "ltz-window-dst"]
    assert len(found) == 1 and "'default' or unknown (the zone where the job runs" in found[0].message


def test_daylight_saving_by_zone():
    assert has_daylight_saving("America/New_York") and not has_daylight_saving("Asia/Kolkata")
    assert not has_daylight_saving("Not/AZone")


# --- expressions -------------------------------------------------------------------------------


def ref(index: int, type_text: str) -> dict:
    return {"kind": "INPUT_REF", "inputIndex": index, "type": type_text}


def call(name: str, operands: list, type_text: str = "TIMESTAMP(3)") -> dict:
    return {"kind": "CALL", "internalName": f"${name}$1", "operands": operands, "type": type_text}


def lit(value, type_text: str) -> dict:
    return {"kind": "LITERAL", "value": value, "type": type_text}


FIELDS = [
    ("id", "BIGINT"),
    ("ms", "BIGINT"),
    ("ts", "TIMESTAMP(3)"),
    ("lts", "TIMESTAMP(3) WITH LOCAL TIME ZONE"),
]


@pytest.mark.parametrize(
    ("rex", "expected"),
    [
        (ref(2, "TIMESTAMP(3)"), Column("ts")),
        (
            call("-", [ref(2, "TIMESTAMP(3)"), lit("5000", "INTERVAL SECOND(6) NOT NULL")]),
            Shifted(Column("ts"), -5000),
        ),
        (
            call("+", [ref(2, "TIMESTAMP(3)"), lit("60000", "INTERVAL MINUTE NOT NULL")]),
            Shifted(Column("ts"), 60_000),
        ),
        (call("CAST", [ref(3, "TIMESTAMP_LTZ(3)")], "TIMESTAMP(3)"), CastTo(Column("lts"), "TIMESTAMP", 3)),
        (
            call("TO_TIMESTAMP_LTZ", [ref(1, "BIGINT"), lit(3, "INT NOT NULL")]),
            ToTimestampLtz(Column("ms"), 3),
        ),
        (
            call("TO_TIMESTAMP_LTZ", [ref(1, "BIGINT"), lit(0, "INT NOT NULL")]),
            ToTimestampLtz(Column("ms"), 0),
        ),
    ],
    ids=["column", "minus", "plus-minute", "cast", "ltz-ms", "ltz-s"],
)
def test_rexnode_shapes_wmviz_evaluates(rex, expected):
    assert to_expr(rex_tree(rex, FIELDS, "here"), "orders") == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("-(ts, 5000:INTERVAL SECOND)", Shifted(Column("ts"), -5000)),
        ("(ts - 5000:INTERVAL SECOND)", Shifted(Column("ts"), -5000)),
        ("CAST(lts AS TIMESTAMP(3))", CastTo(Column("lts"), "TIMESTAMP", 3)),
        ("CAST($3):TIMESTAMP(3)", CastTo(Column("lts"), "TIMESTAMP", 3)),
        ("-(TO_TIMESTAMP_LTZ(ms, 3), 1000:INTERVAL SECOND)", Shifted(ToTimestampLtz(Column("ms"), 3), -1000)),
        (
            "(CAST(ts AS TIMESTAMP_LTZ(3)) - 2000:INTERVAL SECOND)",
            Shifted(CastTo(Column("ts"), "TIMESTAMP_LTZ", 3), -2000),
        ),
    ],
)
def test_digest_spellings_wmviz_evaluates(text, expected):
    assert to_expr(parse_expression(text, {i: n for i, (n, _) in enumerate(FIELDS)}), "orders") == expected


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("CEIL(ts)", "CEIL(...)"),
        ("-(ts, 1:INTERVAL MONTH)", "-(...)"),
        ("TO_TIMESTAMP_LTZ(ms, 6)", "TO_TIMESTAMP_LTZ(...)"),
        ("CAST(ts AS VARCHAR)", "CAST(...)"),
    ],
)
def test_other_shapes_are_refused_by_name(text, named):
    with pytest.raises(UnsupportedExpression) as err:
        to_expr(parse_expression(text), "orders")
    assert str(err.value).startswith(
        f"watermark expression {named} of table orders: wmviz evaluates a column"
    )
    assert str(err.value).endswith("this one is refused, not guessed")


def test_a_pushed_down_expression_over_physical_columns_is_evaluated():
    doc = plan_doc()
    spec = next(a for a in node(doc, 1)["scanTableSource"]["abilities"] if a["type"] == "WatermarkPushDown")
    spec["producedType"] = "ROW<`id` BIGINT, `amount` INT, `ms` BIGINT> NOT NULL"
    spec["watermarkExpr"] = call(
        "-",
        [
            call("TO_TIMESTAMP_LTZ", [ref(2, "BIGINT"), lit(3, "INT NOT NULL")]),
            lit("1000", "INTERVAL SECOND(6)"),
        ],
    )
    orders = read_compile_plan(doc).sources[0]
    assert orders.expression == Shifted(ToTimestampLtz(Column("ms"), 3), -1000)
    assert dict(orders.column_kinds) == {"ms": "NUMBER"}
    assert orders.expression_text == "TO_TIMESTAMP_LTZ(ms, 3) - INTERVAL '1' SECOND"
    assert evaluate(orders.expression, {"ms": 12_000}, orders.column_kinds, "UTC") == 11_000


def test_a_refused_expression_is_a_finding_and_the_plan_still_reads():
    doc = plan_doc()
    spec = next(a for a in node(doc, 1)["scanTableSource"]["abilities"] if a["type"] == "WatermarkPushDown")
    spec["watermarkExpr"] = call("CEIL", [ref(2, "TIMESTAMP(3)")])
    job = read_compile_plan(doc)
    assert job.sources[0].expression is None and job.sources[0].expression_text == "CEIL(ts)"
    found = [f for f in lint(job) if f.code == "expression-refused"]
    assert len(found) == 1 and "CEIL(...) of table orders" in found[0].message
