"""The rule each config field carries, declared once beside the field (trace-format.md §2).

A config type in `wmviz.core.scenario` is a frozen dataclass whose fields hold their own rules: the
dataclass field gives the name, the Python type and the default (a field without a default is
required), and its metadata holds a `Rule`: what kind of value it takes, its range or options, its
unit and what it means. One generic check (`wmviz.trace.config`) walks these declarations to read,
validate and write a config back, as `wmviz.trace.columns` does for the trace row, so a field added
to a config type is read, checked, written, listed and addressable by its dotted path without a
second edit anywhere.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import MISSING, Field, dataclass, fields
from enum import Enum
from typing import Any, get_args

RULE = "wmviz.rule"
"""The metadata key under which a config field keeps its `Rule`."""


class Check(Enum):
    """How a field's JSON value is read; each has one reader in `wmviz.trace.config`."""

    MILLIS = "millis"
    """A signed 64-bit integer (Flink's `long`) of `unit`, at least `minimum` when one is given."""
    CHOICE = "choice"
    """One of `options`, in any case, kept in lower case."""
    TEXT = "text"
    FLAG = "flag"
    """`true` or `false`."""
    PROFILE = "profile"
    """The name of a `wmviz.core.types.Profile`."""
    CHANNELS = "channels"
    """`{input: channel count}` over the inputs the config's operator has."""
    SPLITS = "splits"
    """`{channel: [split id, ...]}`: the channels that are FLIP-27 readers of several splits."""
    EXPRESSION = "expression"
    """A SQL watermark expression in the config's JSON spelling (`wmviz.core.sql_expr.expr_from_json`)."""
    NAMES = "names"
    """A list of column names (a SQL operator's keys, `PARTITION BY`, ...), kept as a tuple."""
    AGGREGATES = "aggregates"
    """A list of aggregate calls spelled as SQL (`"COUNT(*) AS orders"`, `wmviz.core.sql_aggregates`)."""
    SECTION = "section"
    INPUT_SECTIONS = "input_sections"
    """`{input: object}`: one nested object of `sections[0]` per input of the config's operator."""
    """A nested object of one of `sections` (chosen by its `type` field when there are several)."""


@dataclass(frozen=True, slots=True)
class Rule:
    """What one config field may hold and what it means."""

    check: Check
    meaning: str
    minimum: int | None = None
    maximum: int | Callable[[], int] | None = None
    """The largest value; a callable (a setting's `get`) is read when a config is checked."""
    maximum_why: str | Callable[[], str] = ""
    """Why a value above `maximum` is refused (the message says it)."""
    options: tuple[str, ...] = ()
    unit: str = ""
    sections: tuple[type, ...] = ()

    def most(self) -> int | None:
        """The largest value, read now."""
        return self.maximum() if callable(self.maximum) else self.maximum

    def most_why(self) -> str:
        """Why a value above `most()` is refused, said now."""
        return self.maximum_why() if callable(self.maximum_why) else self.maximum_why


UNIT_WORDS = {"ms": "milliseconds", "": "a count"}
"""How messages spell a unit."""


def millis(meaning: str, *, minimum: int | None = None) -> Mapping[str, Rule]:
    """An integer of milliseconds: a time, a duration or a bound."""
    return {RULE: Rule(Check.MILLIS, meaning, minimum=minimum, unit="ms")}


def count(
    meaning: str,
    *,
    minimum: int | None = None,
    maximum: int | Callable[[], int] | None = None,
    maximum_why: str | Callable[[], str] = "",
) -> Mapping[str, Rule]:
    """An integer that counts something (read as `millis` is, with no unit), at most `maximum`."""
    return {RULE: Rule(Check.MILLIS, meaning, minimum=minimum, maximum=maximum, maximum_why=maximum_why)}


def choice(options: Any, meaning: str) -> Mapping[str, Rule]:
    """One of the strings of a `Literal` type (the field's own annotation, so the options are
    written once)."""
    return {RULE: Rule(Check.CHOICE, meaning, options=tuple(get_args(options)))}


