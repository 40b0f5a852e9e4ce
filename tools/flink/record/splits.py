"""Per-split watermarks: Flink 2.3.0's split-local outputs (WmvizSplitHarness.java) beside wmviz's
SplitReader, on traces of records on 1–4 splits of one source reader and clock ticks.

A trace is an `IdleTrace` (tools/flink/window/idleness.py) whose channels are read as the splits
of one reader; the probe schedule and the harness protocol are the idleness harness's. wmviz runs
it through `InstancePipeline` with one channel whose generator config names the splits; both must
send the channel the same watermarks, IDLE and ACTIVE, in the same order, for every row.
"""

from __future__ import annotations

import random
from pathlib import Path

from tools.flink.launcher import Harness
from tools.flink.window.idleness import (
    IdleTrace,
    periodic_generator,
    probe_schedule,
    run_idleness,
    valve_tokens,
)
from wmviz.core.pipeline import InstancePipeline
from wmviz.core.scenario import Kind, ScenarioConfig, TraceRow
from wmviz.core.types import Profile

HARNESS = Harness(
    "the split harness", (Path(__file__).with_name("WmvizSplitHarness.java"),), "WmvizSplitHarness", "splits-"
)


def split_config(trace: IdleTrace) -> ScenarioConfig:
    generator = periodic_generator(trace, splits=((0, tuple(f"s{i}" for i in range(trace.channels))),))
    return ScenarioConfig(channels={"0": 1}, generator=generator)


def split_rows(trace: IdleTrace) -> list[TraceRow]:
    out = []
    for i, (proc, split, event) in enumerate(trace.rows):
        if split is None:
            out.append(TraceRow(i + 1, Kind.PROCTIME, proc_ms=proc))
        else:
            payload = (("split", f"s{split}"),)
            out.append(TraceRow(i + 1, Kind.RECORD, channel=0, event_ms=event, proc_ms=proc, payload=payload))
    return out


def wmviz_split_emissions(trace: IdleTrace) -> list[list[str]]:
    """Per row, what wmviz's split reader sent its channel (channel 0), as `0:W<ms>` / `0:S:IDLE`."""
    pipeline = InstancePipeline("0", split_config(trace), Profile.FLINK_1X_2X, {"0": 1}, set())
    return valve_tokens(pipeline, split_rows(trace))


def run_splits(traces: list[IdleTrace], jar: Path | None = None) -> list[list[list[str]]]:
    """Flink's emissions per trace, per row (all traces in one JVM)."""
    return run_idleness(traces, jar=jar, harness=HARNESS)


def first_split_difference(trace: IdleTrace, flink: list[list[str]]) -> str | None:
    """None if wmviz emitted exactly what Flink did for every row; else the first differing row."""
    for i, (got, want) in enumerate(zip(wmviz_split_emissions(trace), flink, strict=True)):
        if got != want:
            rows = ", ".join(f"tick@{p}" if s is None else f"s{s}:{e}@{p}" for p, s, e in trace.rows[: i + 1])
            return (
                f"{trace.label}: {trace.channels} split(s), ooo {trace.out_of_orderness_ms}, interval "
                f"{trace.interval_ms}, timeout {trace.idle_timeout_ms}; differs at row {i}\n"
                f"rows: {rows}\nflink: {want}\nwmviz: {got}"
            )
    return None


def random_split_trace(seed: int) -> IdleTrace:
    """Records on 1–4 splits, each with its own event clock (some far behind), pauses shorter and
    longer than the timeout on single splits, and clock ticks."""
    rng = random.Random(seed)
    interval = rng.choice((1, 5, 10, 50, 200))
    timeout = rng.choice((1, interval, interval + 1, 2 * interval, 7 * interval + 3))
    splits = rng.randint(1, 4)
    ooo = rng.choice((0, 0, 1, 5, 20))
    proc = rng.randint(-3 * interval, 5 * interval)
    clocks = [rng.randint(-50, 50) - rng.choice((0, 0, 100, 1000)) for _ in range(splits)]
    weights = [rng.choice((1, 1, 3, 10)) for _ in range(splits)]
    quiet = rng.randrange(splits)
    rows: list[tuple[int, int | None, int | None]] = []
    for _ in range(rng.randint(5, 50)):
        r = rng.random()
        if r < 0.5:
            proc += rng.choice((0, 0, 1, interval // 2, interval))
        elif r < 0.75:
            proc += rng.randint(timeout, timeout + 4 * interval)
        elif r < 0.78:
            proc += rng.randint(1000 * interval, 1500 * interval)  # over 1000 probes in one jump
        else:
            proc += rng.randint(0, 3 * interval)
        if rng.random() < 0.2:
            rows.append((proc, None, None))
            continue
        split = rng.choices(range(splits), weights)[0]
        if split == quiet and rng.random() < 0.6:
            split = rng.randrange(splits)  # one split is mostly quiet: it goes idle and comes back
        clocks[split] += rng.choice((0, 1, 3, 10, 40, -5, -30))
        rows.append((proc, split, clocks[split]))
    return IdleTrace(f"splits seed {seed}", splits, ooo, interval, timeout, tuple(rows))


__all__ = ["probe_schedule", "random_split_trace", "run_splits", "wmviz_split_emissions"]
