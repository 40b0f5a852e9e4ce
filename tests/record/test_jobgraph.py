"""The job graph at a moment (pure: no browser), and one vertex of a job as a one-operator trace.

The recording is the 4-vertex fixture imported from tests/data/prometheus/orders-job-*.json
(tests/support/job_shape.py): payments subtask 1 holds the job until 300 s, orders split orders-5 after.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import job_shape as js
from wmviz.analysis.blame import Walker
from wmviz.analysis.job_moment import graph_at
from wmviz.core.simulate import simulate
from wmviz.core.types import MAX_MS
from wmviz.record.agreement import ReplayCheck
from wmviz.record.job import read_recording
from wmviz.record.job_trace import NoValve, instance_at, step_at, vertex_trace
from wmviz.record.output import jsonl_bytes
from wmviz.trace.readers import read_trace_bytes
from wmviz.view.jobgraph import CHAIN_COLOR, chain_edges, chain_rows, job_graph_figure, positions
from wmviz.view.timefmt import TimeFormat

DATA = Path("tests/data/prometheus")


@pytest.fixture(scope="module")
def walker(tmp_path_factory) -> Walker:
    out = tmp_path_factory.mktemp("job") / "orders-job.json"
    proc = subprocess.run(
        [sys.executable, "-m", "wmviz", "import", "prometheus", str(DATA / "orders-job-query-range.json"),
         "--plan", str(DATA / "orders-job-plan.json"), "--idleness", "30s", "--out", str(out)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return Walker(read_recording(out))


def test_the_layout_puts_sources_left_and_the_sink_right(walker):
    where = positions(graph_at(walker, None))
    assert where[js.ORDERS][0] == where[js.PAYMENTS][0] == 0
    assert where[js.JOIN][0] == 1 and where[js.WINDOW][0] == 2
    assert where[js.ORDERS][1] != where[js.PAYMENTS][1]


def test_at_the_end_orders_holds_the_job_and_the_chain_ends_at_its_silent_split(walker):
    graph = graph_at(walker, None)
    by_id = {v.id: v for v in graph.vertices}
    assert by_id[js.PAYMENTS].behind_ms == 0  # the leading output
    assert by_id[js.ORDERS].behind_ms == by_id[js.WINDOW].behind_ms > 60_000
    assert [h.vertex for h in graph.chain] == [js.WINDOW, js.JOIN, js.ORDERS]
    assert graph.chain[-1].held_by == "split 'orders-5'" and graph.chain[-1].subtask == 2
    assert chain_edges(graph) == {(js.JOIN, js.WINDOW), (js.ORDERS, js.JOIN)}
    carried = {(e.source, e.target): e.watermark_ms for e in graph.edges}
    assert carried[(js.ORDERS, js.JOIN)] == by_id[js.ORDERS].output_ms
    assert carried[(js.PAYMENTS, js.JOIN)] == by_id[js.PAYMENTS].output_ms


def test_earlier_the_chain_ends_at_the_lagging_payments_subtask(walker):
    graph = graph_at(walker, js.T0 + 200_000)
    assert graph.at_ms == js.T0 + 200_000
    assert [h.vertex for h in graph.chain][-1] == js.PAYMENTS
    assert graph.chain[-1].subtask == 1 and graph.chain[1].held_by == "input 2"
    # Behind the job's leading watermark (payments subtask 0 at 196 s, stopped but not idle yet):
    # orders' slowest subtask at 195 s is a second behind, the lagging payments subtask 56 s.
    assert walker.leading(graph.at_ms) == js.T0 + 196_000
    assert {v.id: v.behind_ms for v in graph.vertices}[js.ORDERS] == 1_000
    assert graph.chain[-1].behind_ms == 56_000


def test_the_figure_colours_labels_and_highlights_in_readable_times(walker):
    graph = graph_at(walker, None)
    t = TimeFormat("utc")
    figure = job_graph_figure(graph, t, picked=js.JOIN)
    nodes = figure["data"][0]
    assert nodes["customdata"] == [js.ORDERS, js.PAYMENTS, js.JOIN, js.WINDOW]
    colors = dict(zip(nodes["customdata"], nodes["marker"]["color"], strict=True))
    assert colors[js.PAYMENTS] == 0.0 and colors[js.ORDERS] == 1.0  # more than a minute behind
    rings = dict(zip(nodes["customdata"], nodes["marker"]["line"]["color"], strict=True))
    assert rings[js.ORDERS] == CHAIN_COLOR and rings[js.PAYMENTS] != CHAIN_COLOR
    labels = [a["text"] for a in figure["layout"]["annotations"] if a["text"]]
    orders_out = {v.id: v.output_ms for v in graph.vertices}[js.ORDERS]
    assert any(label.startswith(t(orders_out)) and "hash" in label for label in labels)
    assert t(graph.at_ms) in figure["layout"]["title"]["text"] and "Z" in figure["layout"]["title"]["text"]
    arrows = [a for a in figure["layout"]["annotations"] if a.get("showarrow")]
    assert sorted(a["arrowcolor"] == CHAIN_COLOR for a in arrows) == [False, True, True]
    rows = chain_rows(graph, t)
    assert rows[-1]["vertex"] == "Source: orders" and rows[-1]["held by"] == "split 'orders-5'"


def test_an_idle_vertex_and_one_without_watermarks_are_told_apart(walker):
    from dataclasses import replace

    graph = graph_at(walker, None)
    idle = replace(graph.vertices[0], idle=True)
    unknown = replace(graph.vertices[1], output_ms=None, behind_ms=None)
    figure = job_graph_figure(replace(graph, vertices=(idle, unknown, *graph.vertices[2:])), TimeFormat())
    colors = figure["data"][0]["marker"]["color"]
    assert isinstance(colors[0], str) and isinstance(colors[1], str) and colors[0] != colors[1]
    assert "colorscale" not in figure["data"][0]["marker"]
    assert "idle" in figure["data"][0]["hovertext"][0]


@pytest.mark.parametrize("vertex", [js.JOIN, js.WINDOW])
def test_a_vertex_becomes_a_trace_whose_replay_agrees_with_what_it_reported(walker, vertex):
    config, rows = vertex_trace(walker.rec, vertex)
    trace = read_trace_bytes(jsonl_bytes(config, rows), "vertex.jsonl")
    assert trace.instances == [str(s) for s in range(js.PARALLELISM[vertex])]
    assert trace.config.name == js.NAMES[vertex]
    check = ReplayCheck()
    for result in simulate(trace):
        check.observe(result)
    assert check.agreed == js.SAMPLES * js.PARALLELISM[vertex] and check.share == 1.0


def test_the_step_nearest_a_moment_is_the_last_row_at_or_before_it(walker):
    _, rows = vertex_trace(walker.rec, js.WINDOW)
    at = walker.times[30]
    step = step_at(rows, "1", at)
    mine = [r for r in rows if r["instance"] == "1"]
    assert mine[step]["proc_ms"] <= at < mine[step + 1]["proc_ms"]
    assert step_at(rows, "1", js.T0 - 1) == 0


def test_a_source_has_no_valve_to_step_through(walker):
    with pytest.raises(NoValve, match="source"):
        vertex_trace(walker.rec, js.ORDERS)


def test_the_built_in_job_is_what_the_import_writes_from_the_fixture(walker):
    from wmviz.record.job import to_json
    from wmviz.store.incidents import SAMPLES, STORY_SECTIONS, job_incidents, story_sections

    (job,) = job_incidents(SAMPLES).values()
    assert job.slug == "silent-split-holds-the-whole-job" and job.title.startswith("A silent")
    assert list(story_sections(job.story_md)) == list(STORY_SECTIONS)  # the title is not repeated
    built_in, fixture = to_json(read_recording(job.path)), to_json(walker.rec)
    assert built_in.pop("config")  # the sources' bounds and the window, given by hand (docs/lag.md)
    assert {**built_in, "source": ""} == {**fixture, "source": ""}
    assert job.path.parent == SAMPLES / "jobs"  # apart from the traces, whose .json are configs


def test_a_job_recording_is_told_from_a_trace_by_its_bytes(walker):
    import json

    from wmviz.record.job import is_recording_bytes, to_json

    assert is_recording_bytes(json.dumps(to_json(walker.rec)).encode())
    assert not is_recording_bytes(b'{"config": {"name": "wmviz-job/1"}}\n{"kind": "watermark"}\n')
    assert not is_recording_bytes(b'{"format": "wmviz-job/1", ')


@pytest.mark.parametrize(
    ("query", "link", "noted"),
    [
        ({"job": "abc", "at": "123", "vertex": "c3"}, ("abc", 123, "c3"), False),
        ({"job": "abc"}, ("abc", None, None), False),
        ({"job": "abc", "at": "-9223372036854775808"}, ("abc", -(2**63), None), False),
        ({"job": "abc", "at": "9223372036854775808"}, ("abc", None, None), True),
        ({"job": "abc", "at": "soon"}, ("abc", None, None), True),
        ({"job": "abc", "vertex": "x" * 129}, ("abc", None, None), True),
        ({"job": "abc", "vertex": "a\nb"}, ("abc", None, None), True),
        ({"job": "../etc"}, None, True),
        ({}, None, False),
    ],
)
def test_the_job_link_is_read_with_bounds_and_written_back(query, link, noted):
    from wmviz.view.url import JobLink, parse_view, view_query

    view = parse_view({"scenario": "s", **query}, ["s"], "s")
    assert (None if view.job is None else (view.job.job, view.job.at_ms, view.job.vertex)) == link
    assert bool(view.notes) == noted
    if view.job is not None:
        again = parse_view(view_query(view), ["s"], "s")
        assert again.job == view.job == JobLink(*link)


def _with_finished(rec, vertex: str, subtask: int, from_ms: int):
    """A copy of the recording in which the subtask's task FINISHED at `from_ms`."""
    from copy import deepcopy

    from wmviz.record.job import TASK_FINISHED

    out = deepcopy(rec)
    out.add((vertex, subtask, TASK_FINISHED, None), from_ms, 1)
    return out