def text(meaning: str) -> Mapping[str, Rule]:
    return {RULE: Rule(Check.TEXT, meaning)}


def flag(meaning: str) -> Mapping[str, Rule]:
    return {RULE: Rule(Check.FLAG, meaning)}


def profile_name(meaning: str) -> Mapping[str, Rule]:
    return {RULE: Rule(Check.PROFILE, meaning)}


def channel_counts(meaning: str) -> Mapping[str, Rule]:
    return {RULE: Rule(Check.CHANNELS, meaning)}


def split_lists(meaning: str) -> Mapping[str, Rule]:
    return {RULE: Rule(Check.SPLITS, meaning)}


def expression(meaning: str) -> Mapping[str, Rule]:
    return {RULE: Rule(Check.EXPRESSION, meaning)}


def names(meaning: str) -> Mapping[str, Rule]:
    return {RULE: Rule(Check.NAMES, meaning)}


def aggregates(meaning: str) -> Mapping[str, Rule]:
    return {RULE: Rule(Check.AGGREGATES, meaning)}


def section(meaning: str, *types: type) -> Mapping[str, Rule]:
    """A nested config object: of `types[0]`, or of the one its `type` field names when several
    (each such type has a `type_name` class attribute)."""
    return {RULE: Rule(Check.SECTION, meaning, sections=types)}


def input_sections(meaning: str, kind: type) -> Mapping[str, Rule]:
    """One nested config object of `kind` per input of the operator (`{"L": {...}, "R": {...}}`)."""
    return {RULE: Rule(Check.INPUT_SECTIONS, meaning, sections=(kind,))}


def rule_of(declared: Field[Any]) -> Rule:
    """The rule a config field carries."""
    rule = declared.metadata.get(RULE)
    if not isinstance(rule, Rule):
        raise TypeError(f"config field {declared.name} declares no rule")
    return rule


def is_required(declared: Field[Any]) -> bool:
    """A field without a default must be given."""
    return declared.default is MISSING and declared.default_factory is MISSING


def default_of(declared: Field[Any]) -> Any:
    """The field's default (None for a required field)."""
    if declared.default is not MISSING:
        return declared.default
    if declared.default_factory is not MISSING:
        return declared.default_factory()
    return None


@dataclass(frozen=True, slots=True)
class FieldSetter:
    """A value addressable by a dotted path that is not a field of its own but a way to set one: a
    config type lists them in a `setters` class attribute beside its fields. A config file
    never holds it (an unknown key there); `wmviz.trace.config.replace_field` (a sweep's `--vary`)
    judges the value by `rule`, then sets the field `sets` to `apply(section, value)`, which raises
    a `ValueError` saying why a section cannot take it."""

    rule: Rule
    sets: str
    """The field it writes."""
    apply: Callable[[Any, Any], Any]
    read: Callable[[Any], Any]
    """Its value in a section (None: the section has none to read)."""


def setters_of(section: Any) -> Mapping[str, FieldSetter]:
    """The setters a config section's type declares (none for most)."""
    return getattr(type(section), "setters", {})


@dataclass(frozen=True, slots=True)
class DeclaredField:
    """One config field as addressed by its dotted path (`operator.size_ms`)."""

    path: str
    owner: type
    """The config type that declares it (`WindowConfig` for `operator.size_ms`)."""
    field: Field[Any]

    @property
    def rule(self) -> Rule:
        return rule_of(self.field)


def declared_fields(root: type, prefix: str = "") -> Iterator[DeclaredField]:
    """Every field under the config type `root`, sections depth first, by dotted path. A path may
    come once per type of a section with several types (an operator field of two operator types)."""
    for declared in fields(root):
        path = f"{prefix}{declared.name}"
        yield DeclaredField(path, root, declared)
        if rule_of(declared).check is Check.INPUT_SECTIONS:
            continue  # its fields are the section type's, listed where that type is a section
        for inner in rule_of(declared).sections:
            yield from declared_fields(inner, f"{path}.")
