"""Drive it live (Streamlit): the valve stepped inside a Spark Structured Streaming query.

The current trace, or an empty valve of N channels, runs as one long-running streaming query
(`wmviz.spark.live.LiveSession`); each Forward at the newest step, or each input injected by
clicking a channel's button, is one micro-batch. The query's workers record every step with the
batch recorder into the session's `MemoryTimeline`, and the page draws it with the same panels as
a recorded trace. The inputs so far can be kept as a trace (an upload), so a live session can be
shared, compared and exported like any other.

Live queries hold a JVM thread and Python workers: at most `WMVIZ_MAX_LIVE` run at once, and one
left alone for `WMVIZ_LIVE_IDLE_S` seconds is stopped.
"""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import streamlit as st

from wmviz.core.scenario import Kind, ScenarioConfig, Trace
from wmviz.core.types import MAX_MS, MIN_MS
from wmviz.store import uploads
from wmviz.store.runs import cache_root
from wmviz.trace.errors import TraceValidationError
from wmviz.trace.writers import write_trace_bytes
from wmviz.ui import loading, state
from wmviz.view.plain import literal

MAX_LIVE = int(os.environ.get("WMVIZ_MAX_LIVE", "4"))
IDLE_S = float(os.environ.get("WMVIZ_LIVE_IDLE_S", "900"))


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
    last_used: float = field(default_factory=time.monotonic)

    @property
    def steps(self) -> int:
        return len(self.session.history)

    def next_row(self) -> Any:
        """The source trace's next row (None when it is used up or there is none)."""
        if self.source is None or self.fed >= len(self.source.rows):
            return None
        return self.source.rows[self.fed]


class _Registry:
    """Every live query of the server, so they stay few and none outlives its use."""

    def __init__(self) -> None:
        self.runs: dict[str, LiveRun] = {}
        self.lock = threading.Lock()

    def add(self, key: str, run: LiveRun) -> None:
        with self.lock:
            self.runs[key] = run

    def stop(self, key: str) -> None:
        with self.lock:
            run = self.runs.pop(key, None)
        if run is not None:
            run.session.close()
            shutil.rmtree(run.work, ignore_errors=True)

    def reap(self) -> None:
        """Stop the queries nobody has used for IDLE_S seconds."""
        now = time.monotonic()
        for key, run in list(self.runs.items()):
            if now - run.last_used > IDLE_S:
                self.stop(key)

    def full(self) -> bool:
        self.reap()
        return len(self.runs) >= MAX_LIVE


@st.cache_resource(show_spinner=False)
def registry() -> _Registry:
    """The server's live runs; made once, when it also clears what stopped servers left."""
    _sweep_stale(_live_root().parent)
    return _Registry()


def current() -> LiveRun | None:
    """This browser session's live run, if it has one still running."""
    key = st.session_state.get(state.LIVE)
    run = registry().runs.get(key) if key else None
    if run is None and key:
        st.session_state.pop(state.LIVE, None)
    if run is not None:
        run.last_used = time.monotonic()
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

    if registry().full():
        st.error(f"{MAX_LIVE} live sessions already run on this server; stop one or try again later.")
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
            shutil.rmtree(work, ignore_errors=True)
            st.error(f"Live mode could not start: {type(exc).__name__}: {literal(exc)}")
            return
    key = uuid.uuid4().hex
    registry().add(key, LiveRun(session, work, title, source))
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


# ---- stepping ------------------------------------------------------------------------------------


def feed_next(run: LiveRun) -> None:
    """One micro-batch: the source trace's next row (a Forward at the newest step)."""
    row = run.next_row()
    if row is None:
        return
    try:
        run.session.step(row)
        run.fed += 1
        run.error = None
    except Exception as exc:
        run.error = f"{type(exc).__name__}: {exc}"
    st.session_state[state.STEP] = max(0, run.steps - 1)


