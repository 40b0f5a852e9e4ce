"""Drive it live (Streamlit): the valve stepped inside a Spark Structured Streaming query.

The current trace, or an empty valve of N channels, runs as one long-running streaming query
(`wmviz.spark.live.LiveSession`); each Forward at the newest step, or each input injected by
clicking a channel's button, is one micro-batch. The query's workers record every step with the
batch recorder into the session's `MemoryTimeline`, and the page draws it with the same panels as
a recorded trace. The inputs so far can be kept as a trace (an upload), so a live session can be
shared, compared and exported like any other.

Live queries hold a JVM thread and Python workers: at most `WMVIZ_MAX_LIVE` run or start at once,
and one left alone for `WMVIZ_LIVE_IDLE_S` seconds is stopped by a timer
(`wmviz.spark.live_limits`). A click is queued at once and stepped on a worker thread, so the page
never holds a micro-batch; the input buttons count their clicks in the browser (`live_clicks`),
so the header accounts for every click made: stepped, waiting or refused.
"""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import streamlit as st

from wmviz.core.scenario import Kind, ScenarioConfig, Trace
from wmviz.core.types import MAX_MS, MIN_MS
from wmviz.spark.live_limits import LiveSlots, StepQueue, idle_s, max_live, queue_limit
from wmviz.store import uploads
from wmviz.store.runs import cache_root
from wmviz.timeline.memory import MemoryTimeline
from wmviz.timeline.meta import TimelineMeta
from wmviz.trace.errors import TraceValidationError
from wmviz.trace.timecells import parse_time_ms
from wmviz.trace.writers import write_trace_bytes
from wmviz.ui import loading, state
from wmviz.ui.live_clicks import Button, ButtonRow, ClickLog, click_panel, take_clicks
from wmviz.view.plain import literal
from wmviz.view.timefmt import TimeFormat, is_epoch

UTC = TimeFormat("utc")


@dataclass
class LiveRun:
    """One browser session's live query and where it stands in the trace it replays."""

    session: Any  # wmviz.spark.live.LiveSession (imported only when live mode is used)
    work: Path
    """The folder this run's query keeps its step files and checkpoint in (made for it; removed
    when it stops)."""
    title: str
    source: Trace | None
    """The trace whose rows Forward feeds (None: an empty valve, driven only by injected inputs)."""
    fed: int = 0
    error: str | None = None
    follow: bool = False
    """A click is stepping: the page shows the newest step when it lands."""
    clicks: StepQueue[Click] = field(init=False)
    """The clicks waiting for their micro-batch, stepped in order on a worker thread."""
    click_logs: dict[str, ClickLog] = field(default_factory=dict)
    """Per input panel, the browser's click numbers taken so far (`live_clicks`)."""

    def __post_init__(self) -> None:
        self.clicks = StepQueue(self._run_click, queue_limit())
        # Steps now land on the queue's worker thread while the page may be reading the timeline:
        # they wait beside it until the page's own thread takes them in (`current`).
        old = self.session.timeline
        self.session.timeline = _PageTimeline(old.meta)

    @property
    def steps(self) -> int:
        return len(self.session.history)

    @property
    def shown(self) -> int:
        """The steps the page's timeline has taken in (a step may have landed after them)."""
        return self.session.timeline.meta.steps

    def next_row(self) -> Any:
        """The source trace's next row (None when it is used up or there is none)."""
        if self.source is None or self.fed >= len(self.source.rows):
            return None
        return self.source.rows[self.fed]

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
        except Exception as exc:
            self.error = f"{type(exc).__name__}: {exc}"
            raise


class _PageTimeline(MemoryTimeline):
    """A live session's timeline that takes a step's tables from any thread but shows them only
    once the page's thread calls `take_in`: a page never reads it while a step half-lands."""

    def __init__(self, meta: TimelineMeta) -> None:
        super().__init__(meta)
        self._landed: list[dict[str, Any]] = []
        self._landing = threading.Lock()
        self.newest_instance: str | None = None
        """The instance of the newest step taken in: the one live mode follows after a click."""

    def add(self, tables: dict[str, Any]) -> None:
        with self._landing:
            self._landed.append(tables)

    def take_in(self) -> None:
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


def _stop_run(run: LiveRun) -> None:
    run.session.close()
    shutil.rmtree(run.work, ignore_errors=True)


