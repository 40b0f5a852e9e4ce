"""What one cell means: the scalar rule of each `Parse`, the single authority on a cell's value.

`read(parse, value, text=...)` returns the typed value or raises `Invalid(reason)`. The vectorized
validator (`wmviz.trace.check`) applies these very functions to every value it does not compute
with Arrow kernels (each distinct string once), and its kernels only cover cases whose answer is
plain (an int64 is itself; "12" is 12); `tests/test_trace_check.py` checks the two agree cell by cell.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from wmviz.core.errors import BadInputError
from wmviz.core.scenario import Kind
from wmviz.core.settings import MAX_CHANNELS
from wmviz.core.types import Status, fits_long
from wmviz.trace.columns import CHECK_COLUMNS, KIND_NAMES, REPORTED_MS, Parse
from wmviz.trace.config import channel_budget_reason
from wmviz.trace.quote import show
from wmviz.trace.timecells import ASCII_SPACE, parse_time_ms

MAX_CHANNEL = 2**31 - 1
"""The largest channel index: channel indexes are Java ints in Flink."""
FLOAT_EXACT = 2**53
"""Up to this magnitude every integer is exact in a float64 (how pandas writes ints with nulls)."""

_INT = re.compile(r"[+-]?[0-9]+")
_CANONICAL_INT = re.compile(r"-?(0|[1-9][0-9]*)")
_LONG_DIGITS = 19
STATUS_NAMES = ", ".join(s.value for s in Status)
_KIND_BY_NAME = {k.value: k for k in Kind}
_STATUS_BY_NAME = {s.value.lower(): s for s in Status}


class Invalid(BadInputError, ValueError):
    """A cell that breaks its column's rule; the message is the reason a user reads."""


@dataclass(frozen=True, slots=True)
class Unreadable:
    """A stored value Python cannot hold (a Parquet date past year 9999, bytes that are not UTF-8).

    Readers put it where the value would be, so the cell gets an ordinary row-numbered message.
    """

    what: str

    def __str__(self) -> str:
        return self.what


def _refuse_unreadable(value: Any) -> None:
    if isinstance(value, Unreadable):
        raise Invalid(f"cannot be read: {value.what}")


def integer(value: Any) -> int:
    """An integer cell: an int, an integral float up to 2**53, or ASCII digits with an optional sign."""
    _refuse_unreadable(value)
    result: int | None = None
    if isinstance(value, int) and not isinstance(value, bool):
        result = value
    elif isinstance(value, float) and value.is_integer() and abs(value) <= FLOAT_EXACT:
        result = int(value)
    elif isinstance(value, str):
        text = value.strip(ASCII_SPACE)
        if _INT.fullmatch(text):
            if len(text.lstrip("+-").lstrip("0")) > _LONG_DIGITS:
                raise Invalid(f"{show(value)} is outside the signed 64-bit range of Flink's long")
            result = int(text)
    if result is None:
        raise Invalid(f"{show(value)} is not an integer")
    if not fits_long(result):
        raise Invalid(f"{show(result)} is outside the signed 64-bit range of Flink's long")
    return result


def channel(value: Any) -> int:
    """A channel index: a non-negative integer that fits a Java int."""
    result = integer(value)
    if result < 0:
        raise Invalid(f"{result} must be >= 0")
    if result > MAX_CHANNEL:
        raise Invalid(f"{result} is larger than the largest channel index, {MAX_CHANNEL}")
    if result >= MAX_CHANNELS.get():
        raise Invalid(f"channel {result}: {channel_budget_reason(result + 1)}")
    return result


def text(value: Any) -> str:
    """A text cell; integers (and integral floats, how pandas stores them) are read as their digits."""
    _refuse_unreadable(value)
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, float) and value.is_integer() and abs(value) <= FLOAT_EXACT:
        return str(int(value))
    raise Invalid(f"{show(value)} is not a string")


def name(value: Any) -> str:
    """`instance` or `input` before normalisation: text that is not empty."""
    result = text(value)
    if result == "":
        raise Invalid('is empty; leave it out for the default "0"')
    return result


def time(value: Any) -> int:
    """A time cell (epoch ms or ISO-8601), no sentinels."""
    _refuse_unreadable(value)
    try:
        return parse_time_ms(value, sentinels=False)
    except ValueError as exc:
        raise Invalid(str(exc)) from None


def watermark(value: Any) -> int:
    """A watermark: a time, or the MIN/MAX sentinels."""
    _refuse_unreadable(value)
    try:
        return parse_time_ms(value, sentinels=True)
    except ValueError as exc:
        raise Invalid(str(exc)) from None


def kind(value: Any) -> Kind:
    """`record`, `watermark`, `status` or `proctime`, case-insensitive."""
    member = _KIND_BY_NAME.get(value.strip(ASCII_SPACE).lower()) if isinstance(value, str) else None
    if member is None:
        raise Invalid(f"{show(value)} is not one of {KIND_NAMES}")
    return member


def status(value: Any) -> Status:
    """`ACTIVE`, `IDLE` or `FINISHED`, case-insensitive."""
    member = _STATUS_BY_NAME.get(value.strip(ASCII_SPACE).lower()) if isinstance(value, str) else None
    if member is None:
        raise Invalid(f"{show(value)} is not one of {STATUS_NAMES}")
    return member


def text_value(cell: str) -> str | int | float:
    """A CSV `value` cell: a number if the text is exactly how that number is written, else the text.

    CSV has no types, so `12` and `1.5` are read as numbers; text such as `007`, `1e3` or ` 12`
    stays a string, because turning it into a number would change what is shown.
    """
    if _CANONICAL_INT.fullmatch(cell) and len(cell) <= _LONG_DIGITS + 1:
        number = int(cell)
        return number if fits_long(number) else cell
    try:
        as_float = float(cell)
    except ValueError:
        return cell
    return as_float if math.isfinite(as_float) and repr(as_float) == cell else cell


def record_value(cell: Any, *, from_text: bool = False) -> str | int | float:
    """A record's `value`: a string or a finite number that fits Flink's long or a double."""
    _refuse_unreadable(cell)
    if isinstance(cell, str):
        return text_value(cell) if from_text else cell
    if isinstance(cell, int) and not isinstance(cell, bool):
        if not fits_long(cell):
            raise Invalid(f"{show(cell)} is outside the signed 64-bit range of Flink's long")
        return cell
    if isinstance(cell, float):
        if not math.isfinite(cell):
            raise Invalid(f"{show(cell)} is not a finite number")
        return cell
    raise Invalid(f"{show(cell)} is not a string or number")


def value_json(cell: Any, *, from_text: bool = False) -> str:
    """A record's `value` as the row table stores it: its JSON text."""
    return json.dumps(record_value(cell, from_text=from_text), ensure_ascii=False)


RULES: dict[Parse, Callable[[Any], Any]] = {
    Parse.INTEGER: integer,
    Parse.CHANNEL: channel,
    Parse.NAME: name,
    Parse.INPUT: name,
    Parse.KIND: kind,
    Parse.TIME: time,
    Parse.WATERMARK: watermark,
    Parse.STATUS: status,
    Parse.TEXT: text,
}
"""The scalar rule of every parse kind except VALUE (it depends on the format: see `value_json`)."""


def reported_ms(payload) -> int | None:
    """The watermark the job itself reported on a row (its check column, `reported_ms`), read by
    the column's rule; None when the row carries none. `payload` is a row's (name, value) pairs."""
    for name, value in payload:
        if name == REPORTED_MS and value not in (None, ""):
            return RULES[CHECK_COLUMNS[REPORTED_MS]](value)
    return None
