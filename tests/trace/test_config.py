"""The scenario config (docs/trace-format.md §2): defaults, every field, unknown keys and bad values."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path

import pytest

from wmviz.core.fieldrules import rule_of
from wmviz.core.scenario import GeneratorConfig, IntervalJoinConfig, NoOperator, ScenarioConfig, WindowConfig
from wmviz.core.types import Profile
from wmviz.trace import TraceValidationError, config_to_dict, load_config, parse_config

SPEC_EXAMPLE = {
    "name": "FLINK-38477: zero output after some sources finish",
    "description": "markdown shown in the UI",
    "profile": "flink-1.x-2.x",
    "channels": {"0": 4},
    "generator": {
        "out_of_orderness_ms": 2000,
        "emit": "per-record",
        "interval_ms": 200,
        "idle_timeout_ms": 10000,
    },
    "operator": {
        "type": "interval_join",
        "join": "left",
        "lower_ms": -5000,
        "upper_ms": 9000,
        "early_fire_delay_ms": 3000,
        "time_mode": "rowtime",
        "min_cleanup_interval_ms": 0,
    },
}


def _errors(obj: object) -> list[str]:
    with pytest.raises(TraceValidationError) as err:
        parse_config(obj, "s.json")
    return [str(issue) for issue in err.value.issues]


def test_empty_config_gives_every_default_so_a_bare_trace_runs() -> None:
    config = parse_config({}, "s.json")
    assert config == ScenarioConfig()
    assert config.profile is Profile.FLINK_1X_2X
    assert config.channels == {} and config.generator is None and isinstance(config.operator, NoOperator)


def test_spec_example_sets_every_field_and_channels_of_a_join_use_left_right_names() -> None:
    config = parse_config(SPEC_EXAMPLE, "s.json")
    assert config == ScenarioConfig(
        name="FLINK-38477: zero output after some sources finish",
        description="markdown shown in the UI",
        profile=Profile.FLINK_1X_2X,
        channels={"L": 4},
        generator=GeneratorConfig(
            out_of_orderness_ms=2000, emit="per-record", interval_ms=200, idle_timeout_ms=10000
        ),
        operator=IntervalJoinConfig(
            join="left",
            lower_ms=-5000,
            upper_ms=9000,
            early_fire_delay_ms=3000,
            time_mode="rowtime",
            min_cleanup_interval_ms=0,
        ),
    )


def test_window_operator_fields_and_case_insensitive_choices_stored_lowercase() -> None:
    obj = {
        "profile": "flip-38477",
        "generator": {"emit": "Periodic", "resume": "eager"},
        "operator": {
            "type": "Window",
            "size_ms": 5,
            "slide_ms": 2,
            "allowed_lateness_ms": 1,
            "aggregate": "SUM",
        },
    }
    config = parse_config(obj, "s.json")
    assert config.profile is Profile.FLIP_38477
    assert config.generator == GeneratorConfig(emit="periodic")
    assert config.operator == WindowConfig(size_ms=5, slide_ms=2, allowed_lateness_ms=1, aggregate="sum")


def test_join_type_is_accepted_in_any_case_and_channels_zero_and_one_map_to_left_and_right() -> None:
    obj = {
        "channels": {"0": 2, "r": 3},
        "operator": {"type": "interval_join", "join": "FULL", "lower_ms": 0, "upper_ms": 0},
    }
    config = parse_config(obj, "s.json")
    assert config.operator.join == "full"
    assert config.channels == {"L": 2, "R": 3}


def test_null_fields_mean_absent_and_take_their_defaults() -> None:
    obj = {"name": None, "generator": None, "operator": {"type": "window", "size_ms": 5, "slide_ms": None}}
    assert parse_config(obj, "s.json") == ScenarioConfig(operator=WindowConfig(size_ms=5))


def test_unknown_keys_at_every_level_are_errors_listing_the_expected_fields() -> None:
    obj = {"nmae": "x", "generator": {"ooo_ms": 1}, "operator": {"type": "window", "size_ms": 5, "sizems": 5}}
    assert _errors(obj) == [
        "s.json: field nmae: unknown field; "
        "expected one of name, description, profile, channels, generator, operator, generators",
        "s.json: field operator.sizems: unknown field; "
        "expected one of type, size_ms, slide_ms, offset_ms, session_gap_ms, allowed_lateness_ms, aggregate",
        "s.json: field generator.ooo_ms: unknown field; "
        "expected one of out_of_orderness_ms, emit, interval_ms, idle_timeout_ms, resume, splits, "
        "alignment, preset, style, expression, column_type, zone, minibatch_interval_ms",
    ]


def test_field_of_another_operator_type_is_an_error_naming_its_owner() -> None:
    assert _errors({"operator": {"type": "interval_join", "lower_ms": 0, "upper_ms": 1, "size_ms": 5}}) == [
        "s.json: field operator.size_ms: not used by operator type interval_join (it belongs to window)"
    ]
    assert _errors({"operator": {"join": "left"}}) == [
        "s.json: field operator.join: not used by operator type none (it belongs to interval_join)"
    ]


def test_every_bad_value_is_reported_at_once_with_its_field_path() -> None:
    obj = {
        "name": 5,
        "profile": "flink-3",
        "channels": {"0": 0},
        "generator": {
            "out_of_orderness_ms": -1,
            "emit": "sometimes",
            "interval_ms": 0,
            "idle_timeout_ms": "10s",
            "resume": "lazy",
        },
        "operator": {
            "type": "window",
            "size_ms": 0,
            "slide_ms": True,
            "allowed_lateness_ms": -1,
            "aggregate": "avg",
        },
    }
    assert _errors(obj) == [
        "s.json: field name: 5 is not a string",
        's.json: field profile: "flink-3" is not one of flink-1.x-2.x, flink-master, flip-38477',
        "s.json: field operator.size_ms: 0 must be positive",
        "s.json: field operator.slide_ms: true is not an integer (milliseconds)",
        "s.json: field operator.allowed_lateness_ms: -1 must be >= 0",
        's.json: field operator.aggregate: "avg" is not one of list, count, sum, min, max',
        "s.json: field channels.0: 0 is not a positive channel count",
        "s.json: field generator.out_of_orderness_ms: -1 must be >= 0",
        's.json: field generator.emit: "sometimes" is not one of per-record, periodic, on-event, on-periodic',
        "s.json: field generator.interval_ms: 0 must be positive",
        's.json: field generator.idle_timeout_ms: "10s" is not an integer (milliseconds)',
        's.json: field generator.resume: "lazy" is not one of eager, flip27-released',
    ]


def test_interval_join_values_bounds_and_hint_rules() -> None:
    obj = {
        "operator": {
            "type": "interval_join",
            "join": "outer",
            "upper_ms": 2**63,
            "early_fire_delay_ms": 0,
            "min_cleanup_interval_ms": -1,
        }
    }
    assert _errors(obj) == [
        "s.json: field operator.lower_ms: required for operator type interval_join",
        "s.json: field operator.early_fire_delay_ms: 0 must be positive",
        's.json: field operator.join: "outer" is not one of inner, left, right, full',
        "s.json: field operator.upper_ms: 9223372036854775808 "
        "is outside the signed 64-bit range of Flink's long",
        "s.json: field operator.min_cleanup_interval_ms: -1 must be >= 0",
    ]
    no_delay = {"operator": {"type": "interval_join", "lower_ms": 0, "upper_ms": 1, "time_mode": "proctime"}}
    assert _errors(no_delay) == [
        "s.json: field operator.time_mode: needs operator.early_fire_delay_ms (the EARLY_FIRE delay)"
    ]


def test_window_needs_a_size_and_an_unknown_operator_type_is_named() -> None:
    assert _errors({"operator": {"type": "window"}}) == [
        "s.json: field operator.size_ms: required for operator type window (or operator.session_gap_ms)"
    ]
    # Every operator type the config names, in the order the section declares them (one list, so
    # an operator added later needs no edit here).
    types = ", ".join(
        kind.type_name
        for kind in rule_of(next(f for f in fields(ScenarioConfig) if f.name == "operator")).sections
    )
    assert types.startswith("none, window, interval_join")
    assert _errors({"operator": {"type": "session"}}) == [
        f's.json: field operator.type: "session" is not one of {types}'
    ]


def test_session_windows_take_a_gap_and_nothing_of_a_sized_window() -> None:
    obj = {"operator": {"type": "window", "session_gap_ms": 30_000, "allowed_lateness_ms": 5}}
    config = parse_config(obj, "s.json")
    assert config.operator == WindowConfig(session_gap_ms=30_000, allowed_lateness_ms=5)
    assert parse_config(config_to_dict(config), "s.json") == config
    assert _errors({"operator": {"type": "window", "session_gap_ms": 0}}) == [
        "s.json: field operator.session_gap_ms: 0 must be positive"  # Flink: "must satisfy 0 < size"
    ]
    assert _errors({"operator": {"type": "window", "session_gap_ms": 5, "size_ms": 5, "offset_ms": 1}}) == [
        "s.json: field operator.size_ms: not used by session windows (operator.session_gap_ms)",
        "s.json: field operator.offset_ms: not used by session windows (operator.session_gap_ms)",
    ]


def test_a_window_offset_follows_flinks_constructor_rule() -> None:
    tumbling = parse_config({"operator": {"type": "window", "size_ms": 5, "offset_ms": -4}}, "s.json")
    assert tumbling.operator.offset_ms == -4
    assert parse_config(config_to_dict(tumbling), "s.json") == tumbling
    # Java's Math.abs(Long.MIN_VALUE) is negative, so Flink's "abs(offset) < size" lets MIN through.
    assert parse_config({"operator": {"type": "window", "size_ms": 5, "offset_ms": -(2**63)}}, "s.json")
    assert _errors({"operator": {"type": "window", "size_ms": 5, "offset_ms": 5}}) == [
        "s.json: field operator.offset_ms: |5| is not less than the size 5: Flink's TumblingEventTimeWindows "
        'rejects it when the job is built ("parameters must satisfy abs(offset) < size")'
    ]
    # A sliding window's offset is bounded by the slide, not the size.
    assert _errors({"operator": {"type": "window", "size_ms": 10, "slide_ms": 2, "offset_ms": -2}}) == [
        "s.json: field operator.offset_ms: |-2| is not less than the slide 2: Flink's "
        "SlidingEventTimeWindows rejects it when the job is built "
        '("parameters must satisfy abs(offset) < slide")'
    ]


def test_channels_must_name_inputs_of_the_operator_and_not_twice() -> None:
    assert _errors({"channels": {"L": 2, "0": "4"}}) == [
        's.json: field channels.L: operator type none has no input "L"; expected 0',
        's.json: field channels.0: "4" is not a positive channel count',
    ]
    join = {"type": "interval_join", "lower_ms": 0, "upper_ms": 0}
    assert _errors({"channels": {"L": 2, "0": 3}, "operator": join}) == [
        "s.json: field channels.0: input L is given twice"
    ]


def test_config_that_is_not_an_object_is_an_error() -> None:
    assert _errors([1]) == ["s.json: field config: [1] is not a JSON object"]
    assert _errors({"generator": 3}) == ["s.json: field generator: 3 is not an object"]


def test_load_config_reads_a_json_file_and_reports_broken_json_with_its_line(tmp_path: Path) -> None:
    (tmp_path / "good.json").write_text(json.dumps(SPEC_EXAMPLE, indent=2))
    assert load_config(tmp_path / "good.json").operator.lower_ms == -5000
    (tmp_path / "bad.json").write_text('{\n  "name": "x",\n  "profile": \n}\n')
    with pytest.raises(TraceValidationError) as err:
        load_config(tmp_path / "bad.json")
    assert str(err.value) == "bad.json:4: file is not valid JSON: Expecting value"
    (tmp_path / "typo.json").write_text('{"operator": {"type": "window", "sizems": 5}}')
    with pytest.raises(TraceValidationError) as err:
        load_config(tmp_path / "typo.json")
    assert str(err.value.issues[0]).startswith("typo.json: field operator.sizems: unknown field")


@pytest.mark.parametrize(
    "obj",
    [
        {},
        SPEC_EXAMPLE,
        {"profile": "flink-master", "generator": {}, "operator": {"type": "window", "size_ms": 10}},
        {
            "channels": {"0": 3},
            "operator": {"type": "window", "size_ms": 10, "slide_ms": 5, "aggregate": "max"},
        },
    ],
)
def test_config_to_dict_parses_back_to_the_same_config(obj: dict) -> None:
    config = parse_config(obj, "s.json")
    assert parse_config(json.loads(json.dumps(config_to_dict(config))), "again.json") == config


def test_the_flip27_preset_is_a_flip27_source_with_flinks_defaults() -> None:
    """One word gives periodic emission every 200 ms and the FLIP-27 resume; a field given still
    wins; the preset round-trips; a bare generator keeps wmviz's own defaults."""
    flip27 = parse_config({"generator": {"preset": "flip27"}}, "p.json").generator
    assert flip27 == GeneratorConfig.flip27()
    assert (flip27.emit, flip27.interval_ms, flip27.resume) == ("periodic", 200, "flip27-released")
    assert (flip27.idle_timeout_ms, flip27.out_of_orderness_ms, flip27.splits) == (None, 0, ())
    bare = parse_config({"generator": {}}, "p.json").generator
    assert (bare.emit, bare.resume) == ("per-record", "eager")
    given = parse_config(
        {"generator": {"preset": "flip27", "emit": "per-record", "splits": {"0": ["a"]}}}, "p"
    )
    assert given.generator.emit == "per-record" and given.generator.resume == "flip27-released"
    assert config_to_dict(given) == {
        "generator": {"emit": "per-record", "splits": {"0": ["a"]}, "preset": "flip27"}
    }
    assert parse_config(config_to_dict(given), "p") == given
    with pytest.raises(TraceValidationError, match=r"generator\.preset"):
        parse_config({"generator": {"preset": "flink"}}, "p.json")
