"""Controls (Streamlit): each returns plain values or moves the step on screen.

The step is kept in the session under `state.STEP` (the slider's key), so every control moves the same
number: buttons and keyboard shortcuts through callbacks that run before the page is drawn again.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from zoneinfo import available_timezones

import streamlit as st

from wmviz.core.types import Profile
from wmviz.timeline.cursor import EVENT_KINDS, InstanceCursor
from wmviz.timeline.engine import Engine
from wmviz.ui import state
from wmviz.view.model import step_for_order
from wmviz.view.plain import literal
from wmviz.view.timefmt import MODE_TITLES, MODES
from wmviz.view.url import ENGINES, ViewParams

ENGINE_TITLES = {Engine.AUTO: "auto (size decides)", Engine.SPARK: "Spark", Engine.LOCAL: "in-process"}
SPEEDS = {"1 step/s": 1.0, "2 steps/s": 0.5, "5 steps/s": 0.2, "10 steps/s": 0.1}  # seconds a step
TICK_S = 0.25  # autoplay's timer ticks at least this far apart: each tick is a round trip to the server
CATCH_UP_S = 5.0  # autoplay makes up at most this much lost time (a hidden tab's timer is slowed)
SCENARIO_PROFILE = "the scenario's own"
# UTC first, then the IANA region zones (`Europe/Berlin`), as Flink's web UI offers them.
ZONES = [
    "UTC",
    *sorted(z for z in available_timezones() if "/" in z and not z.startswith(("Etc/", "SystemV/"))),
]


def adopt_url(view: ViewParams) -> None:
    """Once per browser session: take the widgets' first values from the link that opened the page."""
    if st.session_state.get(state.ADOPTED):
        return
    st.session_state[state.ADOPTED] = True
    st.session_state[state.SCENARIO] = view.scenario
    st.session_state[state.PROFILE] = view.profile.value if view.profile else SCENARIO_PROFILE
    st.session_state[state.ENGINE] = view.engine
    st.session_state[state.STEP] = view.step
    if view.instance is not None:
        st.session_state[state.INSTANCE] = view.instance
    if view.compare is not None:
        st.session_state[state.COMPARE] = view.compare
    st.session_state[state.TIME_MODE] = view.time
    st.session_state[state.TIME_ZONE] = view.zone
    for note in view.notes:
        # A note quotes the link (user text). Long: on a busy server the toast's code arrives
        # seconds after the page (15-37 s at load 14-24), and the short toast then went by unseen.
        st.toast(literal(note), duration="long")


def sidebar_choices(where, titles: dict[str, str]) -> tuple[str, Profile | None, Engine]:
    """The incident, profile and engine chosen in the sidebar container `where`."""
    if st.session_state.get(state.SCENARIO) not in titles:
        st.session_state[state.SCENARIO] = next(iter(titles))
    scenario = where.selectbox("Incident", list(titles), format_func=lambda s: titles[s], key=state.SCENARIO)
    names = [SCENARIO_PROFILE, *(p.value for p in Profile)]
    profile_name = where.selectbox("Profile", names, key=state.PROFILE)
    engine = where.selectbox(
        "Engine",
        ENGINES,
        format_func=ENGINE_TITLES.get,
        key=state.ENGINE,
        help="auto: in this process for traces that finish in well under a second, on Spark for large "
        "ones (and live mode always runs on Spark). Spark is the server's SparkSession (the same job "
        "runs on a cluster with WMVIZ_SPARK_MASTER).",
    )
    profile = None if profile_name == SCENARIO_PROFILE else Profile.parse(profile_name)
    return scenario, profile, Engine.parse(engine)


def time_choice(where) -> tuple[str, str]:
    """How times read (date-times, relative, raw ms) and the time zone of date-times."""
    if st.session_state.get(state.TIME_MODE) not in MODES:
        st.session_state[state.TIME_MODE] = "utc"
    if st.session_state.get(state.TIME_ZONE) not in ZONES:
        st.session_state[state.TIME_ZONE] = "UTC"
    mode = where.radio(
        "Times",
        MODES,
        format_func=MODE_TITLES.get,
        key=state.TIME_MODE,
        help="Epoch-millisecond times as ISO date-times (small demo values stay plain numbers), as "
        "offsets from the trace's first time, or as the raw numbers. The raw number is always one "
        "hover or one column away.",
    )
    zone = where.selectbox(
        "Time zone",
        ZONES,
        key=state.TIME_ZONE,
        disabled=mode != "utc",
        help="The zone date-times are shown in",
    )
    return mode, zone


