"""Time values of traces and configs: epoch milliseconds, ISO-8601 and the MIN/MAX sentinels.

docs/trace-format.md §1 "Times". Every time is a signed 64-bit count of milliseconds since the
epoch, exactly as Flink's `long`; nothing here rounds, truncates or wraps. Durations typed by
a person (`500ms`, `1m30s`: the command line's options, a sweep's values) are read here too.
"""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime
from fractions import Fraction
from typing import Any

from wmviz.core.errors import BadValue
from wmviz.core.types import MAX_MS, MIN_MS, fits_long, format_ms, is_epoch
from wmviz.trace.quote import show

_INT_RE = re.compile(r"[+-]?[0-9]+")  # ASCII digits only: '٣' or '𝟙' are not numbers here
_DECIMAL_RE = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
"""A decimal number as Prometheus and Flink's metrics print one (`1.7e+12`), ASCII digits only."""
_FLOAT_WORDS = frozenset({"nan", "inf", "+inf", "-inf", "infinity", "+infinity", "-infinity"})
ASCII_SPACE = " \t\r\n\f\v"
"""What `strip` removes from a cell: ASCII whitespace only, so a no-break space is data, not padding."""
_LONG_DIGITS = 19  # Long.MAX_VALUE has 19 digits: longer numbers need no conversion to be refused
# The fractional seconds of an ISO time. Dates never contain '.' or ',', so the first match is the
# seconds fraction. `datetime.fromisoformat` silently drops digits after the sixth, so the digits
# are checked here rather than trusted to the parsed value.
_FRACTION_RE = re.compile(r"[.,](\d+)")
_MIN_WORDS = frozenset({"min", "-inf"})
_MAX_WORDS = frozenset({"max", "+inf", "inf"})
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_FLOAT_EXACT = 2**53  # the largest magnitude up to which every integer is exact in a float64


def _expected(sentinels: bool) -> str:
    return (
        "an epoch-ms integer, ISO-8601 time or MIN/MAX"
        if sentinels
        else "an epoch-ms integer or ISO-8601 time"
    )


def _check_range(ms: int, original: Any) -> int:
    if not fits_long(ms):
        raise BadValue(f"{show(original)} is outside the signed 64-bit range of Flink's long")
    return ms


