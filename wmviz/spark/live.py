"""Live mode: step the valve and operator inside a running Structured Streaming query.

One long-running query, `groupBy("instance").applyInPandasWithState(...)`, holds every instance's
`InstancePipeline` as keyframe bytes (`wmviz.timeline.keyframe`) in Spark's state store. Each
`LiveSession.step` appends ONE input row as a small JSON file, the query runs one micro-batch on
it, and a `foreachBatch` sink hands the step's transcript record back to the waiting caller, keyed
by (instance, step). The query itself, and what it is started on (`LiveSpec`), live in
`wmviz.spark.live_query`; `LiveSession.start` starts one, and the session only steps it.

Why this design (measured with `python -m wmviz.spark.live`, local[2] on a shared 2-core host):

* A long-running query. Restarting a `trigger(availableNow=True)` query per step pays the query
  start-up (checkpoint metadata, planning, a new stream thread) every time: median ~0.6 s a step
  against ~0.3–0.45 s for a query that stays up.
* A Python streaming data source by default (`source="python"`). Per step it is as fast as the
  built-in file source (the difference is within the host's noise), but the file source lists
  the directory on every trigger (~40 ms of each batch) and, idle, keeps polling every 10 ms:
  25–45 % of a core while a person thinks. The Python source's `read` instead waits for the
  next step's file (a `stat` every 5 ms, for at most `wait_ms`): idle, the whole session costs
  ~5 % of a core. `source="files"` keeps the built-in file source (same files,
  `maxFilesPerTrigger=1`) for comparison and for Spark builds without Python data sources.
* One shuffle partition in a private session (`spark.newSession()`, so the caller's settings are
  untouched): a step holds one row, and four state-store tasks per micro-batch cost ~30 % more.
* `foreachBatch` delivers straight to the driver: no memory table to query after the batch.

The first step takes several seconds (it starts the query's Python workers and warms the JVM);
later ones settle after about ten steps.

The output equals the batch engine's because the worker runs the very same `InstancePipeline`,
one row after another per instance, and only ever resumes it from its own stored state.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import statistics
import tempfile
import threading
import time
from pathlib import Path
from types import MappingProxyType
from typing import Any, TypedDict, Unpack

import numpy as np
import pyarrow as pa
from pyspark.sql import SparkSession

from wmviz.core.pipeline import InstancePipeline
from wmviz.core.scenario import Kind, ScenarioConfig, Trace, TraceRow
from wmviz.core.simulate import instance_channels
from wmviz.core.types import Status
from wmviz.spark.live_query import SOURCES, LiveError, LiveSpec, LiveStream
from wmviz.timeline import keyframe
from wmviz.timeline.memory import MemoryTimeline
from wmviz.timeline.meta import LIVE_ENGINE, TimelineMeta
from wmviz.trace.check import CheckContext, check_batch
from wmviz.trace.errors import IssueCollector, TraceIssue, TraceValidationError
from wmviz.trace.raw import RawBatch, from_python
from wmviz.trace.rowtable import ROW_SCHEMA, decode_rows, encode_rows
from wmviz.trace.wholefile import proc_ms_decrease_reason

# --------------------------------------------------------------------------------------------------
# The driver side.


def _row_record(row: TraceRow, order: int) -> dict[str, Any]:
    """A trace row as one ROW_SCHEMA record (the one row encoder), at arrival position `order`."""
    (record,) = encode_rows([row]).to_pylist()
    record["order"] = order
    return record


class HandCells(TypedDict, total=False):
    """The cells of an input typed by hand (`LiveSession.inject`), as a trace row's columns: each
    read by the trace validator's rule for that column ("MAX" for a watermark, "idle" a status)."""

    instance: str
    input: str
    channel: int | None
    watermark_ms: int | str | None
    status: str | Status | None
    event_ms: int | str | None
    proc_ms: int | str | None
    key: str | None
    value: str | int | float | None