@st.cache_resource(show_spinner=False)
def registry() -> LiveSlots[LiveRun]:
    """The server's live runs; made once, when it also clears what stopped servers left, and starts
    the timer that stops a run nobody has looked at for `WMVIZ_LIVE_IDLE_S` seconds."""
    _sweep_stale(_live_root().parent)
    slots: LiveSlots[LiveRun] = LiveSlots(max_live(), idle_s(), _stop_run, busy=lambda run: run.clicks.busy)
    slots.start_timer(min(60.0, max(1.0, slots.idle_limit_s / 10)))
    return slots


def current() -> LiveRun | None:
    """This browser session's live run, if it has one still running (marked as used now)."""
    key = st.session_state.get(state.LIVE)
    run = registry().get(key) if key else None
    if run is None and key:
        st.session_state.pop(state.LIVE, None)
    if run is not None:
        run.session.timeline.take_in()
    return run


# ---- starting and stopping ---------------------------------------------------------------------


def start_controls(incident: Any) -> None:
    """The sidebar's "Drive it live" box: this incident's trace, or an empty valve of N channels."""
    with st.sidebar.expander("Drive it live (Spark streaming)", expanded=False):
        st.caption(
            "Runs the valve inside a Spark Structured Streaming query: each step is one micro-batch, "
            "and the panels show what the query's workers recorded."
        )
        if st.button("Drive this trace live", key="live_start", icon=":material/play_circle:"):
            trace = incident.trace()  # read only now: a page step must not pay for it
            _start(trace.config, trace.valve_channels, incident.title, trace)
        channels = st.number_input("or an empty valve with channels", 1, 64, 3, key="live_channels")
        if st.button("Drive an empty valve live", key="live_empty"):
            config = ScenarioConfig(
                name=f"an empty valve of {channels} channels", channels={"0": int(channels)}
            )
            _start(config, {("0", "0"): int(channels)}, f"An empty valve of {channels} channels", None)


def _start(
    config: ScenarioConfig, channels: dict[tuple[str, str], int], title: str, source: Trace | None
) -> None:
    from wmviz.core.simulate import manual_channels
    from wmviz.spark.live import LiveSession, LiveSpec

    slots = registry()
    key = slots.reserve()  # counted from now: starts in progress take their slots too
    if key is None:
        st.error(
            f"{slots.most} live sessions already run or are starting on this server (WMVIZ_MAX_LIVE); "
            "stop one or try again later."
        )
        return
    with st.spinner("Waiting for the SparkSession and starting the streaming query…"):
        work = Path(tempfile.mkdtemp(prefix="live-", dir=_live_root()))
        try:
            spark = loading.spark_service().session(timeout=300)
            operator = not config.valve_only
            spec = LiveSpec(
                config,
                config.profile,
                channels,
                with_input=len({name for _, name in channels}) > 1,
                operator=operator,
                manual_channels=manual_channels(source) if source is not None else {},
            )
            session = LiveSession.start(spark, spec, work)
        except Exception as exc:  # Spark did not start, or the query could not: say so, keep the page
            slots.release(key)
            shutil.rmtree(work, ignore_errors=True)
            st.error(f"Live mode could not start: {type(exc).__name__}: {literal(exc)}")
            return
        except BaseException:  # the script was stopped mid-start: the slot must not stay taken
            slots.release(key)
            shutil.rmtree(work, ignore_errors=True)
            raise
    slots.fill(key, LiveRun(session, work, title, source))
    st.session_state[state.LIVE] = key
    st.rerun()


def _live_root() -> Path:
    """Where this server's live queries keep their files: in memory (/dev/shm) where the system has
    it, since a micro-batch writes its offsets, its commit and its state there; else beside the
    cache. One folder per server process, so a server never touches another's."""
    shm = Path("/dev/shm")
    base = shm / "wmviz-live" if shm.is_dir() and os.access(shm, os.W_OK) else cache_root().parent / "live"
    root = base / str(os.getpid())
    root.mkdir(parents=True, exist_ok=True)
    return root


def _sweep_stale(base: Path) -> None:
    """Remove what servers that are gone left behind: folders named by a process id not running."""
    for folder in base.glob("[0-9]*"):
        if not folder.name.isdigit() or int(folder.name) == os.getpid():
            continue
        try:
            os.kill(int(folder.name), 0)
        except ProcessLookupError:
            shutil.rmtree(folder, ignore_errors=True)
        except PermissionError:
            pass  # another user's running process


