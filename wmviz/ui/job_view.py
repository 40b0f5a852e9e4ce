"""The job graph (Streamlit): a job recording opens on its graph, with one time slider over the
whole recording, a vertex picker (or a click on a vertex), the blame chain as a table, and a way
into the picked vertex's valve step-through at the same moment, and back.

The link says it all: `?job=<built-in slug or upload digest>&at=<epoch ms>&vertex=<vertex id>`
(`wmviz.view.url.JobLink`). A vertex's valve page is its one-operator trace
(`wmviz.record.job_trace`), stored as an upload and opened as `?trace=<digest>&instance=…&step=…`
with the job link beside it, which the valve page turns into its way back.
"""

from __future__ import annotations

import bisect
from pathlib import Path

import pandas as pd
import streamlit as st

from wmviz.analysis.blame import BlameError, Walker
from wmviz.analysis.job_moment import graph_at, valve_trace_rows
from wmviz.core.settings import MAX_IMPORT_ROWS
from wmviz.core.settings import SAMPLES as SAMPLES_SETTING
from wmviz.record.job import JobFormatError, is_recording_bytes, read_recording
from wmviz.record.job_trace import NoValve, channel_map, instance_at, step_at, vertex_trace
from wmviz.store import uploads
from wmviz.store.incidents import SAMPLES, JobIncident, job_incidents
from wmviz.store.runs import identity
from wmviz.store.uploads import UploadError
from wmviz.ui import bring, controls, panels, state
from wmviz.ui.lag_view import lag_panel
from wmviz.view.jobgraph import JobGraph, chain_rows, job_graph_figure
from wmviz.view.jobgraph_groups import chain_lines, group_line, group_rows
from wmviz.view.plain import literal
from wmviz.view.timefmt import TimeFormat
from wmviz.view.url import JobLink, job_link

STALLED = ""
"""The vertex picker's first option: start where `wmviz blame` starts (the most downstream vertex
standing still, else the most downstream)."""


def on_job_page() -> bool:
    """Whether the link opens the job graph (a `job` and no trace or incident): the page's keys
    are then the graph's (`keys.JOB_SHORTCUTS`)."""
    query = st.query_params
    return bool(query.get("job")) and not query.get("trace") and not query.get("scenario")


def route() -> bool:
    """app.py's routing: draw the job graph when the link names a job and no trace (True); on
    the valve page, the way back to the job graph it came from and the built-in jobs (False)."""
    query = st.query_params.to_dict()
    notes: list[str] = []
    link = job_link(query, notes)
    if link is not None and on_job_page():
        job_page(link, notes)
        return True
    with st.sidebar:
        if link is not None and query.get("trace"):
            st.button(
                "← Back to the job graph",
                key="job_back",
                on_click=_open_job,
                args=(link,),
                icon=":material/hub:",
            )
        for slug, job in built_in_jobs().items():
            st.button(
                f"Job graph: {job.title}", key=f"job_open_{slug}", on_click=_open_job, args=(JobLink(slug),)
            )
    return False


def built_in_jobs() -> dict[str, JobIncident]:
    """The built-in job recordings (sample_data/jobs/)."""
    return job_incidents(SAMPLES_SETTING.path() or SAMPLES)


def _open_job(link: JobLink) -> None:
    st.query_params.from_dict(link.query())


def _open_valve(digest: str, instance: str, step: int, link: JobLink) -> None:
    """Open the vertex's valve page at the step: the valve page takes its view from this link."""
    st.query_params.from_dict({"trace": digest, "instance": instance, "step": str(step), **link.query()})
    st.session_state.pop(state.ADOPTED, None)  # the valve page adopts this link, not an older one
    st.session_state[state.CONTEXT] = None  # and keeps its step (not a person's new choice)


