"""Compare mode and what-if (Streamlit): the same trace under another profile, or the original
against an edited copy, side by side with one step control and the first divergence one click away.
"""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from wmviz.compare import first_divergence, step_map
from wmviz.core.scenario import Kind, Trace
from wmviz.core.types import Profile, Status
from wmviz.timeline.cursor import InstanceCursor
from wmviz.trace.errors import TraceValidationError
from wmviz.ui import loading, model, panels, uploads
from wmviz.ui.controls import STEP
from wmviz.ui.figures import heap_figure
from wmviz.ui.runs import RunRequest
from wmviz.whatif import Change, Delete, Insert, apply_edit, describe_edit, write_whatif

NOTHING = "nothing"
TRACE_PREFIX = "trace:"


@dataclass(frozen=True)
class Side:
    """One run of a comparison: its label, its cursor and the step it shows."""

    label: str
    cursor: InstanceCursor
    profile: Profile
    step: int | None  # None: this run has no such step (a deleted row)


def _jump(step: int) -> None:
    st.session_state[STEP] = step


def divergence_banner(left: InstanceCursor, right: InstanceCursor, step: int) -> None:
    """Where the two runs first differ, and a button that goes there."""
    found = first_divergence(left, right)
    if found is None:
        st.success("The two runs are identical at every step.")
        return
    st.warning(
        f"The runs first diverge at step {found.step}: {', '.join(found.what)}.  \n"
        f"Left: {found.left}  \nRight: {found.right}",
        icon="🔀",
    )
    st.button(
        f"Go to the first divergence (step {found.step})",
        on_click=_jump,
        args=(found.step,),
        disabled=step == found.step,
        shortcut="D",
        key="goto_divergence",
    )


def side_panels(side: Side, column_key: str) -> None:
    """One run's output, narration, channel table and heap at its step."""
    st.markdown(f"**{side.label}**")
    if side.step is None:
        st.info("This step's row does not exist in this run (it was deleted).")
        return
    result, pipeline, _ = side.cursor.explain(side.step)
    views = model.valve_views(side.cursor, pipeline, side.step, side.profile)
    for view in views:
        st.metric(
            "output watermark" if len(views) == 1 else f"input {view.input}: valve output",
            model.watermark_text(view.output_wm),
        )
        st.caption(f"status {view.output_status} · step {side.step}")
        st.dataframe(view.channels, hide_index=True, width="stretch", key=f"{column_key}_ch_{view.input}")
        st.plotly_chart(
            heap_figure(view.heap), width="stretch", key=f"{column_key}_heap_{view.input}",
            config={"displayModeBar": False},
        )  # fmt: skip
    panels.narration_panel(result)


def whatif_form(cursor: InstanceCursor, step: int):
    """The edit a person asks for at this step, as plain values (None until submitted)."""
    record = cursor.row(step)
    with st.expander(f"What if… (at step {step})", expanded=False), st.form("whatif"):
        action = st.radio(
            "Edit",
            ["change this input", "delete this input", "insert an input before it"],
            horizontal=True,
            key="whatif_action",
        )
        kinds = [k.value for k in Kind if k is not Kind.PROCTIME]
        kind = st.selectbox(
            "Kind",
            kinds,
            index=kinds.index(record["kind"]) if record["kind"] in kinds else 0,
            key=f"whatif_kind_{step}",  # per step: the defaults follow the row shown
        )
        cols = st.columns(4)
        channel = cols[0].number_input(
            "Channel",
            min_value=0,
            value=int(record.get("channel") or 0),
            step=1,
            key=f"whatif_channel_{step}",
        )
        status = cols[1].selectbox("Status", [s.value for s in Status], index=1, key="whatif_status")
        watermark = cols[2].text_input(
            "Watermark (ms)", value=str(record.get("watermark_ms") or ""), key=f"whatif_watermark_{step}"
        )
        event = cols[3].text_input(
            "Event time (ms)", value=str(record.get("event_ms") or ""), key=f"whatif_event_{step}"
        )
        submitted = st.form_submit_button("Re-simulate with this edit", key="whatif_submit")
    if not submitted:
        return None
    return {
        "action": action,
        "kind": kind,
        "input": record["input"],
        "channel": int(channel),
        "status": status,
        "watermark_ms": watermark.strip() or None,
        "event_ms": event.strip() or None,
        "key": record.get("key"),
    }


