"""Turn one instance's StepResults into timeline columns (pure: no pyarrow, no Spark here).

Columns are appended per table into plain lists; the engines turn them into Arrow tables. A
keyframe is the whole InstancePipeline pickled after a step, plus one before step 0, so any
step's state is the nearest keyframe plus a replay of at most `keyframe_every − 1` rows.
"""

from __future__ import annotations

import json
import pickle
from collections.abc import Mapping
from typing import Any

from wmviz.core.operator_log import JoinOutput, OutputWatermark, WindowOutput
from wmviz.core.pipeline import InstancePipeline, StepResult
from wmviz.core.scenario import Kind, TraceRow
from wmviz.core.types import MAX_MS, MIN_MS, Status, format_emission
from wmviz.core.valve import Outcome
from wmviz.timeline.schema import TABLES
from wmviz.trace.payload import decode_payload, encode_payload
from wmviz.transcript import dropped_json, output_json

Columns = dict[str, list[Any]]

INPUT_COLUMNS = (
    "row",
    "kind",
    "input",
    "channel",
    "seq",
    "event_ms",
    "watermark_ms",
    "status",
    "proc_ms",
    "key",
    "value_json",
    "payload_json",
)
"""The trace row a step replays: the engines fill these straight from their input."""
COMPUTED_COLUMNS = (
    "instance",
    "step",
    "order",
    "rules",
    "out_json",
    "emit_json",
    "dropped_json",
    "output_wm",
    "output_status",
)
"""What the recorder appends per step."""
STEP_COLUMNS = COMPUTED_COLUMNS + INPUT_COLUMNS
TABLE_COLUMNS: dict[str, tuple[str, ...]] = {
    "steps": STEP_COLUMNS,
    "channels": ("instance", "step", "input", "channel", "watermark_ms", "status", "aligned"),
    "heap": ("instance", "step", "input", "channel", "event", "watermark_ms"),
    "timers": (
        "instance",
        "step",
        "event",
        "domain",
        "at_ms",
        "timer_key",
        "window_start",
        "window_end",
        "purposes",
        "new",
    ),
    "outputs": (
        "instance",
        "step",
        "ordinal",
        "kind",
        "cause",
        "left_row",
        "right_row",
        "window_start",
        "window_end",
        "late",
        "result_json",
        "watermark_ms",
        "key",
    ),
    "keyframes": ("instance", "step", "state"),
}


def empty_columns() -> dict[str, Columns]:
    """Fresh column buffers for every table."""
    return {table: {c: [] for c in TABLE_COLUMNS[table]} for table in TABLES}


def encode_out(result: StepResult) -> str:
    """`W10 S:IDLE`: the step's valve/combined emissions in the conformance notation."""
    return " ".join(format_emission(e) for e in result.out)


def decode_out(text: str) -> list[dict[str, Any]]:
    """The transcript's `out` list back from `encode_out`'s notation."""
    items = []
    for token in text.split():
        if token.startswith("S:"):
            items.append({"status": token[2:]})
        else:
            value = token[1:]
            items.append({"wm": MAX_MS if value == "MAX" else MIN_MS if value == "MIN" else int(value)})
    return items


_RULES = {outcome: " ".join(outcome.rules) for outcome in Outcome}
_STATUS_VALUE = {status: status.value for status in Status}


def rules_label(result: StepResult) -> str:
    """`W3 W4 W5`, or with generated inputs `… | generated: W3 W4 W5` (rule names of valve.md)."""
    steps = result.valve_steps
    if not steps:
        return ""
    if len(steps) == 1:
        vs = steps[0]
        return ("generated: " if vs.generated else "") + _RULES[vs.outcome]
    own = [_RULES[vs.outcome] for vs in steps if not vs.generated]
    generated = [_RULES[vs.outcome] for vs in steps if vs.generated]
    label = " ".join(own)
    if generated:
        label += (" | " if label else "") + "generated: " + ", ".join(generated)
    return label


