"""Cells as a reader found them, before any rule is applied: a batch of rows as Arrow arrays.

A CSV column is text; a Parquet column has one Arrow type; a JSON Lines column can mix strings,
numbers, booleans and nested values from row to row. `RawColumn` holds one *lane* per kind of
value present, each a full-length array that is null where the cell is absent or in another lane,
so the validator can apply one Arrow kernel per lane and still see every cell exactly as written.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from wmviz.core.types import MAX_MS, MIN_MS
from wmviz.trace.cellrules import Unreadable

STR, INT, FLOAT, BOOL, TIMESTAMP, PY = "str", "int", "float", "bool", "timestamp", "py"


@dataclass(slots=True)
class Lane:
    """One kind of value of a column. `values` is an Arrow array (a Python list for `PY`)."""

    kind: str
    values: Any
    unit: str | None = None  # TIMESTAMP: s, ms, us or ns
    _present: np.ndarray | None = None

    def present(self) -> np.ndarray:
        """Where this lane holds a cell (computed once)."""
        if self._present is None:
            if self.kind == PY:
                self._present = np.fromiter((v is not None for v in self.values), bool, len(self.values))
            else:
                self._present = self.values.is_valid().to_numpy(zero_copy_only=False)
        return self._present

    def python(self, index: int) -> Any:
        """The cell at `index` as a Python value (for messages and the scalar rules)."""
        if self.kind == PY:
            return self.values[index]
        return _safe_scalar(self.values, index)


@dataclass(frozen=True, slots=True)
class RawColumn:
    """A column's cells in lanes; a cell is in at most one lane."""

    lanes: tuple[Lane, ...]
    length: int

    def present(self) -> np.ndarray:
        mask = np.zeros(self.length, bool)
        for lane in self.lanes:
            mask |= lane.present()
        return mask

    def python(self, index: int) -> Any:
        for lane in self.lanes:
            cell = lane.python(index)
            if cell is not None:
                return cell
        return None

    def pylist(self) -> list[Any]:
        """Every cell as a Python value (None where absent)."""
        if len(self.lanes) == 1 and self.lanes[0].kind == PY:
            return list(self.lanes[0].values)
        out: list[Any] = [None] * self.length
        for lane in self.lanes:
            values = lane.values if lane.kind == PY else safe_pylist(lane.values)
            for i in np.flatnonzero(lane.present()):
                out[i] = values[i]
        return out


@dataclass(slots=True)
class RawBatch:
    """Rows as read: their row numbers, standard columns by name, payload columns in file order.

    `payload_rows` replaces `payload` for JSON Lines, whose rows each name their own extra keys.
    `labels` renames columns in messages (the compact format's `ch` and `wm`). `compact_channels`
    holds the compact format's `{"channels": N}` per instance.
    """

    rows: np.ndarray
    columns: dict[str, RawColumn]
    payload: list[tuple[str, RawColumn]] = field(default_factory=list)
    payload_rows: list[list[tuple[str, Any]]] | None = None
    text: bool = False
    labels: dict[str, str] = field(default_factory=dict)
    compact_channels: dict[str, int] = field(default_factory=dict)

    @property
    def length(self) -> int:
        return len(self.rows)


# ---- builders -------------------------------------------------------------------------------------


def from_text(values: pa.Array, *, strip: bool) -> RawColumn:
    """A CSV column: text, with "" meaning absent (after stripping ASCII spaces for typed columns)."""
    if values.type != pa.string():
        values = values.cast(pa.string())
    if strip:
        values = pc.utf8_trim(values, characters=" \t\r\n\f\v")
    values = pc.if_else(pc.equal(values, ""), pa.scalar(None, pa.string()), values)
    return RawColumn((Lane(STR, values),), len(values))


