"""Row validation shared by every trace format (trace-format.md §1).

Readers turn each row into `(column, value)` cells (absent values already left out) and feed them
to a `TraceBuilder`, which checks every rule, collects every issue and, at the end, orders the rows,
runs the whole-file checks and resolves the valve channel counts.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from wmviz.core.scenario import Kind, ScenarioConfig, Trace, TraceRow
from wmviz.core.types import Status
from wmviz.trace.cells import RowCells, text_value
from wmviz.trace.config import MAX_CHANNELS, input_names, normalize_input
from wmviz.trace.errors import IssueCollector
from wmviz.trace.timefmt import show

STANDARD_COLUMNS: tuple[str, ...] = (
    "seq",
    "instance",
    "input",
    "channel",
    "kind",
    "event_ms",
    "watermark_ms",
    "status",
    "proc_ms",
    "key",
    "value",
)
_STANDARD = frozenset(STANDARD_COLUMNS)
# Columns whose text is a number, time or enum: surrounding spaces in a CSV cell are not data there.
_TYPED = frozenset({"seq", "channel", "kind", "event_ms", "watermark_ms", "status", "proc_ms"})
_ALWAYS = frozenset({"seq", "instance", "input", "kind"})
_MEANINGFUL = {
    Kind.RECORD: frozenset({"channel", "event_ms", "proc_ms", "key", "value"}),
    Kind.WATERMARK: frozenset({"channel", "watermark_ms", "proc_ms"}),
    Kind.STATUS: frozenset({"channel", "status", "proc_ms"}),
    Kind.PROCTIME: frozenset({"proc_ms"}),
}
_REQUIRED = {
    Kind.RECORD: ("channel", "event_ms"),
    Kind.WATERMARK: ("channel", "watermark_ms"),
    Kind.STATUS: ("channel", "status"),
    Kind.PROCTIME: ("proc_ms",),
}
_KIND_NAMES = ", ".join(k.value for k in Kind)
_STATUS_NAMES = ", ".join(s.value for s in Status)
_KIND_BY_NAME = {k.value: k for k in Kind}
_STATUS_BY_NAME = {s.value.lower(): s for s in Status}
NO_ROWS_REASON = "the trace has no rows"


# The whole-file messages, shared with the Spark reader (wmviz.spark), which finds the same problems
# with Spark aggregations and must word them identically.


def header_missing_reason(unit: str, kinds: list[str], first: int) -> str:
    """A required column the CSV header / Parquet schema lacks; `kinds` lists the row kinds needing it
    in order of first need ("every" when each row needs it), `first` the first row that needed it."""
    where = "header" if unit == "line" else "schema"
    needed = (
        "every row needs it"
        if kinds == ["every"]
        else f"required for {'/'.join(kinds)} rows (first on {unit} {first})"
    )
    return f"missing from the {where}; {needed}"


def seq_missing_reason(unit: str, first: int) -> str:
    """A row without `seq` in a file whose rows (from `first` on) carry it."""
    return f"missing, but other rows have it (first on {unit} {first})"


def seq_reused_reason(seq: int, unit: str, first: int) -> str:
    """A `seq` value already used on the earlier row `first`."""
    return f"{seq} is also used on {unit} {first}"


def proc_ms_decrease_reason(proc_ms: int, previous: int, unit: str, previous_row: int, instance: str) -> str:
    """A `proc_ms` below the highest one seen so far in the instance (on `previous_row`)."""
    return (
        f"{proc_ms} is before {previous} on {unit} {previous_row}; "
        f"proc_ms must not decrease within instance {show(instance)}"
    )


def generated_watermark_reason(channel: int, unit: str, first: int) -> str:
    """An explicit watermark on a channel whose records (first on row `first`) drive the generator."""
    return (
        f"explicit watermark on channel {channel}, whose watermarks come from the "
        f"generator because it carries records (first on {unit} {first})"
    )


@dataclass(slots=True)
class _Facts:
    """What the whole-file checks need to know about a row, valid or not."""

    row: int
    seq: int | None
    seq_ok: bool
    instance: str
    input: str
    kind: Kind | None
    channel: int | None
    proc_ms: int | None
    trace_row: TraceRow | None


class TraceBuilder:
    """Validates rows one at a time and builds the `Trace` (or the list of issues) at the end.

    `header` is the set of columns a CSV header or Parquet schema declares; a column it lacks that
    rows require gives one file-level issue instead of one per row. `unit` is "line" or "row", used
    where a message points at another row.
    """

    def __init__(
        self,
        source: str,
        collector: IssueCollector,
        config: ScenarioConfig,
        config_ok: bool = True,
        *,
        header: Collection[str] | None = None,
        header_row: int | None = None,
        text: bool = False,
        unit: str = "line",
    ):
        self.source = source
        self.collector = collector
        self.config = config
        self.config_ok = config_ok
        self.header = header
        self.header_row = header_row
        self.text = text
        self.unit = unit
        self._facts: list[_Facts] = []
        self._max_channel: dict[str, int] = {}
        self._compact: dict[str, int] = {}
        self._header_missing: dict[str, tuple[int, list[str]]] = {}

    def set_compact_channels(self, instance: str, count: int, row: int) -> None:
        """Register a compact `{"channels": N}` header; a config count for input 0 must agree."""
        self._compact[instance] = count
        configured = self.config.channels.get("0") if self.config_ok else None
        if configured is not None and configured != count:
            self.collector.add(
                row, "channels", f"{count} disagrees with the config's channels.0 = {configured}"
            )

    def add_row(
        self, row: int, cells: Iterable[tuple[str, Any]], labels: Mapping[str, str] | None = None
    ) -> None:
        """Validate one row given as `(column, value)` cells in file order, absent values left out.

        `labels` renames columns in messages (the compact format's `ch` and `wm`).
        """
        std: dict[str, Any] = {}
        payload: list[tuple[str, Any]] = []
        for name, value in cells:
            if name not in _STANDARD:
                payload.append((name, value))
            elif self.text and name in _TYPED:
                if value.strip():
                    std[name] = value.strip()
            else:
                std[name] = value
        c = RowCells(self.collector, row, std, labels or {})
        kind = c.enum("kind", _KIND_NAMES, _KIND_BY_NAME)
        if "kind" not in std:
            self._require(c, "kind", None)
        elif kind is not None:
            self._drop_meaningless(c, kind)
        issues_before_seq = self.collector.total
        seq = c.integer("seq")
        seq_ok = self.collector.total == issues_before_seq
        instance = self._name(c, "instance")
        input_name = self._input(c)
        channel = c.integer("channel", 0)
        if channel is not None and channel > MAX_CHANNELS:
            c.issue("channel", f"{channel} is larger than the largest channel index, {MAX_CHANNELS}")
            channel = None
        event_ms = c.time("event_ms")
        watermark_ms = c.time("watermark_ms", sentinels=True)  # only kept on watermark rows or unknown kinds
        status = c.enum("status", _STATUS_NAMES, _STATUS_BY_NAME)
        proc_ms = c.time("proc_ms")
        key = c.text("key")
        value = self._value(c)
        if kind is not None:
            self._require_for_kind(c, kind)
        op = self.config.operator
        numeric = kind is Kind.RECORD and op.type == "window" and op.aggregate in ("sum", "min", "max")
        if numeric and isinstance(value, str):
            # The aggregate needs numbers; a record without a value contributes its event time.
            c.issue("value", f"{show(value)} is not a number, so it cannot be aggregated with {op.aggregate}")
        if channel is not None and input_name is not None:
            self._max_channel[input_name] = max(self._max_channel.get(input_name, -1), channel)
            limit = self._limit(instance, input_name)
            if limit is not None and channel >= limit:
                c.issue(
                    "channel",
                    f"{channel} is out of range; input {input_name} has {limit} channels (0..{limit - 1})",
                )
        trace_row = None
        if not c.bad and kind is not None and input_name is not None:
            trace_row = TraceRow(
                row=row,
                kind=kind,
                instance=instance,
                input=input_name,
                channel=channel,
                seq=seq,
                event_ms=event_ms,
                watermark_ms=watermark_ms,
                status=status,
                proc_ms=proc_ms,
                key=key,
                value=value,
                payload=tuple(payload),
            )
        self._facts.append(
            _Facts(row, seq, seq_ok, instance, input_name or "", kind, channel, proc_ms, trace_row)
        )

    def _name(self, c: RowCells, column: str) -> str:
        name = c.text(column)
        if name == "":
            c.issue(column, 'is empty; leave it out for the default "0"')
        return name or "0"

    def _input(self, c: RowCells) -> str | None:
        raw = self._name(c, "input")
        if not self.config_ok:
            return raw  # the operator type is unknown, so which inputs exist is unknown too
        op_type = self.config.operator.type
        name = normalize_input(raw, op_type)
        if name is None:
            valid = ", ".join(input_names(op_type))
            extra = " (or 0/1)" if op_type == "interval_join" else ""
            c.issue(
                "input", f"{show(raw)} is not an input of operator type {op_type}; expected {valid}{extra}"
            )
        return name

    def _value(self, c: RowCells) -> str | int | float | None:
        value = c.std.get("value")
        if value is None or isinstance(value, str | float) or type(value) is int:
            return text_value(value) if self.text and isinstance(value, str) else value
        c.issue("value", f"{show(value)} is not a string or number")
        return None

    def _drop_meaningless(self, c: RowCells, kind: Kind) -> None:
        """Report cells the row's kind has no use for, and drop them so their value is not judged too."""
        meaningful = _MEANINGFUL[kind]
        for column in STANDARD_COLUMNS:
            if column in c.std and column not in _ALWAYS and column not in meaningful:
                c.issue(column, f"has no meaning for a {kind.value} row; leave it empty")
                del c.std[column]

    def _require_for_kind(self, c: RowCells, kind: Kind) -> None:
        required = list(_REQUIRED[kind])
        gen = self.config.generator if self.config_ok else None
        if kind is Kind.RECORD and gen is not None and gen.emit == "periodic":
            required.append("proc_ms")  # periodic emission runs on the proc_ms clock
        op = self.config.operator if self.config_ok else None
        if kind is Kind.RECORD and op is not None and op.type == "interval_join":
            proc_join = op.join_time == "proctime"
            if proc_join or op.time_mode == "proctime":
                # The row's time or its early-fire timer comes from the clock at arrival (§7):
                # a record without proc_ms would silently inherit a stale clock.
                required.append("proc_ms")
            if proc_join and gen is None:
                required.remove("event_ms")  # a processing-time join has no event time to need
        for column in required:
            if column not in c.std:
                self._require(c, column, kind.value)

    def _require(self, c: RowCells, column: str, kind_name: str | None) -> None:
        """A required cell is absent; `kind_name` None means every row needs the column."""
        if self.header is not None and column not in self.header:
            # Reported once for the whole file in finish(), not once per row.
            _, kinds = self._header_missing.setdefault(column, (c.row, []))
            label = "every" if kind_name is None else kind_name
            if label not in kinds:
                kinds.append(label)
            c.bad = True
            return
        if kind_name is None:
            c.issue(column, f"required; expected one of {_KIND_NAMES}")
            return
        why = " (the generator emits periodically)" if column == "proc_ms" and kind_name == "record" else ""
        c.issue(column, f"required for a {kind_name} row{why}")

    def _limit(self, instance: str, input_name: str) -> int | None:
        if self.config_ok and input_name in self.config.channels:
            return self.config.channels[input_name]
        return self._compact.get(instance)

    def finish(self) -> Trace:
        """Run the whole-file checks and return the `Trace`; `TraceValidationError` if anything failed."""
        if not self._facts and not self.collector:
            # Only for a truly empty trace: unreadable rows already have their own messages.
            self.collector.add(None, None, NO_ROWS_REASON)
        for column, (first, kinds) in self._header_missing.items():
            self.collector.add(self.header_row, column, header_missing_reason(self.unit, kinds, first))
        facts = self._ordered()
        if facts is not None:
            self._check_proc_ms(facts)
        else:
            facts = self._facts
        self._check_generated_channels(facts)
        self.collector.raise_if_any()
        rows = tuple(f.trace_row for f in facts if f.trace_row is not None)
        return Trace(source=self.source, rows=rows, config=self.config, valve_channels=self._channels(rows))

    def _ordered(self) -> list[_Facts] | None:
        """Rows in arrival order: by `seq` when rows carry it, else file order; None if `seq` is broken."""
        with_seq = [f for f in self._facts if f.seq is not None or not f.seq_ok]
        if not with_seq:
            return self._facts
        broken = any(not f.seq_ok for f in self._facts)
        first = with_seq[0].row
        seen: dict[int, int] = {}
        for f in self._facts:
            if f.seq is None and f.seq_ok:
                self.collector.add(f.row, "seq", seq_missing_reason(self.unit, first))
                broken = True
            elif f.seq is not None:
                if f.seq in seen:
                    self.collector.add(f.row, "seq", seq_reused_reason(f.seq, self.unit, seen[f.seq]))
                    broken = True
                else:
                    seen[f.seq] = f.row
        if broken:
            return None  # the arrival order is unknown, so order-dependent checks would only mislead
        return sorted(self._facts, key=lambda f: f.seq)  # type: ignore[arg-type, return-value]

    def _check_proc_ms(self, facts: list[_Facts]) -> None:
        highest: dict[str, tuple[int, int]] = {}
        for f in facts:
            if f.proc_ms is None:
                continue
            previous = highest.get(f.instance)
            if previous is not None and f.proc_ms < previous[0]:
                self.collector.add(
                    f.row,
                    "proc_ms",
                    proc_ms_decrease_reason(f.proc_ms, previous[0], self.unit, previous[1], f.instance),
                )
            else:
                highest[f.instance] = (f.proc_ms, f.row)

    def _check_generated_channels(self, facts: list[_Facts]) -> None:
        if not self.config_ok or self.config.generator is None:
            return
        generated: dict[tuple[str, str, int], int] = {}
        for f in facts:
            if f.kind is Kind.RECORD and f.channel is not None:
                generated.setdefault((f.instance, f.input, f.channel), f.row)
        for f in facts:
            if f.kind is Kind.WATERMARK and f.channel is not None:
                first = generated.get((f.instance, f.input, f.channel))
                if first is not None:
                    self.collector.add(f.row, "kind", generated_watermark_reason(f.channel, self.unit, first))

    def _channels(self, rows: tuple[TraceRow, ...]) -> dict[tuple[str, str], int]:
        """valve_channels: config count, else the compact header's N, else 1 + the largest index.

        The fallback takes the largest index over all instances: Flink gives every subtask of an
        operator the same number of upstream channels, even if some never hear from all of them.
        """
        result: dict[tuple[str, str], int] = {}
        for r in rows:
            pair = (r.instance, r.input)
            if pair not in result:
                limit = self._limit(r.instance, r.input)
                result[pair] = limit if limit is not None else self._max_channel.get(r.input, 0) + 1
        return result
