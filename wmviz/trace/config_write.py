"""The scenario config written back: to JSON (`config_to_dict`) and with one dotted field changed
(`replace_field`, what a sweep's `--vary` and a what-if set).

The reading side is `wmviz.trace.config`; both walk the same field declarations
(`wmviz.core.fieldrules`), so a field written here is read back by the same rule that judged it
(`parse_config(config_to_dict(c), ...) == c`). `replace_field` judges a new value with the reader's
own checks rather than a second copy of them.
"""

from __future__ import annotations

from dataclasses import fields, is_dataclass
from typing import Any, NoReturn

from wmviz.core.fieldrules import Check, FieldSetter, Rule, is_required, rule_of, setters_of
from wmviz.core.scenario import ScenarioConfig
from wmviz.core.sql_expr import expr_to_json
from wmviz.trace.config import judge_value, parse_config, section_default
from wmviz.trace.errors import IssueCollector


def config_to_dict(config: ScenarioConfig) -> dict[str, Any]:
    """The config as a JSON-ready dict holding only fields that differ from their defaults.

    `parse_config(config_to_dict(c), ...) == c` for every valid config.
    """
    return _section_to_dict(config, typed=False)


def _section_to_dict(value: Any, typed: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"type": value.type_name} if typed else {}
    known = {f.name: getattr(value, f.name) for f in fields(value)}
    for f in fields(value):
        item = getattr(value, f.name)
        if is_required(f) or item != section_default(type(value), f, known):
            out[f.name] = _value_to_json(item, rule_of(f))
    return out


def _value_to_json(value: Any, rule: Rule) -> Any:
    if rule.check is Check.PROFILE:
        return value.value
    if rule.check is Check.CHANNELS:
        return dict(value)
    if rule.check is Check.SPLITS:
        return {str(ch): list(ids) for ch, ids in value}
    if rule.check is Check.EXPRESSION:
        return expr_to_json(value)
    if rule.check is Check.NAMES:
        return list(value)
    if rule.check is Check.AGGREGATES:
        return [call.spelled() for call in value]
    if rule.check is Check.INPUT_SECTIONS:
        return {name: _section_to_dict(section, typed=False) for name, section in value.items()}
    if rule.check is Check.SECTION:
        return _section_to_dict(value, typed=len(rule.sections) > 1)
    return value


def replace_field(config: ScenarioConfig, path: str, value: Any, source: str = "config") -> ScenarioConfig:
    """A new validated config: `config` with the field at dotted `path` (`operator.size_ms`) set
    to the JSON value `value` (None: its default), judged by the same rules as a config file.

    Raises `TraceValidationError` naming the path: an unknown field, a field of another operator
    type, a bad value, or a field of a section the config does not have (setting
    `generator.out_of_orderness_ms` must not quietly add a generator).
    """
    data = config_to_dict(config)
    *parents, leaf = path.split(".")
    node: dict[str, Any] = data
    current: Any = config
    for depth, key in enumerate(parents):
        where = ".".join(parents[: depth + 1])
        if isinstance(current, dict) and key in current:
            current = current[key]  # an input's section (`generators.L`)
        elif is_dataclass(current) and key in {f.name for f in fields(current)}:
            current = getattr(current, key)
            if current is None:
                _refuse(source, path, f"the config has no {where}")
            if not (is_dataclass(current) or isinstance(current, dict)):
                _refuse(source, path, f"{where} is a value, not a section")
        else:
            current = None  # an unknown name: the check below reports it
        child = node.setdefault(key, {})
        if not isinstance(child, dict):
            _refuse(source, path, f"{where} is a value, not a section")
        node = child
    if (setting := setters_of(current).get(leaf)) is not None:
        leaf, value = setting.sets, _setting_value(current, setting, path, value, source)
    node[leaf] = value
    return parse_config(data, source)


def _setting_value(section: Any, setting: FieldSetter, path: str, value: Any, source: str) -> Any:
    """The JSON value a `FieldSetter` writes into its field: `value` judged by the setting's rule (the
    config's own check), then applied to the section (its refusal names the path)."""
    judged = judge_value(value, path, setting.rule, source)
    try:
        applied = setting.apply(section, judged)
    except ValueError as exc:
        _refuse(source, path, str(exc))
    return _value_to_json(applied, rule_of(next(f for f in fields(section) if f.name == setting.sets)))


def _refuse(source: str, path: str, reason: str) -> NoReturn:
    collector = IssueCollector(source)
    collector.add(None, None, reason, field=path)
    raise collector.error()
