"""`wmviz.sql.planner`: .sql scripts compiled by the real Flink 2.3.0 planner.

The fixtures of tests/data/sql are planned again (all in one JVM) and must equal their committed
plans; what the plans say about each watermark is checked against the scripts; bad scripts give
errors at their line and column; without Java the planner says what to install.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import require_flink
from tools.flink.sql.regen_fixtures import DATA, PLANNED, REFUSED
from wmviz.sql import jars
from wmviz.sql.load import job_from_compiled
from wmviz.sql.planner import (
    CompiledScript,
    PlannerUnavailable,
    SqlScriptError,
    compile_script,
    compile_scripts,
)

pytestmark = pytest.mark.flink


def _require_planner() -> None:
    require_flink("Flink {version}'s SQL planner", "the SQL planner tests", jars.sql_unavailable_reason)


@pytest.fixture(scope="module")
def planned() -> dict[str, CompiledScript | SqlScriptError]:
    """Every fixture script planned once, in one JVM."""
    _require_planner()
    names = (*PLANNED, *REFUSED)
    return dict(zip(names, compile_scripts([DATA / f"{n}.sql" for n in names])))


def _compiled(planned, name: str) -> CompiledScript:
    result = planned[name]
    assert isinstance(result, CompiledScript), f"{name}: {result}"
    return result


def _nodes(compiled: CompiledScript) -> list[dict]:
    return json.loads(compiled.plan_json)["nodes"]


def _scan(compiled: CompiledScript, table: str) -> dict:
    for node in _nodes(compiled):
        if "scanTableSource" in node and node["scanTableSource"]["table"]["identifier"].endswith(
            f"`{table}`"
        ):
            return node
    raise AssertionError(f"no scan of {table}")


def _consumers(compiled: CompiledScript, node_id: int) -> list[dict]:
    """The nodes fed by `node_id` (through the plan's edges)."""
    plan = json.loads(compiled.plan_json)
    by_id = {n["id"]: n for n in plan["nodes"]}
    return [by_id[e["target"]] for e in plan["edges"] if e["source"] == node_id]


def _pushdown(scan: dict) -> dict | None:
    return next(
        (a for a in scan["scanTableSource"].get("abilities", []) if a["type"] == "WatermarkPushDown"), None
    )


@pytest.mark.parametrize("name", PLANNED)
def test_fixture_plans_again_to_what_is_committed(planned, name):
    compiled = _compiled(planned, name)
    assert compiled.plan_json.rstrip("\n") == (DATA / f"{name}.plan.json").read_text().rstrip("\n")
    assert compiled.explain.rstrip("\n") == (DATA / f"{name}.explain.txt").read_text().rstrip("\n")


def test_kafka_pushes_down_and_filesystem_gets_an_assigner(planned):
    compiled = _compiled(planned, "orders_payments_window")
    orders, payments, refunds = (_scan(compiled, t) for t in ("orders", "payments", "refunds"))
    assert _pushdown(orders)["watermarkParams"]["emitStrategy"] == "ON_EVENT"
    # The table's own idle timeout travels in watermarkParams; idleTimeoutMillis is the session's
    # table.exec.source.idle-timeout (-1: unset), which applies only where the table sets none.
    assert _pushdown(orders)["watermarkParams"]["sourceIdleTimeout"] == 30_000
    assert _pushdown(orders)["idleTimeoutMillis"] == -1
    assert _pushdown(payments) is not None and _pushdown(refunds) is None
    assert [n["type"] for n in _consumers(compiled, refunds["id"])] == ["stream-exec-watermark-assigner_1"]
    assert all("watermark-assigner" not in n["type"] for n in _consumers(compiled, orders["id"]))
    by_name = {t.name: t for t in compiled.tables}
    assert by_name["orders"].pushes_down_watermark and by_name["orders"].stand_in
    assert by_name["refunds"].pushes_down_watermark is False and by_name["refunds"].connector == "filesystem"
    assert by_name["orders"].watermark.expression == "`ts` - INTERVAL '5' SECOND"
    # The plan names the user's connectors, never the stand-in.
    assert "wmviz" not in compiled.plan_json
    options = orders["scanTableSource"]["table"]["resolvedTable"]["options"]
    assert options["connector"] == "kafka" and options["scan.watermark.emit.strategy"] == "on-event"


def test_alignment_reaches_the_pushed_down_source(planned):
    compiled = _compiled(planned, "alignment_group")
    params = _pushdown(_scan(compiled, "clicks"))["watermarkParams"]
    assert params["alignGroupName"] == "g1" and params["alignMaxDrift"] == "PT10S"
    assert params["alignUpdateInterval"] == "PT1S"
    assert _pushdown(_scan(compiled, "page_views"))["watermarkParams"]["alignUpdateInterval"] == "PT1S"


def test_hint_beats_table_option_beats_global_option(planned):
    compiled = _compiled(planned, "hint_precedence")
    (hint,) = compiled.hints
    assert (hint.table, hint.line, hint.options) == ("sensors_c", 50, {"scan.watermark.idle-timeout": "1 s"})
    # Where each value came from is said once, by the plan reader (`wmviz.sql.sources`), from what
    # the planner returned: hint > table option > global option.
    job = job_from_compiled(compiled)
    origins = {s.table: s.idle_timeout_ms for s in job.sources}
    assert [(origins[t].value, origins[t].origin.value) for t in ("sensors_a", "sensors_b", "sensors_c")] == [
        (20_000, "table option"),
        (5_000, "global option"),
        (1_000, "hint"),
    ]
    # ... and the planner agrees: each scan's pushed-down (table or hint, session) idle timeouts.
    pushed = {t: _pushdown(_scan(compiled, t)) for t in ("sensors_a", "sensors_b", "sensors_c")}
    idle = {t: (p["watermarkParams"]["sourceIdleTimeout"], p["idleTimeoutMillis"]) for t, p in pushed.items()}
    assert idle == {"sensors_a": (20_000, 5_000), "sensors_b": (-1, 5_000), "sensors_c": (1_000, 5_000)}
    assert compiled.defaults["table.exec.source.idle-timeout"] == 0
    assert compiled.session["table.exec.source.idle-timeout"] == 5_000


def test_ltz_rowtime_and_time_zone(planned):
    compiled = _compiled(planned, "ltz_rowtime")
    (events, _hourly) = compiled.tables
    ts = next(c for c in events.columns if c.name == "ts")
    assert ts.kind == "computed" and ts.expression == "`TO_TIMESTAMP_LTZ`(`epoch_ms`, 3)"
    assert ts.type.startswith("TIMESTAMP_LTZ(3)") or ts.type.startswith("TIMESTAMP(3) WITH LOCAL TIME ZONE")
    assert [(s.key, s.value, s.line) for s in compiled.config] == [
        ("table.local-time-zone", "Europe/Berlin", 3)
    ]
    assert compiled.session["table.local-time-zone"] == "Europe/Berlin"


def test_filesystem_options_are_kept_but_the_assigner_ignores_them(planned):
    compiled = _compiled(planned, "filesystem_assigner")
    scan = _scan(compiled, "logs")
    assert _pushdown(scan) is None
    assert (
        scan["scanTableSource"]["table"]["resolvedTable"]["options"]["scan.watermark.idle-timeout"] == "1 min"
    )
    (assigner,) = [n for n in _nodes(compiled) if n["type"].startswith("stream-exec-watermark-assigner")]
    # The assigner node carries no idle timeout: it takes the session's at run time.
    assert "idle" not in json.dumps(assigner).lower()
    assert compiled.session["table.exec.source.idle-timeout"] == 15_000


def test_minibatch_assigner_in_rowtime_mode(planned):
    compiled = _compiled(planned, "minibatch")
    modes = sorted(
        n["miniBatchInterval"]["mode"]
        for n in _nodes(compiled)
        if "miniBatchInterval" in n and n["type"].startswith("stream-exec-mini-batch-assigner")
    )
    assert modes == ["ProcTime", "RowTime"]


def test_source_watermark_is_pushed_down_as_an_expression_into_kafka(planned):
    """Flink 2.3.0 wins over the issue's expectation: the planner does not refuse SOURCE_WATERMARK()
    on a source without SupportsSourceWatermark when the source takes push-down (Kafka); it pushes
    the call down as the watermark expression, and only the running job fails."""
    compiled = _compiled(planned, "source_watermark")
    orders = compiled.table("orders")
    assert (orders.pushes_down_watermark, orders.supports_source_watermark) == (True, False)
    scan = _scan(compiled, "orders")
    abilities = [a["type"] for a in scan["scanTableSource"]["abilities"]]
    assert "SourceWatermark" not in abilities and "WatermarkPushDown" in abilities
    assert "watermark=[SOURCE_WATERMARK()]" in compiled.explain


BAD = {
    # A parse error in the third statement, after a comment holding a semicolon: script position.
    "parse.sql": (
        "-- first; not a statement\nSET 'a' = 'b';\nCREATE TABLE t (x INT) WITH ('connector' = 'kafka');\n"
        "INSERT INTO t\n  SELEC x FROM t;\n",
        (5, 3),
    ),
    # A validation error on line 2 of a statement that starts mid-line: the column is the script's.
    "validate.sql": (
        "CREATE TABLE t (x INT) WITH ('connector' = 'kafka'); INSERT INTO t\nSELECT nope FROM t;\n",
        (2, 8),
    ),
    # A tab counts as one column, as Flink's parser counts it.
    "tab.sql": (
        "CREATE TABLE t (x INT) WITH ('connector' = 'kafka');\n\tINSERT INTO t SELECT y FROM t;\n",
        (2, 23),
    ),
    "no_insert.sql": ("CREATE TABLE t (x INT) WITH ('connector' = 'kafka');\n", (2, 1)),
    "select_only.sql": ("CREATE TABLE t (x INT) WITH ('connector' = 'kafka');\nSELECT x FROM t;\n", (2, 1)),
}


def test_errors_name_the_script_line_and_column(tmp_path):
    _require_planner()
    paths = []
    for name, (text, _at) in BAD.items():
        (tmp_path / name).write_text(text)
        paths.append(tmp_path / name)
    results = compile_scripts(paths)
    for path, result in zip(paths, results):
        assert isinstance(result, SqlScriptError), f"{path.name} planned"
        assert (result.file, (result.line, result.column)) == (path, BAD[path.name][1]), result
        assert str(result).startswith(f"{path}:{result.line}:{result.column}: ")
    assert "nope" in results[1].message and "line" not in results[1].message


def test_unknown_connector_plans_with_no_ability(tmp_path):
    _require_planner()
    script = tmp_path / "pulsar.sql"
    script.write_text(
        "CREATE TABLE p (x INT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts) WITH ('connector' = 'pulsar');\n"
        "CREATE TABLE out_t (x INT) WITH ('connector' = 'blackhole');\n"
        "INSERT INTO out_t SELECT x FROM p;\n"
    )
    compiled = compile_script(script)
    pulsar, blackhole = compiled.tables
    assert (pulsar.stand_in, pulsar.known_connector, pulsar.pushes_down_watermark) == (True, False, False)
    # blackhole ships with Flink: it is planned for real, and it cannot be read.
    assert (blackhole.stand_in, blackhole.is_source, blackhole.pushes_down_watermark) == (False, False, None)
    assert any(n["type"].startswith("stream-exec-watermark-assigner") for n in _nodes(compiled))


def test_unreadable_script_is_an_error_without_java(tmp_path):
    script = tmp_path / "latin1.sql"
    script.write_bytes(b"SET 'a' = 'b';\nSET 'c' = '\xe9';\n")
    with pytest.raises(SqlScriptError) as caught:
        compile_script(script, download=False)
    assert (caught.value.line, caught.value.column) == (2, 12)
    with pytest.raises(SqlScriptError, match="cannot read"):
        compile_script(tmp_path / "missing.sql", download=False)


def test_without_java_the_planner_says_what_to_install(tmp_path, monkeypatch):
    script = tmp_path / "ok.sql"
    script.write_text("SET 'a' = 'b';\n")
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(PlannerUnavailable, match="java and javac"):
        compile_script(script, download=False)


def test_without_the_planner_jar_the_planner_says_how_to_fetch_it(tmp_path, monkeypatch):
    if jars.java_tools() is None:
        pytest.skip("needs java on PATH to reach the jar check")
    monkeypatch.setattr(jars, "cache_dir", lambda: tmp_path / "empty")
    monkeypatch.setenv(jars.JAR_ENV, str(Path(__file__)))  # a file, so flink-dist counts as present
    script = tmp_path / "ok.sql"
    script.write_text("SET 'a' = 'b';\n")
    with pytest.raises(PlannerUnavailable, match=r"flink-table-planner-loader.*--download"):
        compile_script(script, download=False)
