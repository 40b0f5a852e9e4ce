"""How a source table's watermark settings resolve: which value wins and where it came from.

Every reader brings what its input shows as `scan.watermark.*` values with their origins (a `.sql`
script tells a hint from a table option; a COMPILE PLAN has them merged, or only as the values its
push-down spec states) and the global `table.exec.source.idle-timeout`; `resolve` applies Flink's
rules once:
- the per-table `scan.watermark.idle-timeout` beats the global option whenever it is set, and a
  value of 0 switches idleness off even where the global one is set; the global one counts only
  when positive (Flink's `WatermarkPushDownSpec`);
- `scan.watermark.emit.strategy` defaults to `on-periodic`;
- alignment is on only with a group, a positive max drift and a positive update interval, the
  interval defaulting to 1 s (`WatermarkParams.alignWatermarkEnabled`).
These apply where the watermark is pushed into the source. A separate WatermarkAssigner reads none
of the `scan.watermark.*` options: its idleness is the global option alone.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from wmviz.sql.digest import duration_ms
from wmviz.sql.model import Alignment, EmitStrategy, Origin, Setting

EMIT = "scan.watermark.emit.strategy"
IDLE = "scan.watermark.idle-timeout"
GROUP = "scan.watermark.alignment.group"
DRIFT = "scan.watermark.alignment.max-drift"
UPDATE = "scan.watermark.alignment.update-interval"
GLOBAL_IDLE = "table.exec.source.idle-timeout"
LOCAL_TIME_ZONE = "table.local-time-zone"


@dataclass(frozen=True, slots=True)
class OptionRule:
    """A `scan.watermark.*` option: how its text reads, and the value Flink takes without it."""

    key: str
    parse: str
    default: Any


OPTION_RULES: dict[str, OptionRule] = {
    r.key: r
    for r in (
        OptionRule(EMIT, "emit", "on-periodic"),
        OptionRule(IDLE, "duration", None),
        OptionRule(GROUP, "text", None),
        OptionRule(DRIFT, "duration", None),
        OptionRule(UPDATE, "duration", 1000),
    )
}
"""The watermark options of a table, declared once: `.sql` option text and plan values meet here."""

_UNITS = {
    "ns": 1e-6, "nano": 1e-6, "nanos": 1e-6, "nanosecond": 1e-6, "nanoseconds": 1e-6,
    "us": 1e-3, "µs": 1e-3, "micro": 1e-3, "micros": 1e-3, "microsecond": 1e-3, "microseconds": 1e-3,
    "ms": 1, "milli": 1, "millis": 1, "millisecond": 1, "milliseconds": 1, "": 1,
    "s": 1000, "sec": 1000, "secs": 1000, "second": 1000, "seconds": 1000,
    "m": 60_000, "min": 60_000, "mins": 60_000, "minute": 60_000, "minutes": 60_000,
    "h": 3_600_000, "hour": 3_600_000, "hours": 3_600_000,
    "d": 86_400_000, "day": 86_400_000, "days": 86_400_000,
}  # fmt: skip


def parse_duration_ms(text: str) -> int:
    """A duration option's text as Flink reads it (`5 s`, `5s`, `1min`, `500 ms`, `PT5S`, a bare
    number of ms), in ms; ValueError naming the text otherwise."""
    iso = duration_ms(text) if text.strip().upper().startswith("PT") else None
    if iso is not None:
        return iso
    match = re.fullmatch(r"\s*(\d+)\s*([a-zµ]*)\s*", text.lower())
    if not match or match.group(2) not in _UNITS:
        raise ValueError(f"{text!r} is not a duration (e.g. '5 s', '1 min', '500 ms')")
    return int(int(match.group(1)) * _UNITS[match.group(2)])


def parse_option(key: str, text: str) -> Any:
    """One `scan.watermark.*` option's text as its value (ValueError when it does not read)."""
    rule = OPTION_RULES[key].parse
    if rule == "duration":
        return parse_duration_ms(text)
    if rule == "emit":
        value = text.strip().lower().replace("_", "-")
        if value not in ("on-event", "on-periodic"):
            raise ValueError(f"{text!r} is not an emit strategy: on-event or on-periodic")
        return value
    return text


def _given(values: Mapping[str, Setting[Any]], key: str) -> Setting[Any]:
    """The value the input shows for `key`, or Flink's default."""
    return values.get(key) or Setting(OPTION_RULES[key].default, Origin.DEFAULT)


def idle_timeout(values: Mapping[str, Setting[Any]], global_idle: Setting[int]) -> Setting[int]:
    """A pushed-down watermark's idle timeout: the table's own wins when set (0 = off), else the
    global one when positive, else none."""
    own = values.get(IDLE)
    if own is not None and own.value is not None and own.value >= 0:
        return Setting(own.value or None, own.origin, "0 switches idleness off" if own.value == 0 else "")
    if global_idle.value:
        return Setting(global_idle.value, global_idle.origin, global_idle.note)
    return Setting(None, global_idle.origin if global_idle.origin is not Origin.GLOBAL else Origin.DEFAULT)


def emit(values: Mapping[str, Setting[Any]]) -> Setting[EmitStrategy]:
    """A pushed-down watermark's emit strategy."""
    return _given(values, EMIT)


def alignment(values: Mapping[str, Setting[Any]]) -> Alignment | None:
    """A pushed-down watermark's alignment settings, or None when no alignment option is given."""
    if not any(k in values for k in (GROUP, DRIFT, UPDATE)):
        return None
    return Alignment(_given(values, GROUP), _given(values, DRIFT), _given(values, UPDATE))


def global_idle_timeout(config: Mapping[str, str], origin: Origin = Origin.GLOBAL) -> Setting[int]:
    """`table.exec.source.idle-timeout` from the options a person set (default 0: off)."""
    text = config.get(GLOBAL_IDLE)
    if text is None:
        return Setting(None, Origin.DEFAULT)
    return Setting(parse_duration_ms(text) or None, origin)
