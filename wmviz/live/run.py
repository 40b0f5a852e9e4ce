"""One browser session's live run, and how a server starts, keeps and stops them.

The current trace, or an empty valve of N channels, runs as one long-running streaming query
(`wmviz.spark.live.LiveSession`); each Forward at the newest step, or each input clicked, is one
micro-batch. A click is queued at once and stepped on a worker thread (`StepQueue`), so the page
never waits for a micro-batch; the steps land in the run's `PageTimeline`, which the page takes in
on its own thread. A server runs at most `WMVIZ_MAX_LIVE` runs and stops one left alone for
`WMVIZ_LIVE_IDLE_S` seconds (`LiveSlots`); a stopped run's query, worker thread and folder are gone.
"""

from __future__ import annotations

import shutil
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from wmviz.core.errors import BudgetExceeded, Refused
from wmviz.core.scenario import ScenarioConfig, Trace, TraceRow
from wmviz.live.clicks import ClickLog
from wmviz.live.folders import new_work, server_root, sweep_stale
from wmviz.spark.live_limits import LiveSlots, StepQueue, idle_s, max_live, queue_limit
from wmviz.timeline.memory import MemoryTimeline
from wmviz.trace.errors import TraceValidationError

if TYPE_CHECKING:
    from wmviz.spark.live import LiveSession
    from wmviz.spark.live_query import LiveSpec

STOP_WAIT_S = 30.0
"""How long stopping a run waits for the micro-batch in progress before it stops the query anyway."""


class PageTimeline(MemoryTimeline):
    """A live run's timeline that takes a step's tables from any thread but shows them only once
    the page's thread calls `take_in`: a page never reads it while a step half-lands."""

    def __init__(self, timeline: MemoryTimeline) -> None:
        super().__init__(timeline.meta)
        self._landed: list[dict[str, pa.Table]] = []
        self._landing = threading.Lock()
        self.newest_instance: str | None = None
        """The instance of the newest step taken in: the one live mode follows after a click."""

    def add(self, tables: dict[str, pa.Table]) -> None:
        with self._landing:
            self._landed.append(tables)

    def take_in(self) -> None:
        """Show the steps that landed since the last call (on the page's thread)."""
        with self._landing:
            landed, self._landed = self._landed, []
        for tables in landed:
            super().add(tables)
            steps = tables.get("steps")
            if steps is not None and steps.num_rows:
                self.newest_instance = steps.column("instance")[-1].as_py()


@dataclass(frozen=True)
class Click:
    """What one click asks for: the trace's next row (`kind` None) or an input on a channel."""

    kind: str | None = None
    channel: int | None = None
    cells: dict[str, Any] = field(default_factory=dict)


@dataclass
class LiveRun:
    """One browser session's live query and where it stands in the trace it replays."""

    session: LiveSession
    work: Path
    """The folder this run's query keeps its step files and checkpoint in (made for it; removed
    when it stops)."""
    title: str
    source: Trace | None
    """The trace whose rows Forward feeds (None: an empty valve, driven only by injected inputs)."""
    fed: int = 0
    """The source trace's rows stepped so far."""
    error: str | None = None
    """Why the newest click's step failed (None once one succeeds)."""
    follow: bool = False
    """A click is stepping: the page shows the newest step when it lands."""
    clicks: StepQueue[Click] = field(init=False)
    """The clicks waiting for their micro-batch, stepped in order on a worker thread."""
    click_logs: dict[str, ClickLog] = field(default_factory=dict)
    """Per input panel, the browser's click numbers taken so far (`wmviz.live.clicks`)."""
    timeline: PageTimeline = field(init=False)
    """What the page draws: the session's steps, taken in on the page's thread."""

    def __post_init__(self) -> None:
        self.clicks = StepQueue(self._run_click, queue_limit())
        # Steps land on the queue's worker thread while the page may be reading the timeline:
        # they wait beside it until the page's own thread takes them in (`PageTimeline.take_in`).
        self.timeline = PageTimeline(self.session.timeline)
        self.session.timeline = self.timeline

    @property
    def steps(self) -> int:
        """The steps the query has run (some may not be taken in yet)."""
        return len(self.session.history)

    @property
    def shown(self) -> int:
        """The steps the page's timeline has taken in (a step may have landed after them)."""
        return self.timeline.meta.steps

    def next_row(self) -> TraceRow | None:
        """The source trace's next row (None when it is used up or there is none)."""
        if self.source is None or self.fed >= len(self.source.rows):
            return None
        return self.source.rows[self.fed]

    def offer(self, click: Click) -> None:
        """Queue a click for its micro-batch at once (or count it as refused when the queue is
        full); the page follows the newest step while one is queued."""
        if self.clicks.offer(click):
            self.follow = True

    def feed_next(self) -> None:
        """A Forward at the newest step: the source trace's next row, queued."""
        if self.next_row() is not None:
            self.offer(Click())

    def _run_click(self, click: Click) -> None:
        """One click's micro-batch (on the queue's worker): the trace's next row, or a typed input."""
        try:
            if click.kind is None:
                row = self.next_row()
                if row is None:
                    return
                self.session.step(row)
                self.fed += 1
            else:
                self.session.inject(click.kind, channel=click.channel, **click.cells)
            self.error = None
        except TraceValidationError as exc:
            self.error = str(exc)
            raise
        except Exception as exc:  # the queue counts it as failed; the page says why
            self.error = f"{type(exc).__name__}: {exc}"
            raise

    def stop(self) -> None:
        """Refuse further clicks, let the step in progress end, stop the query, remove the folder."""
        self.clicks.close(STOP_WAIT_S)
        self.session.close()
        shutil.rmtree(self.work, ignore_errors=True)


