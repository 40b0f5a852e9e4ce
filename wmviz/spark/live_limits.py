"""Live mode's limits, kept without Spark: how many live queries a server runs, how long an unused
one lives, and how the clicks that drive one become steps.

A live query holds a JVM thread, Python workers and a folder of step files, so a server runs at
most a handful (`LiveSlots`). A query is counted from the moment its start is *reserved*, not
when it is running: seven sessions pressing "Drive it live" together used to all pass a check
of the running ones while every start was still in progress. A query nobody looks at is stopped
by a timer of its own, not only when someone else starts one.

A click on a live page is one step, and a step is a micro-batch of ~0.3-0.5 s. Stepping inside
the click's callback held the page's script for that long, and the browser's further clicks were
merged into one rerun meanwhile: 150 quick clicks gave 4-16 steps. A `StepQueue` instead takes a
click in microseconds and steps it on a worker thread, in order; a click over the queue's limit
is refused and counted, so every click the page receives is a step, waiting, or refused.

Pure threading and the stdlib: no pyspark, no streamlit, testable with fakes.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from wmviz.core import settings

R = TypeVar("R")
T = TypeVar("T")


def max_live() -> int:
    """At most this many live queries run on a server at once: $WMVIZ_MAX_LIVE, else 4."""
    return settings.MAX_LIVE.get()


def idle_s() -> float:
    """A live query nobody has looked at for this long is stopped: $WMVIZ_LIVE_IDLE_S, else 900 s."""
    return settings.LIVE_IDLE_S.get()


def queue_limit() -> int:
    """At most this many clicks wait for their step: $WMVIZ_LIVE_QUEUE, else 64 (~30 s of steps)."""
    return settings.LIVE_QUEUE.get()


class LiveSlots(Generic[R]):
    """The server's live runs by key, at most `most` of them counting the starts in progress.

    `reserve()` takes a slot before a query is started (None: all are taken), `fill(key, run)`
    puts the started run in it, `release(key)` frees it when the start failed. `stop_run` stops a
    run (its query and files); `busy(run)` says a run is stepping, which an idle timer never
    interrupts. Thread-safe: page scripts of many sessions and the timer call it at once.
    """

    def __init__(
        self,
        most: int,
        idle_limit_s: float,
        stop_run: Callable[[R], None],
        busy: Callable[[R], bool] = lambda run: False,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.most = most
        self.idle_limit_s = idle_limit_s
        self._stop_run = stop_run
        self._busy = busy
        self._clock = clock
        self._lock = threading.Lock()
        self._runs: dict[str, R] = {}
        self._used: dict[str, float] = {}
        self._starting: set[str] = set()
        self._timer: threading.Thread | None = None
        self._closed = threading.Event()

    # --- slots -------------------------------------------------------------------------------------

    def reserve(self) -> str | None:
        """A new key holding one slot until it is filled or released; None when every slot is
        taken by a running query or a start in progress (idle runs are stopped first)."""
        self.reap()
        with self._lock:
            if len(self._runs) + len(self._starting) >= self.most:
                return None
            key = uuid.uuid4().hex
            self._starting.add(key)
            return key

    def fill(self, key: str, run: R) -> None:
        """The reserved slot's query is running: `run` now holds it."""
        with self._lock:
            if key not in self._starting:
                raise KeyError(f"no live start reserved as {key}")
            self._starting.discard(key)
            self._runs[key] = run
            self._used[key] = self._clock()

    def release(self, key: str) -> None:
        """The reserved start failed: its slot is free again."""
        with self._lock:
            self._starting.discard(key)

    @property
    def taken(self) -> int:
        """Slots held: running queries and starts in progress."""
        with self._lock:
            return len(self._runs) + len(self._starting)

    # --- runs -------------------------------------------------------------------------------------

    def get(self, key: str) -> R | None:
        """The run under `key` (None once stopped), marked as used now."""
        with self._lock:
            run = self._runs.get(key)
            if run is not None:
                self._used[key] = self._clock()
            return run

    def stop(self, key: str) -> None:
        """Stop the run under `key` (nothing if there is none)."""
        with self._lock:
            run = self._runs.pop(key, None)
            self._used.pop(key, None)
        if run is not None:  # outside the lock: stopping a query takes seconds
            self._stop_run(run)

    def reap(self) -> list[str]:
        """Stop every run unused for longer than the idle limit (and not stepping); their keys."""
        now = self._clock()
        with self._lock:
            idle = [
                key
                for key, run in self._runs.items()
                if now - self._used[key] > self.idle_limit_s and not self._busy(run)
            ]
        for key in idle:
            self.stop(key)
        return idle

    def start_timer(self, every_s: float) -> None:
        """Reap every `every_s` seconds on a daemon thread, so a run left alone is stopped even
        when no page of this server runs again (once per registry; `close` ends it)."""
        with self._lock:
            if self._timer is not None:
                return
            self._timer = threading.Thread(
                target=self._tick, args=(every_s,), name="wmviz-live-idle", daemon=True
            )
        self._timer.start()

    def _tick(self, every_s: float) -> None:
        while not self._closed.wait(every_s):
            try:
                self.reap()
            except Exception:  # a query that fails to stop must not end the timer for the others
                continue

    def close(self) -> None:
        """Stop the timer and every run."""
        self._closed.set()
        with self._lock:
            keys = list(self._runs)
        for key in keys:
            self.stop(key)


