"""Compare mode and what-if (Streamlit): the same trace under another profile, or the original
against an edited copy, side by side with one step control and the first divergence one click away.

A what-if travels as its edit: the compare target `whatif:<token>` (`wmviz.analysis.whatif_token.encode_edit`)
is in the link and in the bundle, and any server that has the original trace re-applies it, so a
fresh browser shows what the sender saw. `trace:<digest>` compares with another stored upload.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import streamlit as st

from wmviz.analysis.compare import first_divergence, step_map
from wmviz.analysis.whatif_edit import Change, Delete, Edit, Insert, describe_edit
from wmviz.analysis.whatif_token import decode_edit, encode_edit
from wmviz.core.scenario import Kind
from wmviz.core.types import Profile, Status
from wmviz.store import uploads
from wmviz.store.incidents import Incident
from wmviz.store.runs import RunRequest, cache_root, enforce_budget, file_digest, whatifs_root
from wmviz.timeline.cursor import InstanceCursor
from wmviz.timeline.engine import Engine
from wmviz.trace.errors import TraceValidationError
from wmviz.trace.timecells import parse_time_ms
from wmviz.ui import loading, panels, state, step_cache
from wmviz.view.plain import literal
from wmviz.view.timefmt import TimeFormat, editable_time
from wmviz.view.url import TRACE_PREFIX, WHATIF_PREFIX

NOTHING = "nothing"


@dataclass(frozen=True)
class Side:
    """One run of a comparison: its label, its cursor and the step it shows."""

    label: str
    cursor: InstanceCursor
    profile: Profile
    step: int | None  # None: this run has no such step (a deleted row)


@dataclass(frozen=True)
class OtherRun:
    """Compare mode's second run: what it is called, its profile, its cursor, and the edit when it
    is a what-if of this trace (to keep both sides on the same row across an insert or delete)."""

    label: str
    profile: Profile
    cursor: InstanceCursor
    edit: Edit | None = None


def _jump(step: int) -> None:
    st.session_state[state.STEP] = step


def divergence_banner(left: InstanceCursor, right: InstanceCursor, step: int, t: TimeFormat) -> None:
    """Where what the two runs send on first differs (their output), then where their state first
    differs when that is earlier, each with a button that goes there."""
    output = first_divergence(left, right, output=True, t=t)
    state = first_divergence(left, right, t=t)
    if state is None:
        st.success("The two runs are identical at every step.")
        return
    if output is None:
        st.info(
            f"The outputs never differ. The state first differs at step {state.step}: "
            f"{literal(', '.join(state.what))}.  \n"
            f"Left: {literal(state.left)}  \nRight: {literal(state.right)}",
            icon=":material/compare_arrows:",
        )
    else:
        st.warning(
            f"The outputs first differ at step {output.step}: {literal(', '.join(output.what))}.  \n"
            f"Left: {literal(output.left)}  \nRight: {literal(output.right)}",
            icon=":material/compare_arrows:",
        )
    buttons = st.columns(2)
    if output is not None:
        buttons[0].button(
            f"Go to the first output divergence (step {output.step})",
            on_click=_jump,
            args=(output.step,),
            disabled=step == output.step,
            shortcut="D",
            key="goto_divergence",
        )
    if output is None or state.step < output.step:
        buttons[1].button(
            f"Go to the first state divergence (step {state.step})",
            on_click=_jump,
            args=(state.step,),
            disabled=step == state.step,
            key="goto_state_divergence",
            help=f"What differs there: {literal(', '.join(state.what))}",
        )


def side_panels(side: Side, column_key: str, t: TimeFormat) -> None:
    """One run at its step: output, narration, channels, the chart, the operator's panels."""
    with st.container(key=f"{column_key}_side"):
        _side(side, column_key, t)


def _side(side: Side, column_key: str, t: TimeFormat) -> None:
    st.text(side.label)  # a what-if's description quotes trace values: user text
    if side.step is None:
        st.info("This step's row does not exist in this run (the what-if deleted it).")
        return
    cursor, step = side.cursor, side.step
    view = step_cache.side_view(cursor, step, side.profile, t)
    st.caption(view.caption)
    panels.output_panel(view.cards)
    panels.narration_panel(list(view.narration), replace(t, short=True), view.rules, key=f"{column_key}_")
    panels.channel_tables(view.channels, key=f"{column_key}_")
    panels.watermark_chart(view.chart, key=f"{column_key}_chart")
    if view.operator is not None:
        moment = (str(cursor.timeline.path or ""), cursor.instance, step)
        panels.operator_panel(view.operator, moment, key=f"{column_key}_")


# --- what-if -----------------------------------------------------------------------------------------


