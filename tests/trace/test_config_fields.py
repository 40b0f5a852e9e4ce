"""The config's field declarations (wmviz/core/scenario.py): each field carries its rule, one generic
check walks them, the docs list them, and one field can be replaced by its dotted path."""

from __future__ import annotations

import re
from dataclasses import fields, replace
from typing import Any

import pytest

from tests.conftest import REPO
from wmviz.core.fieldrules import UNIT_WORDS, Check, DeclaredField, declared_fields, is_required, rule_of
from wmviz.core.scenario import (
    AlignmentConfig,
    GeneratorConfig,
    IntervalJoinConfig,
    NoOperator,
    ScenarioConfig,
    WindowConfig,
)
from wmviz.core.types import Profile
from wmviz.trace import TraceValidationError, config_to_dict, parse_config
from wmviz.trace.config import JUDGING_ORDER
from wmviz.trace.config_write import replace_field

DECLARED = list(declared_fields(ScenarioConfig))
OPERATOR_TYPES = (NoOperator, WindowConfig, IntervalJoinConfig)


def _errors(call: Any) -> list[str]:
    with pytest.raises(TraceValidationError) as err:
        call()
    return [str(issue) for issue in err.value.issues]


_VALID: dict[Check, Any] = {Check.NAMES: ["k"], Check.AGGREGATES: ["COUNT(*) AS n"], Check.TEXT: "A"}
"""A valid value of a required field by its rule (a text: a MATCH_RECOGNIZE pattern; 1 for the rest:
a count or milliseconds)."""


def _section_with(field: DeclaredField, value: Any) -> dict[str, Any]:
    """A config whose only doubtful value is `value` at `field`, every required sibling valid."""
    owner = field.owner
    leaf = field.path.rsplit(".", 1)[-1]
    section = {f.name: _VALID.get(rule_of(f).check, 1) for f in fields(owner) if is_required(f)}
    if owner is WindowConfig and leaf != "session_gap_ms":
        section["size_ms"] = 1_000  # a window needs a size or a gap (a rule over the section)
    section[leaf] = value
    if owner is ScenarioConfig:
        return section
    if owner is GeneratorConfig:
        return {"generator": section}
    if owner is AlignmentConfig:  # alignment pauses the splits of FLIP-27 readers: it needs some
        return {"generator": {"preset": "flip27", "splits": {"0": ["a"]}, "alignment": section}}
    return {"operator": {"type": owner.type_name, **section}}


def test_every_field_is_declared_with_a_rule_and_paths_name_their_section() -> None:
    paths = [d.path for d in DECLARED]
    assert "generator.out_of_orderness_ms" in paths and "operator.allowed_lateness_ms" in paths
    assert "operator.size_ms" in paths and "operator.lower_ms" in paths
    assert all(d.rule.meaning for d in DECLARED)
    owners = {(d.path, d.owner) for d in DECLARED}
    assert ("operator.size_ms", WindowConfig) in owners and ("operator.join", IntervalJoinConfig) in owners


def test_judging_orders_name_only_declared_fields() -> None:
    for cls, order in JUDGING_ORDER.items():
        names = [f.name for f in fields(cls)]
        assert set(order) <= set(names) and len(set(order)) == len(order), cls


@pytest.mark.parametrize(
    "field",
    [d for d in DECLARED if d.rule.check is Check.MILLIS],
    ids=lambda d: f"{d.owner.__name__}.{d.path}",
)
def test_the_generic_check_judges_every_millisecond_field_by_its_own_rule(field: DeclaredField) -> None:
    path = field.path
    assert _errors(lambda: parse_config(_section_with(field, "10s"), "c.json")) == [
        f'c.json: field {path}: "10s" is not an integer ({UNIT_WORDS[field.rule.unit]})'
    ]
    assert _errors(lambda: parse_config(_section_with(field, -(2**63) - 1), "c.json")) == [
        f"c.json: field {path}: -9223372036854775809 is outside the signed 64-bit range of Flink's long"
    ]
    minimum = field.rule.minimum
    if minimum is not None:
        expected = "positive" if minimum == 1 else f">= {minimum}"
        assert _errors(lambda: parse_config(_section_with(field, minimum - 1), "c.json")) == [
            f"c.json: field {path}: {minimum - 1} must be {expected}"
        ]
    maximum = field.rule.most()
    if maximum is not None:
        assert field.rule.most_why()
        assert _errors(lambda: parse_config(_section_with(field, maximum + 1), "c.json")) == [
            f"c.json: field {path}: {maximum + 1:,} is more than {maximum:,}: {field.rule.most_why()}"
        ]
        assert parse_config(_section_with(field, maximum), "c.json")


