"""What-if edits: insert, delete or change one row of a trace, or run its rows under another config.

An edit names a row by its instance and step (the n-th row of that instance in arrival order), as
the app shows it. This module holds the edits themselves, the row an insert or a change makes (the
one rule both applying and describing an edit use), and `describe_edit`, an edit in words.
Applying an edit to a trace and writing the what-if trace is `whatif_trace`; an edit as a link's
token is `whatif_token`.

Pure: no streamlit, pyspark or plotly.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from wmviz.core.scenario import Kind, Trace, TraceRow
from wmviz.core.timetext import duration
from wmviz.core.types import Status, format_ms

__all__ = [
    "CHANGEABLE",
    "Change",
    "Configure",
    "Delete",
    "Edit",
    "Insert",
    "changed_row",
    "describe_edit",
    "enum_member",
    "inserted_row",
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


def inserted_row(edit: Insert) -> TraceRow:
    return TraceRow(
        row=0,
        kind=enum_member(Kind, edit.kind, "kind"),
        instance=edit.instance,
        input=edit.input,
        channel=edit.channel,
        event_ms=edit.event_ms,
        watermark_ms=edit.watermark_ms,
        status=enum_member(Status, edit.status, "status"),
        proc_ms=edit.proc_ms,
        key=edit.key,
        value=edit.value,
    )


def changed_row(row: TraceRow, fields: Mapping[str, Any]) -> TraceRow:
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
        values["kind"] = enum_member(Kind, values["kind"], "kind")
    if "status" in values:
        values["status"] = enum_member(Status, values["status"], "status")
    if "payload" in values:
        payload = values["payload"] or ()
        values["payload"] = tuple(payload.items() if isinstance(payload, Mapping) else payload)
    return dataclasses.replace(row, **values)


def enum_member(cls: type[Kind] | type[Status], value: Any, name: str) -> Any:
    # A UI hands over what a select box holds, often the enum's text; the writer needs the member.
    if value is None or isinstance(value, cls):
        return value
    if isinstance(value, str):
        for member in cls:
            if member.value.lower() == value.strip().lower():
                return member
    expected = ", ".join(m.value for m in cls)
    raise ValueError(f"{name} {value!r} is not one of {expected}")


# --- describing -------------------------------------------------------------------------------------


def describe_edit(edit: Edit, trace: Trace | None = None) -> str:
    """One line for a person: "what if ch2 of instance 0 had gone IDLE at step 5?".

    With the trace the edit applies to, a change or deletion also says what the row was.
    """
    if isinstance(edit, Configure):
        fields = ", ".join(f"{k} {_show_field(k, v)}" for k, v in edit.fields.items())
        return f"what if the config had had {fields}?"
    original = _row_at(trace, edit.instance, edit.step) if trace is not None else None
    where = f"instance {edit.instance}"
    if isinstance(edit, Insert):
        row = inserted_row(edit)
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
    changed = changed_row(original, edit.fields)
    return (
        f"what if {_subject(changed)} of {where} had {_verb(changed)} at step {edit.step}"
        f" (instead of {_noun(original)})?"
    )


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


def _show_field(path: str, value: Any) -> str:
    """A config field's value: a `…_ms` field's whole number as the duration it is (`5s`)."""
    if path.endswith("_ms") and isinstance(value, int) and not isinstance(value, bool):
        return duration(value)
    return _show(value)


def _show(value: Any) -> str:
    if isinstance(value, Kind | Status):
        return value.value
    if isinstance(value, int) and not isinstance(value, bool):
        return format_ms(value)
    return "nothing" if value is None else str(value)
