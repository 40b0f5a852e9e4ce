"""The streaming query of live mode as the driver sees it (`wmviz.spark.live` steps it): what a
session steps (`LiveSpec`), the query started on it, the folder each step's input file goes to,
and the inbox where its `foreachBatch` sink files each step's output for the waiting caller."""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery
from pyspark.sql.streaming.state import GroupStateTimeout

from wmviz.core.errors import Refused
from wmviz.core.scenario import ScenarioConfig, Trace
from wmviz.core.simulate import manual_channels
from wmviz.core.types import Profile
from wmviz.spark.engine import spark_ddl
from wmviz.spark.live_worker import (
    OUTPUT_DDL,
    SOURCE_NAME,
    STATE_DDL,
    LiveStepSource,
    ManualChannels,
    live_group,
    live_processor,
    step_file,
)
from wmviz.timeline.runner import RunSpec
from wmviz.trace.rowtable import ROW_COLUMNS, ROW_SCHEMA

SOURCES = ("python", "files")
STATEFUL_APIS = ("applyInPandasWithState", "transformWithStateInPandas")
QUERY_CONF = {
    "spark.sql.shuffle.partitions": "1",
    "fs.AbstractFileSystem.file.impl": "org.apache.hadoop.fs.local.RawLocalFs",
}
"""The live query's own settings: one state partition (a step is one row of one instance), and its
checkpoint (offsets, commits, state deltas: a few small files per step, in a folder removed when
the run stops) written without Hadoop's checksum side files, which cost over a third of a step
(bench/live_step.py: 351 → 224 ms p50 at load 12 → 5; the same transcripts)."""
ROCKSDB = {
    "spark.sql.streaming.stateStore.providerClass": (
        "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
    )
}
"""The state store `transformWithStateInPandas` needs (`applyInPandasWithState` may use it too)."""


class LiveError(Refused, RuntimeError):
    """The live query failed, timed out, or its worker rejected a row (the state is unchanged then)."""


@dataclass(frozen=True)
class LiveSpec:
    """What a live session steps, the scenario (config, profile, channel counts, manual channels),
    and how its query runs. `LiveSession.start(spark, spec, work_dir)` starts one."""

    config: ScenarioConfig
    profile: Profile
    valve_channels: Mapping[tuple[str, str], int]
    with_input: bool = False
    """Transcript lines name the input (for several inputs), as `transcript_record` does."""
    operator: bool = False
    """Transcript records carry the operator's output too."""
    manual_channels: ManualChannels = field(default_factory=dict)
    """Only with a generator: per instance, the (input, channel) pairs that carry explicit
    watermarks. A batch run learns them from the whole trace before the first row; live mode must
    be told up front (`of_trace` derives them from a trace)."""
    source: str = "python"
    """The query's source: `python` (a Python streaming source) or `files` (Spark's own)."""
    wait_ms: int = 200
    """How long the Python source waits for the next step's file before it ends a trigger."""
    step_timeout_s: float = 600.0
    """How long a step may wait for its output: a bound only a hang reaches. A first step, which
    starts the query's Python workers, took 44 s beside three CPU hogs on 2 cores (9-13 s idle),
    and a person's click must not be refused because the machine is busy."""
    stateful_api: str = "applyInPandasWithState"
    """Which of Spark's Python stateful APIs runs `live_group` (`STATEFUL_APIS`)."""
    conf: Mapping[str, str] = field(default_factory=dict)
    """SQL settings for the query's private Spark session, over `QUERY_CONF` (bench/live_step.py
    tries them one against another)."""

    def __post_init__(self) -> None:
        if self.source not in SOURCES:
            raise ValueError(f"source must be one of {', '.join(SOURCES)}, not {self.source!r}")
        if self.stateful_api not in STATEFUL_APIS:
            raise ValueError(
                f"stateful_api must be one of {', '.join(STATEFUL_APIS)}, not {self.stateful_api!r}"
            )
        # Private copies: the caller's dicts may change later, the session's scenario must not.
        object.__setattr__(self, "valve_channels", dict(self.valve_channels))
        object.__setattr__(self, "conf", dict(self.conf))
        manual = {i: frozenset(pairs) for i, pairs in self.manual_channels.items()}
        object.__setattr__(self, "manual_channels", manual)

    @classmethod
    def of_trace(cls, trace: Trace, **options: Any) -> LiveSpec:
        """The spec for a trace's config, profile (or `profile=`), channel counts and manual channels."""
        options.setdefault("manual_channels", manual_channels(trace))
        profile = options.pop("profile", trace.config.profile)
        profile = Profile.parse(profile) if isinstance(profile, str) else profile
        return cls(trace.config, profile, trace.valve_channels, **options)


