"""One plain-English line per trace row: the row, the generator and valve, then the operator.

Built only from the StepResult's structured parts (valve accounts, probes, the ordered operator
timeline), never from strings, so `explain` and the UI tell the same story. Every time goes through
one `Times` formatter (`t`: `wmviz.view.timefmt.TimeFormat` from the page, the CLI and the report).
"""

from __future__ import annotations

from typing import TypeGuard

from wmviz.core.alignment import HeldRecord, PauseEvent, ReleasedRecords, describe_alignment
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
    SessionMerge,
    SqlEvent,
    StepEvent,
    ToldFate,
    WindowOutput,
)
from wmviz.core.scenario import Kind, TraceRow
from wmviz.core.splits import SplitEvent
from wmviz.core.sql_rows import Fate, RowFate, SqlOutput
from wmviz.core.step_result import StepResult, ValveStep
from wmviz.core.timers import FiredTimer, TimerRegistration
from wmviz.core.timetext import RAW, Times, duration, emission_text, input_text
from wmviz.core.types import MIN_MS, EmittedWatermark
from wmviz.core.windows import max_timestamp

REGISTERED_NOW = "registered now"
ALREADY_PENDING = "already pending, registered again"
"""How a registration is named, in the narration and in the timers table alike: Flink keeps one
timer per (domain, key, namespace, time), so registering a pending one adds nothing but a purpose."""


def explain_line(result: StepResult, t: Times = RAW) -> str:
    """The narration of one step, including rows that do not reach the valve."""
    valve_only = len(result.valve_steps) == 1 and result.valve_steps[0].input == "0"
    if result.account is not None and valve_only and not result.events:
        return narrate(result.account, t)
    if result.account is None and not result.valve_steps and not result.events:
        return describe_bypass(result.row, t)  # no generator and no operator saw this row
    return explain_step(result, t)


def describe_bypass(row: TraceRow, t: Times = RAW) -> str:
    """Why a record or proctime row leaves the valve as it was."""
    if row.kind is Kind.PROCTIME:
        return f"proctime {t(row.proc_ms or 0)}: the processing-time clock moves; the valve is untouched"
    key = f" key={row.key}" if row.key is not None else ""
    return (
        f"record{key} event_ms={t(row.event_ms or 0)} on ch{row.channel}: records pass the valve; "
        "without a generator they do not move watermarks"
    )


def explain_step(result: StepResult, t: Times = RAW) -> str:
    """The whole story of one step, joined with '; '."""
    return "; ".join(explain_parts(result, t))


def explain_parts(result: StepResult, t: Times = RAW, *, lead: bool = False) -> list[str]:
    """The story of one step as its parts: the row, each probe, each valve input, the operator.

    In the order things happened, unless `lead` (the page's narration box, whose first lines are
    all a person sees without scrolling): then the headline leads, a source PAUSED by watermark
    alignment (`_headline`), since it is why everything after it waits, and in causal order it comes
    after the row, the probes and the valve, five bullets down."""
    headline = tuple(e for e in result.events if _headline(e)) if lead else ()
    parts = [describe_alignment(e, t) for e in headline]
    if result.account is None:
        parts.append(describe_row(result.row, t))
    for probe in result.probes:
        if probe.emitted:
            inputs = ", ".join(input_text(i, t) for i in probe.emitted)
            parts.append(
                f"probe at {t(probe.time_ms)} on ch{probe.channel}: {_probe_reason(probe, t)} → {inputs}"
            )
    for vs in result.valve_steps:
        parts.append(_valve_part(vs, t))
    if result.valve_steps and _two_input(result):
        combined = [emission_text(e, t) for e in result.out]
        parts.append("combined input: " + (", ".join(combined) if combined else "unchanged"))
    parts.extend(_operator_parts(result, t, said=headline))
    return [p for p in parts if p]


def _headline(event: StepEvent) -> TypeGuard[PauseEvent]:
    """Whether an event is the step's headline: a subtask or split PAUSED by watermark alignment."""
    return isinstance(event, PauseEvent) and event.paused


def describe_row(row: TraceRow, t: Times = RAW) -> str:
    """The trace row itself, when the valve did not narrate it."""
    if row.kind is Kind.PROCTIME:
        return f"proctime {t(row.proc_ms or 0)}: the processing-time clock moves"
    if row.kind is Kind.RECORD:
        key = f" key={row.key}" if row.key is not None else ""
        when = f"event_ms={t(row.event_ms)}" if row.event_ms is not None else f"proc_ms={t(row.proc_ms or 0)}"
        return f"record {label(row, t)}{key} {when} on input {row.input} ch{row.channel}"
    return f"{row.kind.value} on input {row.input} ch{row.channel}"


