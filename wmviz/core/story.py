"""One plain-English line per trace row: the row, the generator and valve, then the operator.

Built only from the StepResult's structured parts (valve accounts, probes, the ordered operator
timeline), never from strings, so `explain` and the UI tell the same story.
"""

from __future__ import annotations

from wmviz.core.narrate import narrate
from wmviz.core.operator_log import (
    Cached,
    Cause,
    Dropped,
    Finalized,
    GeneratorUpdate,
    JoinOutput,
    OutputWatermark,
    RowKind,
    WindowOutput,
)
from wmviz.core.pipeline import StepResult, ValveStep
from wmviz.core.scenario import Kind, TraceRow
from wmviz.core.timers import FiredTimer, TimerRegistration
from wmviz.core.types import EmittedWatermark, format_emission, format_input, format_ms


def explain_line(result: StepResult) -> str:
    """The narration of one step, including rows that do not reach the valve."""
    valve_only = len(result.valve_steps) == 1 and result.valve_steps[0].input == "0"
    if result.account is not None and valve_only and not result.events:
        return narrate(result.account)
    if result.account is None and not result.valve_steps and not result.events:
        return describe_bypass(result.row)  # no generator and no operator saw this row
    return explain_step(result)


def describe_bypass(row: TraceRow) -> str:
    """Why a record or proctime row leaves the valve as it was."""
    if row.kind is Kind.PROCTIME:
        return (
            f"proctime {format_ms(row.proc_ms or 0)}: the processing-time clock moves; the valve is untouched"
        )
    key = f" key={row.key}" if row.key is not None else ""
    return (
        f"record{key} event_ms={format_ms(row.event_ms or 0)} on ch{row.channel}: records pass the valve; "
        "without a generator they do not move watermarks"
    )


def explain_step(result: StepResult) -> str:
    """The whole story of one step, joined with '; '."""
    return "; ".join(explain_parts(result))


def explain_parts(result: StepResult) -> list[str]:
    """The story of one step as its parts: the row, each probe, each valve input, the operator."""
    parts = [describe_row(result.row)] if result.account is None else []
    for probe in result.probes:
        if probe.emitted:
            inputs = ", ".join(format_input(i) for i in probe.emitted)
            parts.append(
                f"probe at {format_ms(probe.time_ms)} on ch{probe.channel}: {_probe_reason(probe)} → {inputs}"
            )
    for vs in result.valve_steps:
        parts.append(_valve_part(vs))
    if result.valve_steps and _two_input(result):
        combined = [format_emission(e) for e in result.out]
        parts.append("combined input: " + (", ".join(combined) if combined else "unchanged"))
    parts.extend(_operator_parts(result))
    return [p for p in parts if p]


def describe_row(row: TraceRow) -> str:
    """The trace row itself, when the valve did not narrate it."""
    if row.kind is Kind.PROCTIME:
        return f"proctime {format_ms(row.proc_ms or 0)}: the processing-time clock moves"
    if row.kind is Kind.RECORD:
        key = f" key={row.key}" if row.key is not None else ""
        when = f"event_ms={format_ms(row.event_ms)}" if row.event_ms is not None else f"proc_ms={row.proc_ms}"
        return f"record {label(row)}{key} {when} on input {row.input} ch{row.channel}"
    return f"{row.kind.value} on input {row.input} ch{row.channel}"


def label(row: TraceRow) -> str:
    """A record's short name: `value@time`, or `line N@time` when it has no value."""
    time = row.event_ms if row.event_ms is not None else row.proc_ms
    name = row.value if row.value is not None else f"line {row.row}"
    return f"{name}@{format_ms(time)}" if time is not None else str(name)


def _probe_reason(probe) -> str:
    if probe.saw_activity:
        return "activity since the last probe"
    if probe.countdown_start_ms is not None:
        return f"quiet since {format_ms(probe.countdown_start_ms)}, longer than the idle timeout"
    return "periodic emission"


