"""wmviz in the browser: step through a multi-input operator's watermark valve, its heap, timers and
retractions, on a built-in incident or an upload. Read top to bottom: it is the page's table of
contents. Above the fold at 1440×900: the title, the story strip, the step controls, and the step
itself (narration, output, channels, the operator panel that matters); below it the chart, the
heap and the input row, and the overview of every instance."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import partial

import streamlit as st

# isort: off
import wmviz.ui.warmed  # noqa: F401  first: a new server's warm-up of the imports below ends here
# isort: on

from wmviz.core.settings import bad_settings
from wmviz.core.types import MIN_MS, Profile
from wmviz.live.run import LiveRun
from wmviz.store.incidents import DEFAULT_INCIDENT, Incident
from wmviz.store.plan import RunPlan
from wmviz.store.runs import RunRequest
from wmviz.store.uploads import StoredUpload
from wmviz.timeline.cursor import InstanceCursor
from wmviz.timeline.engine import Engine
from wmviz.timeline.meta import TimelineMeta
from wmviz.timeline.store import Timeline
from wmviz.trace.errors import TraceValidationError
from wmviz.ui import (
    bring,
    compare_view,
    controls,
    export_view,
    import_views,
    job_view,
    keys,
    late_view,
    live_view,
    loading,
    panels,
    state,
    step_cache,
    tune_view,
)
from wmviz.view.checked import scenario_claims
from wmviz.view.checked import summary as claims_summary
from wmviz.view.model import input_summary
from wmviz.view.plain import literal
from wmviz.view.timefmt import TimeFormat
from wmviz.view.url import UPLOAD_PREFIX, ShownView, ViewParams, parse_view, view_query


def main() -> None:
    """Render the page for the view in the URL and the sidebar."""
    st.set_page_config(page_title="wmviz: watermark valve debugger", layout="wide")
    panels.page_style()
    if bad := bad_settings():  # each WMVIZ_* setting is read when needed: a bad one says so first
        st.error("The server's settings need fixing:\n\n" + "\n".join(f"- {literal(str(e))}" for e in bad))
        st.stop()
    # Arrows step the trace (or the job graph's time) whatever has focus, never a widget's value.
    keys.install_shortcuts(keys.JOB_SHORTCUTS if job_view.on_job_page() else keys.SHORTCUTS)
    # Spark starts now, in the background, and is never waited for. While its box refreshes itself,
    # the step redraws with the page: two fragments rerunning at once can leave a step drawn twice.
    alone = not panels.spark_status(loading.spark_service())
    live = live_view.current()
    if live is not None:
        live_page(live, alone)
        return
    if job_view.route():  # a job recording (`?job=…`) opens on its graph
        return
    pickers = st.sidebar.container()  # above the upload box, but filled after it takes a file in
    bring.upload_panel()
    incidents = bring.available_incidents()
    default = DEFAULT_INCIDENT if DEFAULT_INCIDENT in incidents else next(iter(incidents))
    link = parse_view(st.query_params.to_dict(), list(incidents), default)
    controls.adopt_url(link)
    scenario, profile, engine = controls.sidebar_choices(pickers, {s: i.title for s, i in incidents.items()})
    incident = incidents[scenario]
    upload, engine, plan = bring.gate_upload(scenario, profile, engine)
    timeline = load_timeline(incident, profile, engine, plan)
    instance = controls.instance_choice(sorted(timeline.meta.instances, key=_natural))
    cursor = loading.instance_cursor(str(timeline.path), instance)
    controls.follow_context(scenario, instance, cursor.steps.column("order").to_numpy())

    effective = timeline.meta.profile
    target = compare_view.compare_choice(pickers, effective, compare_view.compare_titles(incident))
    mode, zone = controls.time_choice(pickers)
    t = TimeFormat(mode, zone, origin_ms=loading.time_origin(str(timeline.path)))
    other = compare_view.other_run(target, incident, effective, engine, instance)

    header(incident, timeline.meta)
    came_from = link.job if upload is not None else None  # the job graph a vertex's trace came from
    shown = ShownView(ViewParams(scenario, profile, engine, instance, 0, target, mode, zone, job=came_from))
    # While a play ticks (a fragment that reruns by itself), the step redraws with the page too: a
    # Pause clicked during a tick's redraw reran the step alone, and the page kept a hidden second
    # drawing of the step (a loaded test run: four charts where two were drawn).
    playing = bool(st.session_state.get(state.PLAYING, False))
    (step_area if alone and not playing else step_area_body)(cursor, incident, effective, other, t, shown)
    tune_view.tune_panel(incident)  # below the step: the step stays above the fold
    share_and_export(incident, timeline, upload, profile, shown, other, t)
    live_view.start_controls(incident)


def step_area_body(
    cursor: InstanceCursor,
    incident: Incident,
    effective: Profile,
    other: compare_view.OtherRun | None,
    t: TimeFormat,
    shown: ShownView,
) -> None:
    """The step controls and everything about the step. A step button (or its key) reruns only
    this part of the page: the sidebar, the title and the story stay as they are drawn."""
    step = controls.step_controls(cursor)
    controls.remember_moment(cursor.row(step)["order"])
    shown.view = shown.view.with_step(step)
    st.query_params.from_dict(view_query(shown.view))
    if other is None:
        meta = cursor.timeline.meta
        late = partial(late_view.late_rows_panel, incident, effective, shown.view, meta, cursor.instance, t)
        ask = step_panels(cursor, step, t, late=late)
    else:
        ask = compare_view.compare_panels(cursor, effective, other, step, t)
    what_if(ask, incident, cursor.instance, step)
    controls.autoplay(cursor.count - 1)


step_area = st.fragment(step_area_body)


def live_page(run: LiveRun, alone: bool) -> None:
    """Live mode: the same panels, drawn from what the streaming query's workers recorded; Forward
    at the newest step (or a click on a channel's input) runs the next micro-batch."""
    t = TimeFormat(*controls.time_choice(st.sidebar), origin_ms=None)
    if st.sidebar.button("Stop driving live", key="live_stop", icon=":material/stop_circle:"):
        live_view.stop()
        st.rerun()
    instances = sorted(run.session.timeline.meta.instances, key=_natural)
    live_view.followed_instance(instances)
    area = live_area if alone else live_area_body
    area(run, instances, controls.instance_choice(instances) if instances else None, t)


def live_area_body(run: LiveRun, instances: list[str], instance: str | None, t: TimeFormat) -> None:
    """The live header, the step and its panels, the inputs to click: a click reruns only this."""
    timeline = run.session.timeline
    if sorted(timeline.meta.instances, key=_natural) != instances:
        st.rerun()  # an input made a new instance: the sidebar offers it
    live_view.live_header(run)
    if instance is None:  # nothing sent yet: the first input starts the timeline
        if run.next_row() is not None:
            st.button("Send the first input ▶", key="fwd", on_click=live_view.feed_next, args=(run,))
        live_view.inject_panel(run, "0", MIN_MS)
        return
    cursor = InstanceCursor(timeline, instance)  # a few steps: rebuilt from memory each run
    advance = (lambda: live_view.feed_next(run)) if run.next_row() is not None else None
    step = controls.step_controls(cursor, advance=advance)
    latest = cursor.row(cursor.count - 1)["output_wm"]
    # The inputs to click sit under the channel table they move, beside the output card: a person
    # watches the output while clicking (below the chart and heap they were ~1,700 px away).
    beside = partial(live_view.inject_panel, run, instance, latest)
    ask = step_panels(cursor, step, t, beside=beside)
    if ask is not None:
        st.info("What-if edits apply to a recorded trace: keep the inputs as a trace first.")
    live_view.keep_as_trace(run)


live_area = st.fragment(live_area_body)


def load_timeline(
    incident: Incident, profile: Profile | None, engine: Engine, plan: RunPlan | None
) -> Timeline:
    """The run's timeline (an upload's `plan` holds its trace, read and validated once); a trace the
    Spark reader rejects shows its issues and stops the page."""
    try:
        return loading.load_timeline(
            RunRequest(incident.trace_path, incident.config_path, profile, engine), incident.title, plan
        )
    except TraceValidationError as exc:
        bring.show_issues(exc)
        st.stop()


def header(incident: Incident, meta: TimelineMeta) -> None:
    """The incident's title, its profile, and the story in a collapsible strip."""
    trusted = not incident.slug.startswith(UPLOAD_PREFIX)  # an upload's name and story are user text
    st.title(incident.title if trusted else literal(incident.title), anchor=False)
    profile = meta.profile
    found = scenario_claims(meta.config, profile)
    st.caption(
        f"profile {profile.value} · engine {meta.engine} · {claims_summary(found)}",
        help="\n\n".join(f"**{'checked' if c.verified else 'modelled'}** · {c.line()}" for c in found),
    )
    if profile is not Profile.FLINK_1X_2X:
        st.warning(
            f"Profile {profile.value} is not verified against a running Flink build ({profile.describes}); "
            "only flink-1.x-2.x is checked against the real Flink 2.3.0 valve.",
            icon=":material/warning:",
        )
    description = meta.config.description or None
    panels.story_strip(incident.story_md, trusted=trusted, description=None if trusted else description)


def step_panels(
    cursor: InstanceCursor,
    step: int,
    t: TimeFormat,
    beside: Callable[[], None] | None = None,
    late: Callable[[int], None] | None = None,
) -> dict | None:
    """Everything about one step: what arrived and what happened, the output, the channels (and
    `beside` them, live mode's inputs), the operator panel that matters now; then the chart, the
    heap and input row, the overview; `late`, the Late rows table under the operator. What the
    step shows is built once for every session looking at it (`step_cache`); the page adds the
    widgets. Returns the what-if edit asked for, if any."""
    record = cursor.row(step)
    left, right = st.columns([5, 7], gap="medium")
    with left:  # the heading first: it reaches the browser before the step's state is rebuilt
        panels.step_heading(step, cursor.count - 1, input_summary(record, t))
    view = step_cache.step_view(cursor, step, t)
    with left:
        panels.output_panel(view.cards)
        import_views.replay_check(view.inferred, view.replay)
        if view.stall is not None:
            st.info(view.stall, icon=":material/pause_circle:")
        panels.narration_panel(list(view.narration), replace(t, short=True), view.rules)
        ask = compare_view.whatif_form(cursor, step, t)
    with right:
        import_views.split_stage(view.splits)
        panels.channel_tables(view.channels)
        if beside is not None:
            beside()
        if view.operator is not None:
            moment = (str(cursor.timeline.path or ""), cursor.instance, step)
            panels.operator_panel(view.operator, moment)
        if late is not None:
            late(step)
    panels.watermark_chart(view.chart)
    panels.heap_and_input(view.heaps, view.input_row)
    path = cursor.timeline.path  # None: a live run's timeline, in memory, has no overview
    if len(cursor.timeline.meta.instances) > 1 and path is not None:
        st.subheader("Every instance's output watermark", anchor=False)
        panels.overview_chart(
            step_cache.overview(str(path), int(record["order"]), panels.lag_mode_choice(), t)
        )
    st.caption(view.caption)
    return ask


def what_if(ask: dict | None, incident: Incident, instance: str, step: int) -> None:
    """Apply a what-if edit the person asked for: compare mode opens on it, carried in the link."""
    if ask is None:
        return
    made = compare_view.make_whatif(incident, instance, step, ask)
    if made is not None:
        st.session_state[state.PENDING_COMPARE] = made
        st.rerun()


def share_and_export(
    incident: Incident,
    timeline: Timeline,
    upload: StoredUpload | None,
    profile: Profile | None,
    shown: ShownView,
    other: compare_view.OtherRun | None,
    t: TimeFormat,
) -> None:
    """The sidebar's share box: the report (with both runs in compare mode), the PNGs, the bundle,
    each built when clicked for the view on screen then. The link itself is the page's URL, which
    always carries the whole view."""
    with st.sidebar:
        st.markdown("**Share and export**")
        export_view.export_buttons(incident, timeline.meta, str(timeline.path), shown, other, t)
        if upload is not None:
            bring.bundle_button(
                upload, lambda: {**view_query(shown.view), "profile": profile.value if profile else None}
            )


def _natural(name: str) -> tuple:
    return (0, int(name), "") if name.isdigit() else (1, 0, name)


try:
    main()
finally:  # the page is drawn (or stopped, or rerunning): now Spark may take the cores
    if not bad_settings():  # else the page said which setting to fix, and nothing starts
        loading.start_spark_after_page()