def label(row: TraceRow, t: Times = RAW) -> str:
    """A record's short name: `value@time`, or `line N@time` when it has no value."""
    time = row.event_ms if row.event_ms is not None else row.proc_ms
    name = row.value if row.value is not None else f"line {row.row}"
    return f"{name}@{t(time)}" if time is not None else str(name)


def _probe_reason(probe, t: Times) -> str:
    if probe.saw_activity:
        return "activity since the last probe"
    if probe.countdown_start_ms is not None:
        return f"quiet since {t(probe.countdown_start_ms)}, longer than the idle timeout"
    return "periodic emission"


def _valve_part(vs: ValveStep, t: Times) -> str:
    prefix = f"generator ch{vs.valve_input.channel} sends " if vs.generated else ""
    valve = f"valve {vs.input}: " if vs.input != "0" else ""
    if vs.account is not None:
        return f"{prefix}{valve}{narrate(vs.account, t)}"
    emitted = ", ".join(emission_text(e, t) for e in vs.emissions) or "nothing emitted"
    return f"{prefix}{valve}{input_text(vs.valve_input, t)}: {emitted}"


def _two_input(result: StepResult) -> bool:
    return any(vs.input in ("L", "R") for vs in result.valve_steps)


def _operator_parts(result: StepResult, t: Times, said: tuple[StepEvent, ...] = ()) -> list[str]:
    """One clause per operator event, in the order they happened, but for those `said` already (the
    headline); the timers registered last."""
    events = [e for e in result.events if not any(e is s for s in said)]
    parts = [part for part in (_event_part(e, t) for e in events) if part is not None]
    registered = [e for e in result.events if isinstance(e, TimerRegistration)]
    if registered:
        timers = ", ".join(
            f"{r.purpose}@{t(r.timer.timestamp_ms)}{'' if r.new else f' ({ALREADY_PENDING})'}"
            for r in registered
        )
        parts.append(f"registers {timers}")
    return parts


def _event_part(event: StepEvent, t: Times) -> str | None:
    """What one event says; None for a timer registration (they are said together, last)."""
    if isinstance(event, FiredTimer):
        return describe_fired(event, t)
    if isinstance(event, JoinOutput | WindowOutput | SqlOutput):
        return describe_output(event, t)
    if isinstance(event, SplitEvent):
        return describe_split(event, t)
    if isinstance(event, PauseEvent | HeldRecord | ReleasedRecords):
        return describe_alignment(event, t)
    if isinstance(event, SessionMerge):
        return describe_merge(event, t)
    if isinstance(event, OutputWatermark):
        return f"output watermark {t(event.watermark_ms)}"
    if isinstance(event, SqlEvent):
        return event.describe(t)
    if isinstance(event, str):
        return event
    return _record_part(event, t)


def _record_part(event: StepEvent, t: Times) -> str | None:
    """What became of a record: dropped, cached, final as it stood, or seen by the generator."""
    if isinstance(event, Finalized):
        return f"{label(event.row, t)} expired unmatched: its speculative row stands as the final answer"
    if isinstance(event, Cached):
        return (
            f"{label(event.row, t)} is cached on {event.side}, waiting for partners until operator time "
            f"reaches {t(event.closes_at_ms)}"
        )
    if isinstance(event, GeneratorUpdate):
        verdict = "→ new watermark" if event.emitted else "(not above the last one: no watermark)"
        return (
            f"generator ch{event.channel}: maxSeen {t(event.max_seen_ms)}, candidate "
            f"{t(event.candidate_ms)} {verdict}"
        )
    if isinstance(event, Dropped):
        return f"{label(event.row, t)} dropped: {event.why.text(t)}"
    if isinstance(event, RowFate) and not isinstance(event, ToldFate) and event.fate is not Fate.DROPPED:
        # A dropped row's own Dropped event says it, with its rule: a fate is never said twice.
        return f"{label(event.row, t)} {event.fate.value} ({event.rule}): {event.why.text(t)}"
    return None


def describe_fired(fired: FiredTimer, t: Times = RAW) -> str:
    """`timer early_fire@13 for key k fired` (window timers name their window)."""
    timer = fired.timer
    where = f" for window [{t(timer.namespace[0])}, {t(timer.namespace[1])})" if timer.namespace else ""
    key = f" key {timer.key}" if timer.key else ""
    domain = " (processing time)" if timer.domain.value == "processing" else ""
    return f"timer {'+'.join(fired.purposes)}@{t(timer.timestamp_ms)}{domain}{where}{key} fired"


