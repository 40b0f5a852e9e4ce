"""`wmviz plan`: one job (two Kafka tables, one filesystem table, a window over an interval join)
read from its COMPILE PLAN, its EXPLAIN and its REST plan, each alone (docs/sql.md).

The fixtures under tests/data/sqlplan/ are hand-made in the shape of Flink's restore-test plans
(flink-table-planner's `restore-tests/stream-exec-*/*/plan/*.json`), EXPLAIN output and a
JobManager's `/jobs/:jid/plan` answer.
"""

from __future__ import annotations

import copy
import json

import pytest

from tests.support import paths
from wmviz.cli import main
from wmviz.core.sql_expr import Column, Shifted, evaluate
from wmviz.sql.describe import expr_from_json
from wmviz.sql.errors import parse_json
from wmviz.sql.explain import read_explain
from wmviz.sql.lint import lint
from wmviz.sql.load import read_plan_file, read_plan_text
from wmviz.sql.model import Origin
from wmviz.sql.plan_json import read_compile_plan
from wmviz.sql.rest_plan import read_rest_plan

DATA = paths.DATA / "sqlplan"
PLAN = DATA / "orders-payments-refunds.plan.json"
EXPLAIN = DATA / "orders-payments-refunds.explain.txt"
REST = DATA / "orders-payments-refunds.rest-plan.json"
WHERE = {"orders": "source", "payments": "source", "refunds": "assigner"}


def plan_doc() -> dict:
    return json.loads(PLAN.read_text())


