"""Driving one SQL operator of the core the way a real Flink SQL run fed it (issue 29's differential
tests), until `wmviz sql replay` carries rows end to end.

The operator runs in an `InstancePipeline` whose config is the operator alone, with no generator:
the trace is, per oracle step, each input row as a RECORD row (payload = its columns, event_ms = its
time attribute) and then, on each input, a WATERMARK row with the value the real run reported for
the node feeding that input, when it changed at that step. What the operator did is gathered per
oracle step: its output rows and its late drops (`numLateRecordsDropped`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from wmviz.core.operator_kind import SqlOperatorKind
from wmviz.core.scenario import Kind, ScenarioConfig, Trace, TraceRow
from wmviz.core.simulate import simulate
from wmviz.core.sql_rows import SqlOutput

Event = dict[str, Any]
"""One line of `tools.flink.sql.run`'s output."""


@dataclass(frozen=True)
class Fed:
    """One row reaching the operator at oracle step `step` on `input_name`."""

    step: int
    input_name: str
    columns: Mapping[str, Any]
    event_ms: int


@dataclass
class StepOut:
    """What the operator did at one oracle step."""

    outputs: list[SqlOutput] = field(default_factory=list)
    late_drops: int = 0


def node_watermarks(events: Iterable[Event], node: int) -> dict[int, int]:
    """Step -> the watermark the node's operator reached at that step (its changes only, not its
    splits')."""
    return {
        e["step"]: e["watermark"]
        for e in events
        if e.get("node") == node and "watermark" in e and "split" not in e and "sink" not in e
    }


def sink_rows(events: Iterable[Event], sink: str) -> dict[int, list[tuple[str, dict[str, Any]]]]:
    """Step -> the sink's rows (changelog kind, values) in arrival order."""
    out: dict[int, list[tuple[str, dict[str, Any]]]] = {}
    for e in events:
        if e.get("sink") == sink:
            out.setdefault(e["step"], []).append((e["kind"], e["row"]))
    return out


def late_drops(events: Iterable[Event], operator: str) -> dict[int, int]:
    """Step -> the operator's `numLateRecordsDropped` delta (operator: Flink's name, `TemporalJoin[7]`)."""
    out: dict[int, int] = {}
    for e in events:
        if e.get("metric") == "numLateRecordsDropped" and e.get("operator") == operator:
            out[e["step"]] = out.get(e["step"], 0) + e["delta"]
    return out


def operator_trace(
    config: SqlOperatorKind,
    fed: Sequence[Fed],
    watermarks: Mapping[str, Mapping[int, int]],
    order: Sequence[str] | None = None,
) -> tuple[Trace, list[int]]:
    """The trace driving `config`'s operator, and each trace row's oracle step.

    `watermarks` gives, per input, step -> the watermark of the node feeding it (`node_watermarks`).
    Within a step the records come first, then the watermarks, inputs in `order` (default: the
    operator's)."""
    steps = sorted({f.step for f in fed} | {s for w in watermarks.values() for s in w})
    by_step: dict[int, list[Fed]] = {}
    for f in fed:
        by_step.setdefault(f.step, []).append(f)
    rows: list[TraceRow] = []
    origin: list[int] = []
    for step in steps:
        for f in by_step.get(step, ()):
            payload = tuple(f.columns.items())
            rows.append(
                TraceRow(
                    len(rows) + 1,
                    Kind.RECORD,
                    input=f.input_name,
                    channel=0,
                    event_ms=f.event_ms,
                    payload=payload,
                )
            )
            origin.append(step)
        for name in order or config.inputs:
            if step in watermarks.get(name, {}):
                wm = watermarks[name][step]
                rows.append(TraceRow(len(rows) + 1, Kind.WATERMARK, input=name, channel=0, watermark_ms=wm))
                origin.append(step)
    channels = {("0", name): 1 for name in config.inputs}
    return Trace("sql operator", tuple(rows), ScenarioConfig(operator=config), channels), origin  # type: ignore[arg-type]


def run_operator(
    config: SqlOperatorKind,
    fed: Sequence[Fed],
    watermarks: Mapping[str, Mapping[int, int]],
    order: Sequence[str] | None = None,
) -> dict[int, StepOut]:
    """Oracle step -> the operator's outputs and late drops at that step (`order`: operator_trace's)."""
    trace, origin = operator_trace(config, fed, watermarks, order)
    out: dict[int, StepOut] = {}
    for index, result in enumerate(simulate(trace)):
        step = out.setdefault(origin[index], StepOut())
        step.outputs.extend(o for o in result.emit if isinstance(o, SqlOutput))
        step.late_drops += sum(1 for d in result.dropped if d.late)
    return out


def projected(outputs: Iterable[SqlOutput], renames: Mapping[str, str], sink_fields: Sequence[str]) -> list:
    """The operator's outputs as the sink shows them: (kind, {sink field: value}), each sink field
    read from the output field of the same name or the one `renames` gives."""
    return [(o.kind.value, {f: o.value(renames.get(f, f)) for f in sink_fields}) for o in outputs]
