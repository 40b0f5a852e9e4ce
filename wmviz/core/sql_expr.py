"""A SQL watermark expression, as the small typed tree wmviz evaluates (docs/sql.md).

`WATERMARK FOR ts AS ts - INTERVAL '5' SECOND` reaches wmviz in three spellings: the SQL text of a
`CREATE TABLE`, the RexNode JSON of a `COMPILE PLAN` and the digest of `EXPLAIN` or a REST plan
(`-(ts, 5000:INTERVAL SECOND)`). Each reader in `wmviz.sql` translates its spelling into this tree
and refuses any other shape by name; the evaluation below is the one place the arithmetic lives, so
every engine and every reader agree on what a watermark expression gives.

Values are 64-bit milliseconds in the representation Flink keeps for each type, which is also the
watermark Flink emits for a rowtime of that type:
- `TIMESTAMP(p)`: the wall-clock reading taken as if it were UTC (Flink's `TimestampData` of a
  zone-less timestamp), so `2026-03-29 02:30:00` is the same number in every zone;
- `TIMESTAMP_LTZ(p)`: the instant, epoch milliseconds;
- a number (`BIGINT`, `INT`): itself.
Converting between the first two needs `table.local-time-zone`, as in Flink.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal
from zoneinfo import ZoneInfo

from wmviz.core.errors import Refused

TypeKind = Literal["TIMESTAMP", "TIMESTAMP_LTZ", "NUMBER"]


@dataclass(frozen=True, slots=True)
class Column:
    """A column of the table, by name (the rowtime column, or a physical column a computed one reads)."""

    name: str


@dataclass(frozen=True, slots=True)
class Shifted:
    """`operand ± INTERVAL …` (day-to-second intervals only): `by_ms` is negative for a minus."""

    operand: Expr
    by_ms: int


@dataclass(frozen=True, slots=True)
class CastTo:
    """`CAST(operand AS TIMESTAMP(p))` or `AS TIMESTAMP_LTZ(p)`: crossing the two needs the zone."""

    operand: Expr
    target: Literal["TIMESTAMP", "TIMESTAMP_LTZ"]
    precision: int = 3


@dataclass(frozen=True, slots=True)
class ToTimestampLtz:
    """`TO_TIMESTAMP_LTZ(operand, precision)`: epoch seconds (precision 0) or milliseconds (3)."""

    operand: Expr
    precision: Literal[0, 3] = 3


Expr = Column | Shifted | CastTo | ToTimestampLtz


class UnsupportedExpression(Refused, ValueError):
    """A watermark expression of a shape wmviz does not evaluate; the message names the shape."""


def columns_read(expr: Expr) -> list[str]:
    """The columns an expression reads, in order of first appearance."""
    if isinstance(expr, Column):
        return [expr.name]
    return columns_read(expr.operand)


def result_kind(expr: Expr, column_kinds: Mapping[str, TypeKind]) -> TypeKind:
    """The type an expression gives, from the types of the columns it reads."""
    if isinstance(expr, Column):
        if expr.name not in column_kinds:
            raise UnsupportedExpression(f"the expression reads column {expr.name!r}, which the table has not")
        return column_kinds[expr.name]
    if isinstance(expr, Shifted):
        return result_kind(expr.operand, column_kinds)
    if isinstance(expr, CastTo):
        return expr.target
    return "TIMESTAMP_LTZ"


def evaluate(expr: Expr, row: Mapping[str, int], column_kinds: Mapping[str, TypeKind], zone: str) -> int:
    """The expression's value for one row, in the millisecond representation of its type.

    `row` holds each column read as milliseconds in its own type's representation (see the module
    docstring); `zone` is `table.local-time-zone` (an IANA name, or `UTC`).
    """
    if isinstance(expr, Column):
        return row[expr.name]
    if isinstance(expr, Shifted):
        return evaluate(expr.operand, row, column_kinds, zone) + expr.by_ms
    if isinstance(expr, ToTimestampLtz):
        value = evaluate(expr.operand, row, column_kinds, zone)
        return value * 1000 if expr.precision == 0 else value
    value = evaluate(expr.operand, row, column_kinds, zone)
    source = result_kind(expr.operand, column_kinds)
    if source == expr.target or source == "NUMBER":
        return value
    if expr.target == "TIMESTAMP":
        return local_ms_of_instant(value, zone)
    return instant_of_local_ms(value, zone)


_EPOCH = datetime(1970, 1, 1)


def local_ms_of_instant(epoch_ms: int, zone: str) -> int:
    """The wall-clock reading in `zone` at an instant, taken as if UTC (LTZ → TIMESTAMP)."""
    instant = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=epoch_ms)
    offset = instant.astimezone(ZoneInfo(zone)).utcoffset() or timedelta(0)
    return epoch_ms + offset // timedelta(milliseconds=1)


def instant_of_local_ms(local_ms: int, zone: str) -> int:
    """The instant a wall-clock reading in `zone` names (TIMESTAMP → LTZ).

    In an overlap (clocks turned back) the earlier instant, and in a gap (clocks turned forward)
    the reading is moved forward by the gap, as Java's `LocalDateTime.atZone` does; Python's
    `fold=0` gives the offset before the transition in both cases, which is the same answer.
    """
    local = _EPOCH + timedelta(milliseconds=local_ms)
    offset = local.replace(tzinfo=ZoneInfo(zone), fold=0).utcoffset() or timedelta(0)
    return local_ms - offset // timedelta(milliseconds=1)


# ---- the delay of `col - INTERVAL …` (the sweepable `generator.watermark_delay_ms`) ------------


def watermark_delay_ms(expr: Expr | None) -> int | None:
    """How far behind its column the watermark stays, when the expression is `col - INTERVAL …`
    (or the column alone, a delay of 0: `WATERMARK FOR ts AS ts`); None for any other form."""
    if isinstance(expr, Column):
        return 0
    if isinstance(expr, Shifted) and isinstance(expr.operand, Column) and expr.by_ms <= 0:
        return -expr.by_ms
    return None


def with_watermark_delay(expr: Expr | None, delay_ms: int) -> Expr:
    """`expr` with its interval set to `delay_ms` (0: the column alone, as `WATERMARK FOR ts AS
    ts` is written). Only `col - INTERVAL …` has a delay to set: a cast, `TO_TIMESTAMP_LTZ` or a
    plus shift changes what the delay means, so any other form is refused by name rather than
    guessed at."""
    if expr is None:
        raise UnsupportedExpression("the generator has no SQL WATERMARK expression (a SQL style sets one)")
    if watermark_delay_ms(expr) is None:
        raise UnsupportedExpression(
            f"the WATERMARK expression {expr_text(expr)} is not of the form col - INTERVAL …,"
            " whose interval this sets; vary generator.expression instead"
        )
    column = expr if isinstance(expr, Column) else expr.operand
    return column if delay_ms == 0 else Shifted(column, -delay_ms)


# ---- the config's spelling (docs/trace-format.md, "SQL watermarks") ------------------------------
#
# A trace's config writes the tree as JSON, one object per node, so no SQL is parsed here:
#   "ts"                                        Column("ts")
#   {"shift_ms": -5000, "of": E}                Shifted(E, -5000)       (ts - INTERVAL '5' SECOND)
#   {"cast": "TIMESTAMP_LTZ", "of": E}          CastTo(E, "TIMESTAMP_LTZ", 3)  ("precision" optional)
#   {"to_timestamp_ltz": 0, "of": E}            ToTimestampLtz(E, 0)

_NODE_KEYS = {"shift_ms", "cast", "to_timestamp_ltz"}


def expr_from_json(value: object, where: str = "expression") -> Expr:
    """The tree a config's JSON spelling names; `UnsupportedExpression` naming the node otherwise."""
    if isinstance(value, str):
        if not value.strip():
            raise UnsupportedExpression(f"{where}: a column name is empty")
        return Column(value.strip())
    if not isinstance(value, dict):
        raise UnsupportedExpression(f"{where}: {value!r} is neither a column name nor an object")
    kinds = _NODE_KEYS & set(value)
    extra = set(value) - _NODE_KEYS - {"of", "precision"}
    if len(kinds) != 1 or extra:
        raise UnsupportedExpression(
            f"{where}: an object needs exactly one of shift_ms, cast, to_timestamp_ltz and an `of`"
            + (f" (unknown: {', '.join(sorted(extra))})" if extra else "")
        )
    (kind,) = kinds
    if "of" not in value:
        raise UnsupportedExpression(f"{where}.{kind}: needs `of`, the expression it applies to")
    return _node_from_json(kind, value, expr_from_json(value["of"], f"{where}.of"), where)


