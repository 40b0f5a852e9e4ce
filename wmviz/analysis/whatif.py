"""What-if edits: insert, delete or change one row of a trace, and get a new valid trace to replay.

An edit names a row by its instance and step (the n-th row of that instance in arrival order), as
the app shows it. `apply_edit` returns the edited trace in arrival order, validated exactly as a
file would be: it is written as JSON Lines and read back, so an edit that breaks a rule raises the
usual `TraceValidationError` (`file:row: column NAME: reason`, rows counted in the edited trace).
`write_whatif` stores an edited trace as a file the run cache can simulate like any other.

Pure: no streamlit, pyspark or plotly.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from wmviz.core.scenario import Kind, ScenarioConfig, Trace, TraceRow
from wmviz.core.types import Status, format_ms
from wmviz.disk.atomic import write_file
from wmviz.trace.config import replace_field
from wmviz.trace.jsonline import JsonLineError, loads_strict
from wmviz.trace.readers import read_trace_bytes
from wmviz.trace.writers import write_trace_bytes

__all__ = [
    "Change",
    "Configure",
    "Delete",
    "Edit",
    "Insert",
    "apply_edit",
    "decode_edit",
    "describe_edit",
    "encode_edit",
    "whatif_file",
    "write_whatif",
]


@dataclass(frozen=True)
class Insert:
    """A new input arriving just before the row that arrived at `step` of `instance`.

    `step` equal to the instance's step count appends the row after every row of the trace.
    """

    instance: str
    step: int
    kind: Kind
    input: str
    channel: int | None
    watermark_ms: int | None = None
    status: Status | None = None
    event_ms: int | None = None
    key: str | None = None
    value: Any = None
    proc_ms: int | None = None


@dataclass(frozen=True)
class Delete:
    """Drop the row that arrived at `step` of `instance`."""

    instance: str
    step: int


@dataclass(frozen=True)
class Change:
    """Replace fields of the row that arrived at `step` of `instance`.

    `fields` maps TraceRow field names to new values; None removes a value. Nothing else is cleared
    for you: turning a watermark row into a status row needs `"watermark_ms": None` too, so an
    edit never silently drops data.
    """

    instance: str
    step: int
    fields: Mapping[str, Any]

    def __post_init__(self) -> None:
        # A private read-only copy: the caller's dict may change later, the edit must not.
        object.__setattr__(self, "fields", MappingProxyType(dict(self.fields)))

    def __hash__(self) -> int:
        # Edits go into sets and cache keys; a mapping is not hashable, its items are.
        return hash((self.instance, self.step, tuple(self.fields.items())))


@dataclass(frozen=True)
class Configure:
    """Run the same rows under another config: `fields` maps dotted config paths to values (a
    sweep's combination), each set by `replace_field`. No row moves, so every step maps to itself."""

    fields: Mapping[str, Any]
    instance: str = ""
    step: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "fields", MappingProxyType(dict(self.fields)))

    def __hash__(self) -> int:
        return hash(tuple(self.fields.items()))


Edit = Insert | Delete | Change | Configure

# `row` and `seq` are renumbered by apply_edit; moving a row to another instance would make the
# edit touch two instances, which step-based comparison cannot follow.
CHANGEABLE = frozenset(
    {"kind", "input", "channel", "event_ms", "watermark_ms", "status", "proc_ms", "key", "value", "payload"}
)
_WHATIF_SUFFIX = re.compile(r"\.whatif(-[0-9a-f]+)?$")


