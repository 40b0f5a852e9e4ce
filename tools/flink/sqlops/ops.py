"""SQL's WatermarkAssignerOperator and RowTimeMiniBatchAssginerOperator (flink-table-runtime 2.3.0)
beside wmviz's (wmviz/core/sql_assigner.py, wmviz/core/sql_minibatch.py).

`WmvizSqlOpsHarness.java` drives the real classes with a manual processing-time clock (see there
how time passes); `replay` runs the same trace through wmviz: an assigner trace through the
pipeline itself (a generator of style sql-assigner on one channel, so the probe schedule and the
skipping of long quiet clock jumps are what is checked too), a mini-batch trace through the
`MiniBatchAssigner` the pipeline puts after a channel. Per input, both must emit the same
watermarks and statuses in the same order.
"""

from __future__ import annotations

import random
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tools.flink.launcher import Harness, HarnessError
from tools.flink.window.join import jars, unavailable
from wmviz.core.pipeline import InstancePipeline
from wmviz.core.scenario import GeneratorConfig, Kind, ScenarioConfig, TraceRow
from wmviz.core.sql_expr import Column, Shifted
from wmviz.core.sql_minibatch import MiniBatchAssigner
from wmviz.core.types import MAX_MS, Profile, Status, StatusInput, WatermarkInput

HARNESS_SOURCE = Path(__file__).with_name("WmvizSqlOpsHarness.java")
HARNESS_CLASS = "WmvizSqlOpsHarness"
SQL_OPS = Harness(
    "the sql ops harness", (HARNESS_SOURCE,), HARNESS_CLASS, tag="sqlops-", jars=jars, unavailable=unavailable
)

Line = tuple[str, int, int | str | None]
"""("R", proc, ts) a row; ("W", proc, ms) / ("S", proc, "IDLE"|"ACTIVE") upstream; ("P", proc, None)."""
Event = tuple[str, int | str]
"""("W", ms) or ("S", "IDLE"|"ACTIVE"): one emission of the operator."""


@dataclass(frozen=True)
class OpsTrace:
    label: str
    operator: str
    """`A`: the watermark assigner; `M`: the mini-batch assigner."""
    interval_ms: int
    """The auto-watermark interval (A) or the mini-batch interval (M)."""
    idle_ms: int = 0
    delay_ms: int = 0
    """The expression is `ts - delay`."""
    lines: tuple[Line, ...] = ()


@dataclass
class OpsOutcome:
    segments: list[list[Event]] = field(default_factory=list)
    error: str | None = None


def encode(trace_id: int, trace: OpsTrace) -> list[str]:
    if trace.operator == "A":
        head = f"T {trace_id} A {trace.interval_ms} {trace.idle_ms} {trace.delay_ms}"
    else:
        head = f"T {trace_id} M {trace.interval_ms}"
    body = [" ".join(str(x) for x in line if x is not None) for line in trace.lines]
    return [head, *body, "E"]


def parse_log(lines: list[str]) -> OpsOutcome:
    outcome = OpsOutcome()
    for line in lines:
        tag, _, rest = line.partition(" ")
        if tag == "I":
            outcome.segments.append([])
        elif tag == "W":
            outcome.segments[-1].append(("W", int(rest)))
        elif tag == "S":
            outcome.segments[-1].append(("S", rest))
        elif tag == "X":
            outcome.error = rest
        else:
            raise HarnessError(f"unexpected harness line {line!r}")
    return outcome


def run_ops(traces: Sequence[OpsTrace], timeout: float = 900) -> list[OpsOutcome]:
    """Run every trace on the released operators, all in one JVM (one MiniCluster job)."""
    with tempfile.TemporaryDirectory(prefix="wmviz-sqlops-") as tmp:
        path = Path(tmp) / "traces.txt"
        text = "".join(line + "\n" for i, t in enumerate(traces) for line in encode(i, t))
        path.write_text(text, "utf-8")
        proc = SQL_OPS.run(str(path), timeout=timeout)
    logs: dict[int, list[str]] = {}
    current: list[str] | None = None
    for line in proc.stdout.splitlines():
        if line.startswith("T "):
            current = logs.setdefault(int(line[2:]), [])
        elif current is not None:
            current.append(line)
    if len(logs) != len(traces):
        raise HarnessError(f"harness answered {len(logs)} of {len(traces)} traces:\n{proc.stderr[-4000:]}")
    return [parse_log(logs[i]) for i in range(len(traces))]


# ---- wmviz's side ---------------------------------------------------------------------------------


def assigner_config(trace: OpsTrace) -> ScenarioConfig:
    """A sql-assigner generator on one channel: `ts - delay`, the trace's interval and idle timeout."""
    generator = GeneratorConfig(
        style="sql-assigner",
        interval_ms=trace.interval_ms,
        idle_timeout_ms=trace.idle_ms or None,
        expression=Shifted(Column("ts"), -trace.delay_ms),
    )
    return ScenarioConfig(channels={"0": 1}, generator=generator)


