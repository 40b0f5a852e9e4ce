"""Run window traces and key-group look-ups on real Flink 2.3.0 (see WmvizWindowHarness.java)."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tools.flink.launcher import Harness, HarnessError

HARNESS_SOURCE = Path(__file__).with_name("WmvizWindowHarness.java")
HARNESS_CLASS = "WmvizWindowHarness"
WINDOW = Harness("the window harness", (HARNESS_SOURCE,), HARNESS_CLASS, tag="window-")
TRACES_PER_JOB = 150
"""Independent pipelines per MiniCluster job: one job start serves them all."""


@dataclass(frozen=True, slots=True)
class Record:
    """A record of `key` at `event_ms`; its element (list contents) is its input index."""

    key: str
    event_ms: int


@dataclass(frozen=True, slots=True)
class Mark:
    """A watermark input (only in traces without a generator)."""

    watermark_ms: int


Input = Record | Mark


@dataclass(frozen=True)
class WindowTrace:
    """One keyed window job and the inputs fed to it, in order.

    `out_of_orderness_ms` None: watermarks come from the trace's Mark inputs; otherwise every
    record goes through Flink's BoundedOutOfOrdernessWatermarks (per record) and there are no
    Marks. After the inputs the source ends, which sends the MAX watermark. `session_gap_ms` set:
    session windows (`size_ms` and `slide_ms` unused); `offset_ms`: the tumbling or sliding offset.
    """

    label: str
    size_ms: int
    slide_ms: int | None
    lateness_ms: int
    aggregate: str
    inputs: tuple[Input, ...]
    out_of_orderness_ms: int | None = None
    offset_ms: int = 0
    session_gap_ms: int | None = None

    def shape(self) -> str:
        """`session gap 5`, `size 5 slide 2 offset -1`: the window assigner in words."""
        if self.session_gap_ms is not None:
            return f"session gap {self.session_gap_ms}"
        text = f"size {self.size_ms}" + (f" slide {self.slide_ms}" if self.slide_ms else "")
        return text + (f" offset {self.offset_ms}" if self.offset_ms else "")


Firing = tuple[str, str, int, int, object, bool]
"""("F", key, start, end, elements tuple or count, late)."""
LateDrop = tuple[str, int]
"""("D", input index): counted late, sent to the late side output."""
Event = Firing | LateDrop


@dataclass
class Outcome:
    """Per input (and a last entry for the end-of-input flush): what the operator emitted, in order.

    `error` is set when the job (Flink) or the pipeline (wmviz) failed on the trace.
    """

    segments: list[list[Event]] = field(default_factory=list)
    error: str | None = None


def encode(trace_id: int, trace: WindowTrace, alone: bool = False) -> list[str]:
    """The harness input lines of one trace (`alone`: run it as a job of its own)."""
    mode = "wm" if trace.out_of_orderness_ms is None else "gen"
    lines = [
        f"T {trace_id} {trace.size_ms} {trace.slide_ms or 0} {trace.lateness_ms} {trace.aggregate} "
        f"{mode} {trace.out_of_orderness_ms or 0} {trace.offset_ms} {trace.session_gap_ms or 0} "
        f"{int(alone)}"
    ]
    for inp in trace.inputs:
        if isinstance(inp, Record):
            if not inp.key or any(c.isspace() for c in inp.key):
                raise ValueError(f"{trace.label}: key {inp.key!r} must be non-empty without whitespace")
            lines.append(f"R {inp.key} {inp.event_ms}")
        else:
            lines.append(f"W {inp.watermark_ms}")
    lines.append("E")
    return lines


def parse_log(trace: WindowTrace, lines: list[str]) -> Outcome:
    """Split one trace's log into per-input segments, with each firing's late flag from its cause.

    A window fires late exactly when a record adding to it causes it; one that fires when a
    watermark passes (a watermark input, the watermark a record's generator emits, or the end)
    fires on time.
    """
    outcome = Outcome()
    by_watermark = False
    for line in lines:
        tag, _, rest = line.partition(" ")
        if tag == "I":
            if int(rest) != len(outcome.segments):
                raise HarnessError(f"{trace.label}: input {rest} logged out of order")
            outcome.segments.append([])
            by_watermark = False
        elif tag == "M":
            by_watermark = True
        elif tag == "F":
            key, start, end, what, content = rest.split(" ")
            index = len(outcome.segments) - 1
            cause = trace.inputs[index] if index < len(trace.inputs) else None
            late = isinstance(cause, Record) and not by_watermark
            value: object = int(content) if what == "C" else tuple(int(x) for x in content.split(","))
            outcome.segments[-1].append(("F", key, int(start), int(end), value, late))
        elif tag == "D":
            outcome.segments[-1].append(("D", int(rest)))
        elif tag == "X":
            outcome.error = rest
        else:
            raise HarnessError(f"{trace.label}: unexpected harness line {line!r}")
    return outcome


def run_windows(
    traces: Sequence[WindowTrace],
    jar: Path | None = None,
    per_job: int = TRACES_PER_JOB,
    timeout: float = 900,
    alone: frozenset[int] = frozenset(),
) -> list[Outcome]:
    """Run every trace on the real window operator, all in one JVM; one Outcome per trace.

    The traces whose indexes are in `alone` run as jobs of their own: a trace that fails its job
    stops every trace of the job, which the harness then reruns in halves until the failing one
    is alone, so a trace expected to fail costs least when it starts out alone."""
    with tempfile.TemporaryDirectory(prefix="wmviz-window-") as tmp:
        path = Path(tmp) / "traces.txt"
        with path.open("w", encoding="utf-8") as f:
            for i, trace in enumerate(traces):
                f.write("\n".join(encode(i, trace, i in alone)) + "\n")
        jars = None if jar is None else [jar]
        proc = WINDOW.run("windows", str(path), str(per_job), timeout=timeout, jars=jars)
    logs: dict[int, list[str]] = {}
    current: list[str] | None = None
    for line in proc.stdout.splitlines():
        if line.startswith("T "):
            current = logs.setdefault(int(line[2:]), [])
        elif current is not None:
            current.append(line)
    if len(logs) != len(traces):
        raise HarnessError(
            f"window harness answered {len(logs)} of {len(traces)} traces:\n{proc.stderr[-4000:]}"
        )
    return [parse_log(trace, logs[i]) for i, trace in enumerate(traces)]