def job_page(link: JobLink, notes: list[str]) -> None:
    """The whole job view for the link."""
    _sidebar()
    found = _resolve(link.job)
    if found is None:
        st.info(literal(f"This server has no job recording {link.job!r}: upload it, or open a built-in job."))
        return
    path, title, story, trusted = found
    try:
        walker = _walker(str(path), identity(path))
    except (OSError, JobFormatError, BlameError) as err:
        st.error(literal(f"{title}: {err}"), icon=":material/broken_image:")
        return
    _adopt(link, walker, notes)
    mode, zone = controls.time_choice(st.sidebar)
    t = TimeFormat(mode, zone, origin_ms=walker.times[0])
    st.title(title if trusted else literal(title), anchor=False)
    rec = walker.rec
    st.caption(
        f"job recording · {len(rec.vertices)} vertices · {len(walker.times):,} samples from "
        f"{t(walker.times[0])} to {t(walker.times[-1])}" + (f" · {literal(rec.source)}" if rec.source else "")
    )
    panels.story_strip(story, trusted=trusted, description=None)
    at = st.select_slider("Time", options=walker.times, format_func=t, key=state.JOB_AT)
    _time_buttons(walker.times, at)
    names = {v.id: v.name for v in rec.vertices}
    graph_side, beside = st.columns([3, 1.2], gap="medium")
    with beside:
        vertex = st.selectbox(
            "Find a vertex",
            [STALLED, *names],
            format_func=lambda v: names.get(
                v, "where blame starts (the most downstream vertex standing still)"
            ),
            key=state.JOB_VERTEX,
            help="Type part of a name to search: the vertex is ringed in purple and kept in the link.",
        )
        graph = graph_at(walker, at, vertex or None)
        _beside(graph, vertex or (graph.chain[0].vertex if graph.chain else None), t)
    with graph_side:
        st.plotly_chart(
            job_graph_figure(graph, t, vertex or None),
            on_select=_clicked,
            selection_mode="points",
            key=state.JOB_CLICK,
            config={"displayModeBar": False},
        )
    if graph.chain:
        panels.frame_table(pd.DataFrame(chain_rows(graph, t)), "job_chain")
    with st.expander(f"Every vertex's subtasks at {t(graph.at_ms)} (lowest, culprit, highest, spread)"):
        panels.frame_table(pd.DataFrame(group_rows(graph, t)), "job_groups")
    _valve_link(path, walker, graph, vertex or (graph.chain[0].vertex if graph.chain else None), link.job, t)
    if graph.chain:
        lag_panel(walker, identity(path), vertex or graph.chain[0].vertex, at, t)
    shown = JobLink(link.job, at, vertex or None)
    st.query_params.from_dict(shown.query())
    st.session_state[state.JOB_ADOPTED] = shown


def _beside(graph: JobGraph, shown: str | None, t: TimeFormat) -> None:
    """Beside the graph, readable without scrolling: the shown vertex's subtasks as a group (the
    picked one, else where the chain starts) and the blame chain, alike hops folded."""
    vertex = next((v for v in graph.vertices if v.id == shown), None)
    if vertex is not None:
        with st.container(key="job_group"):
            st.markdown(f"**{literal(vertex.name)}**  \n{literal(group_line(vertex, t))}")
    with st.container(key="job_chain_list"):
        st.markdown(f"**{'Who holds it' if graph.stalled else 'No stall'}:** {literal(graph.ending)}")
        lines = chain_lines(graph, t)
        if lines:
            st.markdown(
                "\n".join(
                    f"{i}. **{literal(line.vertices)}**: {literal(line.detail)}"
                    for i, line in enumerate(lines, 1)
                )
            )


def _time_buttons(times: list[int], at: int) -> None:
    """A sample earlier or later, and the ends: the buttons the arrow keys, Home and End press."""
    index = min(bisect.bisect_left(times, at), len(times) - 1)  # the sample times are sorted
    row = st.container(horizontal=True)
    moves = (
        ("|◀ First", "job_first", 0, "Home"),
        ("◀ Earlier", "job_earlier", max(index - 1, 0), "Left"),
        ("Later ▶", "job_later", min(index + 1, len(times) - 1), "Right"),
        ("Last ▶|", "job_last", len(times) - 1, "End"),
    )
    for label, key, target, shortcut in moves:
        row.button(
            label,
            key=key,
            on_click=_move_to,
            args=(times[target],),
            disabled=target == index,
            shortcut=shortcut,
        )


def _move_to(time_ms: int) -> None:
    st.session_state[state.JOB_AT] = time_ms


def _sidebar() -> None:
    """The upload box (a trace opens its valve page, a job recording its graph) and the built-in
    jobs."""
    stored = bring.upload_panel()
    if stored is not None:
        st.query_params.from_dict({"trace": stored.digest})
        st.rerun()
    bring.upload_error()
    with st.sidebar:
        for slug, job in built_in_jobs().items():
            st.button(
                f"Job graph: {job.title}", key=f"job_open_{slug}", on_click=_open_job, args=(JobLink(slug),)
            )
        st.button("The one-operator incidents", key="job_leave", on_click=st.query_params.clear)


def _resolve(job: str) -> tuple[Path, str, str, bool] | None:
    """(the recording's path, its title, its story, whether both are ours) for a built-in job's
    slug or an uploaded recording's digest."""
    builtin = built_in_jobs().get(job)
    if builtin is not None:
        return builtin.path, builtin.title, builtin.story_md, True
    try:
        upload = uploads.find_upload(job)
    except UploadError as err:
        st.error(literal(err), icon=":material/broken_image:")
        return None
    if upload is None:
        return None
    if not _is_recording(job, identity(upload.trace_path)):
        st.error(literal(f"{upload.name} is a trace, not a job recording: it opens on the valve page."))
        st.button(
            "Open it as a trace",
            key="job_as_trace",
            on_click=st.query_params.from_dict,
            args=({"trace": job},),
        )
        return None
    return upload.trace_path, f"Uploaded job: {upload.name}", upload.story(), False


