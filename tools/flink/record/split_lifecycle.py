"""Splits that come and go: Flink 2.3.0's ProgressiveTimestampsAndWatermarks
(WmvizSourceSplitsHarness.java) beside wmviz's SplitReader, on randomised traces where splits are
added, finish, are marked idle or active by their reader, and carry records, with clock ticks.

A trace's rows are `(proc_ms, op, split, event_ms)`: op `R` a record, `A`/`F`/`I`/`C` a split
added / finished / marked idle / marked active (wmviz: a `split` row with that `split_event`),
None a clock tick. Probes follow the idleness harness's schedule (a probe at a row's own time runs
after a record or split row, with a tick). For every row both must send the channel the same
watermarks, IDLE and ACTIVE, in the same order.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from tools.flink.launcher import Harness, HarnessError
from tools.flink.window.idleness import due_probes, valve_tokens
from wmviz.core.pipeline import InstancePipeline
from wmviz.core.scenario import GeneratorConfig, Kind, ScenarioConfig, TraceRow
from wmviz.core.types import Profile

HARNESS = Path(__file__).with_name("WmvizSourceSplitsHarness.java")
SOURCE_SPLITS = Harness("the source splits harness", (HARNESS,), HARNESS.stem, tag="source-splits-")
CHANGES = {"A": "added", "F": "finished", "I": "idle", "C": "active"}


@dataclass(frozen=True)
class LifecycleTrace:
    label: str
    initial: tuple[str, ...]
    out_of_orderness_ms: int
    interval_ms: int
    idle_timeout_ms: int | None
    punctuated: bool
    rows: tuple[tuple[int, str | None, str | None, int | None], ...]


def lifecycle_config(trace: LifecycleTrace) -> ScenarioConfig:
    generator = GeneratorConfig(
        out_of_orderness_ms=trace.out_of_orderness_ms,
        emit="per-record" if trace.punctuated else "periodic",
        interval_ms=trace.interval_ms,
        idle_timeout_ms=trace.idle_timeout_ms,
        resume="flip27-released",
        splits=((0, trace.initial),),
    )
    return ScenarioConfig(channels={"0": 1}, generator=generator)


def lifecycle_rows(trace: LifecycleTrace) -> list[TraceRow]:
    out = []
    for i, (proc, op, split, event) in enumerate(trace.rows):
        if op is None:
            out.append(TraceRow(i + 1, Kind.PROCTIME, proc_ms=proc))
        elif op == "R":
            payload = (("split", split),)
            out.append(TraceRow(i + 1, Kind.RECORD, channel=0, event_ms=event, proc_ms=proc, payload=payload))
        else:
            payload = (("split", split), ("split_event", CHANGES[op]))
            out.append(TraceRow(i + 1, Kind.SPLIT, channel=0, proc_ms=proc, payload=payload))
    return out


def wmviz_lifecycle_emissions(trace: LifecycleTrace) -> list[list[str]]:
    pipeline = InstancePipeline("0", lifecycle_config(trace), Profile.FLINK_1X_2X, {"0": 1}, set())
    return valve_tokens(pipeline, lifecycle_rows(trace))


def _schedule(trace: LifecycleTrace) -> list[list[int]]:
    """Per row, the probe times due before it (a row without an operation is a tick)."""
    return due_probes(trace.interval_ms, ((proc, op is None) for proc, op, _, _ in trace.rows))


def _commands(trace: LifecycleTrace) -> tuple[str, list[list[str]]]:
    schedule = _schedule(trace)
    first = next((p for due in schedule for p in due), None)
    base = (first - 1) if first is not None else 0
    timeout = "-" if trace.idle_timeout_ms is None else str(trace.idle_timeout_ms)
    kind = "punctuated" if trace.punctuated else "periodic"
    header = f"N {trace.out_of_orderness_ms} {timeout} {kind} {','.join(trace.initial) or '-'}"
    per_row = []
    for (_, op, split, event), due in zip(trace.rows, schedule, strict=True):
        row = [f"P {p - base}" for p in due]
        if op == "R":
            row.append(f"R {split} {event}")
        elif op is not None:
            row.append(f"{op} {split}")
        per_row.append(row)
    return header, per_row


def run_lifecycle(traces: list[LifecycleTrace], jar: Path | None = None) -> list[list[list[str]]]:
    """Flink's emissions per trace, per row (all traces in one JVM)."""
    commands: list[str] = []
    shapes = []
    for trace in traces:
        header, per_row = _commands(trace)
        commands.append(header)
        commands.extend(c for row in per_row for c in row)
        shapes.append([len(row) for row in per_row])
    proc = SOURCE_SPLITS.run(
        stdin="\n".join(commands) + "\n", timeout=600, jars=None if jar is None else [jar]
    )
    replies = proc.stdout.splitlines()
    if len(replies) != len(commands):
        raise HarnessError(
            f"the source splits harness answered {len(replies)} of {len(commands)} lines:\n"
            f"{SOURCE_SPLITS.stderr_tail(proc)}"
        )
    results, pos = [], 0
    for shape in shapes:
        if replies[pos] != "ok":
            raise HarnessError(f"could not build the reader: {replies[pos]}")
        pos += 1
        per_trace = []
        for n in shape:
            per_trace.append([t for r in replies[pos : pos + n] for t in r.split()])
            pos += n
        results.append(per_trace)
    return results


