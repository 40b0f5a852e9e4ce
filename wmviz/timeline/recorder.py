"""Record one instance's steps column by column, and build its timeline tables once at the end.

Per step only what a reader reads is appended: the rules taken, the emissions, the operator's
output, the output watermark and status, and the channels, heap entries and timers that changed.
The step number, the instance and the trace row itself come from the input table without Python.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from wmviz.core.operator_log import (
    Dropped,
    JoinOutput,
    OperatorOutput,
    OutputWatermark,
    StepEvent,
    WindowOutput,
)
from wmviz.core.pipeline import InstancePipeline
from wmviz.core.sql_rows import SqlOutput
from wmviz.core.step_result import ValveStepFields
from wmviz.core.timers import FiredTimer, Timer, TimerRegistration
from wmviz.core.types import MAX_MS, MIN_MS, Emission, Status, format_emission
from wmviz.core.valve import Outcome
from wmviz.timeline import keyframe
from wmviz.timeline.tables import INPUT_COLUMNS, SCHEMAS, TABLES
from wmviz.timeline.transcript import dropped_json, dumps, output_json

_RULES = {outcome: " ".join(outcome.rules) for outcome in Outcome}
_CHANGE_TABLES = ("channels", "heap", "timers", "outputs", "keyframes")
_ACTIVE, _IDLE = Status.ACTIVE, Status.IDLE


def status_text(status: Status) -> str:
    # Identity tests: an Enum's `.value` and its hash are Python-level calls, a million times a run.
    return "ACTIVE" if status is _ACTIVE else "IDLE" if status is _IDLE else "FINISHED"


def encode_out(out: tuple[Emission, ...] | list[Emission]) -> str:
    """`W10 S:IDLE`: emissions in the conformance notation ("" when there are none)."""
    return " ".join([format_emission(e) for e in out])


def decode_out(text: str | None) -> list[dict[str, Any]]:
    """The transcript's `out` list back from `encode_out`'s notation."""
    items: list[dict[str, Any]] = []
    for token in (text or "").split():
        if token.startswith("S:"):
            items.append({"status": token[2:]})
        else:
            value = token[1:]
            items.append({"wm": MAX_MS if value == "MAX" else MIN_MS if value == "MIN" else int(value)})
    return items


def rules_label(valve_steps: Sequence[ValveStepFields]) -> str:
    """`W3 W4 W5`, or with generated inputs `… | generated: W3 W4 W5` (rule ids of docs/rules.md),
    from a step's valve inputs (`InstancePipeline.step_valve`)."""
    if not valve_steps:
        return ""
    if len(valve_steps) == 1:  # most steps: one line, no lists
        _, _, generated, _, _, outcome = valve_steps[0]
        return ("generated: " if generated else "") + _RULES[outcome]
    taken = [(generated, _RULES[outcome]) for _, _, generated, _, _, outcome in valve_steps]
    label = " ".join(rules for generated, rules in taken if not generated)
    generated_rules = [rules for generated, rules in taken if generated]
    if generated_rules:
        label += (" | " if label else "") + "generated: " + ", ".join(generated_rules)
    return label


