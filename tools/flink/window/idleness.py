"""Idleness detection: Flink 2.3.0's WatermarksWithIdleness (WmvizIdlenessHarness.java) beside
wmviz's generators, on traces of records and clock ticks.

wmviz runs the trace through `InstancePipeline` with a periodic bounded-out-of-orderness
generator per channel (resume `flip27-released`, the FLIP-27 source output's rule). Flink gets
the same records and a probe at every multiple of the interval, in the order the trace format
defines (docs/rules.md, "Generation" and "Idleness": probes at interval, 2·interval, … from the first clock
reading; a probe at a record's own time runs after the record, a probe at a clock tick's time
runs with it). Both must emit the same IDLE, ACTIVE and watermarks for every row.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from tools.flink.launcher import Harness, HarnessError
from wmviz.core.pipeline import InstancePipeline
from wmviz.core.scenario import GeneratorConfig, Kind, ScenarioConfig, TraceRow
from wmviz.core.types import Profile, Status, StatusInput, WatermarkInput

HARNESS_SOURCE = Path(__file__).with_name("WmvizIdlenessHarness.java")
HARNESS_CLASS = "WmvizIdlenessHarness"
IDLENESS = Harness("the idleness harness", (HARNESS_SOURCE,), HARNESS_CLASS, tag="idle-")


@dataclass(frozen=True)
class IdleTrace:
    """Records `(proc_ms, channel, event_ms)` and clock ticks `(proc_ms, None, None)`, in order."""

    label: str
    channels: int
    out_of_orderness_ms: int
    interval_ms: int
    idle_timeout_ms: int
    rows: tuple[tuple[int, int | None, int | None], ...]


def periodic_generator(trace, **more) -> GeneratorConfig:
    """The generator the harnesses drive: Flink's periodic bounded out-of-orderness with idleness,
    as a FLIP-27 source resumes, from a trace's bound, interval and timeout (plus `more` fields)."""
    return GeneratorConfig(
        out_of_orderness_ms=trace.out_of_orderness_ms,
        emit="periodic",
        interval_ms=trace.interval_ms,
        idle_timeout_ms=trace.idle_timeout_ms,
        resume="flip27-released",
        **more,
    )


def config(trace: IdleTrace) -> ScenarioConfig:
    return ScenarioConfig(channels={"0": trace.channels}, generator=periodic_generator(trace))


def trace_rows(trace: IdleTrace) -> list[TraceRow]:
    out = []
    for i, (proc, channel, event) in enumerate(trace.rows):
        if channel is None:
            out.append(TraceRow(i + 1, Kind.PROCTIME, proc_ms=proc))
        else:
            out.append(TraceRow(i + 1, Kind.RECORD, channel=channel, event_ms=event, proc_ms=proc))
    return out


def wmviz_emissions(trace: IdleTrace) -> list[list[str]]:
    """Per row, what wmviz's generators sent their valve, as `<channel>:W<ms>` / `<channel>:S:IDLE`."""
    pipeline = InstancePipeline("0", config(trace), Profile.FLINK_1X_2X, {"0": trace.channels}, set())
    return valve_tokens(pipeline, trace_rows(trace))


def sent_tokens(result) -> list[str]:
    """What one step of the pipeline sent its valve (watermarks and statuses), in the harnesses'
    token form: `channel:W<ms>`, `channel:S:IDLE|ACTIVE`."""
    tokens = []
    for vs in result.valve_steps:
        inp = vs.valve_input
        if isinstance(inp, WatermarkInput):
            tokens.append(f"{inp.channel}:W{inp.watermark_ms}")
        elif isinstance(inp, StatusInput):
            tokens.append(f"{inp.channel}:S:{'IDLE' if inp.status is Status.IDLE else 'ACTIVE'}")
    return tokens


def valve_tokens(pipeline: InstancePipeline, rows) -> list[list[str]]:
    """Per row, what reached the pipeline's valve, in the harnesses' token form."""
    return [sent_tokens(pipeline.process(step, row, explain=False)) for step, row in enumerate(rows)]


