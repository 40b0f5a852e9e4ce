"""Bad plans get one line naming the file and the position, exit 2, never a traceback; a `.sql`
script goes through the planner's `compile_script` contract (a `CompiledScript`-shaped object
built from a plan fixture stands in for the planner, which another room is writing)."""

from __future__ import annotations

import copy
import json
import random
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.support import paths
from wmviz.cli import main
from wmviz.core.sql_expr import UnsupportedExpression
from wmviz.sql import describe, errors, sources
from wmviz.sql.lint import lint
from wmviz.sql.load import job_from_compiled, read_plan_text
from wmviz.sql.model import Origin

PLAN = paths.DATA / "sqlplan" / "orders-payments-refunds.plan.json"
EXPLAIN = PLAN.with_name("orders-payments-refunds.explain.txt")


def run(tmp_path: Path, capsys, text: str | bytes, name: str = "plan.json") -> tuple[int, str]:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    code = main(["plan", str(path)])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return code, captured.err.strip()


def plan_doc() -> dict:
    return json.loads(PLAN.read_text())


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (
            '{"flinkVersion": "2.3", "nodes": [\n  {"id": 1,}\n]}',
            "plan.json: line 2:12: not JSON: Expecting property name",
        ),
        (
            '{"rows": [1, 2]}',
            "plan.json: line 1:1: JSON of another shape (it has 'rows'); expected a COMPILE PLAN",
        ),
        ("hello\n", "plan.json: line 1: is neither JSON"),
        (
            "== Abstract Syntax Tree ==\nLogicalSink(table=[t])\n",
            "plan.json: line 1: has no '== Optimized Execution Plan ==' section; "
            "found '== Abstract Syntax Tree ==' (line 1)",
        ),
        ("[" * 300 + "]" * 300, "plan.json: line 1:201: nested more than 200 levels deep"),
    ],
    ids=["not-json", "other-shape", "neither", "explain-without-section", "too-deep"],
)
def test_a_bad_plan_is_one_line_with_file_and_position(tmp_path, capsys, text, said):
    code, err = run(tmp_path, capsys, text)
    assert code == 2
    assert err.count("\n") == 0 and err.startswith(f"error: {tmp_path / 'plan.json'}")
    assert said in err.replace(str(tmp_path) + "/", "")


def test_a_node_missing_a_field_names_the_node_and_field(tmp_path, capsys):
    doc = plan_doc()
    del doc["nodes"][10]["watermarkExpr"]
    code, err = run(tmp_path, capsys, json.dumps(doc))
    assert code == 2 and err.endswith("plan.json: node 11: has no field 'watermarkExpr'")
    doc = plan_doc()
    doc["nodes"][2]["type"] = 7
    code, err = run(tmp_path, capsys, json.dumps(doc))
    assert err.endswith("plan.json: node 3 field 'type': is a number, not a string")
    doc = plan_doc()
    doc["edges"][0]["target"] = 99
    code, err = run(tmp_path, capsys, json.dumps(doc))
    assert err.endswith("plan.json: edges[0] field 'target': names node 99, which the plan has not")


def test_an_explain_line_out_of_the_tree_names_its_line(tmp_path, capsys):
    text = EXPLAIN.read_text().replace(
        "\n\nSink(table=[default_catalog.default_database.refund_log]", "\nSink(x)", 2
    )
    code, err = run(tmp_path, capsys, text, "plan.txt")
    assert code == 2 and "plan.txt: line " in err and "starts a second tree without a blank line" in err


def test_a_rest_plan_vertex_without_a_description(tmp_path, capsys):
    doc = json.loads(PLAN.with_name("orders-payments-refunds.rest-plan.json").read_text())
    del doc["nodes"][1]["description"]
    code, err = run(tmp_path, capsys, json.dumps(doc))
    assert code == 2 and err.endswith(
        f"nodes[1] (vertex {doc['nodes'][1]['id']}): has no 'description' (a string)"
    )