def follow_context(scenario: str, instance: str, orders) -> None:
    """A new incident starts at step 0; a new instance keeps the moment: the step whose arrival
    order is the last at or before the order shown before (the instances interleave in one trace);
    a new profile or engine keeps the step."""
    previous = st.session_state.get(state.CONTEXT)
    if previous not in (None, (scenario, instance)):
        moment = st.session_state.get(state.MOMENT)
        if previous[0] == scenario and moment is not None:
            st.session_state[state.STEP] = step_for_order(orders, moment)
        else:
            st.session_state[state.STEP] = 0
    st.session_state[state.CONTEXT] = (scenario, instance)


def remember_moment(order: int) -> None:
    """The arrival order of the step on screen, which a change of instance keeps."""
    st.session_state[state.MOMENT] = int(order)


def instance_choice(instances: list[str]) -> str:
    """The operator instance (subtask) to look at (a link's unknown instance falls back to the first)."""
    if st.session_state.get(state.INSTANCE) not in instances:
        st.session_state[state.INSTANCE] = instances[0]
    if len(instances) == 1:
        return instances[0]
    return st.sidebar.selectbox("Instance (subtask)", instances, key=state.INSTANCE)


def _go(step: int) -> None:
    st.session_state[state.STEP] = step
    st.session_state.pop(state.PLAY_STEP, None)  # a person moved the step: autoplay goes on from there


def _set_playing(playing: bool) -> None:
    """What the button said when it was pressed: Play plays, Pause pauses. Not a toggle: a click
    whose run is cut short by an autoplay tick's rerun can have its callback run twice, and a
    toggle then undid the pause (seen on a busy machine: Pause pressed at step 4, the play ran on
    to the last step); nor one button whose arguments change with its label (`step_controls`)."""
    st.session_state[state.PLAYING] = playing
    st.session_state.pop(state.PLAY_DUE, None)  # a new play starts its clock from its first tick
    st.session_state.pop(state.PLAY_STEP, None)


def step_controls(cursor: InstanceCursor, advance: Callable[[], None] | None = None) -> int:
    """First / back / play / forward / last, a slider, and jumps to the next event of a kind.

    Keyboard: Left / Right step, Home / End jump to the ends, Space plays or pauses, Shift+Left /
    Shift+Right jump to the previous / next event of the chosen kind (`wmviz.ui.keys`). `advance`
    (live mode) is what Forward does at the newest step: make a new one.
    """
    last = cursor.count - 1
    if state.PLAY_STEP in st.session_state:
        # Autoplay's move, taken here, before the slider is drawn (a widget's value cannot be set
        # after); a rerun the browser asked for may carry the slider's older value: never back.
        st.session_state[state.STEP] = max(
            int(st.session_state.get(state.STEP, 0)), st.session_state[state.PLAY_STEP]
        )
        if not st.session_state.get(state.PLAYING, False):
            # The run that redraws a play ended on its last step: it too may carry the slider's
            # older value (seen under load: the play ended on 27 and the page showed 13), so the
            # move is taken once more here, then forgotten: later moves are a person's.
            st.session_state.pop(state.PLAY_STEP)
    step = min(max(int(st.session_state.get(state.STEP, 0)), 0), last)
    st.session_state[state.STEP] = step
    # Two rows sized to their content: the transport buttons and the slider, then the jumps.
    transport = st.container(horizontal=True, vertical_alignment="center", gap="small", key="transport")
    transport.button("|◀ First", on_click=_go, args=(0,), shortcut="Home", disabled=step == 0, key="first")
    transport.button(
        "◀ Back", on_click=_go, args=(step - 1,), shortcut="Left", disabled=step == 0, key="back"
    )
    # Two buttons, never drawn together: a click whose run is cut short has its callback run again
    # with the arguments its widget was registered with last, and one button whose arguments
    # flipped with its label then undid the pause it had just made (measured under load: paused
    # at step 5, the play went on to the last step). Pause's callback can only pause.
    if st.session_state.get(state.PLAYING, False):
        transport.button("⏸ Pause", on_click=_set_playing, args=(False,), shortcut="Space", key="pause")
    else:
        transport.button("▶ Play", on_click=_set_playing, args=(True,), shortcut="Space", key="play")
    if advance is not None and step == last:
        transport.button("Forward ▶ (live)", on_click=advance, shortcut="Right", key="fwd")
    else:
        transport.button(
            "Forward ▶", on_click=_go, args=(step + 1,), shortcut="Right", disabled=step == last, key="fwd"
        )
    transport.button("Last ▶|", on_click=_go, args=(last,), shortcut="End", disabled=step == last, key="last")
    if last > 0:
        transport.slider("Step", 0, last, key=state.STEP, label_visibility="collapsed", width="stretch")
    jumps = st.container(horizontal=True, vertical_alignment="center", gap="small", key="jumps")
    kind = jumps.selectbox(
        "Jump to",
        EVENT_KINDS,
        key="jump_kind",
        help=_jump_help(cursor),
        label_visibility="collapsed",
        width=190,
    )
    previous, following = cursor.previous_event(kind, step), cursor.next_event(kind, step)
    jumps.button(
        f"⇤ previous {kind}",
        on_click=_go,
        args=(previous if previous is not None else step,),
        disabled=previous is None,
        shortcut="Shift+Left",
        key="prev_event",
    )
    jumps.button(
        f"next {kind} ⇥",
        on_click=_go,
        args=(following if following is not None else step,),
        disabled=following is None,
        shortcut="Shift+Right",
        key="next_event",
    )
    jumps.selectbox(
        "Play speed", list(SPEEDS), index=1, key=state.SPEED, label_visibility="collapsed", width=130
    )
    return int(st.session_state[state.STEP])


