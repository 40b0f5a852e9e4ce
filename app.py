"""wmviz in the browser: step through a multi-input operator's watermark valve, its heap, timers and
retractions, on a built-in incident. Read top to bottom: it is the page's table of contents."""

from __future__ import annotations

import os
from pathlib import Path

import streamlit as st

from wmviz.core.types import Profile
from wmviz.incidents import DEFAULT_INCIDENT, SAMPLES, story_sections
from wmviz.timeline.cursor import InstanceCursor
from wmviz.trace.errors import TraceValidationError
from wmviz.ui import bring, compare_view, controls, loading, panels, uploads
from wmviz.ui.model import chart_window, history_window, operator_watermark, valve_views
from wmviz.ui.runs import RunRequest
from wmviz.ui.url import UPLOAD_PREFIX, ViewParams, parse_view, view_query


def main() -> None:
    """Render the page for the view in the URL and the sidebar."""
    st.set_page_config(page_title="wmviz: watermark valve debugger", layout="wide")
    pickers = st.sidebar.container()  # above the upload box, but filled after it takes a file in
    bring.upload_panel()
    incidents = available_incidents()
    default = DEFAULT_INCIDENT if DEFAULT_INCIDENT in incidents else next(iter(incidents))
    controls.adopt_url(parse_view(st.query_params.to_dict(), list(incidents), default))
    scenario, profile, engine = controls.sidebar_choices(pickers, {s: i.title for s, i in incidents.items()})
    incident = incidents[scenario]
    bring.upload_error()
    upload = (
        uploads.find_upload(scenario.removeprefix(UPLOAD_PREFIX))
        if scenario.startswith(UPLOAD_PREFIX)
        else None
    )
    if upload is not None and not bring.validate_small(upload):
        st.stop()
    try:
        timeline = loading.load_timeline(
            RunRequest(incident.trace_path, incident.config_path, profile, engine), incident.title
        )
    except TraceValidationError as exc:
        bring.show_issues(exc)
        st.stop()
    instance = controls.instance_choice(sorted(timeline.meta["instances"], key=_natural))
    controls.reset_step_on_new_context((scenario, instance))
    cursor = loading.instance_cursor(str(timeline.path), instance)

    effective = Profile.parse(timeline.meta["profile"])
    target = compare_view.compare_choice(pickers, effective, compare_titles())
    other = other_run(target, incident, effective, engine, instance)

    header(incident, timeline.meta)
    step = controls.step_controls(cursor)
    view = ViewParams(scenario, profile, engine, instance, step, target)
    st.query_params.from_dict(view_query(view))
    if upload is not None:
        bring.bundle_button(upload, {**view_query(view), "profile": profile.value if profile else None})
    ask = compare_view.whatif_form(cursor, step)
    if ask is not None:
        made = compare_view.make_whatif(incident.trace(), instance, step, ask)
        if made is not None:
            st.session_state["_pending_compare"] = made
            st.rerun()
    if other is None:
        step_panels(cursor, str(timeline.path), step, timeline.meta)
    else:
        compare_panels(cursor, effective, other, target, step)
    controls.autoplay(cursor.count - 1)


def compare_titles() -> dict[str, str]:
    """What-if runs of this session, plus a trace a link compares with; applies a what-if just made."""
    pending = st.session_state.pop("_pending_compare", None)
    if pending is not None:
        st.session_state["compare"] = pending
    titles = compare_view.whatif_titles()
    linked = st.session_state.get("compare") or ""
    if linked.startswith(compare_view.TRACE_PREFIX) and linked not in titles:
        upload = uploads.find_upload(linked.removeprefix(compare_view.TRACE_PREFIX))
        if upload is not None:
            titles[linked] = f"trace {upload.name}"
    return titles


