"""Watermark alignment: Flink 2.3.0's real SourceOperator (WmvizAlignmentHarness.java) beside
wmviz's split readers (wmviz/core/splits.py, split_alignment.py, alignment.py), one source subtask per
channel, on hand-written and randomised traces of records and clock ticks.

A trace's rows are `(proc_ms, subtask, split, event_ms)`, a clock tick when `subtask` is None.
The driver fires Flink's two periodic callbacks on wmviz's schedule (the watermark emission every
`interval_ms`, the alignment update every `update_ms`, from the first clock reading; at one time
the emission first; a time equal to a record's runs after it, with the next row). At each update
every subtask reports to the driver, which plays the coordinator with wmviz's own `announce` (so
the coordinator's min-over-the-group rule is modelled, not checked) and delivers the answer as a
WatermarkAlignmentEvent. Per row both sides must agree on: the watermarks and statuses each
subtask sends, the records each reads (a paused subtask or split holds them back), which subtasks
wait and which splits are paused afterwards; and every ReportedWatermarkEvent Flink sends must be
what wmviz's `report_of` says for the watermark and idleness Flink's subtask had sent.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from tools.flink.launcher import Harness, HarnessError
from tools.flink.window.idleness import periodic_generator, sent_tokens
from wmviz.core.alignment import HeldRecord, ReleasedRecords, Report, announce, report_of
from wmviz.core.pipeline import InstancePipeline
from wmviz.core.scenario import AlignmentConfig, Kind, ScenarioConfig, TraceRow
from wmviz.core.splits import SplitReader
from wmviz.core.types import MIN_MS, Profile

HARNESS = Path(__file__).with_name("WmvizAlignmentHarness.java")
ALIGNMENT = Harness("the alignment harness", (HARNESS,), HARNESS.stem, tag="alignment-")

Row = tuple[int, int | None, str | None, int | None]


@dataclass(frozen=True)
class AlignTrace:
    label: str
    subtasks: tuple[tuple[str, ...], ...]
    out_of_orderness_ms: int
    interval_ms: int
    update_ms: int
    drift_ms: int
    buffer_size: int
    idle_timeout_ms: int | None
    rows: tuple[Row, ...]


def align_config(trace: AlignTrace) -> ScenarioConfig:
    alignment = AlignmentConfig(
        group="g",
        max_drift_ms=trace.drift_ms,
        update_interval_ms=trace.update_ms,
        buffer_size=trace.buffer_size,
    )
    generator = periodic_generator(trace, splits=tuple(enumerate(trace.subtasks)), alignment=alignment)
    return ScenarioConfig(channels={"0": len(trace.subtasks)}, generator=generator)


def align_rows(trace: AlignTrace) -> list[TraceRow]:
    out = []
    for i, (proc, subtask, split, event) in enumerate(trace.rows):
        if subtask is None:
            out.append(TraceRow(i + 1, Kind.PROCTIME, proc_ms=proc))
        else:
            payload = (("split", split),)
            out.append(
                TraceRow(i + 1, Kind.RECORD, channel=subtask, event_ms=event, proc_ms=proc, payload=payload)
            )
    return out


@dataclass
class Step:
    """What one row caused on one side: emissions per subtask in order, records read, state after."""

    sent: list[str]
    read: list[str]
    state: list[str]


def wmviz_steps(trace: AlignTrace) -> list[Step]:
    pipeline = InstancePipeline(
        "0", align_config(trace), Profile.FLINK_1X_2X, {"0": len(trace.subtasks)}, set()
    )
    steps = []
    for step, row in enumerate(align_rows(trace)):
        result = pipeline.process(step, row, explain=False)
        sent = sent_tokens(result)
        read = []
        for event in result.events:
            if isinstance(event, ReleasedRecords):
                read += [f"{event.channel}:R{r}" for r in event.rows]
        held = any(isinstance(e, HeldRecord) and e.row == row.row for e in result.events)
        if row.kind is Kind.RECORD and not held:
            read.append(f"{row.channel}:R{row.row}")
        state = []
        for channel in range(len(trace.subtasks)):
            reader = pipeline.generators[("0", channel)]
            assert isinstance(reader, SplitReader)
            paused = sorted(s for s, st in reader.splits.items() if st.paused)
            state += [
                f"{channel}:{'wait' if reader.paused else 'read'}",
                f"{channel}:paused={','.join(paused) or '-'}",
            ]
        steps.append(Step(sent, sorted(read), state))
    return steps


def schedule(trace: AlignTrace) -> list[list[tuple[str, int]]]:
    """Per row, the periodic work due before it: ("P", t) emissions and ("U", t) updates."""
    out: list[list[tuple[str, int]]] = []
    nxt: dict[str, int] = {}
    periods = {"P": trace.interval_ms, "U": trace.update_ms}
    for proc, subtask, _, _ in trace.rows:
        if not nxt:
            nxt = {k: max(p, -(-proc // p) * p) for k, p in periods.items()}
        last = proc if subtask is None else proc - 1
        due = []
        while min(nxt.values()) <= last:
            kind = "P" if nxt["P"] <= nxt["U"] else "U"
            due.append((kind, nxt[kind]))
            nxt[kind] += periods[kind]
        out.append(due)
    return out


class Harness:
    """The JVM, driven one line at a time (the announcements depend on Flink's reports)."""

    def __init__(self, jar: Path | None = None) -> None:
        self.proc = ALIGNMENT.start(jars=None if jar is None else [jar])

    def ask(self, line: str) -> list[str]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        reply = self.proc.stdout.readline()
        if not reply:
            raise HarnessError(f"the harness ended after {line!r}")
        if reply.startswith("E "):
            raise HarnessError(f"Flink threw on {line!r}: {reply.strip()}")
        return reply.split()

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def _report_problem(tokens: list[str], sent: dict[int, int], idle: dict[int, bool]) -> str | None:
    """Flink's reports against wmviz's `report_of` for what Flink's subtasks had sent."""
    for token in tokens:
        subtask_text, _, value = token.partition(":report=")
        subtask = int(subtask_text)
        expected = report_of(subtask, sent.get(subtask, MIN_MS), idle.get(subtask, False), None)
        if expected is None or expected.watermark_ms != int(value):
            return f"subtask {subtask} reported {value}, report_of says {expected}"
    return None


def flink_steps(harness: Harness, trace: AlignTrace) -> tuple[list[Step], list[str]]:
    """Flink's side, row by row; and any report that differs from `report_of`."""
    timeout = "-" if trace.idle_timeout_ms is None else str(trace.idle_timeout_ms)
    splits = " ".join(",".join(s) or "-" for s in trace.subtasks)
    header = (
        f"N {trace.out_of_orderness_ms} {timeout} {trace.buffer_size} {trace.interval_ms} {trace.update_ms}"
    )
    if harness.ask(f"{header} {splits}") != ["ok"]:
        raise HarnessError("could not build the subtasks")
    sent: dict[int, int] = {}
    idle: dict[int, bool] = {}
    problems: list[str] = []
    steps = []
    for i, (due, (_, subtask, split, event)) in enumerate(zip(schedule(trace), trace.rows, strict=True)):
        tokens: list[str] = []
        for kind, at in due:
            reply = harness.ask(f"{kind} {at}")
            reports = [t for t in reply if ":report=" in t]
            tokens += [t for t in reply if ":report=" not in t]
            _track(tokens, sent, idle)
            if kind == "U":
                if (problem := _report_problem(reports, sent, idle)) is not None:
                    problems.append(f"row {i}: {problem}")
                told = [Report(int(t.split(":")[0]), int(t.split("=")[1])) for t in reports]
                tokens += harness.ask(f"G {announce(told, trace.drift_ms).max_allowed_ms}")
        if subtask is not None:
            tokens += harness.ask(f"R {subtask} {split} {i + 1} {event}")
        _track(tokens, sent, idle)
        read = sorted(t for t in tokens if ":R" in t)
        steps.append(Step([t for t in tokens if ":R" not in t], read, harness.ask("Q")))
    return steps, problems


def _track(tokens: list[str], sent: dict[int, int], idle: dict[int, bool]) -> None:
    """What each subtask has sent so far (its last watermark, whether it is idle)."""
    for token in tokens:
        subtask_text, _, what = token.partition(":")
        if what.startswith("W"):
            sent[int(subtask_text)] = int(what[1:])
        elif what == "S:IDLE":
            idle[int(subtask_text)] = True
        elif what == "S:ACTIVE":
            idle[int(subtask_text)] = False


def first_difference(trace: AlignTrace, flink: list[Step], problems: list[str]) -> str | None:
    """None if wmviz and Flink agree on every row; else where they first differ."""
    if problems:
        return f"{trace.label}: {problems[0]}"
    for i, (got, want) in enumerate(zip(wmviz_steps(trace), flink, strict=True)):
        if got != want:
            rows = trace.rows[: i + 1]
            return f"{trace.label}: differs at row {i}\nrows: {rows}\nflink: {want}\nwmviz: {got}"
    return None


def hand_written() -> list[AlignTrace]:
    """Named cases: a subtask ahead (paused, held, resumed), a split ahead of its sibling, the
    sampling ring's delay (3 and 0), an idle split left as it is, a subtask with no split."""
    ahead = ((500, 0, "a", 100_000), (500, 0, "b", 100_000), (500, 1, "c", 60_000))
    ahead += (
        (2500, None, None, None),
        (2600, 0, "a", 101_000),
        (2700, 1, "c", 80_000),
        (4500, None, None, None),
    )
    ahead += ((5200, 1, "c", 95_000), (9000, None, None, None))
    split_ahead = ((100, 0, "a", 50_000), (100, 0, "b", 10_000), (100, 1, "c", 12_000))
    split_ahead += tuple((1000 * k + 50, 0, "a", 50_000 + k) for k in range(1, 6))
    split_ahead += ((6000, 1, "c", 60_000), (6100, 0, "b", 60_000), (9000, None, None, None))
    quiet = ((100, 0, "a", 50_000), (100, 0, "b", 10_000), (100, 1, "c", 10_000), (900, None, None, None))
    quiet += (
        (4000, 1, "c", 12_000),
        (8000, None, None, None),
        (8100, 0, "b", 70_000),
        (12_000, None, None, None),
    )
    out = []
    for buffer in (3, 0):
        out.append(
            AlignTrace(
                f"subtask ahead, buffer {buffer}",
                (("a", "b"), ("c",)),
                0,
                200,
                1000,
                30_000,
                buffer,
                None,
                ahead,
            )
        )
        out.append(
            AlignTrace(
                f"split ahead, buffer {buffer}",
                (("a", "b"), ("c",)),
                0,
                200,
                1000,
                5_000,
                buffer,
                None,
                split_ahead,
            )
        )
        out.append(
            AlignTrace(
                f"idle split, buffer {buffer}", (("a", "b"), ("c",)), 0, 200, 1000, 5_000, buffer, 1500, quiet
            )
        )
        out.append(
            AlignTrace(
                f"empty subtask, buffer {buffer}",
                (("a",), ()),
                0,
                200,
                1000,
                5_000,
                buffer,
                None,
                split_ahead[:1] + split_ahead[3:6],
            )
        )
    return out


def random_trace(seed: int) -> AlignTrace:
    """1–3 subtasks of 1–3 splits with their own event clocks (some far ahead), records and ticks,
    short and long pauses, with and without an idle timeout, sampling ring 0–3."""
    rng = random.Random(seed)
    interval = rng.choice((10, 50, 200))
    update = rng.choice([u for u in (20, 100, 300, 1000) if u != interval])
    subtasks = tuple(tuple(f"s{n}{k}" for k in range(rng.randint(1, 3))) for n in range(rng.randint(1, 3)))
    clocks = {s: rng.randint(0, 1000) + rng.choice((0, 0, 5000)) for splits in subtasks for s in splits}
    timeout = rng.choice((None, None, interval * 3, update * 2 + 7))
    proc = rng.randint(0, update)
    rows: list[Row] = []
    for _ in range(rng.randint(5, 70)):
        proc += (
            rng.choice((0, 1, interval // 2, interval, update))
            if rng.random() < 0.8
            else rng.randint(0, 6 * update)
        )
        if rng.random() < 0.15:
            rows.append((proc, None, None, None))
            continue
        subtask = rng.randrange(len(subtasks))
        split = rng.choice(subtasks[subtask])
        clocks[split] += rng.choice((0, 10, 50, 200, 1000, -30))
        rows.append((proc, subtask, split, clocks[split]))
    drift = rng.choice((0, 50, 300, 2000))
    return AlignTrace(
        f"seed {seed}",
        subtasks,
        rng.choice((0, 20)),
        interval,
        update,
        drift,
        rng.choice((0, 1, 3, 3)),
        timeout,
        tuple(rows),
    )