def test_not_utf8_names_the_byte(tmp_path, capsys):
    code, err = run(tmp_path, capsys, b'{"a": "\xff"}')
    assert code == 2 and err.endswith("plan.json: byte 7: is not UTF-8 text")


def test_limits_on_size_and_nodes(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("WMVIZ_MAX_PLAN_NODES", "5")
    code, err = run(tmp_path, capsys, PLAN.read_text())
    assert code == 2 and "the plan has 12 nodes, more than wmviz reads: 5 (WMVIZ_MAX_PLAN_NODES)" in err
    monkeypatch.setenv("WMVIZ_MAX_PLAN_BYTES", "100")
    code, err = run(tmp_path, capsys, PLAN.read_text())
    assert code == 2 and "more than wmviz reads as a plan: 100 (WMVIZ_MAX_PLAN_BYTES)" in err


def test_missing_file_folder_and_bad_options(tmp_path, capsys):
    assert main(["plan", str(tmp_path / "nope.json")]) == 2
    assert capsys.readouterr().err.strip().endswith("nope.json: no such file")
    assert main(["plan", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip().endswith("is a folder, not a file")
    assert main(["plan", str(PLAN), "--partitions", "orders"]) == 2
    assert "expected TABLE=N" in capsys.readouterr().err
    assert main(["plan", str(PLAN), "--partitions", "nope=3"]) == 2
    assert "the plan's source tables are orders, payments, refunds" in capsys.readouterr().err
    assert main(["plan", str(PLAN), "--out", str(PLAN)]) == 2
    assert "--out" in capsys.readouterr().err


# --- a .sql script through the planner's contract ------------------------------------------------


@dataclass(frozen=True)
class FakeTable:
    name: str
    connector: str | None
    options: dict[str, str]
    line: int = 1


@dataclass(frozen=True)
class FakeSet:
    key: str
    value: str
    line: int = 1


@dataclass(frozen=True)
class FakeHint:
    table: str
    options: dict[str, str]
    line: int = 1
    column: int = 1


@dataclass(frozen=True)
class FakeCompiled:
    plan_json: str
    tables: tuple[FakeTable, ...]
    config: tuple[FakeSet, ...] = ()
    hints: tuple[FakeHint, ...] = ()
    explain: str = ""
    extra: dict = field(default_factory=dict)


def compiled(**changes) -> FakeCompiled:
    """The plan fixture as the planner would give it for the script that wrote these tables."""
    doc = plan_doc()
    options = {
        n["scanTableSource"]["table"]["identifier"].split(".")[-1].strip("`"): dict(
            n["scanTableSource"]["table"]["resolvedTable"]["options"]
        )
        for n in doc["nodes"]
        if "scanTableSource" in n
    }
    tables = tuple(FakeTable(name, o["connector"], o) for name, o in options.items())
    base = FakeCompiled(json.dumps(doc), tables, (FakeSet("table.exec.source.idle-timeout", "30 s"),))
    return FakeCompiled(**{**base.__dict__, **changes})


def test_a_script_gives_every_value_its_exact_origin():
    job = job_from_compiled(compiled())
    orders, payments, refunds = job.sources
    assert job.input_kind == "sql"
    assert (orders.emit.value, orders.emit.origin) == ("on-event", Origin.TABLE)
    assert (orders.idle_timeout_ms.value, orders.idle_timeout_ms.origin) == (30_000, Origin.GLOBAL)
    assert (payments.idle_timeout_ms.value, payments.idle_timeout_ms.origin) == (60_000, Origin.TABLE)
    assert (payments.emit.value, payments.emit.origin) == ("on-periodic", Origin.DEFAULT)
    assert (refunds.idle_timeout_ms.value, refunds.idle_timeout_ms.origin) == (30_000, Origin.GLOBAL)
    assert refunds.watermark_options["scan.watermark.idle-timeout"].origin is Origin.TABLE
    assert job.notes == ()  # wmviz's reading of the script agrees with Flink's plan


def test_a_hint_beats_the_table_option():
    plan = plan_doc()
    scan = plan["nodes"][2]["scanTableSource"]
    scan["abilities"][0]["watermarkParams"]["sourceIdleTimeout"] = 5000
    scan["table"]["resolvedTable"]["options"]["scan.watermark.idle-timeout"] = "5 s"  # merged, as Flink does
    node = plan["nodes"][2]
    node["description"] = node["description"].replace("idletimeout=[60000]", "idletimeout=[5000]")
    hint = FakeHint("default_catalog.default_database.payments", {"scan.watermark.idle-timeout": "5 s"})
    payments = job_from_compiled(compiled(plan_json=json.dumps(plan), hints=(hint,))).sources[1]
    assert (payments.idle_timeout_ms.value, payments.idle_timeout_ms.origin) == (5000, Origin.HINT)


def test_where_wmviz_and_flink_disagree_flink_wins_and_says_so(monkeypatch):
    """A planted bug in the precedence (the global option beating the table's own) bites: the plan
    Flink's planner made disagrees, its value is kept and a note names the disagreement."""

    def planted(values, global_idle):
        return global_idle if global_idle.value else values.get(sources.IDLE)

    monkeypatch.setattr(sources, "idle_timeout", planted)
    job = job_from_compiled(compiled())
    payments = job.sources[1]
    assert payments.idle_timeout_ms.value == 60_000  # Flink's planned value kept
    assert any(n.startswith("table payments: wmviz reads idle_timeout_ms 30000") for n in job.notes)


def test_a_script_through_the_cli_uses_compile_script(tmp_path, capsys, monkeypatch):
    script = tmp_path / "job.sql"
    script.write_text("-- the fake planner ignores the text\n")
    fake = types.ModuleType("wmviz.sql.planner")
    fake.compile_script = lambda path: compiled()  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "wmviz.sql.planner", fake)
    assert main(["plan", str(script), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert {s["table"]: s["watermark"]["where"] for s in result["sources"]} == {
        "orders": "source",
        "payments": "source",
        "refunds": "assigner",
    }
    ignored = next(i for i in result["lint"] if i["code"] == "ignored-watermark-option")
    assert "'scan.watermark.idle-timeout' = '10 s' (table option)" in ignored["message"]


def test_a_script_the_planner_refuses_names_line_and_column(tmp_path, capsys, monkeypatch):
    class ScriptError(ValueError):
        def __init__(self) -> None:
            super().__init__("job.sql:7:3: The window function requires the timecol is a time attribute type")
            self.line, self.column = 7, 3
            self.message = (
                "The window function requires the timecol is a time attribute type, but is TIMESTAMP(3)."
            )

    def refuse(path):
        raise ScriptError()

    script = tmp_path / "job.sql"
    script.write_text("SELECT 1;\n")
    fake = types.ModuleType("wmviz.sql.planner")
    fake.compile_script = refuse  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "wmviz.sql.planner", fake)
    assert main(["plan", str(script)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {script}: line 7:3: the planner: ")
    assert "a regular join or aggregation before a window turns the rowtime into a plain TIMESTAMP" in err


def test_deep_digest_text_is_refused_before_it_is_read(tmp_path, capsys):
    deep = "(" * 300 + "ts" + ")" * 300
    text = EXPLAIN.read_text().replace("watermark=[(ts - 1000:INTERVAL SECOND)]", f"watermark=[{deep}]", 1)
    code, err = run(tmp_path, capsys, text, "plan.txt")
    assert code == 2 and "nested more than 200 levels deep" in err and "plan.txt: line " in err
    doc = json.loads(PLAN.with_name("orders-payments-refunds.rest-plan.json").read_text())
    doc["nodes"][0]["description"] = f"[1]:TableSourceScan(table=[[c, d, t, watermark=[{deep}]]])"
    code, err = run(tmp_path, capsys, json.dumps(doc))
    assert (
        code == 2 and "nodes[0] (vertex a1b2c3d4e5f60718293a4b5c6d7e8f90) field 'description' line 1:" in err
    )


def test_a_reused_reference_nothing_marks(tmp_path, capsys):
    text = "== Optimized Execution Plan ==\nSink(table=[d.b.a], fields=[x])\n+- Reused(reference_id=[4])\n"
    code, err = run(tmp_path, capsys, text, "plan.txt")
    assert code == 2 and err.endswith("plan.txt: line 3: reuses node [#4], which the plan does not mark")


def test_a_script_without_the_planner_or_its_java(tmp_path, capsys, monkeypatch):
    script = tmp_path / "job.sql"
    script.write_text("SELECT 1;\n")
    monkeypatch.setitem(sys.modules, "wmviz.sql.planner", None)  # import fails: not installed
    assert main(["plan", str(script)]) == 2
    assert (
        capsys.readouterr()
        .err.strip()
        .endswith("needs Flink's planner (wmviz.sql.planner), not in this wmviz")
    )

    def no_java(path):
        raise RuntimeError("Flink's SQL planner cannot run here: java not found")

    fake = types.ModuleType("wmviz.sql.planner")
    fake.compile_script = no_java  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "wmviz.sql.planner", fake)
    assert main(["plan", str(script)]) == 2
    assert (
        capsys.readouterr()
        .err.strip()
        .endswith("job.sql: cannot compile the script: Flink's SQL planner cannot run here: java not found")
    )


# --- mutated plans: read or refused, never a crash ---------------------------------------------------

JUNK: list = [None, 0, -1, 1.5, True, "x", "", [], {}, [1], {"a": 1}, "ROW<`a` INT>", {"kind": "CALL"}]


def _paths(value, prefix=()):
    yield prefix
    children = (
        value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    )
    for key, child in children:
        yield from _paths(child, (*prefix, key))


def _mutate_json(doc, rng):
    for _ in range(rng.randint(1, 3)):
        path = rng.choice([p for p in _paths(doc) if p])
        holder = doc
        for key in path[:-1]:
            holder = holder[key]
        if rng.random() < 0.3:
            del holder[path[-1]]
        else:
            holder[path[-1]] = copy.deepcopy(rng.choice(JUNK))
    return json.dumps(doc)


def _mutate_text(text, rng):
    lines = text.splitlines()
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(lines))
        cut = rng.randrange(len(lines[i]) + 1)
        lines[i] = rng.choice(
            [lines[i][:cut], lines[i][:cut] + rng.choice("()[],=:-+ $#") + lines[i][cut:], ""]
        )
    return "\n".join(lines)


@pytest.mark.parametrize(
    "name",
    ["sql/orders_payments_window.plan.json", "sql/orders_payments_window.explain.txt",
     "sql/minibatch.explain.txt", "sql/orders_payments_window.rest-job.json",
     "sqlplan/orders-payments-refunds.rest-plan.json"],
)  # fmt: skip
def test_mutated_plans_are_read_or_refused_never_crash(name):
    """200 seeded mutations of a real plan (a field deleted or given a value of another type, a
    digest line cut or given a stray character): each is read and described, or refused with a
    PlanError; nothing else escapes (which the command line would report as an internal error)."""
    text = (PLAN.parent.parent / name).read_text()
    rng = random.Random(28)
    for _ in range(200):
        mutated = _mutate_json(json.loads(text), rng) if name.endswith(".json") else _mutate_text(text, rng)
        try:
            job = read_plan_text(mutated)
        except (errors.PlanError, UnsupportedExpression):
            continue
        findings = lint(job)
        describe.lines(job, findings)
        json.dumps(describe.as_json(job, findings))
        json.dumps(describe.job_document(job))
