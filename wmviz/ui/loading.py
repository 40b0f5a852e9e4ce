"""Getting a timeline on screen (Streamlit): start Spark once, simulate with a visible progress bar,
and keep what was loaded for the next step.

The simulation runs in a worker thread while the script thread draws its progress: Spark reports
progress from its own polling thread, which may not touch Streamlit elements.

A cache entry can be removed (another session's budget) or found changed while the page reads it:
the read is then a TimelineError, the page reruns once so the run is made again, and a second
failure is a notice on the page, never a traceback.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import NoReturn

import numpy as np
import pandas as pd
import streamlit as st

from wmviz.core.settings import SPARK_START
from wmviz.core.windows import ScenarioError
from wmviz.spark.service import SparkService
from wmviz.store.incidents import Incident, built_in_incidents
from wmviz.store.plan import RunPlan
from wmviz.store.runs import RunRequest, cache_root, cached_timeline, run_timeline
from wmviz.timeline.cursor import InstanceCursor
from wmviz.timeline.progress import Report
from wmviz.timeline.store import Timeline, TimelineError
from wmviz.view.figures import heatmap_matrix
from wmviz.view.figures_heatmap import input_frontier
from wmviz.view.model import trace_times
from wmviz.view.plain import literal


def incidents(root: Path) -> dict[str, Incident]:
    """The incidents in `root`, read again only when a file there changes (reading them validates
    every trace, which for a large one takes seconds: too slow for every step)."""
    stamp = tuple(sorted((p.name, p.stat().st_mtime_ns) for p in root.iterdir()))
    return _incidents(str(root), stamp)


@st.cache_resource(show_spinner=False, max_entries=4)
def _incidents(root: str, stamp: tuple) -> dict[str, Incident]:
    return built_in_incidents(Path(root))


SPARK_AFTER_PAGE_S = 8.0
"""How long after the first page's script run the server's Spark starts: the browser loads the
chart's and the table's code and draws them meanwhile (2-6 s after the run at load 10-15). A JVM
starting takes both of this machine's cores for ~10 s; started with the page, it added 2-5 s to
the wait for a usable first page (docs/benchmarks.md)."""


@st.cache_resource(show_spinner=False)
def spark_service() -> SparkService:
    """The server's Spark (every browser session shares it); a page never waits for it unless a run
    needs Spark, which starts it at once. Otherwise it starts in the background just after the
    first page (`start_spark_after_page`); `WMVIZ_SPARK_START=lazy` starts it only when a run
    needs it (tests and benchmarks that never use it)."""
    service = SparkService()
    return service if SPARK_START.get() == "lazy" else service.will_start()


def start_spark_after_page() -> None:
    """Called when a script run is over (drawn or stopped): Spark starts `SPARK_AFTER_PAGE_S`
    later, once per server (a run that needs it sooner starts it itself)."""
    if SPARK_START.get() != "lazy":
        spark_service().start_later(SPARK_AFTER_PAGE_S)


def load_timeline(request: RunRequest, what: str, plan: RunPlan | None = None) -> Timeline:
    """The timeline of `request`: from the cache, or simulated now with a status box whose progress
    bar says what is happening from the first second. A run that cannot be made or stored (the
    cache folder is not wmviz's, the disk is full, its trace is gone) is a notice that stops the
    page. `plan`: the run's plan when the page made one (an upload's): its trace, read and validated
    already, is the one simulated."""
    try:
        found = cached_timeline(cache_root() / request.digest())
    except OSError as exc:  # the trace itself is gone (a what-if evicted meanwhile)
        _cannot_run(literal(what), exc)
    if found is not None:
        return found
    engine = request.resolved_engine
    box = st.empty()  # cleared when done: the page below must not move down for good
    what = literal(what)  # an upload's name, a what-if's description: user text
    with box.status(f"Simulating {what} on the {engine} engine…", expanded=True) as status:
        bar = st.progress(0.0, text="starting")
        state: dict = {"report": None, "error": None, "timeline": None}
        service = spark_service()

        def work() -> None:
            try:
                state["timeline"] = run_timeline(
                    request,
                    lambda r: state.update(report=r),
                    spark=lambda: service.session(timeout=300),
                    plan=plan,
                )
            except BaseException as exc:  # shown to the user below, never swallowed
                state["error"] = exc

        worker = threading.Thread(target=work, daemon=True)
        worker.start()
        while worker.is_alive():
            bar.progress(*_bar(state["report"], service))
            time.sleep(0.2)
        worker.join()
        if state["error"] is not None:
            status.update(label="The simulation failed", state="error")
            if isinstance(state["error"], TimelineError | OSError):
                _cannot_run(what, state["error"])
            if isinstance(state["error"], ScenarioError):
                _operator_stops(what, state["error"])
            raise state["error"]
        status.update(label=f"Simulated {what} on the {engine} engine", state="complete", expanded=False)
    box.empty()
    return state["timeline"]


def _bar(report: Report | None, service: SparkService) -> tuple[float, str]:
    """The progress bar's fraction and text: the run's own report, or what Spark is doing while a
    run waits for it (starting only when it really is starting)."""
    if report is None:
        return 0.0, "starting"
    if report.phase == "waiting for the SparkSession" and not service.ready:
        status = service.status()
        return 0.0, f"the SparkSession is {status.state} ({status.seconds:.0f} s so far, once per server)"
    return report.fraction, report.line()


def _cannot_run(what: str, exc: BaseException) -> NoReturn:
    """A notice naming the run (`what`, already quoted) and why, and the page stops there."""
    st.error(f"{what} could not be simulated and kept: {literal(exc)}", icon=":material/error:")
    st.stop()


def _operator_stops(what: str, exc: ScenarioError) -> NoReturn:
    """A trace `wmviz validate` accepts but the operator stops at (a split finished twice): the row,
    column and reason, as the CLI says them (exit 2 there), never a traceback with server paths."""
    st.error(
        f"{what}: the trace is valid, but the operator cannot process line {exc.row.row}: column "
        f"{exc.column}: {literal(exc.reason)}. Nothing after that row was simulated.",
        icon=":material/error:",
    )
    st.stop()


def instance_cursor(path: str, instance: str) -> InstanceCursor:
    """One instance's steps in memory (kept per timeline and instance for the next step)."""
    return _reading(path, _instance_cursor, instance)


