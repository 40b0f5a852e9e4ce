"""Replay a WindowTrace through wmviz's own pipeline and compare it with what real Flink did.

The trace becomes trace rows on one channel of one instance (a watermark row per Mark, or a
per-record generator with the trace's out-of-orderness), run by `InstancePipeline` exactly as a
user's trace would be; a final MAX watermark stands for the end of Flink's bounded source.
"""

from __future__ import annotations

from tools.flink.window.harness import Event, Outcome, Record, WindowTrace
from wmviz.core.operator_log import Dropped, WindowOutput
from wmviz.core.pipeline import InstancePipeline
from wmviz.core.scenario import GeneratorConfig, Kind, ScenarioConfig, TraceRow, WindowConfig
from wmviz.core.types import MAX_MS, Profile
from wmviz.core.windows import ScenarioError


def scenario_config(trace: WindowTrace) -> ScenarioConfig:
    """The wmviz config of the trace's job."""
    generator = None
    if trace.out_of_orderness_ms is not None:
        generator = GeneratorConfig(out_of_orderness_ms=trace.out_of_orderness_ms, emit="per-record")
    operator = WindowConfig(
        size_ms=trace.size_ms if trace.session_gap_ms is None else None,
        slide_ms=trace.slide_ms if trace.session_gap_ms is None else None,
        offset_ms=trace.offset_ms,
        session_gap_ms=trace.session_gap_ms,
        allowed_lateness_ms=trace.lateness_ms,
        aggregate=trace.aggregate,
    )
    return ScenarioConfig(channels={"0": 1}, generator=generator, operator=operator)


def trace_rows(trace: WindowTrace) -> list[TraceRow]:
    """One row per input (row number = input index + 1; a record's value is its index), then MAX."""
    rows = []
    for i, inp in enumerate(trace.inputs):
        if isinstance(inp, Record):
            rows.append(TraceRow(i + 1, Kind.RECORD, channel=0, event_ms=inp.event_ms, key=inp.key, value=i))
        else:
            rows.append(TraceRow(i + 1, Kind.WATERMARK, channel=0, watermark_ms=inp.watermark_ms))
    rows.append(TraceRow(len(rows) + 1, Kind.WATERMARK, channel=0, watermark_ms=MAX_MS))
    return rows


def replay(trace: WindowTrace) -> Outcome:
    """wmviz's firings and counted-late drops per input, in the harness's terms."""
    config = scenario_config(trace)
    generated = trace.out_of_orderness_ms is not None
    pipeline = InstancePipeline(
        "0", config, Profile.FLINK_1X_2X, {"0": 1}, set() if generated else {("0", 0)}
    )
    outcome = Outcome()
    for step, row in enumerate(trace_rows(trace)):
        try:
            result = pipeline.process(step, row, explain=False)
        except ScenarioError as err:
            outcome.error = str(err)
            return outcome
        segment: list[Event] = []
        for event in result.events:
            if isinstance(event, WindowOutput):
                content = event.result if event.aggregate == "count" else tuple(event.elements)
                segment.append(("F", event.key or "", event.start_ms, event.end_ms, content, event.late))
            elif isinstance(event, Dropped) and event.late:
                segment.append(("D", event.row.row - 1))
        outcome.segments.append(segment)
    return outcome


def same_failure(flink: Outcome, wmviz: Outcome) -> bool:
    """Both failed, on the same input after the same outputs, and wmviz names what Flink threw.

    Flink's log holds the failing input's segment (empty: the exception comes before any output of
    that input), wmviz stops before it; wmviz's message quotes the first sentence of Flink's."""
    if not (flink.error and wmviz.error):
        return False
    message = flink.error.partition(": ")[2]
    first_sentence = message.split(". ")[0].split(" (")[0]
    return (
        first_sentence in wmviz.error
        and len(flink.segments) == len(wmviz.segments) + 1
        and flink.segments[:-1] == wmviz.segments
        and flink.segments[-1] == []
    )


def describe_input(trace: WindowTrace, index: int) -> str:
    if index >= len(trace.inputs):
        return "end of input (MAX)"
    inp = trace.inputs[index]
    return f"R {inp.key}@{inp.event_ms}" if isinstance(inp, Record) else f"W {inp.watermark_ms}"


def first_difference(trace: WindowTrace, flink: Outcome, wmviz: Outcome | None = None) -> str | None:
    """None if wmviz did exactly what Flink did; else a report of the first differing input."""
    wmviz = wmviz if wmviz is not None else replay(trace)
    header = f"{trace.label}: {trace.shape()}, lateness {trace.lateness_ms}, {trace.aggregate}, " + (
        "explicit watermarks" if trace.out_of_orderness_ms is None else f"ooo {trace.out_of_orderness_ms}"
    )
    if flink.error or wmviz.error:
        if same_failure(flink, wmviz):
            return None
        return (
            f"{header}\nflink error: {flink.error} after {flink.segments}\n"
            f"wmviz error: {wmviz.error} after {wmviz.segments}"
        )
    for i in range(max(len(flink.segments), len(wmviz.segments))):
        got = wmviz.segments[i] if i < len(wmviz.segments) else None
        want = flink.segments[i] if i < len(flink.segments) else None
        if got != want:
            inputs = ", ".join(describe_input(trace, k) for k in range(min(i + 1, len(trace.inputs))))
            return (
                f"{header}\ndiffers at input {i} ({describe_input(trace, i)}); inputs up to it: {inputs}\n"
                f"flink: {want}\nwmviz: {got}"
            )
    return None