def new_registry(base: Path) -> LiveSlots[LiveRun]:
    """A server's live runs; made once per server, when it also clears what stopped servers left
    under `base` and starts the timer that stops a run nobody has looked at for
    `WMVIZ_LIVE_IDLE_S` seconds."""
    sweep_stale(base)
    slots: LiveSlots[LiveRun] = LiveSlots(
        max_live(), idle_s(), LiveRun.stop, busy=lambda run: run.clicks.busy
    )
    slots.start_timer(min(60.0, max(1.0, slots.idle_limit_s / 10)))
    return slots


class LiveBusy(BudgetExceeded):
    """Every live slot of this server is taken (`WMVIZ_MAX_LIVE`)."""

    def __init__(self, most: int) -> None:
        super().__init__(
            f"{most} live sessions already run or are starting on this server (WMVIZ_MAX_LIVE); "
            "stop one or try again later."
        )


class LiveStartFailed(Refused):
    """The query could not start (Spark did not, or the query failed): its slot and folder are
    given back."""


def live_spec(config: ScenarioConfig, channels: dict[tuple[str, str], int], source: Trace | None) -> LiveSpec:
    """What the query for `config` steps: its channels, whether records reach an operator, and the
    channels a source trace drives by hand."""
    from wmviz.core.simulate import manual_channels
    from wmviz.spark.live_query import LiveSpec

    return LiveSpec(
        config,
        config.profile,
        channels,
        with_input=len({name for _, name in channels}) > 1,
        operator=not config.valve_only,
        manual_channels=manual_channels(source) if source is not None else {},
    )


def start_run(
    slots: LiveSlots[LiveRun],
    base: Path,
    title: str,
    source: Trace | None,
    open_session: Callable[[Path], LiveSession],
) -> str:
    """Start a live run in a slot of `slots` (its folder made under this server's folder in
    `base`, its query opened there by `open_session`) and return the slot's key. `LiveBusy` when
    every slot is taken; `LiveStartFailed` when the query could not start. The slot is counted from
    the start on, and a start cut short (failed, or the page's script stopped) gives back its
    slot and its folder."""
    key = slots.reserve()
    if key is None:
        raise LiveBusy(slots.most)
    work = new_work(server_root(base))
    try:
        session = open_session(work)
    except Exception as exc:
        slots.release(key)
        shutil.rmtree(work, ignore_errors=True)
        raise LiveStartFailed(f"{type(exc).__name__}: {exc}") from exc
    except BaseException:  # the script was stopped mid-start: the slot must not stay taken
        slots.release(key)
        shutil.rmtree(work, ignore_errors=True)
        raise
    slots.fill(key, LiveRun(session, work, title, source))
    return key