def stop() -> None:
    key = st.session_state.pop(state.LIVE, None)
    if key:
        registry().stop(key)


FOLLOW_INSTANCE = "live_follow_instance"
"""The instance a landed step belongs to, which the next full run of the page shows
(`followed_instance`)."""


def followed_instance(instances: list[str]) -> None:
    """Before the instance choice is drawn: show the instance the newest step went to, when a
    click's step landed on another one than the page showed."""
    newest = st.session_state.pop(FOLLOW_INSTANCE, None)
    if newest in instances:
        st.session_state[state.INSTANCE] = newest


# ---- stepping ------------------------------------------------------------------------------------


def feed_next(run: LiveRun) -> None:
    """A Forward at the newest step: the source trace's next row, queued for its micro-batch."""
    if run.next_row() is not None:
        _offer(run, Click())


def inject(run: LiveRun, kind: str, channel: int, **cells: Any) -> None:
    """An input typed by a click, queued for its micro-batch (the validator's row rules apply)."""
    _offer(run, Click(kind, channel, cells))


def _offer(run: LiveRun, click: Click) -> None:
    """Take the click at once (the page's script is never held by a micro-batch); the page shows
    what became of every click."""
    if run.clicks.offer(click):
        run.follow = True


def _take_clicks(run: LiveRun) -> None:
    """Queue (or refuse) every click the browser counted on the input panels since the last run."""
    for key, log in run.click_logs.items():
        for click in take_clicks(key, log):
            _offer(run, click)


# ---- the live panel ------------------------------------------------------------------------------


def live_header(run: LiveRun) -> None:
    """What runs, the micro-batch of the newest step and how long it took, and what became of the
    clicks: stepped, waiting or refused."""
    session = run.session
    _take_clicks(run)  # the clicks that came with this run, queued first
    busy = run.clicks.busy  # then: when idle here, every step taken in below has fully landed
    landed = run.steps
    session.timeline.take_in()
    if run.follow:  # a click's step landed (or is landing): show the newest step, in its instance
        newest = session.timeline.newest_instance
        shown_instance = st.session_state.get(state.INSTANCE)
        if newest is not None and shown_instance is not None and newest != shown_instance:
            # The instance choice sits outside this fragment: switched before it is drawn.
            st.session_state[FOLLOW_INSTANCE] = newest
            st.rerun(scope="app")
        counts = session.timeline.meta.instances
        st.session_state[state.STEP] = max(0, counts.get(newest, run.shown) - 1)
        run.follow = busy
    st.title(f"Live: {literal(run.title)}", anchor=False)
    steps = run.shown  # what the page draws: a step landing meanwhile is said on the next run
    latencies = session.latencies_ms[:steps]
    parts = [f"Spark Structured Streaming query · {steps} step(s)"]
    if steps and len(session.batch_ids) >= steps:  # a step's batch id is filed just after its tables
        parts.append(f"newest step: micro-batch #{session.batch_ids[steps - 1]} in {latencies[-1]:,.0f} ms")
    if len(latencies) > 2:
        parts.append(f"median {statistics.median(latencies[1:]):,.0f} ms after the first")
    if run.source is not None:
        parts.append(f"{len(run.source.rows) - run.fed} trace row(s) left to feed (Forward ▶ or →)")
    counts = run.clicks.counts()
    if counts.clicks:
        parts.append(counts.text())
    st.caption(" · ".join(parts))
    if counts.refused:
        st.warning(
            f"{counts.refused} click(s) were refused: at most {run.clicks.limit} wait for their step "
            "(WMVIZ_LIVE_QUEUE). Click again once the waiting ones have run."
        )
    if run.error:
        st.error(literal(run.error))
    if busy:
        _watch_steps(run, landed, time.monotonic())


REDRAW_S = 2.0
"""While clicks keep coming, the page is redrawn at most this often: a redraw costs the server a
whole step's drawing, and the input panel counts the clicks that arrive meanwhile in the browser
(`live_clicks`), so none is lost to it."""


WATCH_S = 0.1
"""While clicks wait, the watcher looks this often whether their steps have landed. A look is a tiny
fragment run that never waits: the script thread is not held, and a landed step is on screen at most
WATCH_S after the micro-batch (at 0.5 s, a click reached the screen at ~610 ms, at 0.1 s ~450)."""


