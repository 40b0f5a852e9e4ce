"""One run plan: which engine simulates a trace, and, for a small file, the trace read and
validated once.

The page and the command line ask the same question before a run: does this trace go to Spark,
and is it valid? A small file (at most `WMVIZ_SPARK_UPLOAD_MB`) is read and validated here with
the pure reader, and the trace it gives is what the in-process engine (or the one-job Spark run)
simulates, so nothing reads it a second time. A large file is left to Spark's tasks, which read,
check and simulate it with the same messages. `auto` runs a small trace in this process and a
large one on Spark; an upload too large for the page's reader goes to Spark whatever was asked.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from wmviz.core.scenario import Trace
from wmviz.core.settings import SPARK_UPLOAD_MB
from wmviz.timeline.engine import Engine


def read_trace(*args: Any, **kwargs: Any) -> Trace:
    """`wmviz.trace.readers.read_trace`, imported when a trace is first read: the app's first page,
    a built-in incident from its prepared timeline, never loads the readers (issue 30)."""
    from wmviz.trace.readers import read_trace as read

    return read(*args, **kwargs)


def spark_threshold_mb() -> float:
    """Traces larger than this go to Spark under the `auto` engine ($WMVIZ_SPARK_UPLOAD_MB, 20)."""
    return SPARK_UPLOAD_MB.get()


def is_large(trace_path: Path) -> bool:
    """Whether a trace file is over `WMVIZ_SPARK_UPLOAD_MB`: read and checked by Spark's tasks."""
    return trace_path.stat().st_size > spark_threshold_mb() * 2**20


def engine_for(asked: Engine, large: bool) -> Engine:
    """The engine that runs: `spark`/`local` as asked; `auto` by the trace's size."""
    if asked is not Engine.AUTO:
        return asked
    return Engine.SPARK if large else Engine.LOCAL


@dataclass(frozen=True)
class RunPlan:
    """How a trace is run: the engine (never `auto`), whether the file is large, and a small file's
    trace, read and validated once."""

    engine: Engine
    asked: Engine
    """The engine asked for: it differs from `engine` when the size decided."""
    large: bool
    trace: Trace | None = None
    """The validated trace of a small file (None for a large one, or once it has been run)."""

    @property
    def moved_to_spark(self) -> bool:
        """The size sent the run to Spark though another engine was asked for."""
        return self.engine is Engine.SPARK and self.asked is not Engine.SPARK

    def without_trace(self) -> RunPlan:
        """The same plan, not holding the trace (what a page keeps once the run is made)."""
        return replace(self, trace=None)


def plan_run(trace_path: Path, config_path: Path | None, asked: Engine, *, upload: bool = False) -> RunPlan:
    """The plan for a trace file (and its config file): a small one is read and validated now
    (a `TraceValidationError` listing its issues when it is not valid). `upload`: a file sent to
    the page, which goes to Spark when large whatever engine was asked."""
    large = is_large(trace_path)
    engine = Engine.SPARK if upload and large else engine_for(asked, large)
    trace = None if large else read_trace(trace_path, config_path)
    return RunPlan(engine, asked, large, trace)