def from_arrow(values: pa.Array) -> RawColumn:
    """A Parquet column: one lane for its type; NaN in a float column means absent (pandas' null)."""
    n = len(values)
    kind = values.type
    if pa.types.is_dictionary(kind):
        return from_arrow(values.dictionary_decode())
    if pa.types.is_null(kind):
        return RawColumn((), n)
    if pa.types.is_integer(kind):
        if kind == pa.uint64():
            too_big = pc.fill_null(pc.greater(values, pa.scalar(MAX_MS, kind)), False)
            if pc.any(too_big).as_py():
                # Beyond Long.MAX_VALUE: kept as Python ints so the rule reports the range.
                big = pc.if_else(too_big, values, pa.scalar(None, kind))
                small = pc.if_else(too_big, pa.scalar(None, kind), values)
                return RawColumn((Lane(INT, small.cast(pa.int64())), Lane(PY, big.to_pylist())), n)
        return RawColumn((Lane(INT, values.cast(pa.int64())),), n)
    if pa.types.is_floating(kind):
        values = values.cast(pa.float64())
        values = pc.if_else(pc.is_nan(values), pa.scalar(None, pa.float64()), values)
        return RawColumn((Lane(FLOAT, values),), n)
    if pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_string_view(kind):
        return _checked_text(values.cast(pa.string()))
    if pa.types.is_boolean(kind):
        return RawColumn((Lane(BOOL, values),), n)
    if pa.types.is_timestamp(kind):
        return RawColumn((Lane(TIMESTAMP, values, kind.unit),), n)
    return RawColumn((Lane(PY, safe_pylist(values)),), n)


def from_python(values: Sequence[Any]) -> RawColumn:
    """A JSON Lines column: lanes by Python type (str, int, float, bool, and anything else)."""
    n = len(values)
    types = {type(v) for v in values}
    types.discard(type(None))
    if types <= {str}:
        return RawColumn((Lane(STR, pa.array(values, pa.string())),) if types else (), n)
    if types == {int} and all(MIN_MS <= v <= MAX_MS for v in values if v is not None):
        return RawColumn((Lane(INT, pa.array(values, pa.int64())),), n)
    buckets: dict[str, list[Any]] = {}
    for i, cell in enumerate(values):
        if cell is None:
            continue
        lane = _python_lane(cell)
        buckets.setdefault(lane, [None] * n)[i] = cell
    lanes = []
    arrow_types = {STR: pa.string(), INT: pa.int64(), FLOAT: pa.float64(), BOOL: pa.bool_()}
    for lane, cells in buckets.items():
        lanes.append(Lane(lane, cells if lane == PY else pa.array(cells, arrow_types[lane])))
    return RawColumn(tuple(lanes), n)


def _python_lane(cell: Any) -> str:
    kind = type(cell)
    if kind is str:
        return STR
    if kind is bool:
        return BOOL
    if kind is int:
        return INT if MIN_MS <= cell <= MAX_MS else PY
    if kind is float:
        return FLOAT
    return PY


def _checked_text(values: pa.Array) -> RawColumn:
    """A string column whose bytes may not be UTF-8 (Parquet does not check): bad cells go to PY."""
    try:
        values.validate(full=True)
    except pa.ArrowInvalid:
        raw = pa.Array.from_buffers(pa.binary(), len(values), values.buffers()).to_pylist()
        good: list[str | None] = []
        bad: list[Any] = []
        for cell in raw:
            try:
                good.append(cell.decode("utf-8") if cell is not None else None)
                bad.append(None)
            except UnicodeDecodeError:
                good.append(None)
                bad.append(Unreadable("text that is not valid UTF-8"))
        return RawColumn((Lane(STR, pa.array(good, pa.string())), Lane(PY, bad)), len(values))
    return RawColumn((Lane(STR, values),), len(values))


def safe_pylist(values: pa.Array) -> list[Any]:
    """`to_pylist`, with any value Python cannot hold (a date past year 9999, a duration beyond
    timedelta, text that is not UTF-8) replaced by an `Unreadable` naming its type."""
    try:
        return values.to_pylist()
    except (OverflowError, ValueError, UnicodeDecodeError, pa.ArrowException):
        return [_safe_scalar(values, i) for i in range(len(values))]


def _safe_scalar(values: pa.Array, index: int) -> Any:
    try:
        return values[index].as_py()
    except (OverflowError, ValueError, UnicodeDecodeError, pa.ArrowException) as exc:
        return Unreadable(f"a Parquet {values.type} value Python cannot hold ({type(exc).__name__})")
