"""The trace row's columns, declared once (docs/trace-format.md §1).

Every reader, the validator, the writers, the row table and both engines take the columns from here:
their names and order, how a cell is read (`Parse`), for which kinds of row a cell means something,
and which cells a row of each kind needs. The config-dependent requirements (a periodic generator
needs `proc_ms` on records, a processing-time join needs it and has no event time) are here too.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from wmviz.core.scenario import IntervalJoinConfig, Kind, ScenarioConfig


class Parse(Enum):
    """How a cell's value is read; each has one scalar rule in `wmviz.trace.cellrules`."""

    INTEGER = "integer"
    CHANNEL = "channel"
    NAME = "name"
    INPUT = "input"
    KIND = "kind"
    TIME = "time"
    WATERMARK = "watermark"
    STATUS = "status"
    TEXT = "text"
    VALUE = "value"


ALL_KINDS = frozenset(Kind)


@dataclass(frozen=True, slots=True)
class Column:
    """One standard column.

    `typed`: its text is a number, time or enum, so surrounding spaces in a CSV cell are not data.
    `meaningful`: the row kinds for which a cell means something; elsewhere it is an error.
    `required`: the row kinds that need the cell (before the config-dependent rules).
    """

    name: str
    parse: Parse
    typed: bool
    meaningful: frozenset[Kind]
    required: frozenset[Kind] = frozenset()


_DATA = frozenset({Kind.RECORD, Kind.WATERMARK, Kind.STATUS})
_ON_A_CHANNEL = _DATA | {Kind.SPLIT}
# A split row's own cells, `split` and `split_event`, are payload cells (as a record's `split` is),
# declared with their values in wmviz/core/splits.py (SPLIT_CHANGES) and checked where applied.

COLUMNS: tuple[Column, ...] = (
    Column("seq", Parse.INTEGER, True, ALL_KINDS),
    Column("instance", Parse.NAME, False, ALL_KINDS),
    Column("input", Parse.INPUT, False, ALL_KINDS),
    Column("channel", Parse.CHANNEL, True, _ON_A_CHANNEL, _ON_A_CHANNEL),
    Column("kind", Parse.KIND, True, ALL_KINDS),
    Column("event_ms", Parse.TIME, True, frozenset({Kind.RECORD}), frozenset({Kind.RECORD})),
    Column("watermark_ms", Parse.WATERMARK, True, frozenset({Kind.WATERMARK}), frozenset({Kind.WATERMARK})),
    Column("status", Parse.STATUS, True, frozenset({Kind.STATUS}), frozenset({Kind.STATUS})),
    Column("proc_ms", Parse.TIME, True, ALL_KINDS, frozenset({Kind.PROCTIME})),
    Column("key", Parse.TEXT, False, frozenset({Kind.RECORD})),
    Column("value", Parse.VALUE, False, frozenset({Kind.RECORD})),
)
BY_NAME: dict[str, Column] = {c.name: c for c in COLUMNS}
STANDARD_COLUMNS: tuple[str, ...] = tuple(c.name for c in COLUMNS)
"""The standard column names in their documented order (docs/trace-format.md §1; how writers lay them out)."""
STANDARD = frozenset(STANDARD_COLUMNS)
TYPED = frozenset(c.name for c in COLUMNS if c.typed)

CHECK_ORDER: tuple[str, ...] = (
    "kind",
    "seq",
    "instance",
    "input",
    "channel",
    "event_ms",
    "watermark_ms",
    "status",
    "proc_ms",
    "key",
    "value",
)
"""The order a row's cells are judged in, which is the order of that row's messages."""

REPORTED_MS = "reported_ms"
"""The check column: the watermark the job itself reported at this row (a recording's
`currentInputWatermark`), which a replay is compared with (`wmviz.record.agreement`)."""
CHECK_COLUMNS: dict[str, Parse] = {REPORTED_MS: Parse.WATERMARK}
"""Payload columns wmviz reads itself, with the rule their cells follow. They stay payload (a trace
need not have them, and writers lay them out as payload), but a cell that breaks its rule makes its
row invalid like a standard cell would, rather than passing `validate` and failing later."""
CHECK_COLUMN_ROLE: dict[str, str] = {
    REPORTED_MS: "the job's reported watermark, a replay is checked against it"
}
"""What each check column is for, as its messages say."""

RESERVED_NAMES = frozenset({"config"})
"""Names no payload column may have: a JSON Lines line with a `config` key is a config line, so a
payload column of that name could not be written back."""

KIND_NAMES = ", ".join(k.value for k in Kind)


def required_columns(kind: Kind, config: ScenarioConfig | None) -> tuple[str, ...]:
    """The cells a row of `kind` needs, in the order they are reported when missing.

    `config` None means the config could not be read, so its requirements are unknown.
    """
    required = [c.name for c in COLUMNS if kind in c.required]
    if kind is not Kind.RECORD or config is None:
        return tuple(required)
    operator = config.operator
    if any(generator.emits_periodically for generator in config.generator_configs()):
        required.append("proc_ms")  # periodic emission runs on the proc_ms clock
    if isinstance(operator, IntervalJoinConfig):
        proc_join = operator.join_time == "proctime"
        if (proc_join or operator.time_mode == "proctime") and "proc_ms" not in required:
            # The row's time or its early-fire timer comes from the clock at arrival: a record
            # without proc_ms would silently inherit a stale clock.
            required.append("proc_ms")
        if proc_join and config.generator is None:
            required.remove("event_ms")  # a processing-time join has no event time to need
    return tuple(required)


def missing_reason(column: str, kind: Kind | None, config: ScenarioConfig | None) -> str:
    """A required cell is absent on a row (`kind` None: the kind itself is missing)."""
    if kind is None:
        return f"required; expected one of {KIND_NAMES}"
    why = ""
    if column == "proc_ms" and kind is Kind.RECORD and config is not None:
        if any(generator.emits_periodically for generator in config.generator_configs()):
            why = " (the generator emits periodically)"
        else:
            why = " (the interval join takes this record's time from the arrival clock)"
    return f"required for a {kind.value} row{why}"


def meaningless_reason(kind: Kind) -> str:
    """A cell the row's kind has no use for."""
    return f"has no meaning for a {kind.value} row; leave it empty"
