"""Bring your own incident (Streamlit): upload a trace, a config or a bundle; see every validation
error as a table; download the bundle that reopens the same view.

Nothing is simulated until the trace validates. The upload's run plan (`wmviz.store.plan`) decides:
a small upload is read and validated once, with the pure reader, and that trace is the one
simulated; a larger one (over $WMVIZ_SPARK_UPLOAD_MB, default 20 MB) goes straight to the Spark
engine, whose reader gives the same messages, with a progress bar.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import streamlit as st

from wmviz.core.settings import SAMPLES as SAMPLES_SETTING
from wmviz.core.types import Profile
from wmviz.record.job import is_recording_bytes
from wmviz.store import bundles, runs, uploads
from wmviz.store.incidents import SAMPLES, Incident
from wmviz.store.plan import RunPlan, plan_run
from wmviz.store.resources import doc_text
from wmviz.store.uploads import StoredUpload, UploadError
from wmviz.timeline.engine import Engine
from wmviz.trace.errors import TraceValidationError
from wmviz.ui import loading, state
from wmviz.ui.controls import SCENARIO_PROFILE
from wmviz.ui.downloads import Built, build_then_save
from wmviz.view.plain import literal
from wmviz.view.url import UPLOAD_PREFIX, ViewParams, parse_view, view_query

TRACE_TYPES = [
    "csv",
    "jsonl",
    "ndjson",
    "json",
    "parquet",
    "zip",
    "arrow",
]  # .arrow: a columnar job recording


def spark_threshold_mb() -> float:
    """Uploads larger than this are validated and simulated on Spark (the run cache's own reading
    of WMVIZ_SPARK_UPLOAD_MB)."""
    return runs.spark_threshold_mb()


def upload_incident(upload: StoredUpload) -> Incident:
    """An upload shown like a built-in incident; its story (if it came with one) is user text, which
    the page and the report render only through the safe markdown subset."""
    return Incident(
        f"upload-{upload.digest}",
        upload_title(upload),
        upload.trace_path,
        upload.config_path,
        upload.story(),
    )


def upload_title(upload: StoredUpload) -> str:
    """The upload's own config `name` when it has one (what its author called the incident), else
    `Uploaded: <file name>`. User text either way: the page and the report show it escaped."""
    if upload.config_path is not None:
        try:
            name = json.loads(upload.config_path.read_text(encoding="utf-8")).get("name")
        except (OSError, ValueError, AttributeError):
            name = None  # the config's own checks report what is wrong with it
        if isinstance(name, str) and name.strip():
            return name.strip()
    return f"Uploaded: {upload.name}"


@st.dialog("The trace format", width="large")
def format_reference() -> None:
    """The repo's own reference (docs/trace-format.md, shipped in the wheel), our text, as markdown."""
    try:
        st.markdown(doc_text("trace-format.md"))
    except FileNotFoundError as err:
        st.markdown(str(err))


def page_limit_mb() -> int:
    """The one upload limit the page states, gives every drop zone and applies: wmviz's own
    (`WMVIZ_MAX_UPLOAD_MB`), never above what Streamlit's server takes at all
    (`server.maxUploadSize`, set equal to wmviz's default in .streamlit/config.toml), which refuses
    a larger body before wmviz could say anything."""
    return min(uploads.limit_mb(), int(st.get_option("server.maxUploadSize")))