class InstanceRecorder:
    """One instance's timeline rows: the keyframe before its first step, then `record` per step;
    `tables` builds the Arrow tables from the buffers. (Valve-only instances: `ValveOnlyRecorder`.)

    `first_step` > 0 records a stretch of steps of a pipeline that already ran the ones before
    (live mode records one step at a time): its keyframe before the stretch is left out.
    """

    def __init__(
        self, pipeline: InstancePipeline, keyframe_every: int, refs: dict[str, Any], first_step: int = 0
    ) -> None:
        self.instance = pipeline.instance
        self.first_step = first_step
        self.keyframe_every = keyframe_every
        self.refs = refs
        self.rules: list[str] = []
        self.out: list[str] = []
        self.emit: list[str | None] = []
        self.dropped: list[str | None] = []
        self.output_wm: list[int] = []
        self.output_status: list[str] = []
        # The other tables' rows as tuples (their columns after `instance`), one append per row;
        # `tables` turns them into columns once.
        self.changes: dict[str, list[tuple[Any, ...]]] = {table: [] for table in _CHANGE_TABLES}
        self._channel_rows = self.changes["channels"]
        self._heap_rows = self.changes["heap"]
        self._timer_rows = self.changes["timers"]
        self._output_rows = self.changes["outputs"]
        self._channels: dict[tuple[str, int], tuple[int, Status, bool]] = {}
        for name, valve in pipeline.valves.items():
            for c in range(valve.channels):
                self._channels[(name, c)] = valve.channel_tuple(c)
        if first_step == 0:
            self.keyframe(pipeline, -1)

    # ---- per step --------------------------------------------------------------------------------

    def record(self, pipeline: InstancePipeline, step: int) -> None:
        """Every table's rows for the step the pipeline just ran (`run_row` or `process`)."""
        valve_steps = pipeline.step_valve
        self.rules.append(rules_label(valve_steps))
        out = pipeline.step_out
        self.out.append(encode_out(out))
        self.output_wm.append(pipeline.output_watermark_ms)
        self.output_status.append(status_text(pipeline.output_status))
        if len(valve_steps) == 1:
            input_name, valve_input, *_ = valve_steps[0]
            self._channel_change(pipeline, step, input_name, valve_input.channel)
        elif valve_steps:  # each channel the step touched, once
            for input_name, channel in dict.fromkeys((vs[0], vs[1].channel) for vs in valve_steps):
                self._channel_change(pipeline, step, input_name, channel)
        events = pipeline.step_log.timeline
        if events:
            self._events(step, events)
        else:
            self.emit.append(None)
            self.dropped.append(None)
        if (step + 1) % self.keyframe_every == 0:
            self.keyframe(pipeline, step)

    def _channel_change(self, pipeline: InstancePipeline, step: int, input_name: str, channel: int) -> None:
        """A row for the channel if its (watermark, status, aligned) changed; heap moves with it."""
        now = pipeline.valves[input_name].channel_tuple(channel)
        before = self._channels[(input_name, channel)]
        if now == before:
            return
        self._channels[(input_name, channel)] = now
        self._channel_rows.append((step, input_name, channel, now[0], status_text(now[1]), now[2]))
        if before[2] != now[2]:
            self._heap_rows.append((step, input_name, channel, "join" if now[2] else "leave", now[0]))
        elif now[2] and before[0] != now[0]:
            self._heap_rows.append((step, input_name, channel, "move", now[0]))

    def _events(self, step: int, events: list[StepEvent]) -> None:
        """The step's operator outputs (`emit_json` and the outputs table), drops and timers."""
        outputs: list[str] = []
        dropped: list[str] = []
        fired: list[FiredTimer] = []
        for event in events:
            kind = type(event)
            if kind is TimerRegistration:
                self._registered(step, event)  # type: ignore[arg-type]
            elif kind is FiredTimer:
                fired.append(event)  # type: ignore[arg-type]
            elif kind is Dropped:
                dropped.append(dumps(stored_drop(event)))  # type: ignore[arg-type]
            elif kind is WindowOutput or kind is JoinOutput or kind is OutputWatermark or kind is SqlOutput:
                outputs.append(self._output(step, len(outputs), event))  # type: ignore[arg-type]
        for timer in fired:  # after the registrations, as the timers table has always listed them
            self._fired(step, timer)
        self.emit.append(f"[{', '.join(outputs)}]" if outputs else None)
        self.dropped.append(f"[{', '.join(dropped)}]" if dropped else None)

    def _registered(self, step: int, registration: TimerRegistration) -> None:
        self._timer_row(step, "registered", registration.timer, registration.purpose, registration.new)

    def _fired(self, step: int, fired: FiredTimer) -> None:
        self._timer_row(step, "fired", fired.timer, "+".join(fired.purposes), None)

    def _timer_row(self, step: int, event: str, timer: Timer, purposes: str, new: bool | None) -> None:
        start, end = timer.namespace or (None, None)
        self._timer_rows.append(
            (step, event, timer.domain.value, timer.timestamp_ms, timer.key, start, end, purposes, new)
        )

    def _output(self, step: int, ordinal: int, output: OperatorOutput) -> str:
        """One row of the outputs table; returns the output's `emit_json` item."""
        text = dumps(output_json(output))
        if isinstance(output, JoinOutput):
            left = output.left.row if output.left else None
            right = output.right.row if output.right else None
            values: tuple[Any, ...] = (output.kind.value, output.cause.value, left, right)
            values += (None, None, None, None, None, None)
        elif isinstance(output, WindowOutput):
            values = ("window", None, None, None, output.start_ms, output.end_ms, output.late, text)
            values += (None, output.key)
        elif isinstance(output, SqlOutput):
            # A SQL row: its changelog kind, its values in the output's JSON text.
            values = (output.kind.value, "sql", None, None, None, None, None, text, None, None)
        else:
            values = ("wm", None, None, None, None, None, None, None, output.watermark_ms, None)
        self._output_rows.append((step, ordinal, *values))
        return text

    def keyframe(self, pipeline: InstancePipeline, step: int) -> None:
        self.changes["keyframes"].append((step, keyframe.encode(pipeline, self.refs)))

    # ---- the tables ------------------------------------------------------------------------------

    def tables(self, rows: pa.Table) -> dict[str, pa.Table]:
        """Every table of this instance; `rows` are its trace rows (ROW_SCHEMA) in step order."""
        result = {
            "steps": steps_table(
                self.instance,
                rows,
                StepsCaused(
                    self.rules,
                    self.out,
                    pa.array(self.emit, pa.string()),
                    pa.array(self.dropped, pa.string()),
                    self.output_wm,
                    self.output_status,
                ),
                self.first_step,
            )
        }
        for table in _CHANGE_TABLES:
            table_rows = self.changes[table]
            if not table_rows:
                continue
            schema = SCHEMAS[table]
            arrays = {"instance": pa.repeat(pa.scalar(self.instance, pa.string()), len(table_rows))}
            for index, name in enumerate(schema.names[1:]):
                # A list per column: Arrow converts a list several times faster than a tuple.
                arrays[name] = pa.array([row[index] for row in table_rows], schema.field(name).type)
            result[table] = pa.table(arrays, schema=schema)
        assert set(result) <= set(TABLES)
        return result