@dataclass(frozen=True)
class QueueCounts:
    """What became of the clicks a live page received."""

    clicks: int
    stepped: int
    failed: int
    refused: int
    waiting: int

    def text(self) -> str:
        """`12 click(s): 9 stepped, 2 waiting, 1 refused (the queue was full)`."""
        parts = [f"{self.stepped} stepped"]
        if self.failed:
            parts.append(f"{self.failed} rejected")
        if self.waiting:
            parts.append(f"{self.waiting} waiting")
        if self.refused:
            parts.append(f"{self.refused} refused (the queue was full)")
        return f"{self.clicks} click(s): " + ", ".join(parts)


class StepQueue(Generic[T]):
    """Clicks taken at once and stepped one at a time, in order, on a worker thread.

    `offer(item)` returns True when the item waits for its step, False when `limit` items already
    wait (it is counted as refused). `step(item)` runs on the worker; an exception from it counts
    the item as failed (the step function reports why). The worker ends when the queue is empty
    and starts again with the next click, so an idle run holds no thread.
    """

    def __init__(self, step: Callable[[T], None], limit: int) -> None:
        self._step = step
        self.limit = limit
        self._items: deque[T] = deque()
        self._cond = threading.Condition()
        self._working = False
        self._closed = False
        self._worker: threading.Thread | None = None
        self._clicks = self._stepped = self._failed = self._refused = 0

    def offer(self, item: T) -> bool:
        with self._cond:
            self._clicks += 1
            if self._closed or len(self._items) >= self.limit:
                self._refused += 1
                return False
            self._items.append(item)
            if not self._working:
                self._working = True
                self._worker = threading.Thread(target=self._drain, name="wmviz-live-steps", daemon=True)
                self._worker.start()
            return True

    def _drain(self) -> None:
        while True:
            with self._cond:
                if not self._items:
                    self._working = False
                    self._cond.notify_all()
                    return
                item = self._items.popleft()
            try:
                self._step(item)
                ok = True
            except Exception:
                ok = False
            with self._cond:
                if ok:
                    self._stepped += 1
                else:
                    self._failed += 1
                self._cond.notify_all()

    @property
    def busy(self) -> bool:
        """Whether a click is waiting or being stepped."""
        with self._cond:
            return self._working

    def counts(self) -> QueueCounts:
        with self._cond:
            waiting = self._clicks - self._stepped - self._failed - self._refused
            return QueueCounts(self._clicks, self._stepped, self._failed, self._refused, waiting)

    def close(self, timeout_s: float) -> bool:
        """Refuse every click from now on, drop the ones waiting (counted as refused), and wait up
        to `timeout_s` for the step in progress to end, so that the run can be stopped under no
        step and its worker thread is gone; False if the step outlasted the wait."""
        with self._cond:
            self._closed = True
            self._refused += len(self._items)
            self._items.clear()
            worker = self._worker
        if worker is not None:
            worker.join(timeout_s)
        return worker is None or not worker.is_alive()

    def wait_idle(self, timeout_s: float) -> bool:
        """Wait until every click taken so far is stepped; False if `timeout_s` passed first."""
        with self._cond:
            return self._cond.wait_for(lambda: not self._working, timeout_s)
