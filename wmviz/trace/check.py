"""The row rules over a whole batch of raw rows at once (docs/trace-format.md §1).

`check_batch` judges every cell of a `RawBatch` with its column's rule (`wmviz.trace.parse`), then
the rules between cells of a row: a cell the row's kind has no use for, a cell the kind needs, a
value an aggregate cannot add, a channel beyond its input's count. It returns the rows as a
`CHECKED_SCHEMA` table (every row, with `valid` saying whether it passed) and the issues, each
with the phase that puts a row's messages in the order its cells are judged.

The local engine runs it in-process batch by batch; the Spark engine runs the very same function in
its Python workers. What needs the whole file (arrival order, `seq` ties, `proc_ms` order, channel
counts) is in `wmviz.trace.wholefile`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from wmviz.core.scenario import IntervalJoinConfig, Kind, ScenarioConfig, WindowConfig
from wmviz.trace import columns as cols
from wmviz.trace.columns import COLUMNS, Parse, meaningless_reason, missing_reason, required_columns
from wmviz.trace.errors import IssueCollector
from wmviz.trace.parse import Parsed, parse_column
from wmviz.trace.payload import encode_payload
from wmviz.trace.quote import show
from wmviz.trace.raw import RawBatch
from wmviz.trace.rowtable import ROW_SCHEMA

KINDS: tuple[Kind, ...] = tuple(Kind)
_KIND_CODE = {k.value: i for i, k in enumerate(KINDS)}

# Phases: the order in which a row's issues are listed (the order its cells are judged).
PHASE_KIND = 0
PHASE_MEANINGLESS = 100  # + the column's place among the standard columns
PHASE_CELL = 200  # + the column's place in CHECK_ORDER
PHASE_REQUIRED = 300
PHASE_AGGREGATE = 400
PHASE_RANGE = 401
PHASE_HEADER = 500
PHASE_SEQ = 501
PHASE_PROC = 502
PHASE_GENERATED = 503

CHECKED_SCHEMA = pa.schema(
    [
        *(f for f in ROW_SCHEMA if f.name != "order"),  # arrival order is the whole file's to say
        ("valid", pa.bool_()),
        ("seq_bad", pa.bool_()),
    ]
)
"""Every row as checked: the trace row's columns (null where a cell is absent or broke its rule),
`valid` (the row passed every row rule) and `seq_bad` (its `seq` cell broke its rule). In a batch,
`kind` is dictionary-encoded and an all-null column has Arrow's null type; `conform` gives exactly
these types."""


def conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """`table`'s columns of `schema` cast to exactly its types (null-type and dictionary columns
    become typed ones: do it on slices, as a writer or a task needs them)."""
    return pa.table({f.name: table.column(f.name).cast(f.type) for f in schema}, schema=schema)


@dataclass(frozen=True, slots=True)
class CheckContext:
    """What the row rules need besides the rows: the config and what the file's header declared.

    `config_ok` False means the config could not be read, so its requirements are unknown.
    `header` is the column set a CSV header or Parquet schema declares (None for JSON Lines, whose
    rows each name their columns). `unit` is "line" or "row", as messages point at other rows.
    """

    source: str
    config: ScenarioConfig
    config_ok: bool = True
    header: frozenset[str] | None = None
    unit: str = "line"


@dataclass(slots=True)
class CheckedBatch:
    """One batch after the row rules: its rows, issues, and the facts the whole-file checks need."""

    table: pa.Table
    issues: IssueCollector
    header_missing: dict[str, dict[str, int]]
    """Required columns the header lacks: column → {"record"/…/"every": first row needing it}."""
    max_channel: dict[str, int]
    """The largest channel index seen per input (for inferred channel counts)."""


class _Rows:
    """The issues of one batch, rendered only for the rows that can still be among the kept ones,
    and the required columns its header lacks (`CheckedBatch.header_missing`)."""

    def __init__(self, batch: RawBatch, collector: IssueCollector) -> None:
        self.rows = batch.rows
        self.labels = batch.labels
        self.collector = collector
        self.bad = np.zeros(batch.length, bool)
        self.header_missing: dict[str, dict[str, int]] = {}

    def add(self, mask: np.ndarray, column: str | None, phase: int, reason: Callable[[int], str]) -> None:
        """An issue on every row of `mask`; beyond the collector's cap only counted."""
        indexes = np.flatnonzero(mask)
        if not len(indexes):
            return
        self.bad |= mask
        cap = self.collector.cap
        label = self.labels.get(column, column) if column is not None else None
        for index in indexes[:cap].tolist():
            self.collector.add(int(self.rows[index]), label, reason(index), phase=phase)
        self.collector.count_more(max(0, len(indexes) - cap))


