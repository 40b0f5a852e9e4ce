"""Controls (Streamlit): each returns plain values or moves `st.session_state.step`.

The step is kept in `st.session_state["step"]` (the slider's key), so every control moves the same
number: buttons and keyboard shortcuts through callbacks that run before the page is drawn again.
"""

from __future__ import annotations

import streamlit as st

from wmviz.core.types import Profile
from wmviz.timeline.cursor import EVENT_KINDS, InstanceCursor
from wmviz.ui.url import ENGINES, ViewParams

STEP = "step"
PLAYING = "playing"
SPEEDS = {"1 step/s": 1.0, "2 steps/s": 0.5, "5 steps/s": 0.2, "10 steps/s": 0.1}
SCENARIO_PROFILE = "the scenario's own"


def adopt_url(view: ViewParams) -> None:
    """Once per browser session: take the widgets' first values from the link that opened the page."""
    if st.session_state.get("_adopted"):
        return
    st.session_state["_adopted"] = True
    st.session_state["scenario"] = view.scenario
    st.session_state["profile"] = view.profile.value if view.profile else SCENARIO_PROFILE
    st.session_state["engine"] = view.engine
    st.session_state[STEP] = view.step
    if view.instance is not None:
        st.session_state["instance"] = view.instance
    if view.compare is not None:
        st.session_state["compare"] = view.compare
    for note in view.notes:
        st.toast(note)


def sidebar_choices(where, titles: dict[str, str]) -> tuple[str, Profile | None, str]:
    """The incident, profile and engine chosen in the sidebar container `where`."""
    if st.session_state.get("scenario") not in titles:
        st.session_state["scenario"] = next(iter(titles))
    scenario = where.selectbox("Incident", list(titles), format_func=lambda s: titles[s], key="scenario")
    names = [SCENARIO_PROFILE, *(p.value for p in Profile)]
    profile_name = where.selectbox("Profile", names, key="profile")
    engine = where.radio(
        "Engine",
        ENGINES,
        horizontal=True,
        key="engine",
        help="spark: the local SparkSession (the same job runs on a cluster); local: in-process, quicker",
    )
    profile = None if profile_name == SCENARIO_PROFILE else Profile.parse(profile_name)
    return scenario, profile, engine


def reset_step_on_new_context(context: tuple) -> None:
    """A new incident or instance starts at step 0; a new profile or engine keeps the step."""
    if st.session_state.get("_context") not in (None, context):
        st.session_state[STEP] = 0
    st.session_state["_context"] = context


def instance_choice(instances: list[str]) -> str:
    """The operator instance (subtask) to look at (a link's unknown instance falls back to the first)."""
    if st.session_state.get("instance") not in instances:
        st.session_state["instance"] = instances[0]
    if len(instances) == 1:
        return instances[0]
    return st.sidebar.selectbox("Instance (subtask)", instances, key="instance")


def _go(step: int) -> None:
    st.session_state[STEP] = step


def _toggle_play() -> None:
    st.session_state[PLAYING] = not st.session_state.get(PLAYING, False)


def step_controls(cursor: InstanceCursor) -> int:
    """First / back / play / forward / last, a slider, and jumps to the next event of a kind.

    Keyboard: Left / Right step, Home / End jump to the ends, Space plays or pauses, Shift+Left /
    Shift+Right jump to the previous / next event of the chosen kind.
    """
    last = cursor.count - 1
    step = min(max(int(st.session_state.get(STEP, 0)), 0), last)
    st.session_state[STEP] = step
    buttons = st.columns(5, vertical_alignment="bottom")
    buttons[0].button("⏮ First", on_click=_go, args=(0,), shortcut="Home", disabled=step == 0, key="first")
    buttons[1].button(
        "◀ Back", on_click=_go, args=(step - 1,), shortcut="Left", disabled=step == 0, key="back"
    )
    playing = st.session_state.get(PLAYING, False)
    buttons[2].button("⏸ Pause" if playing else "▶ Play", on_click=_toggle_play, shortcut="Space", key="play")
    buttons[3].button(
        "Forward ▶", on_click=_go, args=(step + 1,), shortcut="Right", disabled=step == last, key="fwd"
    )
    buttons[4].button("Last ⏭", on_click=_go, args=(last,), shortcut="End", disabled=step == last, key="last")
    jumps = st.columns([2, 3, 3, 3], vertical_alignment="bottom")
    jumps[0].selectbox("Play speed", list(SPEEDS), index=1, key="speed")
    kind = jumps[1].selectbox("Jump to", EVENT_KINDS, key="jump_kind", help=_jump_help(cursor))
    jumps = jumps[1:]
    previous, following = cursor.previous_event(kind, step), cursor.next_event(kind, step)
    jumps[1].button(
        f"⇤ previous {kind}",
        on_click=_go,
        args=(previous if previous is not None else step,),
        disabled=previous is None,
        shortcut="Shift+Left",
        key="prev_event",
    )
    jumps[2].button(
        f"next {kind} ⇥",
        on_click=_go,
        args=(following if following is not None else step,),
        disabled=following is None,
        shortcut="Shift+Right",
        key="next_event",
    )
    if last > 0:
        st.slider("Step", 0, last, key=STEP)
    return int(st.session_state[STEP])


def _jump_help(cursor: InstanceCursor) -> str:
    counts = ", ".join(f"{kind}: {len(steps)}" for kind, steps in cursor.events.items())
    return f"Steps with each kind of event in this instance: {counts}"


def autoplay(last: int) -> None:
    """While playing, advance one step per tick and redraw the page; stop at the last step."""
    if not st.session_state.get(PLAYING, False):
        return

    @st.fragment(run_every=SPEEDS[st.session_state.get("speed", "2 steps/s")])
    def tick() -> None:
        step = int(st.session_state.get(STEP, 0))
        if step >= last:
            st.session_state[PLAYING] = False
            st.rerun(scope="app")  # redraw the Play button: the page still shows Pause
        if st.session_state.get("_ticked", False):
            st.session_state[STEP] = step + 1
            st.session_state["_ticked"] = False
            st.rerun(scope="app")
        st.session_state["_ticked"] = True

    tick()