def whatif_form(cursor: InstanceCursor, step: int, t: TimeFormat):
    """The edit a person asks for at this step, as plain values (None until submitted); its times
    as the page shows them (`t`), when they read back as the same time.

    The form's widgets are drawn only while its expander is open: closed, as it nearly always is,
    a step sends the browser the expander's label alone. Opening or closing it reruns the step
    area (the fragment it sits in), which then draws the form or leaves it out."""
    # The label names the step, and a label is part of an expander's identity: each step's is a new
    # widget, which would start closed. Handing the key's value on keeps the form as the person
    # left it: open while they step, once opened, until they close it (or an edit is made).
    st.session_state[state.WHATIF_OPEN] = st.session_state.get(state.WHATIF_OPEN, False)
    expander = st.expander(f"What if… (at step {step})", key=state.WHATIF_OPEN, on_change="rerun")
    if not expander.open:
        return None
    with expander, st.form("whatif"):
        return _whatif_fields(cursor.row(step), step, t)


def _whatif_fields(record: dict, step: int, t: TimeFormat):
    """The form's widgets for this step's row; the values asked for once it is submitted."""
    action = st.radio(
        "Edit",
        ["change this input", "delete this input", "insert an input before it"],
        horizontal=True,
        key="whatif_action",
    )
    # A split row's cells (split, split_event) are not in this form: edit those in the file.
    kinds = [k.value for k in Kind if k not in (Kind.PROCTIME, Kind.SPLIT)]
    kind = st.selectbox(
        "Kind",
        kinds,
        index=kinds.index(record["kind"]) if record["kind"] in kinds else 0,
        key=f"whatif_kind_{step}",  # per step: the defaults follow the row shown
    )
    # Two rows of two: in four columns an ISO time was cut to `2026-11-2` at 1440 px (issue 30).
    cols = [*st.columns(2), *st.columns(2)]
    channel = cols[0].number_input(
        "Channel",
        min_value=0,
        value=int(record.get("channel") or 0),
        step=1,
        key=f"whatif_channel_{step}",
    )
    status = cols[1].selectbox("Status", [s.value for s in Status], index=1, key="whatif_status")
    watermark = cols[2].text_input(
        "Watermark (ms or ISO time)",
        value=editable_time(record.get("watermark_ms"), t),
        key=f"whatif_watermark_{step}",
    )
    event = cols[3].text_input(
        "Event time (ms or ISO time)",
        value=editable_time(record.get("event_ms"), t),
        key=f"whatif_event_{step}",
    )
    if not st.form_submit_button("Re-simulate with this edit", key="whatif_submit"):
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


def edit_from(ask: dict, instance: str, step: int) -> Edit:
    """The edit the form asks for (ValueError naming what is wrong)."""
    kind = Kind(ask["kind"])
    watermark = ask["watermark_ms"] if kind is Kind.WATERMARK else None
    event = ask["event_ms"] if kind is Kind.RECORD else None
    values = {
        "channel": ask["channel"],
        "watermark_ms": _time(watermark, "watermark", sentinels=True),
        "status": Status(ask["status"]) if kind is Kind.STATUS else None,
        "event_ms": _time(event, "event time", sentinels=False),
        "key": ask["key"] if kind is Kind.RECORD else None,
    }
    if ask["action"].startswith("delete"):
        return Delete(instance, step)
    if ask["action"].startswith("insert"):
        return Insert(instance, step, kind, ask["input"], **values)
    return Change(instance, step, {"kind": kind, **values})


def _time(text: str | None, what: str, *, sentinels: bool) -> int | None:
    if text is None:
        return None
    try:
        return parse_time_ms(text, sentinels=sentinels)  # a number, an ISO time copied from the page
    except ValueError as exc:
        raise ValueError(f"{what}: {exc}") from None


def make_whatif(incident, instance: str, step: int, ask: dict) -> str | None:
    """Check the person's edit against the trace and return its compare target (or None, after
    showing why the edit cannot be made)."""
    try:
        edit = edit_from(ask, instance, step)
        target = WHATIF_PREFIX + encode_edit(edit)
        resolve_whatif(incident, target)
    except (ValueError, TraceValidationError) as exc:
        st.error(f"That edit cannot be simulated: {literal(exc)}")
        return None
    return target


def _build_whatif(trace_path: str, config_path: str | None, token: str):
    """Apply an edit to a trace and store the edited trace, once, under whatifs/ (bounded with the
    timelines, least recently used first out)."""
    from wmviz.analysis.whatif_trace import apply_edit, whatif_file  # the readers: only for a what-if
    from wmviz.trace.readers import read_trace

    edit = decode_edit(token)
    trace = read_trace(Path(trace_path), Path(config_path) if config_path else None)
    name, data = whatif_file(apply_edit(trace, edit))
    stored = uploads.store_upload(name, data, None, root=whatifs_root())
    uploads.touch(stored)
    enforce_budget(cache_root(), keep=stored.trace_path.parent)
    return stored, describe_edit(edit, trace), edit


@st.cache_resource(show_spinner=False, max_entries=64)
def _whatif_made(trace_path: str, config_path: str | None, digest: str, token: str):
    """The stored what-if's digest, its description and the edit, once per (trace bytes, edit)."""
    del digest  # part of the cache key only: a changed trace file is a new what-if
    stored, text, edit = _build_whatif(trace_path, config_path, token)
    return stored.digest, text, edit