def _datetime_ms(dt: datetime, original: Any) -> int:
    """Epoch ms of `dt` (naive means UTC), refusing sub-millisecond parts instead of truncating."""
    if dt.microsecond % 1000 or getattr(dt, "nanosecond", 0):  # pandas.Timestamp has nanoseconds
        raise BadValue(f"{show(original)} has sub-millisecond digits; times are whole milliseconds")
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    delta = dt - _EPOCH
    # Integer arithmetic on the timedelta parts: float seconds would lose precision far from 1970.
    return _check_range(delta.days * 86_400_000 + delta.seconds * 1000 + delta.microseconds // 1000, original)


def _parse_text(value: str, sentinels: bool) -> int:
    text = value.strip(ASCII_SPACE)
    if _INT_RE.fullmatch(text):
        if len(text.lstrip("+-").lstrip("0")) > _LONG_DIGITS:
            raise BadValue(f"{show(value)} is outside the signed 64-bit range of Flink's long")
        return _check_range(int(text), value)
    lowered = text.lower()
    if lowered in _MIN_WORDS or lowered in _MAX_WORDS:
        if not sentinels:
            raise BadValue(f"{show(value)}: the MIN/MAX sentinels are only allowed for watermark_ms")
        return MIN_MS if lowered in _MIN_WORDS else MAX_MS
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise BadValue(f"{show(value)} is not {_expected(sentinels)}") from None
    fraction = _FRACTION_RE.search(text)
    if fraction and fraction.group(1)[3:].strip("0"):
        raise BadValue(f"{show(value)} has sub-millisecond digits; times are whole milliseconds")
    return _datetime_ms(parsed, value)


def parse_time_ms(value: Any, *, sentinels: bool) -> int:
    """Epoch milliseconds from a trace or config value; `ValueError(reason)` if it is not one.

    Accepts a Python int (not bool); a float only if it is exactly integral and at most 2**53 in
    magnitude (Parquet and pandas turn integer columns with nulls into float64); a `datetime`
    (naive means UTC; Parquet timestamp columns); and strings holding an optionally signed integer
    or an ISO-8601 time (`Z` accepted, no zone means UTC). Sub-millisecond digits that are not zero
    are an error, never truncated. With `sentinels=True` (watermarks only), `MIN`/`-inf` give
    Long.MIN_VALUE and `MAX`/`+inf`/`inf` give Long.MAX_VALUE, case-insensitive, and float
    infinities (a float Parquet column's only way to hold them) are read the same way; NaN is an
    error. (JSON has no infinity: the JSON Lines reader refuses `1e999` before it could become one.)
    Anything outside the signed 64-bit range is an error.
    """
    if isinstance(value, bool):
        raise BadValue(f"{show(value)} is not {_expected(sentinels)}")
    if isinstance(value, int):
        return _check_range(value, value)
    if isinstance(value, float):
        if math.isinf(value) and sentinels:
            return MAX_MS if value > 0 else MIN_MS
        if not math.isfinite(value) or not value.is_integer():
            raise BadValue(f"{show(value)} is not a whole number of milliseconds")
        if abs(value) > _FLOAT_EXACT:
            raise BadValue(f"{show(value)} is too large to be exact as a float; write it as an integer")
        return int(value)
    if isinstance(value, datetime):
        return _datetime_ms(value, value.isoformat())
    if isinstance(value, str):
        return _parse_text(value, sentinels)
    raise BadValue(f"{show(value)} is not {_expected(sentinels)}")


def ascii_int(text: str) -> int:
    """An optionally signed integer written in ASCII digits, the readers' rule for every number
    (`int()` would also take `٣`, `１` or `1_000`); ValueError if it is not one or is beyond a long."""
    cleaned = text.strip(ASCII_SPACE)
    if not _INT_RE.fullmatch(cleaned):
        raise BadValue(f"{show(text)} is not an integer (ASCII digits)")
    if len(cleaned.lstrip("+-").lstrip("0")) > _LONG_DIGITS:
        raise BadValue(f"{show(text)} is outside the signed 64-bit range of Flink's long")
    return int(cleaned)


def ascii_float(text: str) -> float:
    """A decimal number in ASCII digits (an exponent, `inf`, `NaN` allowed) as a float; ValueError
    otherwise (`float()` would also take `٣.٥`)."""
    cleaned = text.strip(ASCII_SPACE)
    if not (_DECIMAL_RE.fullmatch(cleaned) or cleaned.lower() in _FLOAT_WORDS):
        raise BadValue(f"{show(text)} is not a number (ASCII digits)")
    return float(cleaned)


def said_time_ms(ms: int) -> str:
    """A time in a message: an instant as its UTC ISO time (`2026-11-21T10:00:05Z`, milliseconds
    when it has them), any other value as its number (`MIN`/`MAX` by name)."""
    if not is_epoch(ms):
        return format_ms(ms)
    text = datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3]
    return (text[:-4] if text.endswith(".000") else text) + "Z"


def format_time_ms(ms: int) -> str:
    """`MIN`, `MAX` or the plain integer: how writers put a time into a text cell."""
    return format_ms(ms)


_UNITS_MS = {"ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}
_PART = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ms|min|s|m|h|d)")  # ASCII digits, as every number
_NUMBER_DIGITS = 40  # no part of a duration within a long is longer; longer ones are not parsed


def parse_duration_ms(text: str, option: str) -> int:
    """`500ms`, `1s`, `1.5s`, `10m`, `1h30m` (or a bare number of milliseconds) as milliseconds.

    Exact (fractions, not floats) and within a long: a 400-digit duration is an error, not infinity.
    """
    cleaned = text.strip().lower().replace(" ", "")
    if re.fullmatch(r"[0-9]+", cleaned):
        parts = [(cleaned, "ms")]
    else:
        parts, pos = [], 0
        for match in _PART.finditer(cleaned):
            if match.start() != pos:
                break
            parts.append((match.group(1), match.group(2)))
            pos = match.end()
        if pos != len(cleaned) or not cleaned:
            raise BadValue(f"{option} {text!r}: expected a duration such as 500ms, 1s, 10m or 1h30m")
    if any(len(number) > _NUMBER_DIGITS for number, _ in parts):
        raise BadValue(f"{option} {show(text)} is outside the signed 64-bit range of Flink's long")
    total = round(sum(Fraction(number) * _UNITS_MS[unit] for number, unit in parts))
    if total > MAX_MS:
        raise BadValue(f"{option} {show(text)} is outside the signed 64-bit range of Flink's long")
    return total