def describe_output(output: JoinOutput | WindowOutput | SqlOutput, t: Times = RAW) -> str:
    """A join changelog row, a window firing or a SQL operator's row, with why it was emitted."""
    if isinstance(output, SqlOutput):
        return describe_sql_output(output)
    if isinstance(output, WindowOutput):
        what = list(output.elements) if output.aggregate == "list" else f"{output.aggregate} {output.result}"
        again = "fires again for a late element with" if output.late else "fires with"
        return f"window [{t(output.start_ms)}, {t(output.end_ms)}) {again} {what}"
    row = f"{output.kind.value}({_side(output.left, t)}, {_side(output.right, t)})"
    pad = output.left if output.right is None else output.right
    return {
        Cause.MATCH: f"{row}" + (" corrects it" if output.kind is RowKind.UPDATE_AFTER else ": a match"),
        Cause.RETRACT: f"{row} retracts the speculative row",
        Cause.EARLY_FIRE: f"{row}, speculative: {_side(pad, t)} has no match yet",
        Cause.PAD_CLEANUP: f"{row}: cleanup expired {_side(pad, t)} without a match",
        Cause.PAD_EAGER: f"{row}: {_side(pad, t)} expired while the other side probed its cache",
        Cause.PAD_NOT_CACHED: f"{row}: too late to cache and unmatched, padded on arrival",
        Cause.PAD_NEGATIVE_WINDOW: f"{row}: negative window (hi < lo), padded on arrival",
    }[output.cause]


def describe_sql_output(output: SqlOutput) -> str:
    """`+I (window_start=…, orders=3) from rows 4, 7`: a SQL operator's output row."""
    values = ", ".join(f"{name}={value}" for name, value in output.values)
    made = (
        f" from row{'s' * (len(output.rows) > 1)} {', '.join(map(str, output.rows))}" if output.rows else ""
    )
    return f"{output.kind.value} ({values}){made}"


def describe_merge(merge: SessionMerge, t: Times = RAW) -> str:
    """`session [0, 15) of key a: the record's window [5, 10) joins sessions [0, 5) and [10, 15) …`."""
    key = f" of key {merge.key}" if merge.key is not None else ""
    window = _window(merge.window, t)
    sessions = " and ".join(_window(w, t) for w in merge.merged)
    noun = "sessions" if len(merge.merged) > 1 else "session"
    what = (
        f"the record's window {_window(merge.new_window, t)} touches {noun} {sessions}"
        if merge.new_window is not None
        else f"{noun} {sessions} touch"
    )
    then = (
        f"it fires when the watermark reaches {t(merge.timer_ms)}"
        if merge.timer_ms is not None
        else f"the watermark is already at its max timestamp {t(max_timestamp(merge.window))} or past it, so "
        "it fires again at once (late), earlier records included"
    )
    return f"session {window}{key} grows: {what}, so they merge; their timers are deleted; {then}"


def _window(window: tuple[int, int], t: Times) -> str:
    return f"[{t(window[0])}, {t(window[1])})"


def _side(row: TraceRow | None, t: Times) -> str:
    return "null" if row is None else label(row, t)


def emitted_watermarks(result: StepResult) -> list[int]:
    """Watermarks the valve or combined input emitted during the step."""
    return [e.watermark_ms for e in result.out if isinstance(e, EmittedWatermark)]


_SPLIT_CHANGE_TEXT = {
    "added": "was added: a fresh generator at MIN, not idle, holding the subtask until it catches up",
    "finished": "finished: it no longer counts from the next periodic emission on",
    "marked idle": "was marked idle by its reader: it stops holding the subtask at once",
    "marked active": "was marked active by its reader: it counts again at once, at its last watermark",
}
"""The narration of a trace's split rows (wmviz/core/splits.py, `SplitReader.change`)."""


def describe_split(event: SplitEvent, t: Times = RAW) -> str:
    """What one split of a source subtask did (wmviz/core/splits.py), in the words of an incident:
    `split p5 of subtask 1 resumed at 10:00:00, 10m behind its output 10:10:00, and holds subtask 1`."""
    where = f"split {event.split} of subtask {event.channel}"
    if event.what == "record":
        return f"{where}: maxSeen {t(event.max_seen_ms)}, candidate {t(event.watermark_ms)}"
    if event.what == "idle":
        rest = "; every split of the subtask is idle" if event.all_idle else ""
        return f"{where} went idle (no record for longer than the idle timeout){rest}"
    if event.what in _SPLIT_CHANGE_TEXT:
        return f"{where} {_SPLIT_CHANGE_TEXT[event.what]}" + (
            f"; it holds subtask {event.channel}" if event.holds else ""
        )
    text = f"{where} resumed at {t(event.watermark_ms)}"
    if event.holds and event.reader_ms > MIN_MS and event.watermark_ms < event.reader_ms:
        behind = duration(event.reader_ms - event.watermark_ms)
        return (
            f"{text}, {behind} behind the subtask's output {t(event.reader_ms)}, and holds subtask "
            f"{event.channel}: its watermark cannot rise until the split catches up"
        )
    return f"{text} and holds subtask {event.channel}" if event.holds else text