def test_a_finished_subtask_is_max_and_no_longer_blamed(walker):
    at = js.T0 + 200_000
    root = walker.blame(None, at).chain[-1]
    assert (root.vertex, root.subtask) == ("Source: payments", 1)
    rec = _with_finished(walker.rec, js.PAYMENTS, 1, js.T0 + 100_000)
    assert rec.output_at(js.PAYMENTS, 1, at) == MAX_MS and rec.output_at(js.PAYMENTS, 1, js.T0) != MAX_MS
    after = Walker(rec)
    assert not after.idle(js.PAYMENTS, 1, at)
    chain = after.blame(None, at).chain
    assert (chain[-1].vertex, chain[-1].subtask) != ("Source: payments", 1)
    config, rows = vertex_trace(rec, js.JOIN)
    finished = [r for r in rows if r.get("status") == "FINISHED"]
    # Payments subtask 1 is the join's channel 3 + 1 (orders' 3 channels first), in all 4 instances.
    assert sorted((r["instance"], r["channel"]) for r in finished) == [(str(i), 4) for i in range(4)]
    assert all(r["proc_ms"] == js.T0 + 100_000 for r in finished)
    read_trace_bytes(jsonl_bytes(config, rows), "join.jsonl")  # still a valid trace


def test_the_rest_recorder_writes_finished_subtasks_from_their_status(monkeypatch):
    from wmviz.record.job import TASK_ATTEMPT, TASK_FINISHED, Edge, JobRecording, Vertex
    from wmviz.record.rest_job import JobPoller

    states = {"0": "RUNNING", "1": "FINISHED"}
    attempts = {"0": 0, "1": 0}

    class Client:
        def get(self, path: str, params=None):
            if path == "/jobs/j":
                return {"state": "RUNNING"}
            if path.endswith("/metrics"):
                return []
            vertex = path.rsplit("/", 1)[-1]
            listed = [{"subtask": int(s), "status": st, "attempt": attempts[s]} for s, st in states.items()]
            return {"subtasks": listed if vertex == "a" else []}

    rec = JobRecording("j", (Vertex("a", "src", 2), Vertex("b", "sink", 1)), (Edge("a", "b", "HASH"),))
    monkeypatch.setattr("wmviz.record.rest_job.wall_clock_ms", iter([1_000, 2_000]).__next__)
    poller = JobPoller(Client(), rec)
    assert poller.sample()
    states["1"], attempts["1"] = "RUNNING", 1  # a restart runs it again
    assert poller.sample()
    assert (("a", 0, TASK_FINISHED, None)) not in rec.series
    assert rec.series[("a", 1, TASK_FINISHED, None)] == [(1_000, 1), (2_000, 0)]
    assert rec.finished("a", 1, 1_500) and not rec.finished("a", 1, 2_000)
    assert rec.series[("a", 0, TASK_ATTEMPT, None)] == [(1_000, 0)]  # written when it changes
    assert rec.series[("a", 1, TASK_ATTEMPT, None)] == [(1_000, 0), (2_000, 1)]
    assert rec.restarts() == [2_000] and rec.epoch_at(1_999) == 0 and rec.epoch_at(2_000) == 1