def due_probes(interval_ms: int, rows) -> list[list[int]]:
    """Per row `(proc_ms, is_tick)`, the periodic probe times due before it: from the first multiple
    of the interval at or after the first row's time, a tick's own time included, a record's not."""
    schedule: list[list[int]] = []
    next_probe: int | None = None
    for proc, tick in rows:
        if next_probe is None:
            next_probe = max(interval_ms, -(-proc // interval_ms) * interval_ms)
        last = proc if tick else proc - 1
        due = []
        while next_probe <= last:
            due.append(next_probe)
            next_probe += interval_ms
        schedule.append(due)
    return schedule


def probe_schedule(trace: IdleTrace) -> list[list[int]]:
    """Per row, the probe times due before it (a row without a channel is a tick)."""
    return due_probes(trace.interval_ms, ((proc, channel is None) for proc, channel, _ in trace.rows))


def harness_lines(trace: IdleTrace) -> list[list[str]]:
    """Per row, the harness commands; the clock is sent relative to one below the first probe."""
    schedule = probe_schedule(trace)
    first = next((p for due in schedule for p in due), None)
    base = (first - 1) if first is not None else 0
    lines = []
    for (_, channel, event), due in zip(trace.rows, schedule, strict=True):
        row = [f"P {p - base}" for p in due]
        if channel is not None:
            row.append(f"R {channel} {event}")
        lines.append(row)
    return lines


def run_idleness(
    traces: list[IdleTrace],
    jar: Path | None = None,
    timeout: float = 600,
    harness: Harness = IDLENESS,
) -> list[list[list[str]]]:
    """Flink's emissions per trace, per row (all traces in one JVM).

    `harness` picks another harness speaking the same protocol: the
    per-split reader's (tools/flink/record/splits.py) reads a trace's channels as splits."""
    commands: list[str] = []
    shapes = []
    for trace in traces:
        per_row = harness_lines(trace)
        commands.append(f"N {trace.channels} {trace.out_of_orderness_ms} {trace.idle_timeout_ms}")
        for row in per_row:
            commands.extend(row)
        shapes.append([len(row) for row in per_row])
    proc = harness.run(stdin="\n".join(commands) + "\n", timeout=timeout, jars=None if jar is None else [jar])
    replies = proc.stdout.splitlines()
    if len(replies) != len(commands):
        raise HarnessError(
            f"{harness.name} answered {len(replies)} of {len(commands)} lines:\n{harness.stderr_tail(proc)}"
        )
    results = []
    pos = 0
    for shape in shapes:
        if replies[pos] != "ok":
            raise HarnessError(f"could not build the generators: {replies[pos]}")
        pos += 1
        per_row = []
        for n in shape:
            tokens = [t for r in replies[pos : pos + n] for t in r.split()]
            per_row.append(tokens)
            pos += n
        results.append(per_row)
    return results


def first_difference(trace: IdleTrace, flink: list[list[str]]) -> str | None:
    """None if wmviz emitted exactly what Flink did for every row; else the first differing row."""
    ours = wmviz_emissions(trace)
    for i, (got, want) in enumerate(zip(ours, flink, strict=True)):
        if got != want:
            rows = ", ".join(f"tick@{p}" if c is None else f"R{c}:{e}@{p}" for p, c, e in trace.rows[: i + 1])
            return (
                f"{trace.label}: {trace.channels} channel(s), ooo {trace.out_of_orderness_ms}, interval "
                f"{trace.interval_ms}, timeout {trace.idle_timeout_ms}; differs at row {i}\n"
                f"rows: {rows}\nflink: {want}\nwmviz: {got}"
            )
    return None


def random_idle_trace(seed: int) -> IdleTrace:
    """Records on 1–3 channels with pauses shorter and longer than the timeout, and clock ticks."""
    rng = random.Random(seed)
    interval = rng.choice((1, 5, 10, 50, 200))
    timeout = rng.choice((1, interval - 1 or 1, interval, interval + 1, 2 * interval, 7 * interval + 3))
    channels = rng.randint(1, 3)
    ooo = rng.choice((0, 0, 1, 5, 20))
    proc = rng.randint(-3 * interval, 5 * interval)
    event = rng.randint(-50, 50)
    rows: list[tuple[int, int | None, int | None]] = []
    for _ in range(rng.randint(3, 40)):
        r = rng.random()
        if r < 0.5:
            proc += rng.choice((0, 0, 1, interval // 2, interval))
        elif r < 0.8:
            proc += rng.randint(timeout, timeout + 4 * interval)  # long enough to go idle, or nearly
        elif r < 0.83:
            proc += rng.randint(1000 * interval, 1500 * interval)  # a quiet jump of over 1000 probes
        else:
            proc += rng.randint(0, 3 * interval)
        if rng.random() < 0.25:
            rows.append((proc, None, None))
            continue
        # Mostly rising event times, sometimes behind the channel's watermark (a resume that
        # stays IDLE under the FLIP-27 rule), sometimes equal.
        event += rng.choice((0, 1, 3, 10, -5, -30))
        rows.append((proc, rng.randrange(channels), event))
    return IdleTrace(f"idleness seed {seed}", channels, ooo, interval, timeout, tuple(rows))