@pytest.mark.parametrize("path", [PLAN, EXPLAIN, REST], ids=["compile-plan", "explain", "rest-plan"])
def test_each_input_alone_names_where_each_watermark_is_made(path, capsys):
    assert main(["plan", str(path), "--json"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1, "--json prints exactly one object"
    result = json.loads(out)
    assert {s["table"]: s["watermark"]["where"] for s in result["sources"]} == WHERE
    by_table = {s["table"]: s["watermark"] for s in result["sources"]}
    assert by_table["orders"]["expression"] == "ts - INTERVAL '5' SECOND"
    assert by_table["payments"]["expression"] == "paid_at - INTERVAL '2' SECOND"
    assert by_table["refunds"]["expression"] == "ts - INTERVAL '1' SECOND"
    assert by_table["orders"]["emit"] == "on-event" and by_table["payments"]["emit"] == "on-periodic"
    assert by_table["refunds"]["emit"] is None  # the assigner has no emit strategy of its own
    assert (by_table["orders"]["idle_timeout_ms"], by_table["payments"]["idle_timeout_ms"]) == (
        30_000,
        60_000,
    )
    for source in result["sources"]:
        assert set(source) >= {"table", "watermark"}
        assert set(source["watermark"]) >= {"where", "expression", "emit", "idle_timeout_ms"}
    assert all(set(item) == {"code", "message"} for item in result["lint"])


def test_the_compile_plan_flags_the_filesystem_tables_ignored_options(capsys):
    assert main(["plan", str(PLAN), "--json"]) == 0
    lints = json.loads(capsys.readouterr().out)["lint"]
    ignored = [item["message"] for item in lints if item["code"] == "ignored-watermark-option"]
    assert len(ignored) == 1
    assert ignored[0].startswith("table refunds: 'scan.watermark.idle-timeout' = '10 s'")
    assert "'scan.watermark.emit.strategy' = 'on-event'" in ignored[0]
    assert "the filesystem connector does not take the watermark" in ignored[0]


@pytest.mark.parametrize("path", [EXPLAIN, REST], ids=["explain", "rest-plan"])
def test_without_options_the_assigner_table_is_flagged_as_unseen(path, capsys):
    assert main(["plan", str(path), "--json"]) == 0
    codes = {(i["code"], i["message"].split(":")[0]) for i in json.loads(capsys.readouterr().out)["lint"]}
    assert ("unseen-watermark-options", "table refunds") in codes


def test_the_three_inputs_evaluate_the_same_watermark():
    jobs = [
        read_compile_plan(parse_json(PLAN.read_text())),
        read_explain(EXPLAIN.read_text()),
        read_rest_plan(parse_json(REST.read_text())),
    ]
    for job in jobs:
        orders = next(s for s in job.sources if s.table == "orders")
        assert orders.expression == Shifted(Column("ts"), -5000)
        assert evaluate(orders.expression, {"ts": 11_999}, {"ts": "TIMESTAMP"}, "UTC") == 6_999


def test_compile_plan_edges_keep_input_order_and_the_join_and_window():
    job = read_compile_plan(plan_doc())
    join = next(n for n in job.nodes if n.name == "IntervalJoin")
    assert [(e.source, e.input) for e in job.inputs_of(join.id)] == [("2", 0), ("4", 1)]
    assert join.join_bounds is not None and (
        join.join_bounds.left_lower_ms,
        join.join_bounds.left_upper_ms,
    ) == (
        -600_000,
        0,
    )
    window = next(n for n in job.nodes if n.name == "WindowAggregate").window
    assert window is not None and (window.kind, window.time_column, window.size_ms) == (
        "TUMBLE",
        "ts",
        60_000,
    )
    assert window.rowtime is True and window.time_kind == "TIMESTAMP"


def test_swapping_the_edges_into_the_join_swaps_left_and_right():
    doc = plan_doc()
    edges = doc["edges"]
    left = next(i for i, e in enumerate(edges) if (e["source"], e["target"]) == (2, 5))
    right = next(i for i, e in enumerate(edges) if (e["source"], e["target"]) == (4, 5))
    edges[left], edges[right] = edges[right], edges[left]
    job = read_compile_plan(doc)
    assert [e.source for e in job.inputs_of("5")] == ["4", "2"]


def test_explain_reads_left_then_right_and_the_rest_plan_says_order_is_unknown():
    explain = read_explain(EXPLAIN.read_text())
    join = next(n for n in explain.nodes if n.name == "IntervalJoin")
    feeding = [explain.node(e.source) for e in explain.inputs_of(join.id)]
    assert [explain.node(explain.inputs_of(n.id)[0].source).table for n in feeding] == ["orders", "payments"]
    assert explain.input_order_known
    rest = read_rest_plan(parse_json(REST.read_text()))
    assert not rest.input_order_known
    assert {s.table: s.parallelism for s in rest.sources} == {"orders": 2, "payments": 2, "refunds": 2}


def test_a_jobs_answer_carries_the_plan_under_plan(tmp_path):
    answer = {
        "jid": "x",
        "name": "job",
        "state": "RUNNING",
        "vertices": [],
        "plan": json.loads(REST.read_text()),
    }
    path = tmp_path / "job.json"
    path.write_text(json.dumps(answer))
    assert {s.table: s.where for s in read_plan_file(path).sources} == WHERE


def test_compile_plan_origins_where_options_are_merged_with_hints():
    job = read_compile_plan(plan_doc())
    orders, payments, refunds = job.sources
    assert (orders.emit.value, orders.emit.origin) == ("on-event", Origin.HINT_OR_TABLE)
    assert (orders.idle_timeout_ms.value, orders.idle_timeout_ms.origin) == (30_000, Origin.GLOBAL)
    assert (payments.emit.value, payments.emit.origin) == ("on-periodic", Origin.DEFAULT)
    assert (payments.idle_timeout_ms.value, payments.idle_timeout_ms.origin) == (60_000, Origin.HINT_OR_TABLE)
    assert payments.alignment is not None and payments.alignment.enabled
    assert payments.alignment.update_interval_ms.origin is Origin.DEFAULT
    assert refunds.idle_timeout_ms.origin is Origin.GLOBAL  # the assigner reads only the global option


def test_without_options_in_the_plan_the_values_come_from_the_plan():
    doc = plan_doc()
    for node in doc["nodes"]:
        table = node.get("scanTableSource", {}).get("table", {})
        table.get("resolvedTable", {}).pop("options", None)
    orders, payments, _ = read_compile_plan(doc).sources
    assert (orders.emit.value, orders.emit.origin) == ("on-event", Origin.PLAN)
    assert (payments.idle_timeout_ms.value, payments.idle_timeout_ms.origin) == (60_000, Origin.PLAN)
    assert orders.connector.value is None and not orders.options_known


def test_a_temporary_table_is_its_identifier_alone():
    doc = plan_doc()
    doc["nodes"][9]["scanTableSource"]["table"].pop("resolvedTable")
    job = read_compile_plan(doc)
    refunds = next(s for s in job.sources if s.table == "refunds")
    assert refunds.where == "assigner" and refunds.rowtime == "ts"  # from the assigner's own fields


def test_the_out_file_is_a_wmviz_sqljob(tmp_path, capsys):
    out = tmp_path / "job.json"
    assert main(["plan", str(PLAN), "--out", str(out)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == f"wrote {out} (wmviz-sqljob/1)"
    doc = json.loads(out.read_text())
    assert doc["format"] == "wmviz-sqljob/1" and doc["input_order_known"] is True
    into_join = [(e["source"], e["input"]) for e in doc["edges"] if e["target"] == "5"]
    assert into_join == [("2", 0), ("4", 1)]
    join = next(n for n in doc["nodes"] if n["id"] == "5")
    assert join["event_time"] == "interval_join" and join["join_bounds"]["left_lower_ms"] == -600_000
    sources = {s["table"]: s for s in doc["sources"]}
    assert expr_from_json(sources["orders"]["expression"]) == Shifted(Column("ts"), -5000)
    assert sources["refunds"]["where"] == "assigner" and sources["refunds"]["connector"] == "filesystem"
    assert doc["local_time_zone"] == {"value": "Europe/Berlin", "from": "the plan"}


def test_the_text_names_where_and_origins(capsys):
    assert main(["plan", str(PLAN)]) == 0
    text = capsys.readouterr().out
    assert "table orders [kafka]: pushed into the source: one generator per split" in text
    assert "table refunds [filesystem]: a separate WatermarkAssigner per subtask" in text
    assert "  idle timeout 1m (hint or table option)" in text
    assert "IntervalJoin <- left 2, right 4" in text


def test_explain_hints_the_ast_prints_are_hints():
    text = EXPLAIN.read_text().replace(
        "LogicalTableScan(table=[[default_catalog, default_database, refunds]])",
        "LogicalTableScan(table=[[default_catalog, default_database, refunds]], "
        "hints=[[[OPTIONS inheritPath:[] options:{scan.watermark.idle-timeout=5 s}]]])",
    )
    job = read_plan_text(text)
    refunds = next(s for s in job.sources if s.table == "refunds")
    assert refunds.watermark_options["scan.watermark.idle-timeout"].origin is Origin.HINT
    ignored = [f for f in lint(job) if f.code == "ignored-watermark-option"]
    assert ignored and "'scan.watermark.idle-timeout' = '5 s' (hint)" in ignored[0].message


def test_a_physical_plan_alone_is_read_with_a_note():
    text = EXPLAIN.read_text()
    text = text[: text.index("== Optimized Execution Plan ==")]
    job = read_plan_text(text)
    assert {s.table: s.where for s in job.sources} == WHERE
    assert any("Optimized Physical Plan" in n for n in job.notes)


def test_a_reused_node_feeds_both_consumers():
    text = (
        "== Optimized Execution Plan ==\n"
        "WatermarkAssigner(rowtime=[ts], watermark=[(ts - 1000:INTERVAL SECOND)])(reuse_id=[1])\n"
        "+- TableSourceScan(table=[[default_catalog, default_database, t]], fields=[x, ts])\n"
        "\n"
        "Sink(table=[default_catalog.default_database.a], fields=[x])\n"
        "+- Reused(reference_id=[1])\n"
        "\n"
        "Sink(table=[default_catalog.default_database.b], fields=[x])\n"
        "+- Reused(reference_id=[1])\n"
    )
    job = read_plan_text(text)
    assert sorted(job.node(e.target).name for e in job.edges if e.source == "#1") == ["Sink(a)", "Sink(b)"]
    assert [s.where for s in job.sources] == ["assigner"]


def test_copying_a_plan_does_not_share_state():
    doc = plan_doc()
    before = copy.deepcopy(doc)
    read_compile_plan(doc)
    assert doc == before  # the reader only reads


def test_a_hint_in_a_rest_plan_scan_digest_is_a_hint():
    doc = json.loads(REST.read_text())
    vertex = doc["nodes"][4]
    vertex["description"] = vertex["description"].replace(
        "fields=[order_id, ts])",
        "fields=[order_id, ts], hints=[[[OPTIONS options:{scan.watermark.idle-timeout=5 s}]]])",
        1,
    )
    job = read_rest_plan(doc)
    refunds = next(s for s in job.sources if s.table == "refunds")
    assert refunds.watermark_options["scan.watermark.idle-timeout"].origin is Origin.HINT
    assert [f.code for f in lint(job)] == ["ignored-watermark-option"]