def upload_panel() -> StoredUpload | None:
    """The sidebar's upload box; returns a newly stored upload (once per file), else None."""
    limit = page_limit_mb()
    with st.sidebar.expander("Bring your own trace", expanded=False):
        st.caption(
            f"CSV, JSON Lines, Parquet or the compact valve format, up to {limit:,} MB "
            "(see docs/trace-format.md). A bundle (.zip) reopens the view it was saved with."
        )
        if st.button("How to write a trace", key="format_reference", icon=":material/menu_book:"):
            format_reference()
        trace_file = st.file_uploader(
            "Trace or bundle", type=TRACE_TYPES, key="upload_trace", max_upload_size=limit
        )
        config_file = st.file_uploader(
            "Config (JSON, optional)", type=["json"], key="upload_config", max_upload_size=limit
        )
        story_file = st.file_uploader(
            "Story (optional: plain text or markdown)",
            type=["md", "txt"],
            key="upload_story",
            max_upload_size=limit,
            help="What users saw, what happened, the fix: shown above the steps and in the report. "
            "Headings, lists, paragraphs, **bold**, *italics* and `code` are kept; HTML, links and "
            "images are shown as text.",
        )
    if trace_file is None:
        return None
    marker = (
        trace_file.file_id,
        config_file.file_id if config_file else None,
        story_file.file_id if story_file else None,
    )
    if st.session_state.get(state.UPLOAD_MARKER) == marker:
        return None  # already taken in on an earlier run
    st.session_state[state.UPLOAD_MARKER] = marker
    try:
        # A job recording (JSON, or columnar .arrow) is told by its first and last bytes, bounded.
        job_recording = trace_file.name.lower().endswith((".json", ".arrow")) and is_recording_bytes(
            trace_file.getvalue()
        )
        if trace_file.name.lower().endswith(".arrow") and not job_recording:
            raise UploadError(
                f"{trace_file.name}: not a columnar job recording (an .arrow upload is one; "
                "`wmviz convert RECORDING.json OUT.arrow` writes one)"
            )
        uploads.check_upload(trace_file.name, trace_file.size, limit, job_recording=job_recording)
        if config_file is not None:
            uploads.check_upload("config.jsonl", config_file.size, limit)  # size only: a config is JSON
        view = {}
        story = None
        if story_file is not None:
            story = story_file.getvalue()
            uploads.check_story(story_file.name, story)
        if job_recording:
            job = uploads.store_upload(trace_file.name, trace_file.getvalue(), None, story_bytes=story)
            st.query_params.from_dict({"job": job.digest})  # a job recording opens on its graph
            st.rerun()
        if trace_file.name.lower().endswith(".zip"):
            bundle = bundles.open_bundle(trace_file.name, trace_file.getvalue())
            config = config_file.getvalue() if config_file else bundle.config_bytes
            story = story if story is not None else bundle.story_bytes
            stored = uploads.store_upload(bundle.trace_name, bundle.trace_bytes, config, story_bytes=story)
            view = bundle.view
        else:
            config = config_file.getvalue() if config_file else None
            stored = uploads.store_upload(trace_file.name, trace_file.getvalue(), config, story_bytes=story)
    except UploadError as exc:
        st.session_state[state.UPLOAD_ERROR] = str(exc)
        return None
    st.session_state.pop(state.UPLOAD_ERROR, None)
    _adopt_view(stored, view)
    return stored


def _adopt_view(stored: StoredUpload, view: dict) -> None:
    """Switch the page to the upload, at the bundle's view if it came in one. The view's fields are
    checked as a link's are: a bad one falls back to the default and says so."""
    known = st.session_state.setdefault(state.UPLOADS, [])
    if stored.digest not in known:
        known.append(stored.digest)
    scenario = UPLOAD_PREFIX + stored.digest
    query = {key: value for key, value in view.items() if key not in ("trace", "scenario")}
    parsed = parse_view({**query, "scenario": scenario}, [scenario], scenario)
    st.session_state[state.SCENARIO] = scenario
    st.session_state[state.STEP] = parsed.step
    st.session_state[state.PROFILE] = parsed.profile.value if parsed.profile else SCENARIO_PROFILE
    if parsed.instance is not None:
        st.session_state[state.INSTANCE] = parsed.instance
    if parsed.engine in ("spark", "local"):
        st.session_state[state.ENGINE] = parsed.engine
    if parsed.compare is not None:
        st.session_state[state.COMPARE] = parsed.compare
    for note in parsed.notes:
        st.toast(literal(f"The bundle's view: {note}"))
    st.session_state[state.CONTEXT] = None  # keep the bundle's step: this is not a user's new choice