@dataclass(frozen=True)
class StepsCaused:
    """What each step of an instance caused, one entry per step: the `steps` table's own columns."""

    rules: list[str]
    out: list[str]
    emit: pa.Array
    dropped: pa.Array
    output_wm: list[int]
    output_status: list[str]


def steps_table(instance: str, rows: pa.Table, caused: StepsCaused, first_step: int = 0) -> pa.Table:
    """The `steps` table of one instance: what each step caused, beside the trace row itself."""
    n = rows.num_rows
    steps = {
        "instance": pa.repeat(pa.scalar(instance, pa.string()), n),
        "step": pa.array(np.arange(first_step, first_step + n, dtype=np.int64)),
        "order": rows.column("order").cast(pa.int64()),
        "rules": pa.array(caused.rules, pa.string()),
        "out_json": pa.array(caused.out, pa.string()),
        "emit_json": caused.emit,
        "dropped_json": caused.dropped,
        "output_wm": pa.array(caused.output_wm, pa.int64()),
        "output_status": pa.array(caused.output_status, pa.string()),
    }
    schema = SCHEMAS["steps"]
    steps.update({name: rows.column(name).cast(schema.field(name).type) for name in INPUT_COLUMNS})
    return pa.table(steps, schema=schema)


def stored_drop(dropped: Dropped) -> dict:
    """A drop as the timeline keeps it: the transcript's row and raw reason, and, when the reason
    has times, its template and times, so the page writes them in the reader's format."""
    out = dropped_json(dropped)
    if dropped.why.times:
        out["template"] = dropped.why.template
        out["times"] = list(dropped.why.times)
    return out