def input_columns(rows: list[TraceRow]) -> dict[str, list[Any]]:
    """The steps table's input columns for these trace rows, column by column."""
    return {
        "row": [r.row for r in rows],
        "kind": [r.kind.value for r in rows],
        "input": [r.input for r in rows],
        "channel": [r.channel for r in rows],
        "seq": [r.seq for r in rows],
        "event_ms": [r.event_ms for r in rows],
        "watermark_ms": [r.watermark_ms for r in rows],
        "status": [r.status.value if r.status is not None else None for r in rows],
        "proc_ms": [r.proc_ms for r in rows],
        "key": [r.key for r in rows],
        "value_json": [json.dumps(r.value) if r.value is not None else None for r in rows],
        "payload_json": [encode_payload(r.payload) if r.payload else "[]" for r in rows],
    }


_KINDS = {k.value: k for k in Kind}
_STATUSES = {s.value: s for s in Status}


def trace_row_from_step(rec: Mapping[str, Any]) -> TraceRow:
    """The trace row a record with the row columns carries: a `steps` record (replay from a
    keyframe) or a row of the Spark reader's DataFrame (`wmviz.spark.validate.ROW_COLUMNS`)."""
    status = rec.get("status")
    value_json = rec.get("value_json")
    payload_json = rec.get("payload_json")
    return TraceRow(
        row=rec["row"],
        kind=_KINDS[rec["kind"]],
        instance=rec["instance"],
        input=rec["input"],
        channel=rec.get("channel"),
        seq=rec.get("seq"),
        event_ms=rec.get("event_ms"),
        watermark_ms=rec.get("watermark_ms"),
        status=_STATUSES[status] if status else None,
        proc_ms=rec.get("proc_ms"),
        key=rec.get("key"),
        value=json.loads(value_json) if value_json is not None else None,
        # Most rows carry no payload: skip the decoder for them (it is a third of a Spark step).
        payload=decode_payload(payload_json) if payload_json and payload_json != "[]" else (),
    )