def upload_error() -> None:
    """The refusal of the last upload, if any (too large, unknown format, broken bundle)."""
    message = st.session_state.get(state.UPLOAD_ERROR)
    if message:
        st.error(literal(message))


def gate_upload(
    scenario: str, profile: Profile | None, engine: Engine
) -> tuple[StoredUpload | None, Engine, RunPlan | None]:
    """The upload the page shows (None for a built-in incident), the engine to use and the upload's
    run plan (`wmviz.store.plan`). An invalid small upload shows its issues and stops the page; a
    large one goes to the Spark engine."""
    upload_error()
    if not scenario.startswith(UPLOAD_PREFIX):
        return None, engine, None
    try:
        upload = uploads.find_upload(scenario.removeprefix(UPLOAD_PREFIX))
    except UploadError:  # damaged since the sidebar listed it: said there
        return None, engine, None
    if upload is None:
        return None, engine, None
    plan = upload_plan(upload, engine)
    if plan is None:
        st.query_params.from_dict(view_query(ViewParams(scenario, profile, engine)))
        st.stop()
    if plan.moved_to_spark:
        st.info(f"{literal(upload.name)} is large: it is validated and simulated on the Spark engine.")
        engine = Engine.SPARK
    return upload, engine, plan


def upload_plan(upload: StoredUpload, engine: Engine) -> RunPlan | None:
    """The upload's run plan, made once per session (a small upload read and validated then, and
    its trace handed to the run; what the session keeps is the plan without it); None when it is
    invalid, after every issue is shown. A large upload is validated by Spark while it runs."""
    checked = st.session_state.setdefault(state.VALIDATED, {})
    known = checked.get((upload.digest, engine))
    if isinstance(known, TraceValidationError):
        show_issues(known)
        return None
    if isinstance(known, RunPlan):
        return known
    try:
        plan = plan_run(upload.trace_path, upload.config_path, engine, upload=True)
    except TraceValidationError as exc:
        checked[(upload.digest, engine)] = exc
        show_issues(exc)
        return None
    checked[(upload.digest, engine)] = plan.without_trace()
    return plan


def show_issues(error: TraceValidationError) -> None:
    """Every validation issue as a table; nothing is simulated until they are fixed."""
    more = f" (the first {len(error.issues):,} are listed)" if error.total > len(error.issues) else ""
    st.error(
        f"The trace has {error.total:,} validation error(s){more}; nothing was simulated. "
        "Fix them and upload again."
    )
    st.dataframe(uploads.issues_frame(error), hide_index=True, width="stretch", key="upload_issues")


def bundle_button(upload: StoredUpload, view: Callable[[], dict]) -> None:
    """Download the trace, config and view (on screen at the click) as one zip that reopens this
    view when uploaded (built at the click, then saved: `downloads`)."""

    def bundle() -> Built:
        shown = view()
        return Built(bundles.make_bundle(upload, shown), f"the bundle of step {shown.get('step', 0)}")

    name = f"wmviz-{upload.digest}.zip"
    build_then_save("Download bundle (trace + config + view)", bundle, name, "application/zip", "bundle")


def available_incidents() -> dict:
    """The built-in incidents, then the uploads this session took in or the link names."""
    incidents = dict(loading.incidents(SAMPLES_SETTING.path() or SAMPLES))
    digests = [*st.session_state.get(state.UPLOADS, []), st.query_params.get("trace")]
    for digest in dict.fromkeys(digests):
        try:
            upload = uploads.find_upload(digest)
            if upload is not None:
                incidents[UPLOAD_PREFIX + upload.digest] = upload_incident(upload)
        except UploadError as exc:  # cut or changed on disk: said, never served
            st.error(literal(exc), icon=":material/broken_image:")
    return incidents