def inject(run: LiveRun, kind: str, channel: int, **cells: Any) -> None:
    """One micro-batch: an input typed by a click (the validator's row rules apply to it)."""
    try:
        run.session.inject(kind, channel=channel, **cells)
        run.error = None
    except TraceValidationError as exc:
        run.error = str(exc)
    except Exception as exc:
        run.error = f"{type(exc).__name__}: {exc}"
    st.session_state[state.STEP] = max(0, run.steps - 1)


# ---- the live panel ------------------------------------------------------------------------------


def live_header(run: LiveRun) -> None:
    """What runs, the micro-batch of the newest step and how long it took."""
    session = run.session
    st.title(f"Live: {literal(run.title)}", anchor=False)
    latencies = session.latencies_ms
    parts = [f"Spark Structured Streaming query · {run.steps} step(s)"]
    if session.batch_ids:
        parts.append(f"newest step: micro-batch #{session.batch_ids[-1]} in {latencies[-1]:,.0f} ms")
    if len(latencies) > 2:
        parts.append(f"median {statistics.median(latencies[1:]):,.0f} ms after the first")
    if run.source is not None:
        parts.append(f"{len(run.source.rows) - run.fed} trace row(s) left to feed (Forward ▶ or →)")
    st.caption(" · ".join(parts))
    if run.error:
        st.error(literal(run.error))


def inject_panel(run: LiveRun, instance: str, latest_output: int) -> None:
    """A row of buttons per channel: a watermark, IDLE, ACTIVE, FINISHED (and a record when an
    operator or generator is configured); each click is one micro-batch."""
    session = run.session
    config: ScenarioConfig = session.config
    inputs = {name: n for (inst, name), n in session.valve_channels.items() if inst == instance}
    records = not config.valve_only
    with st.container(border=True, key="live_inject"):
        left, right = st.columns([2, 5])
        default = _next_value(latest_output)
        # A new widget per step, so the suggested value follows the output.
        value = left.number_input("value to send (ms)", value=default, step=1, key=f"live_value_{run.steps}")
        right.caption(
            "Click a channel's input: the watermark (or a record's event time) is the value on the left. "
            "Each click runs one micro-batch of the live query."
        )
        for name, count in inputs.items():
            for channel in range(count):
                label = f"ch {channel}" if len(inputs) == 1 else f"{name} ch {channel}"
                row = st.container(horizontal=True, gap="small", key=f"live_ch_{name}_{channel}")
                row.markdown(f"**{literal(label)}**")
                cells = {"input": name, "instance": instance}
                row.button(
                    "watermark",
                    key=f"live_w_{name}_{channel}",
                    on_click=inject,
                    args=(run, "watermark", channel),
                    kwargs={**cells, "watermark_ms": int(value)},
                )
                for status in ("IDLE", "ACTIVE", "FINISHED"):
                    row.button(
                        status,
                        key=f"live_{status}_{name}_{channel}",
                        on_click=inject,
                        args=(run, "status", channel),
                        kwargs={**cells, "status": status},
                    )
                if records:
                    row.button(
                        "record",
                        key=f"live_r_{name}_{channel}",
                        on_click=inject,
                        args=(run, Kind.RECORD.value, channel),
                        kwargs={**cells, "event_ms": int(value), "key": "k"},
                    )


def _next_value(output: int) -> int:
    """A sensible next watermark: a step past the output (1 s past an epoch time)."""
    if output in (MIN_MS, MAX_MS):
        return 10
    return output + (1000 if abs(output) > 10**11 else 10)


def keep_as_trace(run: LiveRun) -> None:
    """Store the inputs so far as an upload: a link opens them like any trace."""
    if not run.session.history:
        return
    if st.button("Keep the inputs so far as a trace", key="live_keep", icon=":material/save:"):
        data = write_trace_bytes(run.session.history, "jsonl", run.session.config)
        stored = uploads.store_upload("live-session.jsonl", data, None)
        st.success(f"Kept as an upload: open ?trace={stored.digest} to share, compare or export it.")
        st.code(f"?trace={stored.digest}", language=None)
