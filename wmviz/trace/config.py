"""The scenario config (trace-format.md §3): read, validate and write it back, by its declarations.

Each config field is declared once, with its rule, in `wmviz.core.scenario` (`wmviz.core.fieldrules`
says how); this module is the one generic check that walks those declarations, as the row's columns
are walked from `wmviz.trace.columns`. Every field has a default so a bare trace runs. Validation
reports every bad field at once, and an unknown key is an error rather than ignored, so a typo such
as `sizems` cannot silently fall back to a default.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import fields
from typing import Any, cast

from wmviz.core.fieldrules import (
    UNIT_WORDS,
    Check,
    Rule,
    default_of,
    is_required,
    rule_of,
)
from wmviz.core.scenario import (
    GeneratorConfig,
    IntervalJoinConfig,
    NoOperator,
    OperatorKind,
    ScenarioConfig,
)
from wmviz.core.settings import MAX_CHANNELS, MAX_CONFIG_KB, MAX_SPLITS
from wmviz.core.sql_aggregates import AggregateError, parse_call
from wmviz.core.sql_expr import UnsupportedExpression, expr_from_json
from wmviz.core.types import Profile, fits_long
from wmviz.trace.errors import IssueCollector
from wmviz.trace.quote import show
from wmviz.trace.section_rules import SECTION_RULES, SectionValues


def max_config_bytes() -> int:
    """The largest config (a file, a JSON Lines config line, Parquet metadata) wmviz reads, in bytes
    (WMVIZ_MAX_CONFIG_KB, read now)."""
    return MAX_CONFIG_KB.get() * 1024


JUDGING_ORDER: dict[type, tuple[str, ...]] = {
    # The operator before `channels`, whose names must be inputs of the operator.
    ScenarioConfig: ("name", "description", "profile", "operator", "channels", "generator", "generators"),
    # The EARLY_FIRE hint and the time domain first: the order these messages have always come in.
    IntervalJoinConfig: ("early_fire_delay_ms", "time_mode", "join_time", "all_idle_flush"),
    # The preset first: it gives the defaults of the fields judged after it (`resume` for `splits`).
    GeneratorConfig: ("preset",),
}
"""The order a config type's fields are judged in, which is the order of their messages, where it
is not the declared order; fields left out follow in declared order."""

_REFUSED = object()
"""A value its rule refused (the problem is already reported)."""


def channel_budget_reason(count: int) -> str:
    """A channel count (or index + 1) over MAX_CHANNELS."""
    return (
        f"{count:,} channels are more than a valve may have here: {MAX_CHANNELS.get():,} "
        "(Flink's largest parallelism; WMVIZ_MAX_CHANNELS)"
    )


def split_budget_reason(count: int, what: str = "splits") -> str:
    """A count of splits (or of a topic's partitions, each a split) over MAX_SPLITS."""
    return f"{count:,} {what} are more than wmviz reads: {MAX_SPLITS.get():,} (WMVIZ_MAX_SPLITS)"


def _names(cls: type) -> list[str]:
    return [f.name for f in fields(cls)]


def _kinds(sections: tuple[type, ...]) -> dict[str, type[OperatorKind]]:
    """The types of a section with several, by the name its `type` field gives (the first is the
    default)."""
    kinds = [cast("type[OperatorKind]", t) for t in sections]
    return {kind.type_name: kind for kind in kinds}


def _judging_order(cls: type) -> list[str]:
    names = _names(cls)
    first = [name for name in JUDGING_ORDER.get(cls, ()) if name in names]
    return first + [name for name in names if name not in first]


class _ConfigParser:
    """Walks one config object against the declarations, reporting every problem into a collector."""

    def __init__(self, collector: IssueCollector, row: int | None, file: str | None):
        self.collector = collector
        self.row = row
        self.file = file
        self.ok = True
        self.operator_kind: type[OperatorKind] | None = NoOperator
        """The operator type `channels` are judged against; None when the operator cannot be read."""
        self.readers: dict[Check, Callable[[Any, str, Rule, SectionValues], Any]] = {
            Check.MILLIS: self.millis,
            Check.CHOICE: self.choice,
            Check.TEXT: self.text,
            Check.FLAG: self.flag,
            Check.PROFILE: self.profile,
            Check.CHANNELS: self.channels,
            Check.SPLITS: self.splits,
            Check.SECTION: self.section,
            Check.EXPRESSION: self.expression,
            Check.INPUT_SECTIONS: self.input_sections,
            Check.NAMES: self.names,
            Check.AGGREGATES: self.aggregates,
        }

    def issue(self, path: str, reason: str) -> None:
        self.ok = False
        self.collector.add(self.row, None, reason, field=path, file=self.file)

    def obj(self, value: Any, path: str) -> dict[str, Any] | None:
        if isinstance(value, dict):
            return value
        self.issue(path, f"{show(value)} is not an object")
        return None

    def scenario(self, obj: Any) -> ScenarioConfig:
        if not isinstance(obj, dict):
            self.issue("config", f"{show(obj)} is not a JSON object")
            return ScenarioConfig()
        config = self.judge(obj, ScenarioConfig, "", "config", (ScenarioConfig,))
        return config if isinstance(config, ScenarioConfig) else ScenarioConfig()

    def judge(
        self, data: dict[str, Any], cls: type, prefix: str, owner: str, siblings: tuple[type, ...]
    ) -> Any:
        """An instance of `cls` from `data`, or `_REFUSED` when a required field is missing or bad.

        In order: unknown keys, missing required fields, each field's value, then the rules over
        several fields. A refused value takes its field's default so the rest can still be judged.
        """
        declared = {f.name: f for f in fields(cls)}
        self.unknown_keys(data, cls, prefix, owner, siblings)
        complete = True
        for name, f in declared.items():
            if is_required(f) and data.get(name) is None:
                self.issue(f"{prefix}{name}", f"required for {owner}")
                complete = False
        values: SectionValues = {}
        for name in _judging_order(cls):
            f, raw = declared[name], data.get(name)
            value = section_default(cls, f, values)  # null means absent
            if raw is not None:
                rule = rule_of(f)
                value = self.readers[rule.check](raw, prefix + name, rule, values)
                if value is _REFUSED:
                    complete = complete and not is_required(f)
                    value = section_default(cls, f, values)
            values[name] = value
        rules = SECTION_RULES.get(cls)
        # Every rule sees the values as judged; what they refuse is reset afterwards.
        for name, reason in list(rules(values, data)) if rules else []:
            self.issue(f"{prefix}{name}", reason)
            values[name] = section_default(cls, declared[name], values)
        return cls(**values) if complete else _REFUSED

    def unknown_keys(
        self, data: dict[str, Any], cls: type, prefix: str, owner: str, siblings: tuple[type, ...]
    ) -> None:
        """Keys `cls` does not declare: of another type of the same section, or unknown."""
        typed = len(siblings) > 1
        allowed = ("type",) * typed + tuple(_names(cls))
        for key in data:
            if key in allowed:
                continue
            owners = [name for name, t in _kinds(siblings).items() if key in _names(t)] if typed else []
            if owners:
                self.issue(f"{prefix}{key}", f"not used by {owner} (it belongs to {owners[0]})")
            else:
                self.issue(f"{prefix}{key}", f"unknown field; expected one of {', '.join(allowed)}")

    def section(self, value: Any, path: str, rule: Rule, values: SectionValues) -> Any:
        """A nested object; with several types, its `type` field says which."""
        typed = len(rule.sections) > 1
        if typed:
            self.operator_kind = None  # until the type is known
        data = self.obj(value, path)
        if data is None:
            return _REFUSED
        cls, owner = rule.sections[0], path
        if typed:
            kinds = _kinds(rule.sections)
            raw_type = data.get("type")
            options = Rule(Check.CHOICE, "the type", options=tuple(kinds))
            name = (
                next(iter(kinds))
                if raw_type is None
                else self.choice(raw_type, f"{path}.type", options, values)
            )
            if name is _REFUSED:
                return _REFUSED  # the bad type is reported; its fields cannot be judged
            cls, owner = kinds[name], f"{path} type {name}"
            self.operator_kind = cls
        return self.judge(data, cls, f"{path}.", owner, rule.sections)

    def input_sections(self, value: Any, path: str, rule: Rule, values: SectionValues) -> Any:
        """{input: object}: one section per input of the operator, given beside `generator`."""
        mapping = self.obj(value, path)
        if mapping is None:
            return _REFUSED
        if mapping and values.get("generator") is None:
            self.issue(path, "needs generator: the inputs not named here keep it")
            return _REFUSED
        kind, out = self.operator_kind, {}
        for raw_name, data in mapping.items():
            name = kind.canonical_input(str(raw_name)) if kind is not None else str(raw_name)
            if name is None or name in out:
                why = "is given twice" if name else f"is no input of operator type {kind.type_name}"  # type: ignore[union-attr]
                self.issue(f"{path}.{raw_name}", f"input {raw_name} {why}")
                continue
            section = self.obj(data, f"{path}.{raw_name}")
            judged = (
                _REFUSED
                if section is None
                else self.judge(section, rule.sections[0], f"{path}.{name}.", f"{path}.{name}", rule.sections)
            )
            if judged is not _REFUSED:
                out[name] = judged
        return out

    def expression(self, value: Any, path: str, rule: Rule, values: SectionValues) -> Any:
        try:
            return expr_from_json(value, path)
        except UnsupportedExpression as exc:
            where, _, reason = str(exc).partition(": ")  # the node's own path, under `path`
            self.issue(where, reason)
            return _REFUSED

    def names(self, value: Any, path: str, rule: Rule, values: SectionValues) -> Any:
        """A list of column names, none twice."""
        if not isinstance(value, list) or not all(isinstance(n, str) and n.strip() for n in value):
            self.issue(path, f"{show(value)} is not a list of column names")
            return _REFUSED
        if len(set(value)) != len(value):
            self.issue(path, "a column is named twice")
            return _REFUSED
        return tuple(n.strip() for n in value)

    def aggregates(self, value: Any, path: str, rule: Rule, values: SectionValues) -> Any:
        """A list of aggregate calls spelled as SQL, each output field named once."""
        if not isinstance(value, list) or not value:
            self.issue(path, f'{show(value)} is not a list of aggregate calls ("COUNT(*) AS n")')
            return _REFUSED
        calls = []
        for index, text in enumerate(value):
            try:
                calls.append(parse_call(text))
            except AggregateError as exc:
                self.issue(f"{path}[{index}]", str(exc))
                return _REFUSED
        if len({call.name for call in calls}) != len(calls):
            self.issue(path, "two calls give the same output field (AS name)")
            return _REFUSED
        return tuple(calls)

    def text(self, value: Any, path: str, rule: Rule, values: SectionValues) -> Any:
        if isinstance(value, str):
            return value
        self.issue(path, f"{show(value)} is not a string")
        return _REFUSED

    def choice(self, value: Any, path: str, rule: Rule, values: SectionValues) -> Any:
        if isinstance(value, str) and value.strip().lower() in rule.options:
            return value.strip().lower()
        self.issue(path, f"{show(value)} is not one of {', '.join(rule.options)}")
        return _REFUSED

    def flag(self, value: Any, path: str, rule: Rule, values: SectionValues) -> Any:
        if isinstance(value, bool):
            return value
        self.issue(path, f"{show(value)} is not true or false")
        return _REFUSED

    def millis(self, value: Any, path: str, rule: Rule, values: SectionValues) -> Any:
        if isinstance(value, bool) or not isinstance(value, int):
            self.issue(path, f"{show(value)} is not an integer ({UNIT_WORDS[rule.unit]})")
        elif not fits_long(value):
            self.issue(path, f"{value} is outside the signed 64-bit range of Flink's long")
        elif rule.minimum is not None and value < rule.minimum:
            self.issue(path, f"{value} must be {'positive' if rule.minimum == 1 else f'>= {rule.minimum}'}")
        elif (most := rule.most()) is not None and value > most:
            self.issue(path, f"{value:,} is more than {most:,}: {rule.most_why()}")
        else:
            return value
        return _REFUSED

    def profile(self, value: Any, path: str, rule: Rule, values: SectionValues) -> Any:
        try:
            if not isinstance(value, str):
                raise ValueError
            return Profile.parse(value.strip())
        except ValueError:
            self.issue(path, f"{show(value)} is not one of {', '.join(p.value for p in Profile)}")
            return _REFUSED

    def channels(self, value: Any, path: str, rule: Rule, values: SectionValues) -> Any:
        """{input: count}; the names are the operator's inputs (any name when it is unknown)."""
        mapping = self.obj(value, path)
        if mapping is None:
            return _REFUSED
        kind = self.operator_kind
        result: dict[str, int] = {}
        for raw_name, count in mapping.items():
            name = str(raw_name)
            where = f"{path}.{name}"
            if isinstance(count, bool) or not isinstance(count, int) or count < 1:
                self.issue(where, f"{show(count)} is not a positive channel count")
                continue
            if count > MAX_CHANNELS.get():
                self.issue(where, channel_budget_reason(count))
                continue
            canonical = name if kind is None else kind.canonical_input(name)
            if canonical is None:
                assert kind is not None
                valid = ", ".join(kind.inputs)
                self.issue(
                    where, f"operator type {kind.type_name} has no input {show(name)}; expected {valid}"
                )
            elif canonical in result:
                self.issue(where, f"input {canonical} is given twice")
            else:
                result[canonical] = count
        return result

    def splits(self, value: Any, path: str, rule: Rule, values: SectionValues) -> Any:
        """{"<channel>": ["<split id>", ...]}, a FLIP-27 reader per channel."""
        data = self.obj(value, path)
        if data is None:
            return _REFUSED
        if values.get("resume") != "flip27-released":
            self.issue(path, "split readers model a FLIP-27 source: they need resume flip27-released")
            return _REFUSED
        out, total = [], 0
        for key, ids in data.items():
            where = f"{path}.{key}"
            if not (isinstance(key, str) and key.isdigit() and int(key) < MAX_CHANNELS.get()):
                self.issue(where, f"{show(key)} is not a channel index")
                continue
            # An empty list is a reader with zero splits (split rows may add some later).
            if not isinstance(ids, list) or not all(isinstance(i, str) and i for i in ids):
                self.issue(where, "expected a list of split ids (strings)")
                continue
            if len(set(ids)) != len(ids):
                self.issue(where, "a split is listed twice")
                continue
            total += len(ids)
            if (most := MAX_SPLITS.get()) < total:
                self.issue(path, f"more than {most:,} splits (WMVIZ_MAX_SPLITS)")
                return _REFUSED
            out.append((int(key), tuple(ids)))
        return tuple(sorted(out))


def parse_config_into(
    obj: Any, collector: IssueCollector, *, row: int | None = None, file: str | None = None
) -> tuple[ScenarioConfig, bool]:
    """Best-effort config plus whether it was valid; problems go into `collector`.

    Invalid fields fall back to their defaults (an operator missing a required field to none) so a
    reader can keep checking the trace; the caller must not trust config-dependent checks when the
    flag is False.
    """
    parser = _ConfigParser(collector, row, file)
    config = parser.scenario(obj)
    return config, parser.ok


def parse_config(obj: Any, source: str) -> ScenarioConfig:
    """A validated `ScenarioConfig` from a decoded JSON object; `source` names it in messages.

    Raises `TraceValidationError` listing every bad or unknown field
    (`source: field generator.emit: "sometimes" is not one of per-record, periodic`).
    """
    collector = IssueCollector(source)
    config, _ = parse_config_into(obj, collector)
    collector.raise_if_any()
    return config


def load_config(path: str | os.PathLike[str]) -> ScenarioConfig:
    """Read and validate a scenario config JSON file; `TraceValidationError` on any problem."""
    collector = IssueCollector(os.path.basename(os.fspath(path)))
    config, _ = load_config_into(path, collector)
    collector.raise_if_any()
    return config


def load_config_into(path: str | os.PathLike[str], collector: IssueCollector) -> tuple[ScenarioConfig, bool]:
    """Like `parse_config_into` for a JSON file; issues name the file's base name, without a row."""
    from wmviz.trace.jsonline import JsonLineError, loads_strict

    file = os.path.basename(os.fspath(path))
    with open(path, "rb") as f:
        data = f.read(max_config_bytes() + 1)
    if len(data) > (most := max_config_bytes()):
        limit = f"the limit is {most:,} bytes (WMVIZ_MAX_CONFIG_KB)"
        collector.add(None, None, f"file is larger than a config may be; {limit}", file=file)
        return ScenarioConfig(), False
    try:
        obj = loads_strict(data.decode("utf-8-sig"))
    except UnicodeDecodeError:
        collector.add(None, None, "file is not valid UTF-8 text", file=file)
        return ScenarioConfig(), False
    except JsonLineError as exc:
        collector.add(exc.line, None, f"file is not valid JSON: {exc}", file=file)
        return ScenarioConfig(), False
    return parse_config_into(obj, collector, file=file)


def section_default(cls: type, declared: Any, values: SectionValues) -> Any:
    """A field's default, as the section's `preset` (judged first) has it (`GeneratorConfig.presets`)."""
    if cls is GeneratorConfig and declared.name != "preset":
        return GeneratorConfig.preset_default(
            values.get("preset", "none"), declared.name, default_of(declared)
        )
    return default_of(declared)


def judge_value(value: Any, path: str, rule: Rule, source: str) -> Any:
    """`value` as the config's own check for `rule` reads it (the reader a config file's field
    goes through), or `TraceValidationError` naming `path` in `source`."""
    collector = IssueCollector(source)
    judged = _ConfigParser(collector, None, None).readers[rule.check](value, path, rule, {})
    if judged is _REFUSED:
        raise collector.error()
    return judged