def _jump_help(cursor: InstanceCursor) -> str:
    counts = ", ".join(f"{kind}: {len(steps)}" for kind, steps in cursor.events.items())
    return f"Steps with each kind of event in this instance: {counts}"


def autoplay(last: int) -> None:
    """While playing, move the step at the chosen speed and redraw the page; stop at the last step.

    The speed is held by the clock, not by counting ticks: a redraw of the page takes time of its
    own (0.2-1 s on a busy server), so one step per timer tick ran at a fraction of the speed asked
    for (2 steps/s played at 0.6). The timer ticks twice a step (at most 4 times a second); each
    tick moves the step by the steps now due (`due_steps`), so a slow redraw is made up by the next
    move: at 10 steps/s, or on a busy server, a move is of several steps."""
    if not st.session_state.get(state.PLAYING, False):
        return
    seconds = SPEEDS[st.session_state.get(state.SPEED, "2 steps/s")]

    @st.fragment(run_every=max(seconds / 2, TICK_S))
    def tick() -> None:
        # A tick is a rerun the browser asks for, carrying the slider's value as the browser last
        # drew it: after a move not yet on screen that value is older than the step, and it took
        # the step back (measured: 23 -> 20 -> 22 at 2 steps/s). Autoplay goes on from where it
        # moved last, unless a person moved the step since (`_go`); it never sets the slider's
        # value itself (not allowed once the slider is drawn in the same run).
        if not st.session_state.get(state.PLAYING, False):
            return  # a tick the browser's timer sent before the pause reached it: the pause wins
        shown = int(st.session_state.get(state.STEP, 0))
        step = max(shown, int(st.session_state.get(state.PLAY_STEP, shown)))
        if step >= last:
            st.session_state[state.PLAYING] = False
            st.rerun(scope="app")  # redraw the Play button: the page still shows Pause
        moves, due = due_steps(time.monotonic(), st.session_state.get(state.PLAY_DUE), seconds)
        st.session_state[state.PLAY_DUE] = due
        if moves:
            st.session_state[state.PLAY_STEP] = min(step + moves, last)  # `step_controls` takes it
            st.rerun(scope="app")

    tick()


def due_steps(now: float, due: float | None, seconds: float) -> tuple[int, float]:
    """(steps to move now, when the next one is due) for a step every `seconds`: none before the
    first one is due (a play's clock starts at its first tick); lost time past `CATCH_UP_S` (a
    hidden tab, a stalled server) is forgotten rather than played all at once."""
    if due is None:
        return 0, now + seconds
    if now < due:
        return 0, due
    late = min(now - due, CATCH_UP_S)
    moves = 1 + int(late / seconds)
    return moves, now - late + moves * seconds