def compare_choice(where, profile: Profile, titles: dict[str, str]) -> str | None:
    """What to compare the run with: another profile, a what-if of this session, or nothing."""
    options = [NOTHING, *(p.value for p in Profile if p is not profile), *titles]
    if st.session_state.get("compare") not in options:
        st.session_state["compare"] = NOTHING
    labels = {NOTHING: "nothing (one run)", **{p.value: f"profile {p.value}" for p in Profile}, **titles}
    chosen = where.selectbox("Compare with", options, format_func=lambda o: labels.get(o, o), key="compare")
    return None if chosen == NOTHING else chosen


def whatif_titles() -> dict[str, str]:
    """The what-if runs made in this session (and the one a link names), by compare target."""
    return {
        f"{TRACE_PREFIX}{d}": f"what-if: {text}"
        for d, (text, _) in st.session_state.get("_whatifs", {}).items()
    }


def make_whatif(trace: Trace, instance: str, step: int, ask: dict) -> str | None:
    """Apply the person's edit, store the edited trace, and return its compare target (or None,
    after showing why the edit cannot be made)."""
    kind = Kind(ask["kind"])
    try:
        values = {
            "channel": ask["channel"],
            "watermark_ms": int(ask["watermark_ms"])
            if ask["watermark_ms"] and kind is Kind.WATERMARK
            else None,
            "status": Status(ask["status"]) if kind is Kind.STATUS else None,
            "event_ms": int(ask["event_ms"]) if ask["event_ms"] and kind is Kind.RECORD else None,
            "key": ask["key"] if kind is Kind.RECORD else None,
        }
        if ask["action"].startswith("delete"):
            edit = Delete(instance, step)
        elif ask["action"].startswith("insert"):
            edit = Insert(instance, step, kind, ask["input"], **values)
        else:
            edit = Change(instance, step, {"kind": kind, **values})
        edited = apply_edit(trace, edit)
    except (ValueError, TraceValidationError) as exc:
        st.error(f"That edit cannot be simulated: {exc}")
        return None
    path = write_whatif(edited, uploads.uploads_root() / "whatif")
    stored = uploads.store_upload(path.name, path.read_bytes(), None)
    st.session_state.setdefault("_whatifs", {})[stored.digest] = (describe_edit(edit, trace), edit)
    return f"{TRACE_PREFIX}{stored.digest}"


def mapped_step(target: str, step: int, instance: str, count: int) -> int | None:
    """The other run's step for `step`: the same, or shifted by a what-if's insert or delete."""
    known = st.session_state.get("_whatifs", {}).get(target.removeprefix(TRACE_PREFIX))
    if not target.startswith(TRACE_PREFIX) or known is None:
        return step
    return step_map(known[1], count, instance=instance)(step)


def compare_titles() -> dict[str, str]:
    """What-if runs of this session, plus a trace a link compares with; applies a what-if just made."""
    pending = st.session_state.pop("_pending_compare", None)
    if pending is not None:
        st.session_state["compare"] = pending
    titles = whatif_titles()
    linked = st.session_state.get("compare") or ""
    if linked.startswith(TRACE_PREFIX) and linked not in titles:
        upload = uploads.find_upload(linked.removeprefix(TRACE_PREFIX))
        if upload is not None:
            titles[linked] = f"trace {upload.name}"
    return titles


def other_run(target: str | None, incident, profile: Profile, engine: str, instance: str):
    """Compare mode's second run, as (label, profile, cursor), or None in single mode."""
    if target is None:
        return None
    if target.startswith(TRACE_PREFIX):
        upload = uploads.find_upload(target.removeprefix(TRACE_PREFIX))
        request = RunRequest(upload.trace_path, upload.config_path, profile, engine)
        label, other_profile = _label(target), profile
    else:
        other_profile = Profile.parse(target)
        request = RunRequest(incident.trace_path, incident.config_path, other_profile, engine)
        label = f"profile {target}"
    timeline = loading.load_timeline(request, label)
    if instance not in timeline.meta["instances"]:
        st.error(f"instance {instance} is not in the other run")
        return None
    return (
        label,
        Profile.parse(timeline.meta["profile"]),
        loading.instance_cursor(str(timeline.path), instance),
    )


def _label(target: str) -> str:
    return whatif_titles().get(target, target)


def compare_panels(cursor: InstanceCursor, profile: Profile, other, target: str, step: int) -> None:
    """The two runs side by side at the same step (shifted across a what-if's insert or delete)."""
    label, other_profile, other_cursor = other
    divergence_banner(cursor, other_cursor, step)
    mapped = mapped_step(target, step, cursor.instance, cursor.count)
    if mapped is not None and mapped >= other_cursor.count:
        mapped = None
    left, right = st.columns(2)
    with left:
        side_panels(Side(f"this run: profile {profile.value}", cursor, profile, step), "a")
    with right:
        side_panels(Side(label, other_cursor, other_profile, mapped), "b")