def first_lifecycle_difference(trace: LifecycleTrace, flink: list[list[str]]) -> str | None:
    """None if wmviz emitted exactly what Flink did for every row; else the first differing row."""
    for i, (got, want) in enumerate(zip(wmviz_lifecycle_emissions(trace), flink, strict=True)):
        if got != want:
            shown = ", ".join(
                f"tick@{p}" if op is None else f"{op}{s}" + (f":{e}" if op == "R" else "") + f"@{p}"
                for p, op, s, e in trace.rows[: i + 1]
            )
            return (
                f"{trace.label}: initial {trace.initial}, ooo {trace.out_of_orderness_ms}, interval "
                f"{trace.interval_ms}, timeout {trace.idle_timeout_ms}, punctuated {trace.punctuated}; "
                f"differs at row {i}\nrows: {shown}\nflink: {want}\nwmviz: {got}"
            )
    return None


def random_lifecycle_trace(seed: int) -> LifecycleTrace:
    """0–3 splits at the start; records on the live splits, splits added (new or a finished id
    again), finished, marked idle and active, pauses shorter and longer than the timeout."""
    rng = random.Random(seed)
    interval = rng.choice((1, 5, 10, 50))
    timeout = rng.choice((None, 1, interval, interval + 1, 2 * interval, 7 * interval + 3))
    live = [f"s{i}" for i in range(rng.randint(0, 3))]
    initial, made = tuple(live), len(live)
    clocks = {s: rng.randint(-50, 50) for s in live}
    proc = rng.randint(-3 * interval, 5 * interval)
    rows: list[tuple[int, str | None, str | None, int | None]] = []
    for _ in range(rng.randint(5, 60)):
        r = rng.random()
        proc += (
            rng.choice((0, 0, 1, interval // 2, interval))
            if r < 0.6
            else rng.randint(0, (timeout or 20) + 3 * interval)
        )
        op = rng.choices(("R", "A", "F", "I", "C", None), (10, 2, 1.5, 1.5, 1.5, 2))[0]
        if op == "A" or (op is not None and not live):
            split = f"s{made}" if rng.random() < 0.8 or not clocks else rng.choice(sorted(clocks))
            made += split == f"s{made}"
            if split not in live:
                live.append(split)
            clocks.setdefault(split, rng.randint(-100, 100) - rng.choice((0, 0, 500)))
            rows.append((proc, "A", split, None))
            continue
        if op is None:
            rows.append((proc, None, None, None))
            continue
        split = rng.choice(live)
        if op == "R":
            clocks[split] += rng.choice((0, 1, 3, 10, 40, -5, -30))
            rows.append((proc, "R", split, clocks[split]))
            continue
        if op == "F":
            live.remove(split)
        rows.append((proc, op, split, None))
    return LifecycleTrace(
        f"lifecycle seed {seed}",
        initial,
        rng.choice((0, 0, 1, 5, 20)),
        interval,
        timeout,
        rng.random() < 0.3,
        tuple(rows),
    )