def _node_from_json(kind: str, value: dict, operand: Expr, where: str) -> Expr:
    """One node of the config's spelling, its operand already read."""
    arg = value[kind]
    if kind == "shift_ms":
        if isinstance(arg, bool) or not isinstance(arg, int):
            raise UnsupportedExpression(f"{where}.shift_ms: {arg!r} is not an integer of milliseconds")
        return Shifted(operand, arg)
    if kind == "cast":
        precision = value.get("precision", 3)
        if arg not in ("TIMESTAMP", "TIMESTAMP_LTZ"):
            raise UnsupportedExpression(f"{where}.cast: {arg!r} is not TIMESTAMP or TIMESTAMP_LTZ")
        if isinstance(precision, bool) or precision not in range(10):
            raise UnsupportedExpression(f"{where}.precision: {precision!r} is not 0..9")
        return CastTo(operand, arg, precision)
    if arg not in (0, 3) or isinstance(arg, bool):
        raise UnsupportedExpression(f"{where}.to_timestamp_ltz: precision {arg!r} is not 0 or 3")
    return ToTimestampLtz(operand, arg)


def expr_to_json(expr: Expr) -> object:
    """The config's JSON spelling of a tree (`expr_from_json(expr_to_json(e)) == e`)."""
    if isinstance(expr, Column):
        return expr.name
    if isinstance(expr, Shifted):
        return {"shift_ms": expr.by_ms, "of": expr_to_json(expr.operand)}
    if isinstance(expr, CastTo):
        return {"cast": expr.target, "precision": expr.precision, "of": expr_to_json(expr.operand)}
    return {"to_timestamp_ltz": expr.precision, "of": expr_to_json(expr.operand)}


def expr_text(expr: Expr) -> str:
    """The expression as a person reads it: `ts − 5 s`, `CAST(ts AS TIMESTAMP_LTZ(3))`."""
    if isinstance(expr, Column):
        return expr.name
    if isinstance(expr, Shifted):
        sign = "−" if expr.by_ms < 0 else "+"
        size = abs(expr.by_ms)
        amount = f"{size // 1000} s" if size % 1000 == 0 and size else f"{size} ms"
        return f"{expr_text(expr.operand)} {sign} {amount}"
    if isinstance(expr, CastTo):
        return f"CAST({expr_text(expr.operand)} AS {expr.target}({expr.precision}))"
    return f"TO_TIMESTAMP_LTZ({expr_text(expr.operand)}, {expr.precision})"
