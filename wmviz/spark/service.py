"""The app's Spark: a SparkSession started in the background, warmed up, and watched.

A page never waits for the JVM: `SparkService.start` returns at once and a thread starts the
session (~10 s), then runs one tiny job that starts the Python workers and loads wmviz in them
(~5 s more the first time), so the first real job on a warm session takes well under a second
of overhead. Once ready, one throwaway live query of one step warms live mode the same way
(`_warm_live`). `status()` says what Spark is doing for the sidebar: starting / warming up / ready /
failed, the master URL, the cores, and the job running now with its stage and task progress.
"""

from __future__ import annotations

import atexit
import contextlib
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from wmviz.core.settings import LIVE_WARM_UP
from wmviz.spark.master import spark_master

STARTING, WARMING, READY, FAILED, IDLE = "starting", "warming up", "ready", "failed", "not started"
SOON = "starting soon"
"""Asked to start a few seconds from now (`start_later`): the first page is drawn first."""


@dataclass(frozen=True)
class SparkStatus:
    """What the sidebar shows about Spark."""

    state: str
    master: str
    cores: int | None
    seconds: float
    """How long the state has lasted (starting, warming) or took (ready)."""
    job: str | None = None
    """The job running now, e.g. "simulating: stage 3, 5 of 8 tasks" (None while live mode warms up)."""
    error: str | None = None
    live_warming: bool = False
    """Ready, and warming live mode (`SparkService._warm_live`)."""


def _warm_up(batches: Iterator[Any]) -> Iterator[Any]:
    """The warm-up task: load what the engine's tasks load, so the first real job does not pay."""
    import wmviz.spark.engine
    import wmviz.timeline.runner  # noqa: F401

    yield from batches