def apply_edit(trace: Trace, edit: Edit) -> Trace:
    """The trace with `edit` applied: a new, validated `Trace` in arrival order.

    Every other row keeps its fields and its place in arrival order. Rows are renumbered 1..n in
    that order (`row`, and `seq` when the trace carried it), and the trace is re-validated by
    writing and re-reading it. Every valve keeps its channel count, even when the edit removes the
    only row of the highest channel. Raises ValueError for a step or instance that does not exist
    or a field that cannot be changed, and `TraceValidationError` when the edited trace breaks a
    rule (a row on a channel the valve does not have included).
    """
    if isinstance(edit, Configure):
        config = trace.config
        for path, value in edit.fields.items():
            config = replace_field(config, path, value, "what-if")
        return _validated(
            list(trace.rows), dataclasses.replace(trace, config=config), _whatif_name(trace.source)
        )
    positions = [i for i, r in enumerate(trace.rows) if r.instance == edit.instance]
    rows = list(trace.rows)
    if isinstance(edit, Insert):
        _check_step(trace, edit, len(positions), end_allowed=True)
        # At the end: after everything recorded, the only place we know it did not precede.
        at = positions[edit.step] if edit.step < len(positions) else len(rows)
        rows.insert(at, _inserted_row(edit))
    elif isinstance(edit, Delete):
        _check_step(trace, edit, len(positions), end_allowed=False)
        del rows[positions[edit.step]]
    elif isinstance(edit, Change):
        _check_step(trace, edit, len(positions), end_allowed=False)
        at = positions[edit.step]
        rows[at] = _changed_row(rows[at], edit.fields)
    else:
        raise TypeError(f"not an edit: {edit!r}")
    # The file order now is the arrival order, so seq only has to count it. `row` is not written:
    # reading back numbers the rows 1..n.
    if any(r.seq is not None for r in trace.rows):
        rows = [dataclasses.replace(r, seq=i) for i, r in enumerate(rows, 1)]
    return _validated(rows, trace, _whatif_name(trace.source))


def describe_edit(edit: Edit, trace: Trace | None = None) -> str:
    """One line for a person: "what if ch2 of instance 0 had gone IDLE at step 5?".

    With the trace the edit applies to, a change or deletion also says what the row was.
    """
    if isinstance(edit, Configure):
        return f"what if the config had had {', '.join(f'{k} {_show(v)}' for k, v in edit.fields.items())}?"
    original = _row_at(trace, edit.instance, edit.step) if trace is not None else None
    where = f"instance {edit.instance}"
    if isinstance(edit, Insert):
        row = _inserted_row(edit)
        count = len([r for r in trace.rows if r.instance == edit.instance]) if trace is not None else None
        when = "at the end" if count is not None and edit.step >= count else f"just before step {edit.step}"
        return f"what if {_subject(row)} of {where} had {_verb(row)} {when}?"
    if isinstance(edit, Delete):
        if original is None:
            return f"what if the row at step {edit.step} of {where} had never arrived?"
        gone = f"{_noun(original)} on {_subject(original)}"
        return f"what if {gone} at step {edit.step} of {where} had never arrived?"
    if original is None:
        changes = ", ".join(f"{name} {_show(value)}" for name, value in edit.fields.items())
        return f"what if step {edit.step} of {where} had had {changes}?"
    changed = _changed_row(original, edit.fields)
    return (
        f"what if {_subject(changed)} of {where} had {_verb(changed)} at step {edit.step}"
        f" (instead of {_noun(original)})?"
    )


def write_whatif(trace: Trace, directory: Path) -> Path:
    """Write an edited trace as JSON Lines with its config embedded; return the file's path.

    The name is the source's stem plus a hash of the bytes, so writing the same trace again
    returns the same path without rewriting it, and the run cache (which hashes the file) reuses
    its timeline. Traces whose instances need different channel counts for one input go out in
    the compact format (still a .jsonl file), the only one that can say so.
    """
    name, data = whatif_file(trace)
    path = Path(directory) / name
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        write_file(path, data)  # beside it, then renamed in: a reader never sees half a trace
    return path


def whatif_file(trace: Trace) -> tuple[str, bytes]:
    """An edited trace as a file's name and bytes (what `write_whatif` writes): the app stores
    these once, as it stores an upload."""
    data = _encode(trace)
    stem = _WHATIF_SUFFIX.sub("", os.path.splitext(trace.source)[0]) or "trace"
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", stem)[:80]
    return f"{stem}.whatif-{hashlib.sha256(data).hexdigest()[:16]}.jsonl", data


# --- links --------------------------------------------------------------------------------------------

TOKEN_LIMIT = 4096
"""The longest edit token a link may carry (a one-row edit is ~100 characters)."""
_INSERT_FIELDS = ("kind", "input", "channel", "watermark_ms", "status", "event_ms", "key", "value", "proc_ms")


