"""wmviz in the browser: step through a multi-input operator's watermark valve, its heap, timers and
retractions, on a built-in incident. Read top to bottom: it is the page's table of contents."""

from __future__ import annotations

from urllib.parse import urlencode

import streamlit as st

from wmviz.core.types import Profile
from wmviz.incidents import DEFAULT_INCIDENT, story_sections
from wmviz.timeline.cursor import InstanceCursor
from wmviz.trace.errors import TraceValidationError
from wmviz.ui import bring, compare_view, controls, export_view, loading, panels
from wmviz.ui.model import chart_window, history_window, operator_watermark, valve_views
from wmviz.ui.runs import RunRequest
from wmviz.ui.url import ViewParams, parse_view, view_query


def main() -> None:
    """Render the page for the view in the URL and the sidebar."""
    st.set_page_config(page_title="wmviz: watermark valve debugger", layout="wide")
    pickers = st.sidebar.container()  # above the upload box, but filled after it takes a file in
    bring.upload_panel()
    incidents = bring.available_incidents()
    default = DEFAULT_INCIDENT if DEFAULT_INCIDENT in incidents else next(iter(incidents))
    controls.adopt_url(parse_view(st.query_params.to_dict(), list(incidents), default))
    scenario, profile, engine = controls.sidebar_choices(pickers, {s: i.title for s, i in incidents.items()})
    incident = incidents[scenario]
    upload, engine = bring.gate_upload(scenario, profile, engine)
    timeline = load_timeline(incident, profile, engine)
    instance = controls.instance_choice(sorted(timeline.meta["instances"], key=_natural))
    controls.reset_step_on_new_context((scenario, instance))
    cursor = loading.instance_cursor(str(timeline.path), instance)

    effective = Profile.parse(timeline.meta["profile"])
    target = compare_view.compare_choice(pickers, effective, compare_view.compare_titles())
    other = compare_view.other_run(target, incident, effective, engine, instance)

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
    export_view.export_buttons(
        incident, timeline.meta, str(timeline.path), instance, step, "?" + urlencode(view_query(view))
    )
    if other is None:
        step_panels(cursor, str(timeline.path), step, timeline.meta)
    else:
        compare_view.compare_panels(cursor, effective, other, target, step)
    controls.autoplay(cursor.count - 1)


def load_timeline(incident, profile: Profile | None, engine: str):
    """The run's timeline; a trace the Spark reader rejects shows its issues and stops the page."""
    try:
        return loading.load_timeline(
            RunRequest(incident.trace_path, incident.config_path, profile, engine), incident.title
        )
    except TraceValidationError as exc:
        bring.show_issues(exc)
        st.stop()


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