@st.cache_resource(show_spinner=False, max_entries=64)
def _is_recording(digest: str, stamp: tuple) -> bool:
    """Whether the stored upload is a job recording, judged once per digest (and file identity,
    `stamp`): reading an upload reads and hashes the whole file (the store checks its digest),
    which every rerun of the page (each click) paid before, with a whole decode on top."""
    upload = uploads.find_upload(digest)
    return upload is not None and is_recording_bytes(upload.read(upload.trace_path))


@st.cache_resource(show_spinner=False, max_entries=8)
def _walker(path: str, stamp: tuple) -> Walker:
    """The recording and its blame walker, read again only when the file changes (`stamp`)."""
    return Walker(read_recording(Path(path)))


def _adopt(link: JobLink, walker: Walker, notes: list[str]) -> None:
    """Take the slider's moment and the picked vertex from a link this page did not write itself
    (a shared link, the way back from a valve page); a bad part falls back with a note."""
    if st.session_state.get(state.JOB_ADOPTED) == link and state.JOB_AT in st.session_state:
        return
    at = walker.times[-1]
    if link.at_ms is not None:
        if link.at_ms < walker.times[0]:
            notes.append(f"{link.at_ms} is before the recording's first sample; showing its first")
            at = walker.times[0]
        else:
            at = walker.sample_time(link.at_ms)
    vertex = link.vertex if link.vertex is not None else STALLED
    if vertex not in {v.id for v in walker.rec.vertices} | {STALLED}:
        notes.append(f"the recording has no vertex {vertex!r}; starting from the stalled vertex")
        vertex = STALLED
    st.session_state[state.JOB_AT] = at
    st.session_state[state.JOB_VERTEX] = vertex
    st.session_state[state.JOB_ADOPTED] = link
    for note in notes:
        st.toast(literal(note))


def _clicked() -> None:
    """A click on a vertex picks it (its id is the point's customdata; an edge's point has none)."""
    points = st.session_state[state.JOB_CLICK].selection.points
    data = next((p.get("customdata") for p in points if p.get("customdata") is not None), None)
    if data is not None:
        st.session_state[state.JOB_VERTEX] = str(data[0] if isinstance(data, list) else data)


def _step_into(path: str, stamp: tuple, vertex: str, name: str, subtask: int, at_ms: int, job: str) -> None:
    """The button's work, done only when pressed: build the vertex's one-operator trace (its size
    checked before, `_valve_link`), store it as an upload and open its valve page at the step
    nearest the moment; what goes wrong is said in a toast, and the graph stays."""
    try:
        rec = _walker(path, stamp).rec  # the page's decoded recording, not a second read
        config, rows = vertex_trace(rec, vertex)
        from wmviz.record.output import jsonl_bytes  # the writers: only when a vertex is stepped into

        digest = uploads.store_upload(f"{job}-{name}.jsonl", jsonl_bytes(config, rows), None).digest
    except (NoValve, JobFormatError) as err:
        st.toast(literal(str(err)), icon=":material/info:")
        return
    except (OSError, UploadError) as err:
        st.toast(literal(f"{name}: its valve trace cannot be stored ({err})"), icon=":material/error:")
        return
    instance = instance_at(rec, subtask, at_ms)
    _open_valve(digest, instance, step_at(rows, instance, at_ms), JobLink(job, at_ms, vertex))


def _valve_link(
    path: Path, walker: Walker, graph: JobGraph, vertex: str | None, job: str, t: TimeFormat
) -> None:
    """The button into the vertex's valve page at the step nearest the moment, on the subtask the
    chain names (else the vertex's slowest). Nothing is built until it is pressed, and a trace
    over the import budget (`MAX_IMPORT_ROWS`) is a notice instead of a button."""
    if vertex is None:
        return
    name = walker.vertex(vertex).name
    rows = valve_trace_rows(walker, vertex)
    if rows > (most := MAX_IMPORT_ROWS.get()):
        st.info(
            literal(
                f"{name}: its valve step-through would be a trace of about {rows:,} rows (samples × "
                f"subtasks × channels), more than wmviz builds: {most:,} (WMVIZ_MAX_IMPORT_ROWS)"
            ),
            icon=":material/data_usage:",
        )
        return
    try:
        channel_map(walker.rec, vertex)  # a source, or unequal channels: no valve (costs rows / samples)
    except NoValve as err:
        st.caption(literal(str(err)))
        return
    hop = next((h for h in graph.chain if h.vertex == vertex), None)
    subtask = hop.subtask if hop else walker.slowest_subtask(vertex, graph.at_ms, include_idle=True) or 0
    st.button(
        literal(f"Step through {name} subtask {subtask} at {t(graph.at_ms)}"),
        key="job_valve",
        on_click=_step_into,
        args=(str(path), identity(path), vertex, name, subtask, graph.at_ms, job),
        icon=":material/tune:",
        help="Builds the vertex's valve step-through (its one-operator trace) and opens it at the step "
        "nearest the moment.",
    )