@pytest.mark.parametrize(
    "field",
    [d for d in DECLARED if d.rule.check is Check.CHOICE],
    ids=lambda d: f"{d.owner.__name__}.{d.path}",
)
def test_the_generic_check_judges_every_choice_by_its_own_options(field: DeclaredField) -> None:
    options = field.rule.options
    assert _errors(lambda: parse_config(_section_with(field, "nope"), "c.json")) == [
        f'c.json: field {field.path}: "nope" is not one of {", ".join(options)}'
    ]
    leaf = field.path.rsplit(".", 1)[-1]
    for option in options:
        config = _section_with(field, option.upper())
        if leaf == "time_mode":
            config["operator"]["early_fire_delay_ms"] = 1  # the hint's mode needs the hint
        if leaf == "window":  # sql_window: HOP needs its slide, CUMULATE its step
            config["operator"].update({"hop": {"slide_ms": 1}, "cumulate": {"step_ms": 1}}.get(option, {}))
        config.get("generator", {}).update(_sql_companions(leaf, option))
        parsed = parse_config(config, "c.json")
        section = parsed.operator if "operator" in config else parsed.generator or parsed
        assert getattr(section, leaf) == option


def _sql_companions(leaf: str, option: str) -> dict[str, Any]:
    """The fields a generator choice needs beside it: each SQL style takes its own (sqlconfig.py)."""
    source = {"style": "sql-source", "emit": "on-periodic", "resume": "flip27-released", "expression": "ts"}
    if leaf == "column_type" and option == "number":  # a number column needs TO_TIMESTAMP_LTZ
        return {**source, "expression": {"to_timestamp_ltz": 3, "of": "ts"}}
    if (leaf == "emit" and option.startswith("on-")) or leaf in ("column_type", "zone"):
        return {k: v for k, v in source.items() if k != leaf}
    if leaf == "style" and option == "sql-source":
        return {k: v for k, v in source.items() if k != "style"}
    if (leaf == "style" and option == "sql-assigner") or (leaf == "preset" and option.startswith("sql")):
        return {"expression": "ts"}
    return {}


def test_a_config_with_every_field_off_its_default_writes_back_to_itself() -> None:
    window = WindowConfig(size_ms=10, slide_ms=5, allowed_lateness_ms=3, aggregate="max")
    join = IntervalJoinConfig(
        join="full",
        lower_ms=-3,
        upper_ms=7,
        early_fire_delay_ms=2,
        time_mode="proctime",
        min_cleanup_interval_ms=4,
        join_time="rowtime",
        all_idle_flush=False,
    )
    generator = GeneratorConfig(
        out_of_orderness_ms=1,
        emit="periodic",
        interval_ms=50,
        idle_timeout_ms=9,
        resume="flip27-released",
        splits=((0, ("a", "b")),),
    )
    for operator, channels in ((window, {"0": 2}), (join, {"L": 1, "R": 2})):
        config = ScenarioConfig("n", "d", Profile.FLIP_38477, channels, generator, operator)
        assert parse_config(config_to_dict(config), "again.json") == config
    assert config_to_dict(ScenarioConfig(operator=join))["operator"] == {
        "type": "interval_join",
        "join": "full",
        "lower_ms": -3,
        "upper_ms": 7,
        "early_fire_delay_ms": 2,
        "time_mode": "proctime",
        "min_cleanup_interval_ms": 4,
        "all_idle_flush": False,
    }


def test_each_operator_type_says_its_inputs() -> None:
    assert NoOperator.inputs == WindowConfig.inputs == ("0",)
    assert IntervalJoinConfig.inputs == ("L", "R")
    assert [IntervalJoinConfig.canonical_input(n) for n in ("l", "0", "R", "1", "2")] == [
        "L",
        "L",
        "R",
        "R",
        None,
    ]
    assert WindowConfig.canonical_input("L") is None
    assert ScenarioConfig().valve_only and not ScenarioConfig(generator=GeneratorConfig()).valve_only
    assert not ScenarioConfig(operator=WindowConfig(size_ms=1)).valve_only


# ---- one field replaced by its dotted path (what `wmviz sweep` will do) -----------------------------