def overview_matrix(path: str) -> tuple[pd.DataFrame, np.ndarray]:
    """Every instance's output watermark over arrival order, bucketed (the overview heatmap's input),
    and the newest input time seen up to each bucket (what "absolute" lag is measured against)."""
    return _reading(path, _overview_matrix)


def time_origin(path: str) -> int | None:
    """The run's first time (the smallest finite event, watermark or processing time over every
    instance): the origin of relative times, the same for every instance."""
    return _reading(path, _time_origin)


def histories(path: str, instance: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The channel and output histories the watermark chart draws (independent of the step)."""
    return _reading(path, _histories, instance)


_REREAD = "_timeline_reread"


def _reading(path: str, load, *args):
    """`load(path, *args)`; a TimelineError (the entry removed or changed while read) reruns the
    page once, which makes the run again, and is a notice the second time in a row."""
    retried = st.session_state.setdefault(_REREAD, [])
    try:
        value = load(path, *args)
    except TimelineError as exc:
        if path not in retried:
            retried.append(path)
            st.rerun()  # load_timeline finds the entry gone or damaged and makes it again
        retried.remove(path)
        st.error(
            f"The run's timeline could not be read: {literal(exc)}. Reload the page to simulate it again.",
            icon=":material/error:",
        )
        st.stop()
    if path in retried:
        retried.remove(path)
    return value


def _served(path: str) -> Timeline:
    """The run cache's checked timeline at `path` (TimelineError when it is gone or damaged)."""
    timeline = cached_timeline(Path(path))
    if timeline is None:
        raise TimelineError(f"{path}: gone: the cache entry was removed or found damaged while in use")
    return timeline


@st.cache_resource(show_spinner=False, max_entries=16)
def _instance_cursor(path: str, instance: str) -> InstanceCursor:
    return InstanceCursor(_served(path), instance)


@st.cache_resource(show_spinner=False, max_entries=16)
def _overview_matrix(path: str) -> tuple[pd.DataFrame, np.ndarray]:
    steps = _served(path).columns("steps", ["instance", "order", "output_wm", "event_ms", "watermark_ms"])
    assert steps is not None, "a timeline always has steps"
    table = steps.to_pandas()
    matrix = heatmap_matrix(table)
    return matrix, input_frontier(table, np.asarray(matrix.columns, dtype=np.int64))


@st.cache_resource(show_spinner=False, max_entries=16)
def _time_origin(path: str) -> int | None:
    steps = _served(path).columns("steps", ["event_ms", "watermark_ms", "proc_ms"])
    assert steps is not None, "a timeline always has steps"
    return trace_times(steps)


@st.cache_resource(show_spinner=False, max_entries=16)
def _histories(path: str, instance: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    cursor = _instance_cursor(path, instance)
    return cursor.channel_history(), cursor.output_history()