_StepOutput = tuple[int, str, bytes | None, bytes | None, int]
"""A step's output on the driver: (order, transcript line, keyframe, pickled tables, micro-batch)."""


class _Inbox:
    """What the query's `foreachBatch` sink filed for the driver, by (instance, step)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._results: dict[tuple[str, int], _StepOutput] = {}

    def on_batch(self, batch, batch_id: int) -> None:
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

    def take(self, key: tuple[str, int], wait_s: float) -> _StepOutput | None:
        """Step `key`'s output, waiting at most `wait_s` for it; None if it has not come."""
        with self._cond:
            if not self._cond.wait_for(lambda: key in self._results, timeout=wait_s):
                return None
            order, line, state, tables, batch_id = self._results.pop(key)
        state = bytes(state) if state is not None else None
        return order, line, state, bytes(tables) if tables is not None else None, batch_id


class _Streams:
    """Every live stream of this process started and not yet stopped, and how many are starting,
    so that `stop_all` stops a query whose start was under way too. A plain set: a stream its owner
    dropped without stopping it still has a running query, the one most in need of a stop."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._running: set[LiveStream] = set()
        self._starting = 0

    @contextlib.contextmanager
    def starting(self) -> Iterator[None]:
        with self._changed:
            self._starting += 1
        try:
            yield
        finally:
            with self._changed:
                self._starting -= 1
                self._changed.notify_all()

    def add(self, stream: LiveStream) -> None:
        with self._changed:
            self._running.add(stream)

    def discard(self, stream: LiveStream) -> None:
        with self._changed:
            self._running.discard(stream)

    def stop_all(self, wait_s: float) -> None:
        """Stop every stream, once the starts under way (at most `wait_s` seconds) are over."""
        with self._changed:
            self._changed.wait_for(lambda: self._starting == 0, timeout=wait_s)
            streams = list(self._running)
        for stream in streams:
            with contextlib.suppress(Exception):  # a query that already failed has nothing to stop
                stream.stop()


_STREAMS = _Streams()


def stop_every_stream(wait_s: float = 30.0) -> None:
    """Stop every live query of this process: a server stopping does this before its SparkSession
    stops, or each query's stream thread, finding the session gone under it, prints a Java stack
    trace to the terminal of the person who stopped the server. A query still starting is waited
    for (up to `wait_s`: a first query took 5.6 s to start on a quiet machine), then stopped."""
    _STREAMS.stop_all(wait_s)


@dataclass(eq=False)  # a stream is itself, not its fields: `_STREAMS` holds it by identity
class LiveStream:
    """The running query as the driver sees it: the folder a step's file goes to, and the inbox
    its sink fills (`restart` replaces a stopped query by one resumed from its checkpoint)."""

    input_dir: Path
    query: StreamingQuery
    inbox: _Inbox
    startup_ms: float
    _session: SparkSession
    _spec: LiveSpec
    _checkpoint_dir: Path
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _closed: bool = False

    @classmethod
    def start(cls, spark: SparkSession, spec: LiveSpec, work_dir: Path) -> LiveStream:
        """Start the query in a private Spark session, on fresh folders under `work_dir`."""
        input_dir, checkpoint_dir = work_dir / "input", work_dir / "checkpoint"
        for folder in (input_dir, checkpoint_dir):
            # A previous session's files would be replayed as this session's first steps.
            if folder.exists() and any(folder.iterdir()):
                raise ValueError(f"{folder} is not empty; give each live session a fresh work_dir")
            folder.mkdir(parents=True, exist_ok=True)
        inbox = _Inbox()
        started = time.perf_counter()
        # A private session: its conf (one state partition) and source registration stay here.
        session = spark.newSession()
        needs = ROCKSDB if spec.stateful_api == "transformWithStateInPandas" else {}
        for key, value in {**QUERY_CONF, **needs, **spec.conf}.items():
            session.conf.set(key, value)
        with _STREAMS.starting():
            query = _start_query(session, spec, input_dir, checkpoint_dir, inbox)
            elapsed = (time.perf_counter() - started) * 1000
            stream = cls(input_dir, query, inbox, elapsed, session, spec, checkpoint_dir)
            _STREAMS.add(stream)
        return stream

    def restart(self) -> None:
        """Start the query again from its checkpoint, after it stopped: it replays the batch it
        did not commit from the step files (`readBetweenOffsets`), on the state it had stored."""
        with self._lock:
            if self._closed:
                raise LiveError("the live session was closed")
            self.query.stop()  # already stopped: this only lets Spark forget it
            self.query = _start_query(
                self._session, self._spec, self.input_dir, self._checkpoint_dir, self.inbox
            )

    def stop(self) -> None:
        """Stop the query for good (a restart under way finishes first, then its query stops)."""
        with self._lock:
            self._closed = True
            _STREAMS.discard(self)
            self.query.stop()

    def send(self, record: dict[str, Any], order: int) -> None:
        """Put one input row where the query's source reads it, as the `order`-th step file."""
        target = step_file(self.input_dir, order)
        # Write, then rename: a source must never see a half-written file.
        tmp = target.with_name(f".{target.name}.tmp")
        tmp.write_text(json.dumps(record) + "\n")
        os.replace(tmp, target)

    def receive(self, key: tuple[str, int], timeout_s: float) -> _StepOutput:
        """Step `key`'s output once the sink files it; LiveError if the query stops or times out.

        A query that stops is restarted once from its checkpoint, and the step awaited again, as
        Spark would retry a failed task but in local mode does not: a busy machine can fail one
        for Spark's own reasons (a Python worker that does not connect back within its hard-coded
        10 s, as the Python source's worker must). The worker catches a row's own errors
        (`live_group`), so a stop is never the row's fault; a second one in the same step is the
        reason the page gives."""
        deadline = time.monotonic() + timeout_s
        restarted = False
        while True:
            got = self.inbox.take(key, wait_s=0.5)
            if got is not None:
                return got
            # Checked outside the inbox's lock, which the sink needs to deliver. `isActive` first:
            # a failing query records its exception before it turns inactive, so an inactive one
            # with no exception was stopped on purpose; read the other way round, a query dying
            # between the two reads looked stopped on purpose ("stopped: None", no restart).
            active = self.query.isActive
            error = self.query.exception()
            if error is not None or not active:
                if restarted or error is None:  # None: stopped on purpose (the run was closed)
                    raise LiveError(f"the live query stopped: {error}")
                restarted = True
                try:
                    self.restart()
                except Exception as again:
                    raise LiveError(f"the live query stopped: {error}; restarting it: {again}") from again
                continue
            if time.monotonic() > deadline:
                raise LiveError(f"no output for step {key[1]} of instance {key[0]} in {timeout_s:g} s")


