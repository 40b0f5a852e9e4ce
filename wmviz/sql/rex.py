"""The expressions of a Calc that `wmviz sql replay` computes: a projection's items and a WHERE.

A COMPILE PLAN writes them as RexNode JSON (`{"kind": "INPUT_REF", "inputIndex": 3}`, `{"kind":
"CALL", "internalName": "$CASE$1", "operands": [...]}`). The replay computes the few shapes that
carry rows in the jobs it models — a column, a literal, the CASE the planner wraps around an OVER
aggregation's SUM (`CASE WHEN COUNT > 0 THEN $SUM0 ELSE NULL`), comparisons, AND / OR / NOT,
IS [NOT] NULL, a CAST between timestamps — and `CURRENT_WATERMARK(ts)`, the dead-letter query's
test (`WHERE ts < CURRENT_WATERMARK(ts)`): the watermark the Calc had before the row, NULL while it
has none. Inside MATCH_RECOGNIZE (`wmviz.sql.plan_match`) it also computes the DEFINE conditions and
MEASURES: a pattern variable's column, LAST/FIRST(v.c, n) (a plan's `PREV(c)` is `LAST(*.c, 1)`),
FINAL, and COUNT/SUM/MIN/MAX over a variable's rows by `wmviz.core.sql_aggregates`. Anything else
is refused by name (`OperatorRefused`), so a sink fed through it is said
to be not replayed rather than filled with guesses. SQL's three-valued logic holds: a comparison
with NULL is NULL, and a WHERE keeps a row only when its condition is TRUE.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from wmviz.core.sql_aggregates import AggregateCall, Function
from wmviz.core.sql_value import SqlValue
from wmviz.core.types import MIN_MS
from wmviz.sql.model import OperatorRefused
from wmviz.sql.values import cell_ms


@dataclass(frozen=True, slots=True)
class Instant:
    """A timestamp as epoch milliseconds (what CURRENT_WATERMARK returns), compared with a column's
    timestamp text by reading that text in the session's zone."""

    ms: int


@dataclass(frozen=True, slots=True)
class Context:
    """What an expression reads besides the row: the Calc's watermark before the row, the zone,
    and inside MATCH_RECOGNIZE the rows a pattern variable holds (`pattern`)."""

    watermark_ms: int
    zone: str
    pattern: Callable[[str], Sequence[Sequence[SqlValue]]] | None = None
    """A variable's rows so far, in order (`*`: every row of the match); while a DEFINE is
    judged, the current row is the last row of `*` and of the variable being defined."""


Value = SqlValue | Instant

_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "$<$1": lambda a, b: a < b,
    "$<=$1": lambda a, b: a <= b,
    "$>$1": lambda a, b: a > b,
    "$>=$1": lambda a, b: a >= b,
    "$=$1": lambda a, b: a == b,
    "$<>$1": lambda a, b: a != b,
}
_LOGIC = {"$AND$1", "$OR$1", "$NOT$1", "$IS NULL$1", "$IS NOT NULL$1", "$CASE$1", "$CAST$1"}
_WATERMARK = "$CURRENT_WATERMARK$1"
_NAVIGATE = {"$LAST$1", "$FIRST$1"}
"""MATCH_RECOGNIZE's logical offsets: LAST(v.c, n) the n-th row of v from the end (PREV(c) is
LAST(*.c, 1) in a plan), FIRST(v.c, n) from the start; NULL past either end."""
_MATCH_AGGREGATES: dict[str, Function] = {
    "$COUNT$1": "count",
    "$SUM$1": "sum",
    "$MIN$1": "min",
    "$MAX$1": "max",
    "$AVG$1": "avg",
}
"""Aggregates over a pattern variable's rows in MEASURES, computed by `wmviz.core.sql_aggregates`."""
_FINAL = "$FINAL$1"


def check(rex: object, where: str) -> None:
    """Raise OperatorRefused (naming `where`, the Calc) unless every part of `rex` is computed here."""
    if not isinstance(rex, Mapping):
        raise OperatorRefused(f"{where}: an expression it cannot read")
    kind = rex.get("kind")
    if kind in ("INPUT_REF", "LITERAL", "PATTERN_INPUT_REF"):
        return
    name = rex.get("internalName")
    if name in _NAVIGATE or name in _MATCH_AGGREGATES or name == _FINAL:
        _check_navigation(rex, where)
        return
    if kind != "CALL" or not (name in _COMPARE or name in _LOGIC or name == _WATERMARK):
        shown = name or kind
        raise OperatorRefused(f"{where} computes {shown}, which the replay does not model")
    if name == "$CAST$1" and not _timestamp_cast(rex):
        raise OperatorRefused(f"{where} casts to {rex.get('type')}, which the replay does not model")
    for operand in rex.get("operands", ()):
        check(operand, where)


def _check_navigation(rex: Mapping[str, Any], where: str) -> None:
    """LAST/FIRST(v.c[, n]) with a constant n, an aggregate over one variable's column, FINAL."""
    name, operands = rex.get("internalName"), list(rex.get("operands", ()))
    if name == _FINAL:
        for operand in operands:
            check(operand, where)
        return
    if not operands or _alpha(operands[0]) is None:
        raise OperatorRefused(f"{where}: {name} over no pattern variable's column is not modelled")
    if name in _MATCH_AGGREGATES:
        if len(operands) != 1 or operands[0].get("kind") != "PATTERN_INPUT_REF":
            raise OperatorRefused(f"{where}: {name} over an expression, not one column, is not modelled")
        return
    offset = operands[1] if len(operands) > 1 else {"kind": "LITERAL", "value": 0}
    if offset.get("kind") != "LITERAL" or not isinstance(offset.get("value"), int):
        raise OperatorRefused(f"{where}: {name} with an offset that is not a constant is not modelled")
    check(operands[0], where)


