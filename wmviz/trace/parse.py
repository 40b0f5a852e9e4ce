"""Apply one column's rule to a whole raw column at once.

For each lane, plain cases run as Arrow/numpy kernels (an int64 is itself; ASCII digits cast to
int64; text is text), and every other cell goes through the scalar rule of `wmviz.trace.cellrules`
(each distinct value once, the outcome mapped back to every cell holding it), so the outcome is the
scalar rule's for every cell. Booleans, nested values and values Python cannot hold always take
the scalar rule, which refuses them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from wmviz.core.settings import MAX_CHANNELS
from wmviz.core.types import MAX_MS
from wmviz.trace import cellrules
from wmviz.trace.cellrules import FLOAT_EXACT, MAX_CHANNEL, Invalid
from wmviz.trace.columns import Parse
from wmviz.trace.raw import FLOAT, INT, PY, STR, TIMESTAMP, Lane, RawColumn

_SPACE = " \t\r\n\f\v"
_INT_TEXT = r"^[ \t\r\n\f\v]*[+-]?[0-9]{1,18}[ \t\r\n\f\v]*$"
_TIME_UNITS = {"s": None, "ms": 1, "us": 1_000, "ns": 1_000_000}
INT_PARSES = frozenset({Parse.INTEGER, Parse.CHANNEL, Parse.TIME, Parse.WATERMARK})
_CANONICAL: dict[Parse, Callable[[Any], Any]] = {
    Parse.KIND: lambda v: cellrules.kind(v).value,
    Parse.STATUS: lambda v: cellrules.status(v).value,
}


@dataclass(slots=True)
class Parsed:
    """A column after its rule: `values` (int64 numpy + `valid`, or an Arrow string array), the
    cells that broke the rule (`bad`), and `reason(index)` saying why for a bad cell."""

    values: Any
    valid: np.ndarray
    bad: np.ndarray
    reason: Callable[[int], str]
    is_text: np.ndarray | None = None  # VALUE: the value is a string (not a number)


class _Reasons:
    """Why each bad cell broke the rule, kept per distinct value until a message needs it."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.parts: list[tuple[np.ndarray, list[str | None]]] = []  # (cell -> slot or -1, slot texts)
        self.single: dict[int, str] = {}

    def add_distinct(self, cells: np.ndarray, slots: np.ndarray, texts: list[str | None]) -> None:
        where = np.full(self.n, -1, np.int64)
        where[cells] = slots
        self.parts.append((where, texts))

    def __call__(self, index: int) -> str:
        if index in self.single:
            return self.single[index]
        for where, texts in self.parts:
            slot = where[index]
            if slot >= 0 and texts[slot] is not None:
                return texts[slot]
        raise KeyError(index)


def parse_column(column: RawColumn, parse: Parse, judge: np.ndarray, *, from_text: bool = False) -> Parsed:
    """The rule of `parse` over the cells of `column` selected by `judge`."""
    if parse in INT_PARSES:
        return _parse_int(column, parse, judge)
    return _parse_text(column, parse, judge, from_text)


# ---- integers and times ------------------------------------------------------------------------


def _parse_int(column: RawColumn, parse: Parse, judge: np.ndarray) -> Parsed:
    n = column.length
    values = np.zeros(n, np.int64)
    valid = np.zeros(n, bool)
    bad = np.zeros(n, bool)
    reasons = _Reasons(n)
    rule = cellrules.RULES[parse]
    for lane in column.lanes:
        here = lane.present() & judge
        if not here.any():
            continue
        plain, plain_values = _int_kernel(lane, parse, here)
        if parse is Parse.CHANNEL:  # out of range: the scalar rule says why
            plain &= (plain_values >= 0) & (plain_values < min(MAX_CHANNEL, MAX_CHANNELS.get()))
        values[plain] = plain_values[plain]
        valid |= plain
        rest = here & ~plain
        if not rest.any():
            continue
        if lane.kind in (STR, FLOAT):
            cells, slots, distinct = _distinct(lane.values, rest)
            outcomes = [_apply(rule, cell) for cell in distinct]
            good = np.array([ok for ok, _ in outcomes], bool)
            results = np.array([r if ok else 0 for ok, r in outcomes], np.int64)
            values[cells] = results[slots]
            valid[cells] = good[slots]
            bad[cells] = ~good[slots]
            reasons.add_distinct(cells, slots, [None if ok else r for ok, r in outcomes])
        else:
            for index in np.flatnonzero(rest).tolist():
                ok, result = _apply(rule, lane.python(index))
                if ok:
                    values[index], valid[index] = result, True
                else:
                    bad[index], reasons.single[index] = True, result
    return Parsed(values, valid, bad, reasons)