def _start_query(
    session: SparkSession, spec: LiveSpec, input_dir: Path, checkpoint_dir: Path, inbox: _Inbox
) -> StreamingQuery:
    return (
        stepped_frame(session, spec, input_dir)
        .writeStream.foreachBatch(inbox.on_batch)
        .option("checkpointLocation", str(checkpoint_dir))
        .start()
    )


def stepped_frame(session: SparkSession, spec: LiveSpec, input_dir: Path) -> DataFrame:
    """The streaming frame of step outputs: the rows read from `input_dir`, run per instance by
    `live_group` from the state Spark keeps for it."""
    if spec.source == "python":
        session.dataSource.register(LiveStepSource)
        rows = (
            session.readStream.format(SOURCE_NAME)
            .option("path", str(input_dir))
            .option("wait_ms", str(spec.wait_ms))
            .load()
        )
    else:
        rows = (
            session.readStream.schema(spark_ddl(ROW_SCHEMA))
            .option("maxFilesPerTrigger", 1)
            .json(str(input_dir))
        )
    job = RunSpec.of(spec.config, spec.profile, spec.valve_channels, keyframe_every=1)
    # The row crosses into pandas as JSON: a nullable long column would arrive as float64 and
    # lose Long.MAX_VALUE watermarks; to_json keeps every long exact and drops the nulls.
    grouped = rows.select("instance", "order", F.to_json(F.struct(*ROW_COLUMNS)).alias("record")).groupBy(
        "instance"
    )
    flags = {"with_input": spec.with_input, "operator": spec.operator}
    if spec.stateful_api == "transformWithStateInPandas":
        processor = live_processor(job, spec.manual_channels, **flags)
        return grouped.transformWithStateInPandas(processor, OUTPUT_DDL, "append", "None")
    return grouped.applyInPandasWithState(
        live_group(job, spec.manual_channels, **flags),
        OUTPUT_DDL,
        STATE_DDL,
        "append",
        GroupStateTimeout.NoTimeout,
    )