def trace_rows(trace: OpsTrace) -> list[TraceRow]:
    rows = []
    for i, (kind, proc, value) in enumerate(trace.lines):
        if kind == "R":
            assert isinstance(value, int)
            rows.append(TraceRow(i + 1, Kind.RECORD, channel=0, event_ms=value, proc_ms=proc))
        elif kind == "W":
            assert isinstance(value, int)
            rows.append(TraceRow(i + 1, Kind.WATERMARK, channel=0, watermark_ms=value, proc_ms=proc))
        elif kind == "S":
            rows.append(TraceRow(i + 1, Kind.STATUS, channel=0, status=Status(value), proc_ms=proc))
        else:
            rows.append(TraceRow(i + 1, Kind.PROCTIME, proc_ms=proc))
    return rows


def replay(trace: OpsTrace) -> OpsOutcome:
    """wmviz's emissions per input."""
    if trace.operator == "M":
        return _replay_minibatch(trace)
    # No manual channels: the upstream watermark rows go through the assigner (SQL-A6).
    pipeline = InstancePipeline("0", assigner_config(trace), Profile.FLINK_1X_2X, {"0": 1}, set())
    outcome = OpsOutcome()
    for row in trace_rows(trace):
        pipeline.run_row(row, explain=False)
        segment: list[Event] = []
        for _, inp, generated, *_ in pipeline.step_valve:
            assert generated
            if isinstance(inp, WatermarkInput):
                segment.append(("W", inp.watermark_ms))
            elif isinstance(inp, StatusInput):
                segment.append(("S", inp.status.value))
        outcome.segments.append(segment)
    return outcome


def _replay_minibatch(trace: OpsTrace) -> OpsOutcome:
    batch = MiniBatchAssigner(trace.interval_ms)
    outcome = OpsOutcome()
    for kind, _, value in trace.lines:
        segment: list[Event] = []
        if kind == "W":
            assert isinstance(value, int)
            forwarded = batch.on_watermark(value)
            if forwarded is not None:
                segment.append(("W", forwarded))
        elif kind == "S":
            assert isinstance(value, str)
            segment.append(("S", value))
        outcome.segments.append(segment)
    return outcome


def first_difference(trace: OpsTrace, flink: OpsOutcome, wmviz: OpsOutcome | None = None) -> str | None:
    """None if wmviz emitted what Flink did at every input; else the first input that differs."""
    wmviz = wmviz if wmviz is not None else replay(trace)
    what = "assigner" if trace.operator == "A" else "mini-batch"
    header = (
        f"{trace.label}: {what}, interval {trace.interval_ms}, idle {trace.idle_ms}, delay {trace.delay_ms}"
    )
    if flink.error:
        return f"{header}\nflink failed: {flink.error}"
    for i, (want, got) in enumerate(zip(flink.segments, wmviz.segments, strict=True)):
        if want != got:
            shown = ", ".join(f"{k} {p} {v}" for k, p, v in trace.lines[: i + 1])
            return f"{header}\ndiffers at input {i}; inputs: {shown}\nflink: {want}\nwmviz: {got}"
    return None


# ---- random traces --------------------------------------------------------------------------------

_STEPS = (0, 1, 3, 39, 40, 41, 199, 200, 201, 250, 999, 1000, 2999, 5000)


def random_assigner_trace(seed: int) -> OpsTrace:
    """Rows around a rising time (some ≤ 0, some repeated or falling), clock moves from 0 to long
    quiet jumps, upstream watermarks (some MAX) and statuses."""
    rng = random.Random(seed)
    interval = rng.choice((1, 7, 50, 200, 200, 1000))
    idle = rng.choice((0, 0, 13, 100, 300, 1000, 2500))
    delay = rng.choice((0, 5, 2000, 2000, -3))
    proc, ts = 0, rng.randint(-3000, 3000)
    lines: list[Line] = []
    for _ in range(rng.randint(3, 40)):
        proc += rng.choice((*_STEPS, 100_000)) if rng.random() < 0.98 else 600_000
        r = rng.random()
        if r < 0.7 or not lines:
            ts += rng.choice((-500, -1, 0, 1, 150, 199, 200, 201, 250, 3000))
            lines.append(("R", proc, ts))
        elif r < 0.85:
            lines.append(("P", proc, None))
        elif r < 0.93:
            lines.append(("W", proc, MAX_MS if rng.random() < 0.25 else ts - rng.randint(-100, 5000)))
        else:
            lines.append(("S", proc, rng.choice(("IDLE", "ACTIVE"))))
    return OpsTrace(f"assigner seed {seed}", "A", interval, idle, delay, tuple(lines))


def random_minibatch_trace(seed: int) -> OpsTrace:
    """Watermarks rising, repeating, falling, below zero and MAX, and statuses, for one interval."""
    rng = random.Random(seed)
    interval = rng.choice((1, 2, 5, 10, 1000))
    wm = rng.randint(-30, 10)
    lines: list[Line] = []
    for _ in range(rng.randint(3, 40)):
        r = rng.random()
        if r < 0.85:
            wm += rng.choice((-7, -1, 0, 1, 1, 2, 4, 5, 9, 10, 11, 1000))
            lines.append(("W", 0, MAX_MS if rng.random() < 0.04 else wm))
        else:
            lines.append(("S", 0, rng.choice(("IDLE", "ACTIVE"))))
    return OpsTrace(f"mini-batch seed {seed}", "M", interval, lines=tuple(lines))
