"""The released row-time interval join (flink-table-runtime 2.3.0) beside wmviz's, early fire off.

`WmvizJoinHarness.java` feeds Flink's RowTimeIntervalJoin operator the trace's inputs in exactly
the trace's order (see there why that needs a one-input subclass); `replay` runs the same trace
through wmviz's pipeline. Per input, both must emit the same rows (kind, left row, right row,
record timestamp) and output watermarks, in the same order. The end of input is sent to both as
ACTIVE (where an input is idle) and a MAX watermark on each input.
"""

from __future__ import annotations

import random
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tools.flink.launcher import Harness, HarnessError, table_jars, table_unavailable
from wmviz.core.operator_log import JoinOutput, OutputWatermark
from wmviz.core.pipeline import InstancePipeline
from wmviz.core.scenario import IntervalJoinConfig, Kind, ScenarioConfig, TraceRow
from wmviz.core.types import MAX_MS, Profile, Status

HARNESS_SOURCE = Path(__file__).with_name("WmvizJoinHarness.java")
HARNESS_CLASS = "WmvizJoinHarness"
TRACES_PER_JOB = 150
JOIN_TYPES = ("inner", "left", "right", "full")

JoinInput = tuple[str, str | None, int | None]
"""("L"|"R", key, time) a row; ("WL"|"WR", None, ms) a watermark; ("SL"|"SR", "IDLE"|"ACTIVE", None)."""
Event = tuple


@dataclass(frozen=True)
class JoinTrace:
    label: str
    join: str
    lower_ms: int
    upper_ms: int
    min_cleanup_ms: int
    inputs: tuple[JoinInput, ...]

    def with_end(self) -> tuple[JoinInput, ...]:
        """The inputs, then the end of input: ACTIVE for an idle input, then MAX on both."""
        idle = {"L": False, "R": False}
        for kind, what, _ in self.inputs:
            if kind in ("SL", "SR"):
                idle[kind[1]] = what == "IDLE"
        end: list[JoinInput] = [(f"S{side}", "ACTIVE", None) for side in ("L", "R") if idle[side]]
        end += [("WL", None, MAX_MS), ("WR", None, MAX_MS)]
        return (*self.inputs, *end)


@dataclass
class JoinOutcome:
    """Per input (the end-of-input ones included): output rows and watermarks, in order."""

    segments: list[list[Event]] = field(default_factory=list)
    error: str | None = None


def encode(trace_id: int, trace: JoinTrace) -> list[str]:
    lines = [f"T {trace_id} {trace.join} {trace.lower_ms} {trace.upper_ms} {trace.min_cleanup_ms}"]
    for kind, what, value in trace.with_end():
        if kind in ("L", "R"):
            lines.append(f"{kind} {what} {value}")
        elif kind in ("WL", "WR"):
            lines.append(f"{kind} {value}")
        else:
            lines.append(f"{kind} {what}")
    lines.append("E")
    return lines


def parse_log(trace: JoinTrace, lines: list[str]) -> JoinOutcome:
    """Segments per input; what follows the END marker (the source's own MAX) is left out."""
    outcome = JoinOutcome()
    n = len(trace.with_end())
    for line in lines:
        tag, *rest = line.split(" ")
        if tag == "I":
            if int(rest[0]) != len(outcome.segments):
                raise HarnessError(f"{trace.label}: input {rest[0]} logged out of order")
            outcome.segments.append([])
        elif tag == "X":
            outcome.error = " ".join(rest)
        elif len(outcome.segments) > n:
            continue  # after END
        elif tag == "O":
            kind, left, right, ts = rest
            ids = [None if x == "-" else int(x) for x in (left, right)]
            outcome.segments[-1].append(("O", kind, ids[0], ids[1], None if ts == "-" else int(ts)))
        elif tag == "W":
            outcome.segments[-1].append(("W", int(rest[0])))
        else:
            raise HarnessError(f"{trace.label}: unexpected harness line {line!r}")
    outcome.segments = outcome.segments[:n]
    return outcome


def jars(download: bool = False) -> list[Path] | None:
    """flink-dist and the two table jars, or None if any is missing."""
    return table_jars(download=download)


def unavailable(download: bool = False) -> str | None:
    """Why the released join cannot be run here (None if it can)."""
    return table_unavailable(download=download)


JOIN = Harness(
    "the join harness", (HARNESS_SOURCE,), HARNESS_CLASS, tag="join-", jars=jars, unavailable=unavailable
)


def run_joins(
    traces: Sequence[JoinTrace], per_job: int = TRACES_PER_JOB, timeout: float = 900
) -> list[JoinOutcome]:
    """Run every trace on the released interval join, all in one JVM."""
    with tempfile.TemporaryDirectory(prefix="wmviz-join-") as tmp:
        path = Path(tmp) / "traces.txt"
        path.write_text("".join(line + "\n" for i, t in enumerate(traces) for line in encode(i, t)), "utf-8")
        proc = JOIN.run(str(path), str(per_job), timeout=timeout)
    logs: dict[int, list[str]] = {}
    current: list[str] | None = None
    for line in proc.stdout.splitlines():
        if line.startswith("T "):
            current = logs.setdefault(int(line[2:]), [])
        elif current is not None:
            current.append(line)
    if len(logs) != len(traces):
        raise HarnessError(
            f"join harness answered {len(logs)} of {len(traces)} traces:\n{proc.stderr[-4000:]}"
        )
    return [parse_log(t, logs[i]) for i, t in enumerate(traces)]