def resolve_whatif(incident, target: str):
    """The stored edited trace, its description and the edit, for a `whatif:<token>` target; one
    evicted or damaged since is made again from the edit."""
    config = str(incident.config_path) if incident.config_path else None
    token = target.removeprefix(WHATIF_PREFIX)
    digest, text, edit = _whatif_made(
        str(incident.trace_path), config, file_digest(incident.trace_path), token
    )
    try:
        stored = uploads.find_upload(digest, whatifs_root())
    except uploads.DamagedUpload:
        stored = None
    if stored is None:
        stored, text, edit = _build_whatif(str(incident.trace_path), config, token)
    uploads.touch(stored)
    return stored, text, edit


# --- choosing and loading the other run ------------------------------------------------------------------


def compare_choice(where, profile: Profile, titles: dict[str, str]) -> str | None:
    """What to compare the run with: another profile, a what-if, another upload, or nothing."""
    options = [NOTHING, *(p.value for p in Profile if p is not profile), *titles]
    if st.session_state.get(state.COMPARE) not in options:
        st.session_state[state.COMPARE] = NOTHING
    labels = {NOTHING: "nothing (one run)", **{p.value: f"profile {p.value}" for p in Profile}, **titles}
    chosen = where.selectbox(
        "Compare with", options, format_func=lambda o: labels.get(o, o), key=state.COMPARE
    )
    return None if chosen == NOTHING else chosen


def compare_titles(incident) -> dict[str, str]:
    """The what-ifs of this session and of the link, and a stored trace a link compares with;
    applies a what-if just made (and closes the form that made it). A link's what-if that cannot
    be applied is said, not dropped."""
    pending = st.session_state.pop(state.PENDING_COMPARE, None)
    if pending is not None:
        st.session_state[state.COMPARE] = pending
        st.session_state[state.WHATIF_OPEN] = False  # the edit is made: the form closes on the comparison
    known = st.session_state.setdefault(state.WHATIFS, {})
    linked = st.session_state.get(state.COMPARE) or ""
    if linked.startswith(WHATIF_PREFIX) and linked not in known:
        try:
            _, text, _ = resolve_whatif(incident, linked)
            known[linked] = text
        except (ValueError, TraceValidationError) as exc:
            st.error(f"The link's what-if cannot be applied to this trace: {literal(exc)}")
    titles = {target: f"what-if: {text}" for target, text in known.items()}
    if linked.startswith(TRACE_PREFIX) and linked not in titles:
        upload = _compared_upload(linked)
        if upload is not None:
            titles[linked] = f"trace {upload.name}"
    return titles


def _compared_upload(target: str):
    """The stored upload a `trace:<digest>` target names; None when it is not here or damaged."""
    try:
        return uploads.find_upload(target.removeprefix(TRACE_PREFIX))
    except uploads.DamagedUpload:
        return None


def other_run(
    target: str | None, incident: Incident, profile: Profile, engine: Engine, instance: str
) -> OtherRun | None:
    """Compare mode's second run, or None in single mode."""
    if target is None:
        return None
    edit = None
    if target.startswith(WHATIF_PREFIX):
        stored, text, edit = resolve_whatif(incident, target)
        request = RunRequest(stored.trace_path, stored.config_path, profile, engine)
        label, other_profile = f"what-if: {text}", profile
    elif target.startswith(TRACE_PREFIX):
        upload = _compared_upload(target)
        if upload is None:
            st.error("The trace this view compares with is not on this server, or is damaged.")
            return None
        request = RunRequest(upload.trace_path, upload.config_path, profile, engine)
        label, other_profile = f"trace {upload.name}", profile
    else:
        other_profile = Profile.parse(target)
        request = RunRequest(incident.trace_path, incident.config_path, other_profile, engine)
        label = f"profile {target}"
    timeline = loading.load_timeline(request, label)
    if instance not in timeline.meta.instances:
        st.error(f"instance {literal(instance)} is not in the other run")
        return None
    cursor = loading.instance_cursor(str(timeline.path), instance)
    return OtherRun(label, timeline.meta.profile, cursor, edit)


def mapped_step(other: OtherRun, step: int, instance: str, count: int) -> int | None:
    """The other run's step for `step`: the same, or shifted by a what-if's insert or delete."""
    if other.edit is None:
        return step
    return step_map(other.edit, count, instance=instance)(step)


def compare_panels(
    cursor: InstanceCursor, profile: Profile, other: OtherRun, step: int, t: TimeFormat
) -> dict | None:
    """The two runs side by side at the same step (shifted across a what-if's insert or delete);
    returns a further what-if edit asked for on this run, if any."""
    divergence_banner(cursor, other.cursor, step, t)
    mapped = mapped_step(other, step, cursor.instance, cursor.count)
    if mapped is not None and mapped >= other.cursor.count:
        mapped = None
    left, right = st.columns(2)
    with left:
        side_panels(Side(f"this run: profile {profile.value}", cursor, profile, step), "a", t)
    with right:
        side_panels(Side(other.label, other.cursor, other.profile, mapped), "b", t)
    return whatif_form(cursor, step, t)