def _int_kernel(lane: Lane, parse: Parse, here: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cells whose integer is plain (mask) and their values; the rest go to the scalar rule."""
    n = len(here)
    none = np.zeros(n, bool)
    if lane.kind == INT:
        return here.copy(), _ints(lane.values)
    if lane.kind == FLOAT:
        floats = lane.values.fill_null(0.0).to_numpy(zero_copy_only=False)
        with np.errstate(invalid="ignore"):
            integral = np.isfinite(floats) & (np.floor(floats) == floats) & (np.abs(floats) <= FLOAT_EXACT)
        plain = here & integral
        return plain, np.where(plain, floats, 0).astype(np.int64)
    if lane.kind == STR:
        digits = pc.fill_null(pc.match_substring_regex(lane.values, _INT_TEXT), False)
        plain = here & digits.to_numpy(zero_copy_only=False)
        if not plain.any():
            return none, np.zeros(n, np.int64)
        text = pc.utf8_trim(pc.if_else(digits, lane.values, pa.scalar(None, pa.string())), _SPACE)
        return plain, _ints(pc.replace_substring_regex(text, r"^\+", "").cast(pa.int64()))
    if lane.kind == TIMESTAMP and parse in (Parse.TIME, Parse.WATERMARK):
        raw = _ints(lane.values.cast(pa.int64()))
        per_ms = _TIME_UNITS[lane.unit or "ms"]
        if per_ms is None:  # seconds: exact, unless beyond the range of a long in ms
            plain = here & (np.abs(raw) <= MAX_MS // 1000)
            return plain, np.where(plain, raw, 0) * 1000
        plain = here & (raw % per_ms == 0)
        return plain, raw // per_ms
    return none, np.zeros(n, np.int64)


def _ints(values: pa.Array) -> np.ndarray:
    return values.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64, copy=False)


# ---- text, names, enums and a record's value ---------------------------------------------------


def _parse_text(column: RawColumn, parse: Parse, judge: np.ndarray, from_text: bool) -> Parsed:
    """Columns whose result is text (names, enums as canonical names, a value as JSON text)."""
    n = column.length
    out: pa.Array = pa.nulls(n, pa.string())
    valid = np.zeros(n, bool)
    bad = np.zeros(n, bool)
    is_text = np.zeros(n, bool) if parse is Parse.VALUE else None
    reasons = _Reasons(n)
    rule = _text_rule(parse, from_text)
    for lane in column.lanes:
        here = lane.present() & judge
        if not here.any():
            continue
        direct = _text_kernel(lane, parse, from_text)
        if direct is not None:
            out = pc.if_else(pa.array(here), direct, out)
            valid |= here
            if is_text is not None and lane.kind == STR:
                is_text |= here
            continue
        if lane.kind in (PY, TIMESTAMP):  # values Python may not hold: one cell at a time
            cells = np.flatnonzero(here)
            distinct = [lane.python(i) for i in cells.tolist()]
            slots = np.arange(len(cells))
        else:
            cells, slots, distinct = _distinct(lane.values, here)
        outcomes = [_apply(rule, cell) for cell in distinct]
        good = np.array([ok for ok, _ in outcomes], bool)
        texts = pa.array([r[0] if ok else None for ok, r in outcomes], pa.string())
        everywhere = np.full(n, -1, np.int64)
        everywhere[cells] = slots
        out = pc.if_else(pa.array(here), texts.take(pa.array(everywhere, mask=everywhere < 0)), out)
        valid[cells] = good[slots]
        bad[cells] = ~good[slots]
        if is_text is not None:
            flags = np.array([ok and r[1] for ok, r in outcomes], bool)
            is_text[cells] = flags[slots]
        reasons.add_distinct(cells, slots, [None if ok else r for ok, r in outcomes])
    return Parsed(out, valid, bad, reasons, is_text)


def _text_rule(parse: Parse, from_text: bool) -> Callable[[Any], tuple[str, bool]]:
    """The scalar rule, returning (text to store, whether it is a string value)."""
    if parse is Parse.VALUE:

        def value(cell: Any) -> tuple[str, bool]:
            result = cellrules.record_value(cell, from_text=from_text)
            return json.dumps(result, ensure_ascii=False), isinstance(result, str)

        return value
    scalar = _CANONICAL.get(parse) or cellrules.RULES[parse]
    return lambda cell: (scalar(cell), True)


def _text_kernel(lane: Lane, parse: Parse, from_text: bool) -> pa.Array | None:
    """The whole lane's result when it is plain (text is text; an int64 is its digits), else None."""
    if lane.kind == STR and parse is Parse.TEXT:
        return lane.values
    if lane.kind == INT and parse in (Parse.TEXT, Parse.NAME, Parse.INPUT, Parse.VALUE):
        return lane.values.cast(pa.string())
    if lane.kind == STR and parse is Parse.VALUE and not from_text:
        return None  # JSON-escaping a string takes Python (each distinct string once)
    return None


# ---- the scalar rule over distinct values ------------------------------------------------------


def _distinct(values: pa.Array, here: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[Any]]:
    """The selected cells, each one's slot among the distinct values, and those values."""
    cells = np.flatnonzero(here)
    encoded = pc.dictionary_encode(values.take(pa.array(cells)))
    slots = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    return cells, slots, encoded.dictionary.to_pylist()


def _apply(rule: Callable[[Any], Any], cell: Any) -> tuple[bool, Any]:
    try:
        return True, rule(cell)
    except Invalid as exc:
        return False, str(exc)