def encode_edit(edit: Edit) -> str:
    """The edit as a URL-safe token (base64url of compact JSON, no padding): a link that carries it
    reproduces the what-if on any server that has the original trace, with nothing stored."""
    body: dict[str, Any] = {"instance": edit.instance, "step": edit.step}
    if isinstance(edit, Insert):
        body["op"] = "insert"
        body.update({name: _plain(getattr(edit, name)) for name in _INSERT_FIELDS})
    elif isinstance(edit, Delete):
        body["op"] = "delete"
    elif isinstance(edit, Change):
        body["op"] = "change"
        body["fields"] = {name: _plain(value) for name, value in sorted(edit.fields.items())}
    elif isinstance(edit, Configure):
        body["op"] = "configure"
        body["fields"] = dict(edit.fields)  # in the order given: they are set in that order
    else:
        raise TypeError(f"not an edit: {edit!r}")
    text = json.dumps(body, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
    return base64.urlsafe_b64encode(text.encode("utf-8")).decode("ascii").rstrip("=")


def decode_edit(token: str) -> Edit:
    """The edit a token from `encode_edit` carries; ValueError (saying what is wrong) for anything
    else: a link is user input."""
    body = _token_body(token)
    instance, step, op = body.get("instance"), body.get("step"), body.get("op")
    if not isinstance(instance, str) or not isinstance(step, int) or isinstance(step, bool) or step < 0:
        raise ValueError("the what-if token needs an instance (text) and a step (a number ≥ 0)")
    if op == "delete":
        return Delete(instance, step)
    if op == "insert":
        return _decoded_insert(instance, step, body)
    if op == "change":
        return _decoded_change(instance, step, body)
    if op == "configure":
        return _decoded_configure(body)
    raise ValueError(f"unknown what-if operation {op!r}")


def _token_body(token: str) -> dict[str, Any]:
    """The JSON object a token carries, read within wmviz's JSON bounds (a deep nest is refused,
    never recursed into)."""
    if not isinstance(token, str) or not token or len(token) > TOKEN_LIMIT:
        raise ValueError(f"a what-if token is 1 to {TOKEN_LIMIT} characters")
    if not re.fullmatch(r"[A-Za-z0-9_-]+", token):
        raise ValueError("a what-if token holds only letters, digits, '-' and '_'")
    try:
        body = loads_strict(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode("utf-8"))
    except JsonLineError as exc:
        raise ValueError(f"the what-if token is not readable JSON ({exc})") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"the what-if token is not readable ({exc.__class__.__name__})") from None
    if not isinstance(body, dict):
        raise ValueError("the what-if token does not hold an edit")
    return body


def _decoded_insert(instance: str, step: int, body: dict[str, Any]) -> Insert:
    values: dict[str, Any] = {name: body.get(name) for name in _INSERT_FIELDS}
    _check_values(values)
    if values["kind"] is None or values["input"] is None:
        raise ValueError("an inserted row needs a kind and an input")
    values["kind"] = _enum(Kind, values["kind"], "kind")
    values["status"] = _enum(Status, values["status"], "status")
    return Insert(instance, step, **values)


def _decoded_change(instance: str, step: int, body: dict[str, Any]) -> Change:
    fields = body.get("fields")
    if not isinstance(fields, dict) or set(fields) - CHANGEABLE:
        raise ValueError(f"a change names fields among {', '.join(sorted(CHANGEABLE))}")
    _check_values(fields)
    fields = dict(fields)
    for name, cls in (("kind", Kind), ("status", Status)):
        if name in fields:
            fields[name] = _enum(cls, fields[name], name)
    return Change(instance, step, fields)


def _decoded_configure(body: dict[str, Any]) -> Configure:
    fields = body.get("fields")
    if not isinstance(fields, dict) or not fields:
        raise ValueError("a config what-if names its fields by dotted path")
    _check_values(fields)
    return Configure(fields)


def _plain(value: Any) -> Any:
    return value.value if isinstance(value, Kind | Status) else value


def _check_values(values: Mapping[str, Any]) -> None:
    """Only JSON scalars of the right kind: the edited trace is validated like any file after."""
    for name, value in values.items():
        if name in ("channel", "watermark_ms", "event_ms", "proc_ms"):
            if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
                raise ValueError(f"{name} must be a whole number, not {value!r}")
        elif name == "payload":
            if value is not None and not isinstance(value, dict | list):
                raise ValueError("payload must be an object")
        elif value is not None and not isinstance(value, str | int | float | bool):
            raise ValueError(f"{name} must be a plain value, not {type(value).__name__}")