def _valve_part(vs: ValveStep) -> str:
    prefix = f"generator ch{vs.valve_input.channel} sends " if vs.generated else ""
    valve = f"valve {vs.input}: " if vs.input != "0" else ""
    if vs.account is not None:
        return f"{prefix}{valve}{narrate(vs.account)}"
    emitted = ", ".join(format_emission(e) for e in vs.emissions) or "nothing emitted"
    return f"{prefix}{valve}{format_input(vs.valve_input)}: {emitted}"


def _two_input(result: StepResult) -> bool:
    return any(vs.input in ("L", "R") for vs in result.valve_steps)


def _operator_parts(result: StepResult) -> list[str]:
    parts: list[str] = []
    registered = [e for e in result.events if isinstance(e, TimerRegistration)]
    for event in result.events:
        if isinstance(event, FiredTimer):
            parts.append(describe_fired(event))
        elif isinstance(event, JoinOutput | WindowOutput):
            parts.append(describe_output(event))
        elif isinstance(event, Finalized):
            parts.append(
                f"{label(event.row)} expired unmatched: its speculative row stands as the final answer"
            )
        elif isinstance(event, Cached):
            parts.append(
                f"{label(event.row)} is cached on {event.side}, waiting for partners until operator time "
                f"reaches {format_ms(event.closes_at_ms)}"
            )
        elif isinstance(event, GeneratorUpdate):
            verdict = "→ new watermark" if event.emitted else "(not above the last one: no watermark)"
            parts.append(
                f"generator ch{event.channel}: maxSeen {format_ms(event.max_seen_ms)}, candidate "
                f"{format_ms(event.candidate_ms)} {verdict}"
            )
        elif isinstance(event, OutputWatermark):
            parts.append(f"output watermark {format_ms(event.watermark_ms)}")
        elif isinstance(event, Dropped):
            parts.append(f"{label(event.row)} dropped: {event.reason}")
        elif isinstance(event, str):
            parts.append(event)
    if registered:
        timers = ", ".join(
            f"{r.purpose}@{format_ms(r.timer.timestamp_ms)}{'' if r.new else ' (already pending)'}"
            for r in registered
        )
        parts.append(f"registers {timers}")
    return parts


def describe_fired(fired: FiredTimer) -> str:
    """`timer early_fire@13 for key k fired` (window timers name their window)."""
    timer = fired.timer
    where = f" for window [{timer.namespace[0]}, {timer.namespace[1]})" if timer.namespace else ""
    key = f" key {timer.key}" if timer.key else ""
    domain = " (processing time)" if timer.domain.value == "processing" else ""
    return f"timer {'+'.join(fired.purposes)}@{format_ms(timer.timestamp_ms)}{domain}{where}{key} fired"


def describe_output(output: JoinOutput | WindowOutput) -> str:
    """A join changelog row or a window firing, with why it was emitted."""
    if isinstance(output, WindowOutput):
        what = list(output.elements) if output.aggregate == "list" else f"{output.aggregate} {output.result}"
        again = "fires again for a late element with" if output.late else "fires with"
        return f"window [{output.start_ms}, {output.end_ms}) {again} {what}"
    row = f"{output.kind.value}({_side(output.left)}, {_side(output.right)})"
    pad = output.left if output.right is None else output.right
    return {
        Cause.MATCH: f"{row}" + (" corrects it" if output.kind is RowKind.UPDATE_AFTER else ": a match"),
        Cause.RETRACT: f"{row} retracts the speculative row",
        Cause.EARLY_FIRE: f"{row}, speculative: {_side(pad)} has no match yet",
        Cause.PAD_CLEANUP: f"{row}: cleanup expired {_side(pad)} without a match",
        Cause.PAD_EAGER: f"{row}: {_side(pad)} expired while the other side probed its cache",
        Cause.PAD_NOT_CACHED: f"{row}: too late to cache and unmatched, padded on arrival",
        Cause.PAD_NEGATIVE_WINDOW: f"{row}: negative window (hi < lo), padded on arrival",
    }[output.cause]


def _side(row: TraceRow | None) -> str:
    return "null" if row is None else label(row)


def emitted_watermarks(result: StepResult) -> list[int]:
    """Watermarks the valve or combined input emitted during the step."""
    return [e.watermark_ms for e in result.out if isinstance(e, EmittedWatermark)]