def check_batch(batch: RawBatch, context: CheckContext) -> CheckedBatch:
    """Apply every row rule to `batch`."""
    n = batch.length
    issues = _Rows(batch, IssueCollector(context.source))
    present = {name: column.present() for name, column in batch.columns.items()}
    judge = dict(present)

    kind_codes = _kinds(batch, judge, issues, context)
    for place, column in enumerate(COLUMNS):
        if column.name not in present:
            continue
        for code, kind in enumerate(KINDS):
            if kind in column.meaningful:
                continue
            mask = judge[column.name] & (kind_codes == code)
            issues.add(mask, column.name, PHASE_MEANINGLESS + place, _always(meaningless_reason(kind)))
            judge[column.name] &= ~mask

    parsed = {name: _parse(batch, name, judge, issues) for name in cols.CHECK_ORDER if name != "kind"}
    instance = _default_zero(parsed["instance"], n)
    input_names_, input_ok = _inputs(parsed["input"], n, context, issues)
    _require_for_kind(kind_codes, present, batch, issues, context)
    _aggregate(kind_codes, parsed["value"], context, issues)
    channel = parsed["channel"]
    max_channel = _channel_range(channel, instance, input_names_, input_ok, context, batch, issues)

    payload = _payload(batch, issues)
    valid = ~issues.bad & (kind_codes >= 0) & input_ok & ~_header_blocked(kind_codes, batch, context)
    columns = {
        "row": pa.array(batch.rows, pa.int64()),
        "instance": instance,
        "input": input_names_,
        "channel": _lean(pa.array(channel.values, pa.int64(), mask=~channel.valid).cast(pa.int32())),
        "seq": _lean(_ints(parsed["seq"])),
        "kind": pa.DictionaryArray.from_arrays(pa.array(kind_codes, mask=kind_codes < 0), _KIND_NAMES),
        "event_ms": _lean(_ints(parsed["event_ms"])),
        "watermark_ms": _lean(_ints(parsed["watermark_ms"])),
        "status": _lean(parsed["status"].values),
        "proc_ms": _lean(_ints(parsed["proc_ms"])),
        "key": _lean(parsed["key"].values),
        "value_json": _lean(parsed["value"].values),
        "payload_json": _lean(payload),
        "valid": pa.array(valid),
        "seq_bad": pa.array(parsed["seq"].bad),
    }
    return CheckedBatch(pa.table(columns), issues.collector, issues.header_missing, max_channel)


_KIND_NAMES = pa.array([k.value for k in KINDS], pa.string())


def _lean(values: pa.Array) -> pa.Array:
    """An all-null column as Arrow's null type, which holds no buffers: most traces leave several
    columns empty, and ten million empty cells would otherwise cost a gigabyte in all."""
    return pa.nulls(len(values)) if values.null_count == len(values) else values


# ---- the kind, and which cells it makes meaningless or required ---------------------------------


def _kinds(
    batch: RawBatch,
    judge: dict[str, np.ndarray],
    issues: _Rows,
    context: CheckContext,
) -> np.ndarray:
    """Each row's kind as an index into KINDS (−1: absent or not a kind)."""
    n = batch.length
    codes = np.full(n, -1, np.int8)
    column = batch.columns.get("kind")
    if column is None:
        missing = np.ones(n, bool)
    else:
        result = parse_column(column, Parse.KIND, judge["kind"])
        issues.add(result.bad, "kind", PHASE_KIND, result.reason)
        for name, code in _KIND_CODE.items():
            codes[pc.fill_null(pc.equal(result.values, name), False).to_numpy(zero_copy_only=False)] = code
        missing = ~judge["kind"]
    _require(missing, "kind", None, PHASE_KIND, issues, context)
    return codes


def _require_for_kind(
    kind_codes: np.ndarray,
    present: dict[str, np.ndarray],
    batch: RawBatch,
    issues: _Rows,
    context: CheckContext,
) -> None:
    config = context.config if context.config_ok else None
    for code, kind in enumerate(KINDS):
        of_kind = kind_codes == code
        if not of_kind.any():
            continue
        for place, name in enumerate(required_columns(kind, config)):
            mask = of_kind & ~present.get(name, np.zeros(batch.length, bool))
            _require(mask, name, kind, PHASE_REQUIRED + place, issues, context)