def test_a_restart_starts_an_epoch_of_fresh_valves_in_a_vertexs_trace(walker):
    from copy import deepcopy

    from wmviz.record.job import TASK_ATTEMPT

    rec = deepcopy(walker.rec)
    restart = js.T0 + 300_000
    rec.add((js.JOIN, 2, TASK_ATTEMPT, None), js.T0, 0)
    rec.add((js.JOIN, 2, TASK_ATTEMPT, None), restart, 1)
    assert rec.restarts() == [restart]
    config, rows = vertex_trace(rec, js.WINDOW)
    trace = read_trace_bytes(jsonl_bytes(config, rows), "window.jsonl")
    assert trace.instances == ["0", "1", "0@r1", "1@r1"]
    assert min(r["proc_ms"] for r in rows if r["instance"] == "1@r1") == restart
    assert instance_at(rec, 1, restart - 1) == "1" and instance_at(rec, 1, restart + 50_000) == "1@r1"
    step = step_at(rows, "1@r1", restart + 50_000)
    assert [r for r in rows if r["instance"] == "1@r1"][step]["proc_ms"] == restart + 50_000


def test_hostile_names_and_ship_strategies_stay_text_in_the_figure():
    # Issue 33: Plotly reads its text as HTML-like markup, so a vertex name or a ship strategy
    # holding a link or a style became a clickable link or 150 px text over the chart.
    from wmviz.record.job import Edge, JobRecording, Vertex

    link, style = '<a href="https://evil.example">login</a>', '<span style="font-size:150px">X</span> & co'
    vertices = (Vertex("s", link, 1), Vertex("w", style, 1))
    rec = JobRecording("j", vertices, (Edge("s", "w", '<a href="https://evil.example">HASH</a>'),))
    for t in (0, 10):
        rec.add(("s", 0, "currentOutputWatermark", None), t, t)
        rec.add(("w", 0, "currentOutputWatermark", None), t, t)
    figure = job_graph_figure(graph_at(Walker(rec), None), TimeFormat("utc"))
    nodes = figure["data"][0]
    shown = [*nodes["text"], *nodes["hovertext"], *(a["text"] for a in figure["layout"]["annotations"])]
    assert not any("<a" in text or "<span" in text or "& co" in text for text in shown), shown
    assert '&lt;a href="https://evil.example"&gt;login&lt;/a&gt;' in nodes["text"]
    assert any("&lt;span style" in text and "&amp; co" in text for text in nodes["hovertext"])
    assert any("&lt;a href" in a["text"] and "<br><i>" in a["text"] for a in figure["layout"]["annotations"])
