"""The machine-readable transcript: one JSON object per input element.

`step`, `instance` and `out` are as the conformance cases (tests/data/conformance) write them.
Scenarios with a generator or an operator add `emit` (the operator's output in emission order),
`dropped` and `timers`; a step in which a SQL watermark stage did something adds `sql`, what it
did in words; a step in which watermark alignment did something adds `alignment`, what it did as
data (`alignment_json`; docs/trace-format.md, "The transcript").
"""

from __future__ import annotations

import json
from typing import Any

from wmviz.core.alignment import (
    AlignmentUpdate,
    Announcement,
    HeldRecord,
    PauseEvent,
    ReleasedRecords,
    Report,
)
from wmviz.core.operator_log import Dropped, JoinOutput, OperatorOutput, SqlEvent, WindowOutput
from wmviz.core.scenario import TraceRow
from wmviz.core.sql_rows import SqlOutput
from wmviz.core.step_result import StepResult
from wmviz.core.timers import FiredTimer, TimerRegistration
from wmviz.core.timetext import RAW
from wmviz.core.types import Emission, EmittedWatermark
from wmviz.trace.payload import tagged_value


def emission_json(em: Emission) -> dict[str, Any]:
    """`{"wm": N}` (MIN/MAX as plain integers) or `{"status": "IDLE"}`."""
    if isinstance(em, EmittedWatermark):
        return {"wm": em.watermark_ms}
    return {"status": em.status.value}


def row_json(row: TraceRow) -> dict[str, Any]:
    """A trace record as it appears in join output: its line, key, times, value and payload.

    The payload is nested under `payload`, so a payload column named like one of these keys
    (`row`, say) cannot overwrite them.
    """
    out: dict[str, Any] = {"row": row.row}
    for name in ("key", "event_ms", "proc_ms", "value"):
        value = getattr(row, name)
        if value is not None:
            out[name] = value
    if row.payload:
        out["payload"] = dict(row.payload)
    return out


def dumps(obj: Any) -> str:
    """JSON text of a transcript object; payload values JSON cannot hold (a Parquet timestamp,
    a decimal) are written in the payload's tagged form rather than failing the whole line."""
    return json.dumps(obj, default=tagged_value)


def output_json(output: OperatorOutput) -> dict[str, Any]:
    """One `emit` item: a join row, a window firing, or the output watermark."""
    if isinstance(output, JoinOutput):
        return {
            "kind": output.kind.value,
            "left": row_json(output.left) if output.left is not None else None,
            "right": row_json(output.right) if output.right is not None else None,
            "cause": output.cause.value,
        }
    if isinstance(output, WindowOutput):
        item: dict[str, Any] = {
            "kind": "window",
            "key": output.key,
            "start": output.start_ms,
            "end": output.end_ms,
        }
        if output.aggregate == "list":
            item["elements"] = list(output.elements)
        else:
            item["result"] = output.result
        item["late"] = output.late
        return item
    if isinstance(output, SqlOutput):
        return {"kind": output.kind.value, "row": dict(output.values), "rows": list(output.rows)}
    return {"wm": output.watermark_ms}


def dropped_json(dropped: Dropped) -> dict[str, Any]:
    """A dropped record: its line and why."""
    return {"row": dropped.row.row, "reason": dropped.reason}


def registration_json(reg: TimerRegistration) -> dict[str, Any]:
    """A timer registration; `new` is false when the same timer was already pending."""
    return {
        "purpose": reg.purpose,
        "at": reg.timer.timestamp_ms,
        "domain": reg.timer.domain.value,
        "key": reg.timer.key,
        "new": reg.new,
    }


def fired_json(fired: FiredTimer) -> dict[str, Any]:
    """A fired timer with every purpose it served."""
    return {
        "at": fired.timer.timestamp_ms,
        "domain": fired.timer.domain.value,
        "key": fired.timer.key,
        "purposes": list(fired.purposes),
    }


def report_json(report: Report) -> dict[str, Any]:
    """A subtask's report: its watermark (MAX while idle, as a plain integer) and the split that
    holds it (null for a subtask whose watermark no single split holds)."""
    return {"subtask": report.subtask, "wm": report.watermark_ms, "split": report.holder}


def announcement_json(announcement: Announcement) -> dict[str, Any]:
    """The coordinator's announcement: the group watermark, the highest allowed, and who set it."""
    holder = announcement.held_by
    return {
        "group_wm": announcement.group_ms,
        "max_allowed": announcement.max_allowed_ms,
        "held_by": None if holder is None else {"subtask": holder.subtask, "split": holder.holder},
    }


AlignmentEvent = AlignmentUpdate | PauseEvent | HeldRecord | ReleasedRecords


def alignment_json(event: AlignmentEvent) -> dict[str, Any]:
    """One `alignment` item: an update (the reports and the announcement), a subtask or split
    paused or resumed (its watermark, the sampled one the announcement was compared with, and that
    announcement), a record held back, or
    the held records read now (only those actually read: `read_released`)."""
    if isinstance(event, AlignmentUpdate):
        reports = [report_json(r) for r in event.reports]
        return {"event": "update", "at": event.time_ms, "group": event.group, "reports": reports} | (
            announcement_json(event.announcement)
        )
    if isinstance(event, PauseEvent):
        return {
            "event": "paused" if event.paused else "resumed",
            "subtask": event.channel,
            "split": event.split,
            "wm": event.watermark_ms,
            "sampled": event.sampled_ms,
        } | announcement_json(event.announcement)
    if isinstance(event, HeldRecord):
        waits_on = "subtask" if event.subtask_paused else "split"
        return {
            "event": "held",
            "subtask": event.channel,
            "split": event.split,
            "row": event.row,
            "waits_on": waits_on,
        }
    return {"event": "released", "subtask": event.channel, "rows": list(event.rows)}


def transcript_record(
    result: StepResult, *, with_input: bool = False, operator: bool = False
) -> dict[str, Any]:
    """The transcript object of one step; `operator` adds the emit/dropped/timers keys."""
    record: dict[str, Any] = {"step": result.step, "instance": result.instance}
    if with_input:
        record["input"] = result.row.input
    record["out"] = [emission_json(e) for e in result.out]
    if operator:
        record["emit"] = [output_json(o) for o in result.emit]
        record["dropped"] = [dropped_json(d) for d in result.dropped]
        record["timers"] = {
            "registered": [registration_json(r) for r in result.timers_registered],
            "fired": [fired_json(f) for f in result.timers_fired],
        }
    sql = [event.describe(RAW) for event in result.events if isinstance(event, SqlEvent)]
    if sql:
        record["sql"] = sql  # what SQL's watermark stages did, in words (docs/rules.md, SQL-*)
    alignment = [alignment_json(e) for e in result.events if isinstance(e, AlignmentEvent)]
    if alignment:
        record["alignment"] = alignment  # what watermark alignment did, as data (docs/alignment.md)
    return record


def transcript_line(result: StepResult, *, with_input: bool = False, operator: bool = False) -> str:
    """One transcript line, formatted like the conformance cases' lines."""
    return dumps(transcript_record(result, with_input=with_input, operator=operator))