def _alpha(rex: object) -> str | None:
    """The pattern variable a navigation's operand reads (`*`: every row), if one."""
    if not isinstance(rex, Mapping):
        return None
    if rex.get("kind") == "PATTERN_INPUT_REF":
        return str(rex.get("alpha"))
    for operand in rex.get("operands", ()):
        found = _alpha(operand)
        if found is not None:
            return found
    return None


def _timestamp_cast(rex: Mapping[str, Any]) -> bool:
    """A CAST between two timestamp types (the planner's cast of a rowtime column) changes nothing."""
    (operand,) = rex.get("operands", (None,))
    return "TIMESTAMP" in _type_text(rex.get("type")) and "TIMESTAMP" in _type_text(
        operand.get("type") if isinstance(operand, Mapping) else None
    )


def _type_text(data_type: object) -> str:
    if isinstance(data_type, Mapping):
        return str(data_type.get("type", "")).upper()
    return str(data_type or "").upper()


def evaluate(rex: Mapping[str, Any], row: Sequence[SqlValue], context: Context) -> Value:
    """The value of `rex` (already `check`ed) for one row."""
    kind = rex["kind"]
    if kind in ("INPUT_REF", "PATTERN_INPUT_REF"):
        return row[int(rex["inputIndex"])]
    if kind == "LITERAL":
        value: SqlValue = rex.get("value")
        return value
    name = rex["internalName"]
    operands = rex.get("operands", [])
    if name == _WATERMARK:
        return None if context.watermark_ms == MIN_MS else Instant(context.watermark_ms)
    if name == "$CAST$1":
        return evaluate(operands[0], row, context)
    if name == "$CASE$1":
        return _case(operands, row, context)
    if name == _FINAL:
        return evaluate(operands[0], row, context)
    if name in _NAVIGATE:
        return _navigate(name, operands, context)
    if name in _MATCH_AGGREGATES:
        return _aggregate(name, operands[0], context)
    values = [evaluate(operand, row, context) for operand in operands]
    if name in _COMPARE:
        left, right = _comparable(values[0], values[1], context)
        return None if left is None or right is None else _COMPARE[name](left, right)
    return _logic(name, values)


def _navigate(name: str, operands: Sequence[Mapping[str, Any]], context: Context) -> Value:
    """LAST(v.c, n) / FIRST(v.c, n): the expression on that row of v, NULL when v has no such row."""
    assert context.pattern is not None, "a pattern navigation outside MATCH_RECOGNIZE"
    rows = context.pattern(_alpha(operands[0]) or "*")
    n = int(operands[1]["value"]) if len(operands) > 1 else 0
    index = len(rows) - 1 - n if name == "$LAST$1" else n
    if not 0 <= index < len(rows):
        return None
    return evaluate(operands[0], rows[index], context)


def _aggregate(name: str, operand: Mapping[str, Any], context: Context) -> Value:
    """COUNT/SUM/MIN/MAX/AVG(v.c) over v's rows, by the one aggregate implementation."""
    assert context.pattern is not None, "a pattern aggregate outside MATCH_RECOGNIZE"
    column = str(operand["inputIndex"])
    call = AggregateCall(_MATCH_AGGREGATES[name], column, name)
    acc = call.empty()
    for taken in context.pattern(str(operand.get("alpha"))):
        acc = call.add(acc, {column: taken[int(operand["inputIndex"])]})
    return call.result(acc)


def _case(operands: Sequence[Mapping[str, Any]], row: Sequence[SqlValue], context: Context) -> Value:
    """CASE WHEN c1 THEN v1 [WHEN c2 THEN v2 ...] ELSE e: the first TRUE condition's value."""
    for when, then in zip(operands[:-1:2], operands[1::2], strict=False):
        if evaluate(when, row, context) is True:
            return evaluate(then, row, context)
    return evaluate(operands[-1], row, context)


def _logic(name: str, values: list[Value]) -> Value:
    """AND, OR, NOT and IS [NOT] NULL in SQL's three-valued logic."""
    if name == "$IS NULL$1":
        return values[0] is None
    if name == "$IS NOT NULL$1":
        return values[0] is not None
    if name == "$NOT$1":
        return None if values[0] is None else not values[0]
    if name == "$AND$1":
        if any(v is False for v in values):
            return False
        return None if any(v is None for v in values) else True
    if any(v is True for v in values):  # $OR$1
        return True
    return None if any(v is None for v in values) else False


def _comparable(left: Value, right: Value, context: Context) -> tuple[Any, Any]:
    """Two operands as one kind: a timestamp text beside an instant read as milliseconds."""
    if isinstance(left, Instant) or isinstance(right, Instant):
        return _ms(left, context), _ms(right, context)
    return left, right


def _ms(value: Value, context: Context) -> int | None:
    if value is None:
        return None
    if isinstance(value, Instant):
        return value.ms
    if isinstance(value, str):
        return cell_ms(value, "TIMESTAMP", context.zone)
    return int(value)


def reads_watermark(rex: Mapping[str, Any]) -> bool:
    """Whether an expression calls CURRENT_WATERMARK anywhere (a dead-letter query's WHERE)."""
    if rex.get("internalName") == _WATERMARK:
        return True
    return any(isinstance(o, Mapping) and reads_watermark(o) for o in rex.get("operands", ()))


def sql_value(value: Value) -> SqlValue:
    """A computed value as a row holds it (an instant as its milliseconds)."""
    return value.ms if isinstance(value, Instant) else value
