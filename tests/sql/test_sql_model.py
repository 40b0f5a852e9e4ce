"""SQL's watermark rules in the core model (docs/rules.md, "SQL watermarks"): Flink 2.3.0's own
tests of these operators restated as wmviz cases (WatermarkAssignerOperatorTest,
RowTimeMiniBatchAssginerOperatorTest, WatermarkGeneratorCodeGenTest in apache/flink), the pushed-down
generator inside the split readers, the config's rules and the narration. The differential test
against the released operators is tests/flink/test_sql_model_flink.py."""

from __future__ import annotations

import pytest

from wmviz.core.pipeline import InstancePipeline
from wmviz.core.scenario import GeneratorConfig, Kind, ScenarioConfig, Trace, TraceRow, WindowConfig
from wmviz.core.simulate import simulate
from wmviz.core.sql_assigner import WatermarkAssigner, assigner_timer_interval_ms
from wmviz.core.sql_expr import CastTo, Column, Shifted, evaluate, expr_from_json, expr_to_json
from wmviz.core.sql_generator import SqlSourceGenerator
from wmviz.core.sql_minibatch import MiniBatchAssigner
from wmviz.core.story import explain_line
from wmviz.core.types import MAX_MS, MIN_MS, Profile, Status, StatusInput, WatermarkInput
from wmviz.trace.config import parse_config
from wmviz.trace.config_write import config_to_dict
from wmviz.trace.errors import TraceValidationError

TS_MINUS_1 = Shifted(Column("ts"), -1)


def _rows(*spec: tuple) -> list[TraceRow]:
    """("R", proc, ts) records, ("P", proc) clock moves, ("W", proc, ms) upstream watermarks."""
    rows = []
    for i, item in enumerate(spec):
        if item[0] == "R":
            rows.append(TraceRow(i + 1, Kind.RECORD, channel=0, event_ms=item[2], proc_ms=item[1]))
        elif item[0] == "W":
            rows.append(TraceRow(i + 1, Kind.WATERMARK, channel=0, watermark_ms=item[2], proc_ms=item[1]))
        else:
            rows.append(TraceRow(i + 1, Kind.PROCTIME, proc_ms=item[1]))
    return rows


def _generated(config: ScenarioConfig, rows: list[TraceRow]) -> list[list[str]]:
    """Per row, what the channel's generator gave the valve: `W<ms>` or `IDLE` / `ACTIVE`."""
    pipeline = InstancePipeline("0", config, Profile.FLINK_1X_2X, {"0": 1}, set())
    out = []
    for row in rows:
        pipeline.run_row(row, explain=False)
        out.append(
            [
                f"W{inp.watermark_ms}" if isinstance(inp, WatermarkInput) else inp.status.value
                for _, inp, generated, *_ in pipeline.step_valve
                if generated and isinstance(inp, WatermarkInput | StatusInput)
            ]
        )
    return out


def _assigner(interval: int, idle: int | None, expression=TS_MINUS_1) -> ScenarioConfig:
    generator = GeneratorConfig(
        style="sql-assigner", interval_ms=interval, idle_timeout_ms=idle, expression=expression
    )
    return ScenarioConfig(channels={"0": 1}, generator=generator)


# ---- WatermarkAssignerOperatorTest, restated ------------------------------------------------------


def test_assigner_with_an_idle_source():
    """Flink's testWatermarkAssignerWithIdleSource: interval 50 ms, idle timeout 1 s, `ts - 1`. The
    upstream watermark 2 is ignored; the timer emits 3; a quiet second later IDLE; the next row
    ACTIVE; the timer then emits 7. Flink's test jumps its clock (0 → 51 → 1001), so one late timer
    sees the whole second at once; in a running job the timer fires at its own times (every 50 ms
    from the open at 0), the quiet spell starts at the timer at 50 and IDLE comes at 1050."""
    rows = _rows(("R", 0, 1), ("R", 0, 2), ("W", 0, 2), ("R", 0, 3), ("R", 0, 4), ("P", 51))
    rows += _rows(("P", 1049), ("P", 1050), ("R", 1050, 4), ("R", 1050, 8), ("P", 1100))
    got = _generated(_assigner(50, 1000), rows)
    assert got == [[], [], [], [], [], ["W3"], [], ["IDLE"], ["ACTIVE"], [], ["W7"]]


def test_assigner_forwards_only_the_end_of_input():
    """Flink's testWatermarkAssignerOperator: upstream watermarks are ignored, MAX passes."""
    rows = _rows(("R", 0, 1), ("W", 0, 2), ("R", 0, 4), ("P", 50), ("W", 60, MAX_MS), ("W", 70, MAX_MS))
    assert _generated(_assigner(50, None), rows) == [[], [], [], ["W3"], [f"W{MAX_MS}"], []]