class LiveSession:
    """Step one scenario inside a running Spark streaming query, one input row per micro-batch.

    `step(row)` returns the row's transcript record (what `transcript_record` gives for the same
    row in a batch run); `inject(...)` builds the row from typed-in cells first. Per-step wall
    times go to `latencies_ms`. Open one with `start(spark, spec, work_dir)` or `from_trace`; use
    it as a context manager, or call `close()`.
    """

    def __init__(self, spec: LiveSpec, stream: LiveStream) -> None:
        """A session over a query already running (`start` starts one)."""
        self.spec = spec
        self.config = spec.config
        self.profile = spec.profile
        self.valve_channels = spec.valve_channels
        self._stream = stream
        self.startup_ms = stream.startup_ms
        self._refs = {"config": spec.config, "profile": spec.profile}
        self.latencies_ms: list[float] = []
        """Wall time of each accepted step: file written → record back on the driver."""
        self.history: list[TraceRow] = []
        """Every accepted input row, in arrival order (replay it through `simulate` to compare)."""
        self.steps: dict[str, int] = {}
        self._order = 0
        self._next_row = 1
        self._proc_ms: dict[str, tuple[int, int]] = {}
        self._states: dict[str, bytes] = {}
        self.timeline = MemoryTimeline(
            TimelineMeta(
                spec.config,
                spec.profile,
                LIVE_ENGINE,
                keyframe_every=1,
                valve_channels=MappingProxyType(dict(spec.valve_channels)),
            )
        )
        """Every accepted step's timeline rows, as the query's workers recorded them."""
        self.batch_ids: list[int] = []
        """The micro-batch that ran each accepted step."""
        self._stepping = threading.Lock()  # a UI may call from several threads: one step at a time

    @classmethod
    def start(cls, spark: SparkSession, spec: LiveSpec, work_dir: str | os.PathLike[str]) -> LiveSession:
        """Start the streaming query for `spec` (its files under `work_dir`, which must hold none of a
        previous session's) and return the session that steps it."""
        return cls(spec, LiveStream.start(spark, spec, Path(work_dir)))

    @classmethod
    def from_trace(
        cls, spark: SparkSession, trace: Trace, work_dir: str | os.PathLike[str], **options: Any
    ) -> LiveSession:
        """A started session for a trace's config, profile, channel counts and manual channels;
        `options` are `LiveSpec`'s (`operator=True`, `source="files"`, ...)."""
        return cls.start(spark, LiveSpec.of_trace(trace, **options), work_dir)

    # ---------------------------------------------------------------------------------------------

    def step(self, row: TraceRow) -> dict[str, Any]:
        """Append one input row, run one micro-batch, and return that step's transcript record.

        Raises `TraceValidationError` (nothing is sent) for a row this session cannot take, and
        `LiveError` if the query fails (twice: the first time it is restarted from its checkpoint),
        times out or its worker rejects the row (after a failure or a time-out, close the session:
        its query is gone or out of step with the driver).
        """
        with self._stepping:
            return self._step(row)

    def _step(self, row: TraceRow) -> dict[str, Any]:
        self._check(row)
        order = self._order
        step = self.steps.get(row.instance, 0)
        started = time.perf_counter()
        self._stream.send(_row_record(row, order), order)
        # The file is in the source now, so its order number is spent even if the worker rejects it.
        self._order += 1
        got_order, line, state, tables, batch_id = self._stream.receive(
            (row.instance, step), self.spec.step_timeout_s
        )
        elapsed = (time.perf_counter() - started) * 1000
        if got_order != order:
            raise LiveError(
                f"step {step} of instance {row.instance} came from input {got_order}, not {order}"
            )
        record = json.loads(line)
        if "error" in record:
            raise LiveError(f"the live worker rejected line {row.row}: {record['error']}")
        self.latencies_ms.append(elapsed)
        self.history.append(row)
        self.steps[row.instance] = step + 1
        self._next_row = max(self._next_row, row.row + 1)
        if row.proc_ms is not None:
            self._proc_ms[row.instance] = (row.proc_ms, row.row)
        if state is not None:
            self._states[row.instance] = state
        if tables is not None:
            self.timeline.add(pickle.loads(tables))  # from this session's own Spark workers
        self.batch_ids.append(batch_id)
        return record

    def inject(self, kind: str | Kind, **typed: Unpack[HandCells]) -> dict[str, Any]:
        """Type an input by hand: the cells are read exactly as a trace row's, then `step`ped.

        `inject("status", channel=0, status="idle")`, `inject("watermark", channel=1,
        watermark_ms="MAX")`, `inject("record", input="L", channel=0, event_ms=10_000, key="1")`.
        The row is numbered after the highest line seen so far; instance and input default to "0".
        """
        unknown = sorted(set(typed) - set(HandCells.__annotations__))
        if unknown:  # a typo must not drop a cell silently
            raise TypeError(f"inject() got unexpected cells: {', '.join(unknown)}")
        status = typed.get("status")
        cells = {
            "kind": kind.value if isinstance(kind, Kind) else kind,
            "instance": typed.get("instance", "0"),
            "input": typed.get("input", "0"),
            "channel": typed.get("channel"),
            "watermark_ms": typed.get("watermark_ms"),
            "status": status.value if isinstance(status, Status) else status,
            "event_ms": typed.get("event_ms"),
            "proc_ms": typed.get("proc_ms"),
            "key": typed.get("key"),
            "value": typed.get("value"),
        }
        return self.step(self._read_cells(cells))

    def _read_cells(self, cells: dict[str, Any]) -> TraceRow:
        """The typed-in cells judged by the trace validator's row rules, as a row of this session."""
        collector = IssueCollector("inject")
        columns = {name: from_python([value]) for name, value in cells.items() if value is not None}
        batch = RawBatch(np.array([self._next_row], np.int64), columns, payload_rows=[[]])
        checked = check_batch(batch, CheckContext("inject", self.config))
        collector.merge(checked.issues)
        collector.raise_if_any()
        table = checked.table.append_column("order", pa.array([self._order], pa.int64()))
        (row,) = decode_rows(table.select(ROW_SCHEMA.names))
        return row

    def state_of(self, instance: str) -> InstancePipeline | None:
        """The instance's pipeline as the query stored it after its latest step (None before any)."""
        blob = self._states.get(instance)
        return keyframe.decode(blob, self._refs) if blob is not None else None

    def close(self) -> None:
        """Stop the query (the step files and checkpoint stay in `work_dir`)."""
        self._stream.stop()

    def __enter__(self) -> LiveSession:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---------------------------------------------------------------------------------------------

    def _check(self, row: TraceRow) -> None:
        """What trace validation would reject given the session's scenario; a worker never sees it."""
        issues = []

        def issue(column: str, reason: str) -> None:
            issues.append(TraceIssue("live", row.row, column, reason))

        channels = instance_channels(self.valve_channels, self.config, row.instance)
        if row.input not in channels:
            issue("input", f"{row.input!r} is not an input here; expected {', '.join(channels)}")
        elif row.channel is not None and not 0 <= row.channel < channels[row.input]:
            count = channels[row.input]
            issue("channel", f"{row.channel} is out of range; input {row.input} has {count} channels")
        if self.config.generator is not None and row.channel is not None:
            manual = (row.input, row.channel) in self.spec.manual_channels.get(row.instance, ())
            if row.kind is Kind.WATERMARK and not manual:
                issue(
                    "kind",
                    f"channel {row.channel} has a generator in this session; a watermark row needs it "
                    "declared in manual_channels when the session is opened",
                )
            elif row.kind is Kind.RECORD and manual:
                issue("kind", f"channel {row.channel} carries explicit watermarks, so it takes no records")
        previous = self._proc_ms.get(row.instance)
        if row.proc_ms is not None and previous is not None and row.proc_ms < previous[0]:
            # Worded as the trace validator words it for a file.
            issue(
                "proc_ms",
                proc_ms_decrease_reason(row.proc_ms, previous[0], "line", previous[1], row.instance),
            )
        if issues:
            raise TraceValidationError(issues)


