"""Live mode: step the valve and operator inside a running Structured Streaming query.

One long-running query, `groupBy("instance").applyInPandasWithState(...)`, holds every instance's
`InstancePipeline` as keyframe bytes (`wmviz.timeline.keyframe`) in Spark's state store. Each
`LiveSession.step` appends ONE input row as a small JSON file, the query runs one micro-batch on
it, and a `foreachBatch` sink hands the step's transcript record back to the waiting caller, keyed
by (instance, step).

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
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.state import GroupStateTimeout

from wmviz.core.pipeline import InstancePipeline
from wmviz.core.scenario import Kind, ScenarioConfig, Trace, TraceRow
from wmviz.core.simulate import instance_channels, manual_channels
from wmviz.core.types import Profile, Status
from wmviz.spark.engine import spark_ddl
from wmviz.spark.live_worker import (
    OUTPUT_DDL,
    SOURCE_NAME,
    STATE_DDL,
    LiveStepSource,
    live_group,
    step_file,
)
from wmviz.timeline import keyframe
from wmviz.timeline.memory import MemoryTimeline
from wmviz.timeline.runner import RunSpec
from wmviz.trace.check import CheckContext, check_batch
from wmviz.trace.config import config_to_dict
from wmviz.trace.errors import IssueCollector, TraceIssue, TraceValidationError
from wmviz.trace.raw import RawBatch, from_python
from wmviz.trace.rowtable import ROW_COLUMNS, ROW_SCHEMA, decode_rows, encode_rows
from wmviz.trace.wholefile import proc_ms_decrease_reason

_SOURCES = ("python", "files")


class LiveError(RuntimeError):
    """The live query failed, timed out, or its worker rejected a row (the state is unchanged then)."""


# --------------------------------------------------------------------------------------------------
# The driver side.


def _row_record(row: TraceRow, order: int) -> dict[str, Any]:
    """A trace row as one ROW_SCHEMA record (the one row encoder), at arrival position `order`."""
    (record,) = encode_rows([row]).to_pylist()
    record["order"] = order
    return record


class LiveSession:
    """Step one scenario inside a running Spark streaming query, one input row per micro-batch.

    `step(row)` returns the row's transcript record (what `transcript_record` gives for the same
    row in a batch run); `inject(...)` builds the row from typed-in cells first. Per-step wall
    times go to `latencies_ms`. Use as a context manager, or call `close()`.

    `manual_channels` matters only with a generator: per instance, the (input, channel) pairs that
    carry explicit watermarks. A batch run learns them from the whole trace before the first row;
    live mode must be told up front (`from_trace` derives them from a trace).
    """

    def __init__(
        self,
        spark: SparkSession,
        config: ScenarioConfig,
        profile: Profile | str,
        valve_channels: Mapping[tuple[str, str], int],
        work_dir: str | os.PathLike[str],
        *,
        with_input: bool = False,
        operator: bool = False,
        manual_channels: Mapping[str, set[tuple[str, int]]] | None = None,
        source: str = "python",
        wait_ms: int = 200,
        step_timeout_s: float = 120.0,
    ) -> None:
        if source not in _SOURCES:
            raise ValueError(f"source must be one of {', '.join(_SOURCES)}, not {source!r}")
        self.config = config
        self.profile = Profile.parse(profile) if isinstance(profile, str) else profile
        self.valve_channels = dict(valve_channels)
        self.manual = {i: frozenset(pairs) for i, pairs in (manual_channels or {}).items()}
        self._refs = {"config": config, "profile": self.profile}
        self.with_input = with_input
        self.operator = operator
        self.step_timeout_s = step_timeout_s
        self.latencies_ms: list[float] = []
        """Wall time of each accepted step: file written → record back on the driver."""
        self.history: list[TraceRow] = []
        """Every accepted input row, in arrival order (replay it through `simulate` to compare)."""
        self.steps: dict[str, int] = {}
        self._order = 0
        self._next_row = 1
        self._proc_ms: dict[str, tuple[int, int]] = {}
        self._states: dict[str, bytes] = {}
        self._results: dict[tuple[str, int], tuple[int, str, bytes | None, bytes | None, int]] = {}
        self.timeline = MemoryTimeline(
            {
                "profile": self.profile.value,
                "config": config_to_dict(config),
                "keyframe_every": 1,
                "engine": "spark (live)",
                "instances": {},
            },
            self._refs,
        )
        """Every accepted step's timeline rows, as the query's workers recorded them."""
        self.batch_ids: list[int] = []
        """The micro-batch that ran each accepted step."""
        self._cond = threading.Condition()
        self._stepping = threading.Lock()  # a UI may call from several threads: one step at a time

        work = Path(work_dir)
        self.input_dir = work / "input"
        self.checkpoint_dir = work / "checkpoint"
        for folder in (self.input_dir, self.checkpoint_dir):
            # A previous session's files would be replayed as this session's first steps.
            if folder.exists() and any(folder.iterdir()):
                raise ValueError(f"{folder} is not empty; give each live session a fresh work_dir")
            folder.mkdir(parents=True, exist_ok=True)

        started = time.perf_counter()
        # A private session: its conf (one state partition) and source registration stay here.
        self.session = spark.newSession()
        self.session.conf.set("spark.sql.shuffle.partitions", "1")
        if source == "python":
            self.session.dataSource.register(LiveStepSource)
            rows = (
                self.session.readStream.format(SOURCE_NAME)
                .option("path", str(self.input_dir))
                .option("wait_ms", str(wait_ms))
                .load()
            )
        else:
            rows = (
                self.session.readStream.schema(spark_ddl(ROW_SCHEMA))
                .option("maxFilesPerTrigger", 1)
                .json(str(self.input_dir))
            )
        job = RunSpec.of(config, self.profile, self.valve_channels, keyframe_every=1)
        # The row crosses into pandas as JSON: a nullable long column would arrive as float64 and
        # lose Long.MAX_VALUE watermarks; to_json keeps every long exact and drops the nulls.
        out = (
            rows.select("instance", "order", F.to_json(F.struct(*ROW_COLUMNS)).alias("record"))
            .groupBy("instance")
            .applyInPandasWithState(
                live_group(job, self.manual, with_input=with_input, operator=operator),
                OUTPUT_DDL,
                STATE_DDL,
                "append",
                GroupStateTimeout.NoTimeout,
            )
        )
        self.query = (
            out.writeStream.foreachBatch(self._on_batch)
            .option("checkpointLocation", str(self.checkpoint_dir))
            .start()
        )
        self.startup_ms = (time.perf_counter() - started) * 1000

    @classmethod
    def from_trace(cls, spark: SparkSession, trace: Trace, work_dir, **kwargs) -> LiveSession:
        """A session for a trace's config, profile, channel counts and manual channels."""
        kwargs.setdefault("manual_channels", manual_channels(trace))
        profile = kwargs.pop("profile", trace.config.profile)
        return cls(spark, trace.config, profile, trace.valve_channels, work_dir, **kwargs)

    # ---------------------------------------------------------------------------------------------

    def step(self, row: TraceRow) -> dict[str, Any]:
        """Append one input row, run one micro-batch, and return that step's transcript record.

        Raises `TraceValidationError` (nothing is sent) for a row this session cannot take, and
        `LiveError` if the query fails, times out or its worker rejects the row (after a failure or
        a time-out, close the session: its query is gone or out of step with the driver).
        """
        with self._stepping:
            return self._step(row)

    def _step(self, row: TraceRow) -> dict[str, Any]:
        self._check(row)
        order = self._order
        step = self.steps.get(row.instance, 0)
        started = time.perf_counter()
        target = step_file(self.input_dir, order)
        # Write, then rename: a source must never see a half-written file.
        tmp = target.with_name(f".{target.name}.tmp")
        tmp.write_text(json.dumps(_row_record(row, order)) + "\n")
        os.replace(tmp, target)
        # The file is in the source now, so its order number is spent even if the worker rejects it.
        self._order += 1
        got_order, line, state, tables, batch_id = self._await((row.instance, step))
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

    def inject(
        self,
        kind: str | Kind,
        *,
        instance: str = "0",
        input: str = "0",
        channel: int | None = None,
        watermark_ms: int | str | None = None,
        status: str | Status | None = None,
        event_ms: int | str | None = None,
        proc_ms: int | str | None = None,
        key: str | None = None,
        value: str | int | float | None = None,
    ) -> dict[str, Any]:
        """Type an input by hand: the cells are read exactly as a trace row's, then `step`ped.

        `inject("status", channel=0, status="idle")`, `inject("watermark", channel=1,
        watermark_ms="MAX")`, `inject("record", input="L", channel=0, event_ms=10_000, key="1")`.
        The row is numbered after the highest line seen so far.
        """
        cells = {
            "kind": kind.value if isinstance(kind, Kind) else kind,
            "instance": instance,
            "input": input,
            "channel": channel,
            "watermark_ms": watermark_ms,
            "status": status.value if isinstance(status, Status) else status,
            "event_ms": event_ms,
            "proc_ms": proc_ms,
            "key": key,
            "value": value,
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
        self.query.stop()

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
            manual = (row.input, row.channel) in self.manual.get(row.instance, ())
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

    def _on_batch(self, batch, batch_id: int) -> None:
        """The foreachBatch sink (runs on the driver): file each step's output under (instance, step)."""
        rows = batch.collect()
        with self._cond:
            for r in rows:
                self._results[(r["instance"], r["step"])] = (
                    r["order"],
                    r["line"],
                    r["state"],
                    r["tables"],
                    batch_id,
                )
            self._cond.notify_all()

    def _await(self, key: tuple[str, int]) -> tuple[int, str, bytes | None, bytes | None, int]:
        deadline = time.monotonic() + self.step_timeout_s
        while True:
            with self._cond:
                if self._cond.wait_for(lambda: key in self._results, timeout=0.5):
                    order, line, state, tables, batch_id = self._results.pop(key)
                    state = bytes(state) if state is not None else None
                    return order, line, state, bytes(tables) if tables is not None else None, batch_id
            # Checked outside the lock, which the sink needs to deliver.
            error = self.query.exception()
            if error is not None or not self.query.isActive:
                raise LiveError(f"the live query stopped: {error}")
            if time.monotonic() > deadline:
                raise LiveError(
                    f"no output for step {key[1]} of instance {key[0]} in {self.step_timeout_s} s"
                )


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
    parser.add_argument("--source", choices=_SOURCES, default="python")
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