def test_customized_generator_eager_and_periodic_emission():
    """Flink's testCustomizedWatermarkGenerator (its NULL rows left out: a trace row always has its
    event_ms): interval 5 ms, the expression is the column itself. A rise of more than 5 ms is
    emitted at once (8 after 2); smaller rises wait for the timer."""
    rows = _rows(("R", 0, 0), ("R", 0, 1), ("R", 0, 1), ("P", 5), ("R", 5, 2), ("R", 5, 1), ("R", 5, 0))
    rows += _rows(("P", 10), ("R", 10, 8), ("R", 10, 7), ("R", 10, 10), ("P", 15))
    got = _generated(_assigner(5, None, Column("ts")), rows)
    assert got == [[], [], [], ["W1"], [], [], [], ["W2"], ["W8"], [], [], ["W10"]]


def test_the_assigner_never_emits_at_or_below_zero():
    """SQL-A1: it starts at 0; rows before 1970 make no watermark (a pushed-down generator would)."""
    rows = _rows(("R", 0, -5000), ("P", 200), ("R", 300, 0), ("P", 600), ("R", 700, 1), ("P", 1000))
    assert _generated(_assigner(200, None), rows) == [[], [], [], [], [], []]
    assert _generated(_assigner(200, None, Column("ts")), rows)[-1] == ["W1"]


def test_the_timer_interval():
    """SQL-A8: one timer for both jobs."""
    assert assigner_timer_interval_ms(200, 0) == 200
    assert assigner_timer_interval_ms(0, 3000) == 3000
    assert assigner_timer_interval_ms(200, 3000) == 200  # 5 × 200 < 3000
    assert assigner_timer_interval_ms(200, 1000) == 40  # within 5×: a fifth of the smaller
    assert assigner_timer_interval_ms(2, 3) == 1


def test_upstream_status_passes_and_becomes_the_assigners_own():
    assigner = WatermarkAssigner(0, _assigner(200, 1000).generator)  # type: ignore[arg-type]
    assert assigner.upstream_status(Status.IDLE) == [StatusInput(0, Status.IDLE)]
    assert assigner.before_record() == [StatusInput(0, Status.ACTIVE)]


# ---- RowTimeMiniBatchAssginerOperatorTest, restated ----------------------------------------------


def test_minibatch_forwards_the_watermarks_that_cross_a_boundary():
    """Flink's testRowTimeWatermarkAssigner: interval 5; 4, 10, 15, 19 pass, 21 at the end."""
    batch = MiniBatchAssigner(5)
    passed = [w for w in (2, 3, 4, 5, 6, 10, 12, 15, 16, 19, 20, 21) if batch.on_watermark(w) is not None]
    assert passed == [4, 10, 15, 19]
    assert batch.finish() == 21


def test_minibatch_forwards_the_end_of_input():
    """Flink's testEndWatermarkIsForwarded: interval 50; 2 is held, MAX passes."""
    batch = MiniBatchAssigner(50)
    assert [batch.on_watermark(2), batch.on_watermark(MAX_MS)] == [None, MAX_MS]


def test_minibatch_after_a_generator_in_the_pipeline():
    """`minibatch_interval_ms`: the channel's watermarks pass the mini-batch assigner first."""
    generator = GeneratorConfig(out_of_orderness_ms=0, minibatch_interval_ms=10)
    rows = _rows(("R", 0, 5), ("R", 0, 10), ("R", 0, 12), ("R", 0, 25))
    assert _generated(ScenarioConfig(generator=generator), rows) == [[], ["W9"], [], ["W24"]]


# ---- WatermarkGeneratorCodeGenTest, restated; the pushed-down generator -------------------------


@pytest.mark.parametrize(
    ("shift", "expected"),
    [(-1, [999, 2999, 4999, 3999, 5999]), (-5000, [-4000, -2000, 0, -1000, 1000])],
)
def test_generated_expression_values(shift, expected):
    """Flink's testAscendingWatermark (`ts - INTERVAL '0.001' SECOND`) and
    testBoundedOutOfOrderWatermark (`ts - INTERVAL '5' SECOND`), their NULL row left out."""
    expr = Shifted(Column("ts"), shift)
    values = [evaluate(expr, {"ts": ts}, {"ts": "TIMESTAMP"}, "UTC") for ts in (1000, 3000, 5000, 4000, 6000)]
    assert values == expected