class TimelineRecorder:
    """Appends one instance's steps to column buffers; call `start` once, then `record` per step."""

    def __init__(self, columns: dict[str, Columns], keyframe_every: int) -> None:
        self.columns = columns
        self.keyframe_every = keyframe_every
        self._channels: dict[tuple[str, int], tuple[int, Status, bool]] = {}

    def start(self, pipeline: InstancePipeline) -> None:
        """Remember the initial channel states and store the keyframe before step 0."""
        for name, valve in pipeline.valves.items():
            for c in valve.state().channels:
                self._channels[(name, c.channel)] = (c.watermark_ms, c.status, c.aligned)
        self.keyframe(pipeline, -1)

    def record(self, pipeline: InstancePipeline, result: StepResult, order: int) -> None:
        """Every table's rows for one step (and a keyframe every `keyframe_every` steps)."""
        self.step_row(pipeline, result, order)
        self.channel_rows(pipeline, result)
        if result.events:
            self.timer_rows(result)
            self.output_rows(result)
        if (result.step + 1) % self.keyframe_every == 0:
            self.keyframe(pipeline, result.step)

    def record_valve_only(
        self, pipeline: InstancePipeline, step: int, order: int, row: TraceRow, outcome, out: list
    ) -> None:
        """`record` for `InstancePipeline.process_valve_only` (no StepResult, the same rows)."""
        cols = self.columns["steps"]
        cols["instance"].append(pipeline.instance)
        cols["step"].append(step)
        cols["order"].append(order)
        cols["rules"].append(_RULES[outcome] if outcome is not None else "")
        cols["out_json"].append(" ".join([format_emission(e) for e in out]) if out else "")
        cols["emit_json"].append(None)
        cols["dropped_json"].append(None)
        valve = pipeline.valves[row.input] if outcome is not None else None
        if valve is None:
            valve = pipeline.valves[pipeline.inputs[0]]
        cols["output_wm"].append(valve.last_watermark_ms)
        cols["output_status"].append(_STATUS_VALUE[valve.last_status])
        if outcome is not None:
            key = (row.input, row.channel)
            now = valve.channel_tuple(row.channel)
            before = self._channels[key]
            if now != before:
                self._channels[key] = now
                self._append_raw(
                    "channels",
                    pipeline.instance,
                    step,
                    row.input,
                    row.channel,
                    now[0],
                    _STATUS_VALUE[now[1]],
                    now[2],
                )
                if before[2] != now[2]:
                    self._append_raw(
                        "heap",
                        pipeline.instance,
                        step,
                        row.input,
                        row.channel,
                        "join" if now[2] else "leave",
                        now[0],
                    )
                elif now[2] and before[0] != now[0]:
                    self._append_raw("heap", pipeline.instance, step, row.input, row.channel, "move", now[0])
        if (step + 1) % self.keyframe_every == 0:
            self.keyframe(pipeline, step)

    def step_row(self, pipeline: InstancePipeline, result: StepResult, order: int) -> None:
        """The computed columns of a step (the engine adds the input columns)."""
        cols = self.columns["steps"]
        cols["instance"].append(result.instance)
        cols["step"].append(result.step)
        cols["order"].append(order)
        cols["rules"].append(rules_label(result))
        cols["out_json"].append(encode_out(result))
        cols["emit_json"].append(json.dumps([output_json(o) for o in result.emit]) if result.emit else None)
        cols["dropped_json"].append(
            json.dumps([dropped_json(d) for d in result.dropped]) if result.dropped else None
        )
        cols["output_wm"].append(pipeline.output_watermark_ms)
        cols["output_status"].append(pipeline.output_status.value)

    def channel_rows(self, pipeline: InstancePipeline, result: StepResult) -> None:
        """One row per channel whose (watermark, status, aligned) changed, and heap membership moves."""
        valve_steps = result.valve_steps
        if not valve_steps:
            return
        seen = set()
        for vs in valve_steps:
            name, channel = vs.input, vs.valve_input.channel
            if (name, channel) in seen:
                continue
            seen.add((name, channel))
            now = pipeline.valves[name].channel_tuple(channel)
            before = self._channels[(name, channel)]
            if now == before:
                continue
            self._channels[(name, channel)] = now
            self._append("channels", result, name, channel, now[0], now[1].value, now[2])
            if before[2] != now[2]:
                self._append("heap", result, name, channel, "join" if now[2] else "leave", now[0])
            elif now[2] and before[0] != now[0]:
                self._append("heap", result, name, channel, "move", now[0])

    def timer_rows(self, result: StepResult) -> None:
        for reg in result.timers_registered:
            t = reg.timer
            ns = t.namespace or (None, None)
            self._append(
                "timers",
                result,
                "registered",
                t.domain.value,
                t.timestamp_ms,
                t.key,
                ns[0],
                ns[1],
                reg.purpose,
                reg.new,
            )
        for fired in result.timers_fired:
            t = fired.timer
            ns = t.namespace or (None, None)
            self._append(
                "timers",
                result,
                "fired",
                t.domain.value,
                t.timestamp_ms,
                t.key,
                ns[0],
                ns[1],
                "+".join(fired.purposes),
                None,
            )

    def output_rows(self, result: StepResult) -> None:
        for i, o in enumerate(result.emit):
            if isinstance(o, JoinOutput):
                values = (
                    o.kind.value,
                    o.cause.value,
                    o.left.row if o.left else None,
                    o.right.row if o.right else None,
                    None,
                    None,
                    None,
                    None,
                    None,
                    None,
                )
            elif isinstance(o, WindowOutput):
                values = (
                    "window",
                    None,
                    None,
                    None,
                    o.start_ms,
                    o.end_ms,
                    o.late,
                    json.dumps(output_json(o)),
                    None,
                    o.key,
                )
            else:
                assert isinstance(o, OutputWatermark)
                values = ("wm", None, None, None, None, None, None, None, o.watermark_ms, None)
            self._append("outputs", result, i, *values)

    def keyframe(self, pipeline: InstancePipeline, step: int) -> None:
        cols = self.columns["keyframes"]
        cols["instance"].append(pipeline.instance)
        cols["step"].append(step)
        cols["state"].append(pickle.dumps(pipeline, protocol=pickle.HIGHEST_PROTOCOL))

    def _append(self, table: str, result: StepResult, *values: Any) -> None:
        self._append_raw(table, result.instance, result.step, *values)

    def _append_raw(self, table: str, instance: str, step: int, *values: Any) -> None:
        cols = self.columns[table]
        names = TABLE_COLUMNS[table]
        cols[names[0]].append(instance)
        cols[names[1]].append(step)
        for name, value in zip(names[2:], values, strict=True):
            cols[name].append(value)