def scenario_config(trace: JoinTrace, all_idle_flush: bool = True) -> ScenarioConfig:
    """The wmviz config of the trace's join.

    `all_idle_flush` is on: Flink 2.3.0's CombinedWatermarkStatus, which combines the two inputs,
    emits the largest input watermark once every input is idle (FLINK-38454 is in the release).
    """
    operator = IntervalJoinConfig(
        join=trace.join,
        lower_ms=trace.lower_ms,
        upper_ms=trace.upper_ms,
        min_cleanup_interval_ms=trace.min_cleanup_ms,
        all_idle_flush=all_idle_flush,
    )
    return ScenarioConfig(channels={"L": 1, "R": 1}, operator=operator)


def trace_rows(trace: JoinTrace) -> list[TraceRow]:
    rows = []
    for i, (kind, what, value) in enumerate(trace.with_end()):
        side = kind[-1]
        if kind in ("L", "R"):
            rows.append(
                TraceRow(i + 1, Kind.RECORD, input=side, channel=0, key=what, event_ms=value, value=i)
            )
        elif kind in ("WL", "WR"):
            rows.append(TraceRow(i + 1, Kind.WATERMARK, input=side, channel=0, watermark_ms=value))
        else:
            rows.append(TraceRow(i + 1, Kind.STATUS, input=side, channel=0, status=Status(what)))
    return rows


def replay(trace: JoinTrace, all_idle_flush: bool = True) -> JoinOutcome:
    """wmviz's output rows and watermarks per input."""
    config = scenario_config(trace, all_idle_flush)
    pipeline = InstancePipeline("0", config, Profile.FLINK_1X_2X, {"L": 1, "R": 1}, set())
    outcome = JoinOutcome()
    for step, row in enumerate(trace_rows(trace)):
        segment: list[Event] = []
        for event in pipeline.process(step, row, explain=False).events:
            if isinstance(event, JoinOutput):
                ids = [None if r is None else r.row - 1 for r in (event.left, event.right)]
                segment.append(("O", event.kind.value, ids[0], ids[1], event.timestamp_ms))
            elif isinstance(event, OutputWatermark):
                segment.append(("W", event.watermark_ms))
        outcome.segments.append(segment)
    return outcome


def describe(trace: JoinTrace, upto: int) -> str:
    parts = []
    for kind, what, value in trace.with_end()[: upto + 1]:
        parts.append(f"{kind} {what}@{value}" if kind in ("L", "R") else f"{kind} {what or value}")
    return ", ".join(parts)


def first_difference(trace: JoinTrace, flink: JoinOutcome, wmviz: JoinOutcome | None = None) -> str | None:
    """None if wmviz emitted what Flink did for every input; else the first differing input."""
    wmviz = wmviz if wmviz is not None else replay(trace)
    header = f"{trace.label}: {trace.join} join, lower {trace.lower_ms}, upper {trace.upper_ms}, " + (
        f"min cleanup {trace.min_cleanup_ms}"
    )
    if flink.error:
        return f"{header}\nflink failed: {flink.error}"
    for i, (want, got) in enumerate(zip(flink.segments, wmviz.segments, strict=True)):
        if want != got:
            return (
                f"{header}\ndiffers at input {i}; inputs: {describe(trace, i)}\nflink: {want}\nwmviz: {got}"
            )
    return None


KEYS = ("1", "2", "3", "a", "b")


def random_join_trace(seed: int) -> JoinTrace:
    """Rows on both sides around a rising time, watermarks per side, idle/active statuses."""
    rng = random.Random(seed)
    join = rng.choice(JOIN_TYPES)
    lower = rng.randint(-10, 5)
    upper = lower + rng.randint(0, 15)
    min_cleanup = 0 if rng.random() < 0.7 else rng.randint(1, 10)
    keys = rng.sample(KEYS, rng.randint(1, 3))
    nonpositive = rng.random() < 0.15  # C4's quirk for times ≤ 0 (docs/rules.md)
    now = rng.randint(-8, 3) if nonpositive else rng.randint(1, 30)
    wm = {"L": now - rng.randint(0, 10), "R": now - rng.randint(0, 10)}
    inputs: list[JoinInput] = []
    for _ in range(rng.randint(4, 40)):
        r = rng.random()
        side = rng.choice("LR")
        if r < 0.55:
            now += rng.randint(0, 4)
            t = now + rng.randint(-12, 4)
            inputs.append((side, rng.choice(keys), t))
        elif r < 0.9:
            step = rng.choice((0, 1, 2, 3, 5, 10, 20, -3))
            wm[side] += step
            inputs.append((f"W{side}", None, wm[side]))
        else:
            inputs.append((f"S{side}", rng.choice(("IDLE", "ACTIVE")), None))
    return JoinTrace(f"join seed {seed}", join, lower, upper, min_cleanup, tuple(inputs))