# --- applying ---------------------------------------------------------------------------------------


def _check_step(trace: Trace, edit: Edit, count: int, *, end_allowed: bool) -> None:
    if count == 0 and not (end_allowed and edit.step == 0):
        known = ", ".join(trace.instances)
        raise ValueError(f"instance {edit.instance!r} is not in this trace (its instances: {known})")
    last = count if end_allowed else count - 1
    if not 0 <= edit.step <= last:
        end = f", or {count} for the end" if end_allowed else ""
        raise ValueError(
            f"instance {edit.instance!r} has no step {edit.step}: its steps are 0 to {count - 1}{end}"
        )


def _inserted_row(edit: Insert) -> TraceRow:
    return TraceRow(
        row=0,
        kind=_enum(Kind, edit.kind, "kind"),
        instance=edit.instance,
        input=edit.input,
        channel=edit.channel,
        event_ms=edit.event_ms,
        watermark_ms=edit.watermark_ms,
        status=_enum(Status, edit.status, "status"),
        proc_ms=edit.proc_ms,
        key=edit.key,
        value=edit.value,
    )


def _changed_row(row: TraceRow, fields: Mapping[str, Any]) -> TraceRow:
    bad = sorted(set(fields) - CHANGEABLE)
    if bad:
        raise ValueError(
            f"cannot change {', '.join(bad)}; changeable fields: {', '.join(sorted(CHANGEABLE))}"
        )
    values = dict(fields)
    for needed in ("kind", "input"):
        if needed in values and values[needed] is None:
            raise ValueError(f"{needed} cannot be removed; every row needs one")
    if "kind" in values:
        values["kind"] = _enum(Kind, values["kind"], "kind")
    if "status" in values:
        values["status"] = _enum(Status, values["status"], "status")
    if "payload" in values:
        payload = values["payload"] or ()
        values["payload"] = tuple(payload.items() if isinstance(payload, Mapping) else payload)
    return dataclasses.replace(row, **values)


def _enum(cls: type[Kind] | type[Status], value: Any, name: str) -> Any:
    # A UI hands over what a select box holds, often the enum's text; the writer needs the member.
    if value is None or isinstance(value, cls):
        return value
    if isinstance(value, str):
        for member in cls:
            if member.value.lower() == value.strip().lower():
                return member
    expected = ", ".join(m.value for m in cls)
    raise ValueError(f"{name} {value!r} is not one of {expected}")


def _whatif_name(source: str) -> str:
    stem = _WHATIF_SUFFIX.sub("", os.path.splitext(source)[0]) or "trace"
    return f"{stem}.whatif.jsonl"  # the extension picks the reader


def _validated(rows: list[TraceRow], original: Trace, source: str) -> Trace:
    """Write and re-read the rows; keep the original's channel counts where re-deriving lost some."""
    config = original.config
    # Without a config line, rows read back as lines 1..n, the numbers the edited trace shows.
    edited = read_trace_bytes(write_trace_bytes(rows, "jsonl"), source, config)
    # An edit changes rows, not the topology: a valve keeps its channel count even when re-deriving
    # it from the rows would not (a compact header, or the highest channel's only row deleted),
    # and a row on a channel beyond it is an error, as it would be in the original.
    wanted = {pair: original.valve_channels.get(pair, n) for pair, n in edited.valve_channels.items()}
    if wanted == edited.valve_channels:
        return edited
    # Pin the counts in the config when all instances agree per input (config.channels is per
    # input); otherwise only the compact format's per-instance header can say them.
    lost_inputs = {inp for (inst, inp), n in wanted.items() if n != edited.valve_channels[(inst, inp)]}
    counts = {inp: {n for (_, i), n in wanted.items() if i == inp} for inp in lost_inputs}
    if all(len(c) == 1 for c in counts.values()):
        pinned = {**config.channels, **{inp: next(iter(c)) for inp, c in counts.items()}}
        config = dataclasses.replace(config, channels=pinned)
        return read_trace_bytes(write_trace_bytes(rows, "jsonl"), source, config)
    candidate = Trace(source, edited.rows, config, wanted)
    try:
        data = write_trace_bytes(candidate, "compact", config if config != ScenarioConfig() else None)
    except ValueError as exc:
        raise ValueError(
            f"the instances of this trace need different channel counts for one input, which only the "
            f"compact format can keep, and the edited rows do not fit it ({exc})"
        ) from None
    back = read_trace_bytes(data, source)
    if back.valve_channels != wanted or back.instances != edited.instances:
        raise ValueError("the edited trace cannot keep its instances' channel counts in any format")
    # The compact reader counts its header lines; the edited trace numbers its rows 1..n.
    return dataclasses.replace(
        back, rows=tuple(dataclasses.replace(r, row=i) for i, r in enumerate(back.rows, 1))
    )