def test_pushed_down_generator_is_max_of_the_expression_without_minus_one():
    """A real Flink 2.3.0 SQL run: `ts - INTERVAL '2' SECOND`, a row at 11.999 s fires [0, 10 s)."""
    generator = GeneratorConfig.flip27(
        style="sql-source", emit="on-event", expression=Shifted(Column("ts"), -2000)
    )
    config = ScenarioConfig(generator=generator, operator=WindowConfig(size_ms=10_000, aggregate="count"))
    rows = _rows(("R", 0, 5000), ("R", 10, 11_999), ("R", 20, 11_000), ("R", 30, 12_000))
    assert _generated(config, rows) == [["W3000"], ["W9999"], [], ["W10000"]]
    source = SqlSourceGenerator(0, generator)
    assert source.candidate_watermark_ms() == MIN_MS  # SQL-G2: the first periodic emission offers MIN


def test_on_periodic_sends_the_maximum_at_the_interval():
    generator = GeneratorConfig(
        **{**GeneratorConfig.presets["sql-source"], "expression": Shifted(Column("ts"), -2000)}
    )
    rows = _rows(("R", 0, 5000), ("R", 10, 9000), ("P", 200), ("R", 250, 8000), ("P", 400))
    assert _generated(ScenarioConfig(generator=generator), rows) == [[], [], ["W7000"], [], []]


def test_on_event_splits_take_the_minimum_and_a_row_that_does_not_raise_writes_nothing():
    """Per split SQL's generator; the reader sends the minimum over splits. On-event, a row whose
    expression does not raise its split's watermark writes nothing (SQL-G3)."""
    generator = GeneratorConfig.flip27(
        style="sql-source",
        emit="on-event",
        expression=Shifted(Column("ts"), -1000),
        splits=((0, ("p0", "p1")),),
    )
    rows = [
        TraceRow(1, Kind.RECORD, channel=0, event_ms=5000, proc_ms=0, payload=(("split", "p0"),)),
        TraceRow(2, Kind.RECORD, channel=0, event_ms=3000, proc_ms=0, payload=(("split", "p1"),)),
        TraceRow(3, Kind.RECORD, channel=0, event_ms=2000, proc_ms=0, payload=(("split", "p1"),)),
        TraceRow(4, Kind.RECORD, channel=0, event_ms=9000, proc_ms=0, payload=(("split", "p1"),)),
    ]
    assert _generated(ScenarioConfig(generator=generator), rows) == [[], ["W2000"], [], ["W4000"]]


def test_ltz_casts_use_the_zone():
    expr = CastTo(Column("ts"), "TIMESTAMP_LTZ")
    # 2026-07-01 12:00 read in Berlin (UTC+2) is 10:00 UTC.
    local = 1_782_907_200_000
    assert evaluate(expr, {"ts": local}, {"ts": "TIMESTAMP"}, "Europe/Berlin") == local - 7_200_000


# ---- the config ----------------------------------------------------------------------------------


def test_the_expression_spelling_round_trips():
    spelled = {"shift_ms": -5000, "of": {"cast": "TIMESTAMP_LTZ", "precision": 3, "of": "ts"}}
    assert expr_to_json(expr_from_json(spelled)) == spelled
    config = parse_config({"generator": {"preset": "sql-source", "expression": spelled}}, "c.json")
    assert parse_config(config_to_dict(config), "again.json") == config


@pytest.mark.parametrize(
    ("generator", "message"),
    [
        ({"style": "sql-assigner"}, "field generator.expression: required for style sql-assigner"),
        (
            {"preset": "sql-source", "emit": "per-record", "expression": "ts"},
            "per-record is not for style sql-source",
        ),
        ({"preset": "sql-source", "expression": "ts", "zone": "Mars/Base"}, "'Mars/Base' is not a time zone"),
        (
            {"preset": "sql-source", "expression": {"shift_ms": "5 s", "of": "ts"}},
            "is not an integer of milliseconds",
        ),
        ({"preset": "sql-source", "expression": {"minus": 5, "of": "ts"}}, "needs exactly one of shift_ms"),
        ({"preset": "sql-source", "expression": "ts", "column_type": "number"}, "gives a number"),
        ({"expression": "ts"}, "only a SQL style (sql-source, sql-assigner) reads it, not datastream"),
        (
            {
                "preset": "sql-assigner",
                "expression": "ts",
                "splits": {"0": ["a"]},
                "resume": "flip27-released",
            },
            "sees its subtask's rows merged",
        ),
    ],
)
def test_bad_sql_configs_are_named(generator, message):
    with pytest.raises(TraceValidationError) as caught:
        parse_config({"generator": generator}, "c.json")
    assert message in str(caught.value)


# ---- the narration -------------------------------------------------------------------------------