def other_run(target: str | None, incident, profile: Profile, engine: str, instance: str):
    """Compare mode's second run, as (label, profile, cursor), or None in single mode."""
    if target is None:
        return None
    if target.startswith(compare_view.TRACE_PREFIX):
        upload = uploads.find_upload(target.removeprefix(compare_view.TRACE_PREFIX))
        request = RunRequest(upload.trace_path, upload.config_path, profile, engine)
        label, other_profile = compare_titles_label(target), profile
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


def compare_titles_label(target: str) -> str:
    return compare_view.whatif_titles().get(target, target)


def compare_panels(cursor: InstanceCursor, profile: Profile, other, target: str, step: int) -> None:
    """The two runs side by side at the same step (shifted across a what-if's insert or delete)."""
    label, other_profile, other_cursor = other
    compare_view.divergence_banner(cursor, other_cursor, step)
    mapped = compare_view.mapped_step(target, step, cursor.instance, cursor.count)
    if mapped is not None and mapped >= other_cursor.count:
        mapped = None
    left, right = st.columns(2)
    with left:
        compare_view.side_panels(
            compare_view.Side(f"this run: profile {profile.value}", cursor, profile, step), "a"
        )
    with right:
        compare_view.side_panels(compare_view.Side(label, other_cursor, other_profile, mapped), "b")


def available_incidents() -> dict:
    """The built-in incidents, then the uploads this session took in or the link names."""
    incidents = dict(loading.incidents(Path(os.environ.get("WMVIZ_SAMPLES") or SAMPLES)))
    digests = [*st.session_state.get("_uploads", []), st.query_params.get("trace")]
    for digest in digests:
        upload = uploads.find_upload(digest)
        if upload is not None:
            incidents[UPLOAD_PREFIX + upload.digest] = bring.upload_incident(upload)
    return incidents


def header(incident, meta: dict) -> None:
    """The incident's title, its profile and the story (what users saw, what the valve did, the fix)."""
    st.title(incident.title)
    profile = Profile.parse(meta["profile"])
    st.caption(f"profile {profile.value}: {profile.describes} · engine {meta['engine']}")
    if profile is not Profile.FLINK_1X_2X:
        st.warning(
            f"Profile {profile.value} is not verified against a running Flink build ({profile.describes}); "
            "only flink-1.x-2.x is checked against the real Flink 2.3.0 valve.",
            icon="⚠️",
        )
    if not incident.story_md:  # an upload: its config's description is user text, never markup
        description = (meta.get("config") or {}).get("description")
        if description:
            st.text(description)
        return
    with st.expander("The story", expanded=True):
        for title, body in story_sections(incident.story_md).items():
            st.markdown(f"#### {title}")
            st.markdown(body)


def step_panels(cursor: InstanceCursor, path: str, step: int, meta: dict) -> None:
    """Everything about one step: input and narration, output, valves, chart, operator, overview."""
    result, pipeline, before = cursor.explain(step)
    top = st.columns([2, 3])
    with top[0]:
        panels.input_panel(cursor, step)
    with top[1]:
        panels.narration_panel(result)
    views = valve_views(cursor, pipeline, step, Profile.parse(meta["profile"]))
    combined = (pipeline.output_watermark_ms, pipeline.output_status.value) if len(views) > 1 else None
    panels.output_panel(views, combined, operator_watermark(cursor, step))
    changed = cursor.row(step).get("channel")
    for view in views:
        panels.valve_panel(view, changed)
    history, output = loading.histories(path, cursor.instance)
    first, last = chart_window(cursor.count, step)
    panels.watermark_chart(*history_window(history, output, first, last), step, last)
    panels.operator_panels(cursor, pipeline, step)
    if len(meta["instances"]) > 1:
        st.subheader("Every instance's output watermark")
        panels.overview_panel(loading.overview_matrix(path), int(cursor.row(step)["order"]))
    st.caption(
        f"state rebuilt from the keyframe at step {before.keyframe_step} (one every "
        f"{meta['keyframe_every']:,} steps); {cursor.count:,} steps in instance {cursor.instance}"
    )


def _natural(name: str) -> tuple:
    return (0, int(name), "") if name.isdigit() else (1, 0, name)


main()