def _encode(trace: Trace) -> bytes:
    """JSON Lines bytes (config embedded) that read back as `trace`; compact when only it can."""
    config = trace.config if trace.config != ScenarioConfig() else None
    if _derived_channels(trace) == trace.valve_channels:
        return write_trace_bytes(trace, "jsonl", config)  # the reader derives the same counts
    for fmt in ("jsonl", "compact"):
        try:
            data = write_trace_bytes(trace, fmt, config)
        except ValueError:
            continue  # rows the compact format cannot hold
        back = read_trace_bytes(data, trace.source)
        if back.valve_channels == trace.valve_channels and back.instances == trace.instances:
            return data
    raise ValueError(f"{trace.source}: no trace format keeps these instances' channel counts")


def _derived_channels(trace: Trace) -> dict[tuple[str, str], int]:
    """The channel counts a reader gives these rows without a compact header (docs/engines.md, "How a
    trace is judged"): the config's count for the input, else 1 + the largest index over all instances."""
    largest: dict[str, int] = {}
    for r in trace.rows:
        if r.channel is not None and r.channel > largest.get(r.input, -1):
            largest[r.input] = r.channel
    return {
        (r.instance, r.input): trace.config.channels.get(r.input, largest.get(r.input, 0) + 1)
        for r in trace.rows
    }


# --- describing -------------------------------------------------------------------------------------


def _row_at(trace: Trace, instance: str, step: int) -> TraceRow | None:
    rows = [r for r in trace.rows if r.instance == instance]
    return rows[step] if 0 <= step < len(rows) else None


def _subject(row: TraceRow) -> str:
    if row.channel is None:
        return "the clock"
    return f"ch{row.channel}" + (f" of input {row.input}" if row.input != "0" else "")


_STATUS_VERBS = {Status.IDLE: "gone IDLE", Status.ACTIVE: "become ACTIVE", Status.FINISHED: "finished"}


def _verb(row: TraceRow) -> str:
    """What happened to the subject, after "had": "gone IDLE", "received watermark 10"."""
    if row.kind is Kind.STATUS:
        said = _STATUS_VERBS.get(row.status) if row.status is not None else None
        return said or f"sent status {_show(row.status)}"
    if row.kind is Kind.WATERMARK:
        return f"received watermark {_show(row.watermark_ms)}"
    if row.kind is Kind.RECORD:
        key = f" with key {row.key}" if row.key is not None else ""
        return f"received a record at {_show(row.event_ms)}{key}"
    if row.kind is Kind.SPLIT:
        return f"seen {_split_words(row)}"
    return f"reached {_show(row.proc_ms)}"


def _noun(row: TraceRow) -> str:
    """The row in a few words: "FINISHED", "watermark 10", "a record at 12", "the clock at 900"."""
    if row.kind is Kind.STATUS:
        return _show(row.status)
    if row.kind is Kind.WATERMARK:
        return f"watermark {_show(row.watermark_ms)}"
    if row.kind is Kind.RECORD:
        return f"a record at {_show(row.event_ms)}"
    if row.kind is Kind.SPLIT:
        return _split_words(row)
    return f"the clock at {_show(row.proc_ms)}"


def _split_words(row: TraceRow) -> str:
    """A split row in a few words: "split orders-1 added"."""
    cells = dict(row.payload)
    return f"split {_show(cells.get('split'))} {_show(cells.get('split_event'))}"


def _show(value: Any) -> str:
    if isinstance(value, Kind | Status):
        return value.value
    if isinstance(value, int) and not isinstance(value, bool):
        return format_ms(value)
    return "nothing" if value is None else str(value)