def test_the_narration_says_the_sql_steps():
    source = GeneratorConfig.flip27(
        style="sql-source", emit="on-event", expression=Shifted(Column("ts"), -5000)
    )
    rows = _rows(("R", 0, 15_000))
    results = list(simulate(Trace("t", tuple(rows), ScenarioConfig(generator=source), {("0", "0"): 1})))
    assert "SQL source generator ch0: max(ts − 5 s) = 10000 (no −1, on-event)" in explain_line(results[0])
    rows = _rows(("R", 0, 5000), ("R", 0, 5150))
    results = list(simulate(Trace("t", tuple(rows), _assigner(200, None, Column("ts")), {("0", "0"): 1})))
    assert (
        "WatermarkAssigner ch0 held the candidate: max(ts) = 5150 rose 150 ms, "
        "not more than the 200 ms interval" in explain_line(results[1])
    )


# ---- one generator per input ---------------------------------------------------------------------


def test_a_join_of_two_tables_has_a_generator_config_per_input():
    """L: a Kafka table (pushed down, on-event, ts − 5 s); R: a filesystem table (a separate
    assigner, ts − 2 s, 200 ms interval). Each input's channel gets its own kind of generator."""
    obj = {
        "channels": {"L": 1, "R": 1},
        "generator": {
            "preset": "sql-source",
            "emit": "on-event",
            "expression": {"shift_ms": -5000, "of": "ts"},
        },
        "generators": {"r": {"preset": "sql-assigner", "expression": {"shift_ms": -2000, "of": "ts"}}},
        "operator": {"type": "interval_join", "lower_ms": -10_000, "upper_ms": 0},
    }
    config = parse_config(obj, "c.json")
    assert set(config.generators) == {"R"} and parse_config(config_to_dict(config), "again.json") == config
    pipeline = InstancePipeline("0", config, Profile.FLINK_1X_2X, {"L": 1, "R": 1}, set())
    assert isinstance(pipeline.generators[("L", 0)], SqlSourceGenerator)
    assert isinstance(pipeline.generators[("R", 0)], WatermarkAssigner)
    emitted = []
    for i, (side, proc, ts) in enumerate(
        (("L", 0, 10_000), ("R", 0, 10_100), ("R", 150, 10_250), ("L", 210, 9000))
    ):
        pipeline.run_row(
            TraceRow(i + 1, Kind.RECORD, input=side, channel=0, event_ms=ts, proc_ms=proc), explain=False
        )
        emitted.append([(name, str(inp)) for name, inp, generated, *_ in pipeline.step_valve if generated])
    # L: max(ts − 5 s) at once; R: 8100 eagerly (above 0 by more than 200 ms), then 8250 held
    # (150 ms) until the assigner's timer at 200.
    assert emitted == [
        [("L", "WatermarkInput(channel=0, watermark_ms=5000)")],
        [("R", "WatermarkInput(channel=0, watermark_ms=8100)")],
        [],
        [("R", "WatermarkInput(channel=0, watermark_ms=8250)")],
    ]


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        ({"generators": {"0": {}}}, "field generators: needs generator"),
        ({"generator": {}, "generators": {"R": {}}}, "input R is no input of operator type none"),
        (
            {"generator": {}, "generators": {"0": {"emit": "on-event"}}},
            "on-event is not for style datastream",
        ),
    ],
)
def test_bad_per_input_generators_are_named(obj, message):
    with pytest.raises(TraceValidationError) as caught:
        parse_config(obj, "c.json")
    assert message in str(caught.value)


def test_the_transcript_says_the_sql_steps_in_words():
    from wmviz.timeline.transcript import transcript_record

    preset = GeneratorConfig.presets["sql-assigner"]
    batch = GeneratorConfig(**{**preset, "expression": Column("ts")}, minibatch_interval_ms=1000)
    rows = _rows(("R", 0, 5000), ("R", 0, 5150), ("R", 0, 5400))
    results = list(simulate(Trace("t", tuple(rows), ScenarioConfig(generator=batch), {("0", "0"): 1})))
    said = [transcript_record(r).get("sql") for r in results]
    eager = "above its last watermark, more than the 200 ms interval → emitted at once"
    assert said[0] == [f"WatermarkAssigner ch0: max(ts) = 5000, 5000 ms {eager}"]
    assert said[2] == [
        f"WatermarkAssigner ch0: max(ts) = 5400, 400 ms {eager}",
        "mini-batch assigner ch0 holds W5400: below its next boundary 5999",
    ]


def test_a_split_generators_narration_names_its_subtask_and_split():
    generator = GeneratorConfig.flip27(
        style="sql-source", emit="on-event", expression=Column("ts"), splits=((0, ("p0", "p1")),)
    )
    rows = [
        TraceRow(1, Kind.RECORD, channel=0, event_ms=5000, proc_ms=0, payload=(("split", "p1"),)),
    ]
    results = list(simulate(Trace("t", tuple(rows), ScenarioConfig(generator=generator), {("0", "0"): 1})))
    assert "SQL source generator ch0 split p1: max(ts) = 5000" in explain_line(results[0])