def _require(
    mask: np.ndarray, column: str, kind: Kind | None, phase: int, issues: _Rows, context: CheckContext
) -> None:
    """A required cell is absent; a column the whole header lacks is one file-level issue instead."""
    if not mask.any():
        return
    if context.header is not None and column not in context.header:
        label = "every" if kind is None else kind.value
        first = int(issues.rows[np.flatnonzero(mask)[0]])
        seen = issues.header_missing.setdefault(column, {})
        seen[label] = min(seen.get(label, first), first)
        return  # the rows are held back by `_header_blocked`, without one message each
    config = context.config if context.config_ok else None
    issues.add(mask, column, phase, lambda _: missing_reason(column, kind, config))


def _header_blocked(kind_codes: np.ndarray, batch: RawBatch, context: CheckContext) -> np.ndarray:
    """Rows that need a column the header lacks (reported once for the file)."""
    blocked = np.zeros(batch.length, bool)
    if context.header is None:
        return blocked
    if "kind" not in context.header:
        return ~blocked
    config = context.config if context.config_ok else None
    for code, kind in enumerate(KINDS):
        if any(name not in context.header for name in required_columns(kind, config)):
            blocked |= kind_codes == code
    return blocked


# ---- cells ---------------------------------------------------------------------------------------


def _parse(batch: RawBatch, name: str, judge: dict[str, np.ndarray], issues: _Rows) -> Parsed:
    column = batch.columns.get(name)
    spec = cols.BY_NAME[name]
    n = batch.length
    if column is None:
        empty = np.zeros(n, bool)
        values: Any = np.zeros(n, np.int64) if spec.parse in _INT_PARSES else pa.nulls(n, pa.string())
        return Parsed(values, empty, empty, _no_reason, empty)
    result = parse_column(column, spec.parse, judge[name], from_text=batch.text)
    issues.add(result.bad, name, PHASE_CELL + cols.CHECK_ORDER.index(name), result.reason)
    return result


_INT_PARSES = frozenset({Parse.INTEGER, Parse.CHANNEL, Parse.TIME, Parse.WATERMARK})


def _no_reason(index: int) -> str:
    raise KeyError(index)


def _ints(parsed: Parsed) -> pa.Array:
    return pa.array(parsed.values, pa.int64(), mask=~parsed.valid)


def _default_zero(parsed: Parsed, n: int) -> pa.Array:
    """`instance`: "0" where absent or broken."""
    return pc.fill_null(parsed.values, "0") if n else parsed.values


def _inputs(parsed: Parsed, n: int, context: CheckContext, issues: _Rows) -> tuple[pa.Array, np.ndarray]:
    """The canonical input of each row (`L`/`R` for a join), and where it names a real input."""
    raw = _default_zero(parsed, n)
    if not context.config_ok:
        return raw, np.ones(n, bool)  # the operator type is unknown, so which inputs exist is too
    operator = context.config.operator
    op_type = operator.type_name
    distinct = pc.unique(raw)
    mapped = [operator.canonical_input(name) for name in distinct.to_pylist()]
    positions = pc.index_in(raw, value_set=distinct).to_numpy(zero_copy_only=False)
    names = pa.array(mapped, pa.string()).take(pa.array(positions))
    ok = names.is_valid().to_numpy(zero_copy_only=False)
    valid = ", ".join(operator.inputs)
    extra = " (or 0/1)" if isinstance(operator, IntervalJoinConfig) else ""
    raw_values = raw.to_numpy(zero_copy_only=False)
    issues.add(
        ~ok,
        "input",
        PHASE_CELL + cols.CHECK_ORDER.index("input"),
        lambda i: (
            f"{show(raw_values[i])} is not an input of operator type {op_type}; expected {valid}{extra}"
        ),
    )
    return pc.fill_null(names, ""), ok


def _aggregate(kind_codes: np.ndarray, value: Parsed, context: CheckContext, issues: _Rows) -> None:
    """A sum/min/max window needs numbers: a record's string value cannot be aggregated."""
    op = context.config.operator
    if not isinstance(op, WindowConfig) or op.aggregate not in ("sum", "min", "max") or value.is_text is None:
        return
    mask = (kind_codes == KINDS.index(Kind.RECORD)) & value.is_text & value.valid
    texts = value.values
    issues.add(
        mask,
        "value",
        PHASE_AGGREGATE,
        lambda i: (
            f"{show(_json_text(texts[i].as_py()))} is not a number, "
            f"so it cannot be aggregated with {op.aggregate}"
        ),
    )