# --------------------------------------------------------------------------------------------------
# Latency measurement: `python -m wmviz.spark.live [TRACE] [--steps N] [--source python|files]`.


def latency_summary(latencies_ms: list[float]) -> dict[str, float]:
    """First step apart (it starts the Python workers), then median and p90 of the rest."""
    rest = latencies_ms[1:] or latencies_ms
    ordered = sorted(rest)
    p90 = ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))] if ordered else float("nan")
    return {
        "steps": len(latencies_ms),
        "first_ms": latencies_ms[0] if latencies_ms else float("nan"),
        "median_ms": statistics.median(rest) if rest else float("nan"),
        "p90_ms": p90,
    }


def demo_trace(steps: int) -> Trace:
    """Two instances of a 3-channel valve, interleaved: watermarks with an IDLE every 7th row."""
    rows = []
    for i in range(steps):
        instance, channel = str(i % 2), (i // 2) % 3
        if i % 7 == 6:
            rows.append(TraceRow(i + 1, Kind.STATUS, instance=instance, channel=channel, status=Status.IDLE))
        else:
            rows.append(
                TraceRow(i + 1, Kind.WATERMARK, instance=instance, channel=channel, watermark_ms=10 * i)
            )
    channels = {(str(i), "0"): 3 for i in range(2)}
    return Trace("demo", tuple(rows), ScenarioConfig(name="live demo"), channels)


def main(argv: list[str] | None = None) -> None:
    """Step a trace (or the demo) through a live session; print each latency and the summary."""
    from wmviz.core.simulate import simulate
    from wmviz.spark.session import get_spark
    from wmviz.timeline.transcript import transcript_record
    from wmviz.trace.readers import read_trace

    parser = argparse.ArgumentParser(prog="python -m wmviz.spark.live", description=main.__doc__)
    parser.add_argument("trace", nargs="?", help="a trace file (default: a 2-instance demo valve trace)")
    parser.add_argument("--steps", type=int, default=20, help="rows to step (default 20)")
    parser.add_argument("--source", choices=SOURCES, default="python")
    parser.add_argument("--master", default=None)
    args = parser.parse_args(argv)

    full = read_trace(args.trace) if args.trace else demo_trace(args.steps)
    trace = Trace(full.source, full.rows[: args.steps], full.config, full.valve_channels)
    operator = not trace.config.valve_only
    spark = get_spark(args.master)
    with tempfile.TemporaryDirectory(prefix="wmviz-live-") as work:
        live = LiveSession.from_trace(spark, trace, work, operator=operator, source=args.source)
        print(f"query started in {live.startup_ms:.0f} ms")
        try:
            same = True
            for row, result in zip(trace.rows, simulate(trace)):
                record = live.step(row)
                same &= record == transcript_record(result, operator=operator)
                print(
                    f"step {len(live.latencies_ms):3d}: {live.latencies_ms[-1]:7.1f} ms  {json.dumps(record)}"
                )
        finally:
            live.close()
    summary = latency_summary(live.latencies_ms)
    print(f"matches the pure engine: {same}")
    print(
        f"source={args.source} steps={summary['steps']} first={summary['first_ms']:.0f} ms "
        f"median={summary['median_ms']:.0f} ms p90={summary['p90_ms']:.0f} ms (after the first)"
    )


if __name__ == "__main__":
    # Import the module by name so Spark pickles its classes by reference, not from __main__.
    from wmviz.spark import live as _live

    _live.main()
