"""The pushed-down SQL generator: Flink 2.3.0's GeneratedWatermarkGeneratorSupplier generator inside
WatermarksWithIdleness (WmvizSqlSourceHarness.java) beside wmviz's `sql-source` style, on the
idleness suite's traces of records and clock ticks (tools/flink/window/idleness.py: the same probe
schedule and harness protocol), each channel one split read by a FLIP-27 source output, the
expression `ts - delay`, `on-event` or `on-periodic`. Both must emit the same watermarks, IDLE and
ACTIVE for every row.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from tools.flink.launcher import Harness, HarnessError
from tools.flink.sqlops.ops import jars, unavailable
from tools.flink.window.idleness import IdleTrace, harness_lines, random_idle_trace, trace_rows, valve_tokens
from wmviz.core.pipeline import InstancePipeline
from wmviz.core.scenario import GeneratorConfig, ScenarioConfig
from wmviz.core.sql_expr import Column, Shifted
from wmviz.core.types import Profile

HARNESS_SOURCE = Path(__file__).with_name("WmvizSqlSourceHarness.java")
HARNESS_CLASS = "WmvizSqlSourceHarness"
SQL_SOURCE = Harness(
    "the sql source harness",
    (HARNESS_SOURCE,),
    HARNESS_CLASS,
    tag="sqlsource-",
    jars=jars,
    unavailable=unavailable,
)

__all__ = ["SourceTrace", "first_difference", "random_source_trace", "run_sources", "unavailable"]


@dataclass(frozen=True)
class SourceTrace:
    trace: IdleTrace
    """Its `out_of_orderness_ms` is the expression's delay (`ts - delay`)."""
    emit: str
    """`on-event` or `on-periodic`."""


def config(source: SourceTrace) -> ScenarioConfig:
    trace = source.trace
    generator = GeneratorConfig.flip27(
        style="sql-source",
        emit=source.emit,
        interval_ms=trace.interval_ms,
        idle_timeout_ms=trace.idle_timeout_ms,
        expression=Shifted(Column("ts"), -trace.out_of_orderness_ms),
    )
    return ScenarioConfig(channels={"0": trace.channels}, generator=generator)


def wmviz_emissions(source: SourceTrace, generator: GeneratorConfig | None = None) -> list[list[str]]:
    """Per row, what wmviz's generators sent their valve (`generator` replaces the config's)."""
    scenario = config(source)
    if generator is not None:
        scenario = ScenarioConfig(channels=scenario.channels, generator=generator)
    channels = {"0": source.trace.channels}
    pipeline = InstancePipeline("0", scenario, Profile.FLINK_1X_2X, channels, set())
    return valve_tokens(pipeline, trace_rows(source.trace))


def run_sources(traces: list[SourceTrace], timeout: float = 600) -> list[list[list[str]]]:
    """Flink's emissions per trace, per row (all traces in one JVM)."""
    commands: list[str] = []
    shapes = []
    for source in traces:
        trace = source.trace
        per_row = harness_lines(trace)
        commands.append(
            f"N {trace.channels} {trace.out_of_orderness_ms} {trace.idle_timeout_ms} {source.emit}"
        )
        for row in per_row:
            commands.extend(row)
        shapes.append([len(row) for row in per_row])
    proc = SQL_SOURCE.run(stdin="\n".join(commands) + "\n", timeout=timeout)
    replies = proc.stdout.splitlines()
    if len(replies) != len(commands):
        raise HarnessError(
            f"the sql source harness answered {len(replies)} of {len(commands)} lines:\n"
            f"{SQL_SOURCE.stderr_tail(proc)}"
        )
    results, pos = [], 0
    for shape in shapes:
        if replies[pos] != "ok":
            raise HarnessError(f"could not build the generators: {replies[pos]}")
        pos += 1
        per_row = []
        for n in shape:
            per_row.append([t for r in replies[pos : pos + n] for t in r.split()])
            pos += n
        results.append(per_row)
    return results


def first_difference(
    source: SourceTrace, flink: list[list[str]], ours: list[list[str]] | None = None
) -> str | None:
    ours = ours if ours is not None else wmviz_emissions(source)
    trace = source.trace
    for i, (got, want) in enumerate(zip(ours, flink, strict=True)):
        if got != want:
            rows = ", ".join(f"tick@{p}" if c is None else f"R{c}:{e}@{p}" for p, c, e in trace.rows[: i + 1])
            return (
                f"{trace.label} ({source.emit}): {trace.channels} channel(s), "
                f"delay {trace.out_of_orderness_ms}, interval {trace.interval_ms}, "
                f"timeout {trace.idle_timeout_ms}; differs at row {i}\n"
                f"rows: {rows}\nflink: {want}\nwmviz: {got}"
            )
    return None


def random_source_trace(seed: int) -> SourceTrace:
    """The idleness suite's trace of that seed, on-event or on-periodic."""
    return SourceTrace(random_idle_trace(seed), random.Random(seed).choice(("on-event", "on-periodic")))