class SparkService:
    """One SparkSession for the whole server (every browser session shares it)."""

    def __init__(self, master: str | None = None) -> None:
        self.master = spark_master(master)
        self.state = IDLE
        self.error: str | None = None
        self.cores: int | None = None
        self._since = time.monotonic()
        self._took = 0.0
        self._session: Any = None
        self._started: Any = None  # the session once made, while it warms up too
        self._stopping = False
        self._ready = threading.Event()
        self.live_warmed = threading.Event()
        """Set once live mode's warm-up is over (whether or not it ran its step)."""
        self._live_warming = False
        self._thread: threading.Thread | None = None
        self._timer: threading.Timer | None = None
        self._lock = threading.Lock()

    def start(self) -> SparkService:
        """Start the session in the background (once); returns at once."""
        with self._lock:
            if self._thread is None:
                self._set(STARTING)
                self._thread = threading.Thread(target=self._run, name="wmviz-spark-start", daemon=True)
                self._thread.start()
                atexit.register(self.stop)  # the server stopping (Ctrl-C, SIGTERM) ends Spark quietly
        return self

    def will_start(self) -> SparkService:
        """Say (in `status`) that the session starts soon, before `start_later` is asked."""
        with self._lock:
            if self.state == IDLE:
                self._set(SOON)
        return self

    def start_later(self, delay_s: float) -> SparkService:
        """Start the session `delay_s` seconds from now (once; `start` or `session` before then
        start it at once). Returns at once."""
        with self._lock:
            if self._thread is None and self._timer is None:
                self._set(SOON)
                self._timer = threading.Timer(delay_s, self.start)
                self._timer.name = "wmviz-spark-later"
                self._timer.daemon = True
                self._timer.start()
        return self

    def _run(self) -> None:
        from wmviz.spark.session import get_spark

        started = time.monotonic()
        try:
            session = self._started = get_spark(self.master)
            self.cores = session.sparkContext.defaultParallelism
            self._set(WARMING)
            cores = max(1, self.cores)
            session.range(0, cores, 1, cores).mapInArrow(_warm_up, "id long").collect()
            self._session = session
            self._took = time.monotonic() - started
            self._live_warming = LIVE_WARM_UP.get() == "on"  # told with "ready": `_warm_live` follows
            self._set(READY)
        except Exception as exc:  # shown in the sidebar; the in-process engine still works
            if not self._stopping:  # else the server is stopping: the warm-up was cancelled
                self.error = f"{type(exc).__name__}: {exc}"
                traceback.print_exc()
                self._set(FAILED)
        finally:
            self._ready.set()
        self._warm_live()  # returns at once (and says it is over) if Spark failed or is stopping

    def _warm_live(self) -> None:
        """One throwaway live query of one step, once Spark is ready. A server's first live query
        pays for what every later one finds loaded (the streaming engine's classes, the Python data
        source's lookup, the state store, the workers): on a quiet machine (30 Nov 2026) the first
        query took 5.6 s to start and 6.1 s for its first step; after one such query, 0.2 s and
        2.4 s. A failure is only printed: a person's own live run reports its own."""
        try:
            if self._session is None or self._stopping or not self._live_warming:
                return
            from wmviz.spark.live import LiveSession, demo_trace

            trace = demo_trace(1)
            with (
                tempfile.TemporaryDirectory(prefix="wmviz-live-warm-up-") as work,
                LiveSession.from_trace(self._session, trace, work) as live,
            ):
                live.step(trace.rows[0])
        except Exception:
            if not self._stopping:  # stopping cancels its jobs: nothing failed then
                traceback.print_exc()
        finally:
            self._live_warming = False
            self.live_warmed.set()

    def session_for_live(self, timeout: float | None = None) -> Any:
        """The session, for a person's live query: once live mode's warm-up is over (at most
        `timeout` s more). Two first queries starting at once on a busy machine failed: a Python
        worker did not connect back within Spark's 10 s (a test run beside a CPU hog), and the
        warm-up would then cost the first run more than it saves."""
        session = self.session(timeout)
        self.live_warmed.wait(timeout)
        return session

    def stop(self) -> None:
        """End Spark as the server stops, saying nothing: the JVM's log is turned off first, every
        live query (the live warm-up's, a person's) is stopped, the warm-up (or any job) is
        cancelled and the session stopped. Left to itself, the JVM found
        its jobs' workers gone and printed their stack traces. A JVM still starting exits by itself
        once this process has gone."""
        with self._lock:
            self._stopping = True
            if self._timer is not None:
                self._timer.cancel()
        session = self._started
        if session is None:
            return
        try:
            context = session.sparkContext
            context.setLogLevel("OFF")
            live_query = sys.modules.get("wmviz.spark.live_query")  # imported once a live query ran
            if live_query is not None:
                with contextlib.suppress(Exception):  # whatever it meets, the session still stops
                    live_query.stop_every_stream()  # before the session goes from under their threads
            context.cancelAllJobs()
            session.stop()
        except Exception:  # the JVM may be gone already: nothing is left to stop
            pass

    def _set(self, state: str) -> None:
        self.state = state
        self._since = time.monotonic()

    @property
    def ready(self) -> bool:
        return self.state == READY

    def session(self, timeout: float | None = None) -> Any:
        """The session, waiting for it to start (up to `timeout` s); RuntimeError if it failed."""
        self.start()
        if not self._ready.wait(timeout):
            raise TimeoutError(f"the SparkSession is still {self.state} after {timeout} s")
        if self._session is None:
            raise RuntimeError(f"Spark did not start: {self.error}")
        return self._session

    def status(self) -> SparkStatus:
        seconds = self._took if self.state == READY else time.monotonic() - self._since
        warming = self._live_warming
        # While live mode warms up, the box says so instead of naming the running job (the warm-up's
        # or, for those seconds, a person's): while it names a job the box refreshes itself, and
        # every step key then redraws the whole page, for nothing a person asked for.
        job = None if warming else self._job()
        return SparkStatus(self.state, self.master, self.cores, seconds, job, self.error, warming)

    def _job(self) -> str | None:
        """The job running now, in words (None when Spark is idle or not up)."""
        session = self._session
        if session is None:
            return None
        tracker = session.sparkContext.statusTracker()
        stages = sorted(tracker.getActiveStageIds())
        if not stages:
            return None
        parts = []
        for stage_id in stages:
            info = tracker.getStageInfo(stage_id)
            if info is not None:
                parts.append(f"stage {stage_id}, {info.numCompletedTasks} of {info.numTasks} tasks")
        jobs = ", ".join(str(j) for j in sorted(tracker.getActiveJobsIds()))
        return f"job {jobs}: {'; '.join(parts)}" if parts else f"job {jobs}"
