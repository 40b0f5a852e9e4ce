"""Live mode's worker side: the step-file streaming source and the stateful per-instance function.

Both run in Spark's Python workers (the source in the driver's Python source worker), so they hold
nothing but what `LiveSession` passes them: the step directory, and the engine job.
"""

from __future__ import annotations

import json
import os
import pickle
import time
from collections.abc import Iterator, Mapping
from collections.abc import Set as AbstractSet
from pathlib import Path
from typing import Any

from pyspark.sql.datasource import DataSource, SimpleDataSourceStreamReader

from wmviz.core.pipeline import InstancePipeline
from wmviz.spark.engine import spark_ddl
from wmviz.timeline import keyframe
from wmviz.timeline.runner import RunSpec
from wmviz.trace.rowtable import ROW_COLUMNS, ROW_SCHEMA, row_from_record

SOURCE_NAME = "wmviz_live"
OUTPUT_DDL = "instance string, step long, order long, line string, state binary, tables binary"
STATE_DDL = "pipeline binary, steps long"
_POLL_S = 0.005
"""How often the source looks for the next step file: at most 5 ms late, ~3 % of a core idle."""
ManualChannels = Mapping[str, AbstractSet[tuple[str, int]]]
"""Per instance, the (input, channel) pairs that carry explicit watermarks (see `LiveSpec`)."""

# --------------------------------------------------------------------------------------------------
# The source: one JSON file per step, `NNNNNNNNN.json`, holding one row of the engine's row schema.


def step_file(directory: str | os.PathLike[str], order: int) -> Path:
    """The file holding the step with this arrival order."""
    return Path(directory) / f"{order:09d}.json"


def read_step(directory: str, order: int) -> tuple[Any, ...]:
    record = json.loads(step_file(directory, order).read_text())
    return tuple(record.get(c) for c in ROW_COLUMNS)


class LiveStepSource(DataSource):
    """A streaming source over a live session's step files (options: `path`, `wait_ms`)."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> str:
        return spark_ddl(ROW_SCHEMA)

    def simpleStreamReader(self, schema) -> SimpleDataSourceStreamReader:
        return _StepReader(self.options["path"], float(self.options.get("wait_ms", "200")) / 1000)


class _StepReader(SimpleDataSourceStreamReader):
    """Offsets count step files; `read` returns exactly the next one, so one step = one micro-batch.

    Runs in the driver's Python source worker. Waiting here (instead of returning "no data" and
    being polled again by the trigger loop) is what makes a step visible within milliseconds
    without keeping the JVM busy; `wait_ms` bounds the wait so `stop()` is never held up long.
    """

    def __init__(self, path: str, wait_s: float) -> None:
        self.path = path
        self.wait_s = wait_s

    def initialOffset(self) -> dict:
        return {"n": 0}

    def read(self, start: dict) -> tuple[Iterator[tuple], dict]:
        n = start["n"]
        target = step_file(self.path, n)
        deadline = time.monotonic() + self.wait_s
        while not target.exists():
            if time.monotonic() >= deadline:
                return iter(()), start
            time.sleep(_POLL_S)
        return iter([read_step(self.path, n)]), {"n": n + 1}

    def readBetweenOffsets(self, start: dict, end: dict) -> Iterator[tuple]:
        # Replay after a restart: the files are the durable log of every step.
        return iter([read_step(self.path, n) for n in range(start["n"], end["n"])])

    def commit(self, end: dict) -> None:
        pass  # the step files are kept: they are the session's input history


# --------------------------------------------------------------------------------------------------
# The stateful function (runs in a Python worker).


def _new_pipeline(job: RunSpec, instance: str, manual: ManualChannels) -> InstancePipeline:
    channels = job.channels_of(instance)
    pairs = set(manual.get(instance, ())) if job.config.generator is not None else set()
    return InstancePipeline(instance, job.config, job.profile, channels, pairs)


def live_group(job: RunSpec, manual: ManualChannels, *, with_input: bool, operator: bool):
    """The `applyInPandasWithState` function: resume the instance's stored pipeline, run its rows.

    State is `(pipeline keyframe, steps so far)`. Each output row carries the step's transcript
    line, the pipeline's keyframe after it, and the step's timeline rows recorded by the very
    recorder a batch run uses (pickled Arrow tables), so the page shows a live step with the code
    that shows a recorded one. A row the pipeline rejects yields `{"error": ...}` and leaves the
    state as it was before that row: one bad hand input must neither kill the query nor half-apply.
    """

    def run(key, frames, state):
        import pandas as pd
        import pyarrow as pa

        from wmviz.timeline.recorder import InstanceRecorder
        from wmviz.timeline.transcript import transcript_line

        (instance,) = key
        refs = job.refs
        if state.exists:
            blob, steps = state.get
            blob = bytes(blob)
            pipeline = keyframe.decode(blob, refs)
        else:
            blob, steps = None, 0
            pipeline = _new_pipeline(job, instance, manual)
        # Sort across every frame: the batch engine feeds an instance's rows in arrival order.
        pending = sorted((int(o), r) for pdf in frames for o, r in zip(pdf["order"], pdf["record"]))
        # (instance, step, order, transcript line, keyframe, pickled tables); a rejected row has no
        # keyframe and no tables.
        out: list[tuple[str, int, int, str, bytes | None, bytes | None]] = []
        for order, record in pending:
            cells = json.loads(record)
            try:
                recorder = InstanceRecorder(pipeline, 1, refs, first_step=steps)
                row = row_from_record(cells)
                pipeline.run_row(row, explain=False)
                recorder.record(pipeline, steps)
                result = pipeline.step_result(steps, row)
                tables = recorder.tables(pa.Table.from_pylist([cells], schema=ROW_SCHEMA))
            except Exception as exc:
                message = json.dumps({"error": f"{type(exc).__name__}: {exc}"})
                out.append((instance, steps, order, message, None, None))
                pipeline = (
                    keyframe.decode(blob, refs) if blob is not None else _new_pipeline(job, instance, manual)
                )
                continue
            blob = keyframe.encode(pipeline, refs)
            line = transcript_line(result, with_input=with_input, operator=operator)
            out.append((instance, steps, order, line, blob, pickle.dumps(tables)))
            steps += 1
        if blob is not None:
            state.update((blob, steps))
        yield pd.DataFrame(out, columns=["instance", "step", "order", "line", "state", "tables"])

    return run


class _ValueStateAsGroupState:
    """A `transformWithStateInPandas` value state seen as `applyInPandasWithState`'s group state,
    so both stateful APIs run the one `live_group` function."""

    def __init__(self, value_state) -> None:
        self._state = value_state

    @property
    def exists(self) -> bool:
        return self._state.exists()

    @property
    def get(self) -> tuple:
        return self._state.get()

    def update(self, value: tuple) -> None:
        self._state.update(value)


def live_processor(job: RunSpec, manual: ManualChannels, *, with_input: bool, operator: bool):
    """`live_group` as a `transformWithStateInPandas` processor (the newer stateful API; it needs
    the RocksDB state store). Made here, so Spark pickles the class with the job it closes over."""
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor

    run = live_group(job, manual, with_input=with_input, operator=operator)

    class LiveProcessor(StatefulProcessor):
        def init(self, handle) -> None:
            self.state = _ValueStateAsGroupState(handle.getValueState("pipeline", STATE_DDL))

        def handleInputRows(self, key, rows, timerValues):
            yield from run(key, rows, self.state)

        def close(self) -> None:
            pass

    return LiveProcessor()