@st.fragment(run_every=WATCH_S)
def _watch_steps(run: LiveRun, drawn: int, drawn_at: float) -> None:
    """While clicks wait, watch for the steps that land: redraw the page as soon as the queue is
    empty, or every REDRAW_S seconds while it is not. The first run is drawn with the page; a click
    that comes meanwhile is counted in the browser and taken by the next run."""
    if not run.clicks.busy or (run.steps != drawn and time.monotonic() - drawn_at > REDRAW_S):
        st.rerun()


def inject_panel(run: LiveRun, instance: str, latest_output: int) -> None:
    """A row of buttons per channel: a watermark, IDLE, ACTIVE, FINISHED (and a record when an
    operator or generator is configured); each click is one micro-batch."""
    session = run.session
    config: ScenarioConfig = session.config
    inputs = {name: n for (inst, name), n in session.valve_channels.items() if inst == instance}
    records = not config.valve_only
    with st.container(border=True, key="live_inject"):
        left, right = st.columns([2, 5])
        # A new widget per step, so the suggested value follows the output. Text, read by the
        # trace's time parser: any long, MIN / MAX or an ISO time (a number field stops at 2^53).
        text = left.text_input(
            "value to send (ms, MIN / MAX or ISO)",
            value=value_text(_next_value(latest_output)),
            max_chars=40,
            key=f"live_value_{run.shown}",
        )
        value, problem = _typed_value(text)
        if problem is not None:
            left.error(literal(problem))
        right.caption(
            "Click a channel's input: the watermark (or a record's event time) is the value on the left. "
            "Each click runs one micro-batch of the live query."
        )
        rows = [
            _channel_row(name, channel, len(inputs) == 1, instance, value, records)
            for name, count in inputs.items()
            for channel in range(count)
        ]
        key = f"live_inputs_{run.work.name}_{instance}"
        click_panel(key, rows, run.click_logs.setdefault(key, ClickLog()))


def _channel_row(
    name: str, channel: int, alone: bool, instance: str, value: int | None, records: bool
) -> ButtonRow:
    """A channel's buttons: a watermark, IDLE, ACTIVE, FINISHED (and a record)."""
    cells = {"input": name, "instance": instance}
    buttons = [
        Button(
            f"live_w_{name}_{channel}",
            "watermark",
            Click("watermark", channel, {**cells, "watermark_ms": value}),
            disabled=value is None,
        )
    ]
    buttons += [
        Button(
            f"live_{status}_{name}_{channel}", status, Click("status", channel, {**cells, "status": status})
        )
        for status in ("IDLE", "ACTIVE", "FINISHED")
    ]
    if records:
        buttons.append(
            Button(
                f"live_r_{name}_{channel}",
                "record",
                Click(Kind.RECORD.value, channel, {**cells, "event_ms": value, "key": "k"}),
                disabled=value is None or value in (MIN_MS, MAX_MS),
            )
        )
    label = f"ch {channel}" if alone else f"{name} ch {channel}"
    return ButtonRow(f"live_ch_{name}_{channel}", label, buttons)  # drawn as text, not markdown


def _next_value(output: int) -> int:
    """A sensible next watermark: a step past the output (1 s past an epoch time), never past
    Long.MAX_VALUE."""
    if output in (MIN_MS, MAX_MS):
        return 10
    return min(output + (1000 if abs(output) > 10**11 else 10), MAX_MS)


def value_text(ms: int) -> str:
    """The value box's suggestion as a person reads it: an epoch time as its UTC time (which the box
    reads back exactly), a small number as itself (issue 30: it was prefilled `1795255199000`)."""
    return UTC(ms).replace(" ", "T") if is_epoch(ms) else str(ms)


def _typed_value(text: str) -> tuple[int | None, str | None]:
    """The value typed in the inject panel, read as a trace's watermark cell is; or why not."""
    try:
        return parse_time_ms(text.strip(), sentinels=True), None
    except ValueError as exc:
        return None, f"Not a time: {exc}"


def keep_as_trace(run: LiveRun) -> None:
    """Store the inputs so far as an upload: a link opens them like any trace."""
    if not run.session.history:
        return
    if st.button("Keep the inputs so far as a trace", key="live_keep", icon=":material/save:"):
        data = write_trace_bytes(run.session.history, "jsonl", run.session.config)
        stored = uploads.store_upload("live-session.jsonl", data, None)
        st.success(f"Kept as an upload: open ?trace={stored.digest} to share, compare or export it.")
        st.code(f"?trace={stored.digest}", language=None)