def _json_text(text: str) -> Any:
    import json

    return json.loads(text)


def _channel_range(
    channel: Parsed,
    instance: pa.Array,
    inputs: pa.Array,
    input_ok: np.ndarray,
    context: CheckContext,
    batch: RawBatch,
    issues: _Rows,
) -> dict[str, int]:
    """A channel at or beyond its input's count (config, else the compact header) is out of range."""
    known = channel.valid & input_ok
    max_channel: dict[str, int] = {}
    if not known.any():
        return max_channel
    seen = pa.table({"input": inputs, "channel": pa.array(channel.values)}).filter(pa.array(known))
    for record in seen.group_by("input").aggregate([("channel", "max")]).to_pylist():
        max_channel[record["input"]] = int(record["channel_max"])
    limits = np.full(len(known), -1, np.int64)
    configured = context.config.channels if context.config_ok else {}
    for name, count in configured.items():
        limits[pc.fill_null(pc.equal(inputs, name), False).to_numpy(zero_copy_only=False)] = count
    if batch.compact_channels:
        names = pa.array(list(batch.compact_channels), pa.string())
        counts = np.array(list(batch.compact_channels.values()), np.int64)
        slot = pc.index_in(instance, value_set=names).fill_null(-1).to_numpy(zero_copy_only=False)
        unset = (limits < 0) & (slot >= 0)
        limits[unset] = counts[slot[unset]]
    mask = known & (limits >= 0) & (channel.values >= limits)
    issues.add(
        mask,
        "channel",
        PHASE_RANGE,
        lambda i: (
            f"{channel.values[i]} is out of range; input {inputs[i].as_py()} has {limits[i]} "
            f"channels (0..{limits[i] - 1})"
        ),
    )
    return max_channel


# ---- payload --------------------------------------------------------------------------------------


def _payload(batch: RawBatch, issues: _Rows) -> pa.Array:
    """`payload_json` of every row: its extra cells as `[name, value]` pairs in file order; a
    check column's cell (`cols.CHECK_COLUMNS`) is judged by its rule like a standard cell."""
    n = batch.length
    if batch.payload_rows is not None:
        for index, pairs in enumerate(batch.payload_rows):
            for name, cell in pairs:
                _judge_payload_cell(n, index, name, cell, issues)
        return pa.array([encode_payload(pairs) for pairs in batch.payload_rows], pa.string())
    if not batch.payload:
        return pa.nulls(n, pa.string())
    names = [name for name, _ in batch.payload]
    values = [column.pylist() for _, column in batch.payload]
    present = np.zeros(n, bool)
    for _, column in batch.payload:
        present |= column.present()
    out: list[str | None] = [None] * n
    for index in np.flatnonzero(present).tolist():
        pairs = []
        for name, column_values in zip(names, values, strict=True):
            cell = column_values[index]
            if _judge_payload_cell(n, index, name, cell, issues) and cell is not None:
                pairs.append((name, cell))
        out[index] = encode_payload(pairs)
    return pa.array(out, pa.string())


def _judge_payload_cell(n: int, index: int, name: str, cell: Any, issues: _Rows) -> bool:
    """Whether a payload cell can be kept; an issue on its row if not."""
    from wmviz.trace.cellrules import RULES, Invalid, Unreadable

    phase = PHASE_CELL + len(cols.CHECK_ORDER)
    if isinstance(cell, Unreadable):
        issues.add(_one(n, index), name, phase, _always(f"cannot be read: {cell}"))
        return False
    parse = cols.CHECK_COLUMNS.get(name)
    if parse is None or cell in (None, ""):
        return True
    try:
        RULES[parse](cell)
    except Invalid as err:
        issues.add(_one(n, index), name, phase, _always(f"{err} ({cols.CHECK_COLUMN_ROLE[name]})"))
        return False
    return True


def _always(text: str) -> Callable[[int], str]:
    """A reason that is the same for every row."""
    return lambda _: text


def _one(n: int, index: int) -> np.ndarray:
    mask = np.zeros(n, bool)
    mask[index] = True
    return mask
