"""Drive it live (Streamlit): the valve stepped inside a Spark Structured Streaming query.

The current trace, or an empty valve of N channels, runs as one long-running streaming query
(`wmviz.spark.live.LiveSession`); each Forward at the newest step, or each input injected by
clicking a channel's button, is one micro-batch. The query's workers record every step with the
batch recorder into the session's `MemoryTimeline`, and the page draws it with the same panels as
a recorded trace. The inputs so far can be kept as a trace (an upload), so a live session can be
shared, compared and exported like any other.

This module only draws and hands over: the run's lifecycle (its query, the clicks waiting for their
micro-batch on a worker thread, its folder, the server's limits and the sweep of stale folders)
lives below the page in `wmviz.live`, without Streamlit. The input buttons count their clicks in
the browser (`live_clicks`), so the header accounts for every click made: stepped, waiting or
refused.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

import streamlit as st

from wmviz.core.scenario import Kind, ScenarioConfig, Trace
from wmviz.core.types import MAX_MS, MIN_MS
from wmviz.live.folders import live_base
from wmviz.live.run import Click, LiveBusy, LiveRun, LiveStartFailed, live_spec, new_registry, start_run
from wmviz.spark.live_limits import LiveSlots
from wmviz.store import uploads
from wmviz.store.incidents import Incident
from wmviz.store.runs import cache_root
from wmviz.trace.timecells import parse_time_ms
from wmviz.ui import loading, state
from wmviz.ui.live_clicks import Button, ButtonRow, ClickLog, click_panel, panel_key, take_clicks
from wmviz.view.plain import literal
from wmviz.view.timefmt import TimeFormat, is_epoch

UTC = TimeFormat("utc")


def _base() -> Path:
    """Where every server's live folder sits (`wmviz.live.folders`): in memory where the system
    has it, else beside the run cache."""
    return live_base(cache_root().parent / "live")


@st.cache_resource(show_spinner=False)
def registry() -> LiveSlots[LiveRun]:
    """The server's live runs (`wmviz.live.run.new_registry`), made once per server."""
    return new_registry(_base())


def current() -> LiveRun | None:
    """This browser session's live run, if it has one still running (marked as used now), with
    the steps that landed since the last page run taken in."""
    key = st.session_state.get(state.LIVE)
    run = registry().get(key) if key else None
    if run is None and key:
        st.session_state.pop(state.LIVE, None)
    if run is not None:
        run.timeline.take_in()
    return run


# ---- starting and stopping ---------------------------------------------------------------------


def start_controls(incident: Incident) -> None:
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
    """Start a live run for this browser session (`wmviz.live.run.start_run`), or say why not."""
    from wmviz.spark.live import LiveSession

    def open_session(work: Path) -> LiveSession:
        spark = loading.spark_service().session_for_live(timeout=300)
        return LiveSession.start(spark, live_spec(config, channels, source), work)

    try:
        with st.spinner("Waiting for the SparkSession and starting the streaming query…"):
            key = start_run(registry(), _base(), title, source, open_session)
    except LiveBusy as exc:
        st.error(str(exc))
        return
    except LiveStartFailed as exc:  # Spark did not start, or the query could not: say so, keep the page
        st.error(f"Live mode could not start: {literal(exc)}")
        return
    st.session_state[state.LIVE] = key
    st.rerun()


def stop() -> None:
    """Stop this browser session's live run (its query, its worker thread and its folder)."""
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
    run.feed_next()


def _take_clicks(run: LiveRun) -> None:
    """Queue (or refuse) every click the browser counted on the input panels since the last run."""
    for key, log in run.click_logs.items():
        for click in take_clicks(key, log):
            run.offer(click)


# ---- the live panel ------------------------------------------------------------------------------


def live_header(run: LiveRun) -> None:
    """What runs, the micro-batch of the newest step and how long it took, and what became of the
    clicks: stepped, waiting or refused."""
    session = run.session
    _take_clicks(run)  # the clicks that came with this run, queued first
    busy = run.clicks.busy  # then: when idle here, every step taken in below has fully landed
    landed = run.steps
    run.timeline.take_in()
    if run.follow:  # a click's step landed (or is landing): show the newest step, in its instance
        newest = run.timeline.newest_instance
        shown_instance = st.session_state.get(state.INSTANCE)
        if newest is not None and shown_instance is not None and newest != shown_instance:
            # The instance choice sits outside this fragment: switched before it is drawn.
            st.session_state[FOLLOW_INSTANCE] = newest
            st.rerun(scope="app")
        newest_steps = run.timeline.meta.instances.get(newest, run.shown) if newest is not None else run.shown
        st.session_state[state.STEP] = max(0, newest_steps - 1)
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
        key = panel_key(run.work.name, instance)
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
        from wmviz.trace.writers import write_trace_bytes  # when kept: the first page never is

        data = write_trace_bytes(run.session.history, "jsonl", run.session.config)
        stored = uploads.store_upload("live-session.jsonl", data, None)
        st.success(f"Kept as an upload: open ?trace={stored.digest} to share, compare or export it.")
        st.code(f"?trace={stored.digest}", language=None)