WINDOWED = parse_config(
    {"generator": {"out_of_orderness_ms": 100}, "operator": {"type": "window", "size_ms": 1000}}, "c.json"
)


def test_replacing_a_field_by_its_path_gives_a_new_validated_config() -> None:
    assert replace_field(WINDOWED, "generator.out_of_orderness_ms", 250) == replace(
        WINDOWED, generator=GeneratorConfig(out_of_orderness_ms=250)
    )
    later = replace_field(WINDOWED, "operator.allowed_lateness_ms", 500)
    assert later.operator == WindowConfig(size_ms=1000, allowed_lateness_ms=500)
    assert replace_field(later, "operator.allowed_lateness_ms", None).operator == WindowConfig(size_ms=1000)
    assert replace_field(WINDOWED, "operator.size_ms", 60_000).operator == WindowConfig(size_ms=60_000)
    assert WINDOWED.operator == WindowConfig(size_ms=1000)  # the original is untouched
    assert replace_field(WINDOWED, "channels.0", 3).channels == {"0": 3}
    assert replace_field(WINDOWED, "profile", "flink-master").profile is Profile.FLINK_MASTER


def test_a_bad_value_is_refused_by_the_fields_own_rule_naming_its_path() -> None:
    assert _errors(lambda: replace_field(WINDOWED, "operator.size_ms", 0, "sweep")) == [
        "sweep: field operator.size_ms: 0 must be positive"
    ]
    assert _errors(lambda: replace_field(WINDOWED, "generator.out_of_orderness_ms", "5s", "sweep")) == [
        'sweep: field generator.out_of_orderness_ms: "5s" is not an integer (milliseconds)'
    ]
    # The rules over several fields are judged again too: 1,000 windows a record is the most.
    sliding = replace_field(WINDOWED, "operator.slide_ms", 1, "sweep")
    assert _errors(lambda: replace_field(sliding, "operator.size_ms", 2000, "sweep")) == [
        "sweep: field operator.slide_ms: size / slide puts each record in 2,000 windows, "
        "more than wmviz simulates: 1,000 (WMVIZ_MAX_WINDOWS_PER_RECORD)"
    ]


def test_an_unknown_or_misplaced_path_is_refused_naming_it() -> None:
    assert _errors(lambda: replace_field(WINDOWED, "operator.sizems", 5, "sweep")) == [
        "sweep: field operator.sizems: unknown field; "
        "expected one of type, size_ms, slide_ms, offset_ms, session_gap_ms, allowed_lateness_ms, aggregate"
    ]
    assert _errors(lambda: replace_field(WINDOWED, "operator.lower_ms", 5, "sweep")) == [
        "sweep: field operator.lower_ms: not used by operator type window (it belongs to interval_join)"
    ]
    assert _errors(lambda: replace_field(ScenarioConfig(), "generator.out_of_orderness_ms", 5, "sweep")) == [
        "sweep: field generator.out_of_orderness_ms: the config has no generator"
    ]
    assert _errors(lambda: replace_field(WINDOWED, "name.first", "x", "sweep")) == [
        "sweep: field name.first: name is a value, not a section"
    ]
    assert _errors(lambda: replace_field(WINDOWED, "nmae", "x", "sweep"))[0].startswith(
        "sweep: field nmae: unknown field; expected one of name,"
    )


# ---- the docs' config table lists every declared field ------------------------------------------


def _config_table() -> str:
    text = (REPO / "docs" / "trace-format.md").read_text(encoding="utf-8")
    section = text.split("\n## 2. ", 1)[1].split("\n## ", 1)[0]
    return "\n".join(line for line in section.splitlines() if line.startswith("|"))


def test_every_declared_field_and_option_is_in_the_docs_config_table() -> None:
    listed = set(re.findall(r"`([^`]+)`", _config_table()))
    listed |= {name.split(".", 1)[0] for name in listed}  # `operator.type` lists the operator too
    missing = [d.path for d in DECLARED if d.path.rsplit(".", 1)[-1] not in listed]
    missing += [f"{d.path}: {o}" for d in DECLARED for o in d.rule.options if o not in listed]
    missing += [t.type_name for t in OPERATOR_TYPES if t.type_name not in listed]
    missing += [p.value for p in Profile if p.value not in listed]
    assert missing == [], "docs/trace-format.md §2's table does not list these config fields or values"
