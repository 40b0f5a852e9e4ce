"""The job graph at a hundred vertices (issue 32, Deliver 3), pure: no browser.

The job is `bench/blame.py`'s generator (the one `bench/job_scale.py` measures): a source of 10
subtasks, then 99 vertices in a chain over HASH edges, 1,000 subtasks in all; source subtask 0
stops half way and holds the whole job. The layout folds into a bounded grid, every vertex's
subtasks read as a group (checked against the recording's own series, not against the walker
that fills the graph), the chain is listed short, and every edge's hover says what it carries.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from bench.blame import write_job
from tests.record.test_jobgraph import walker as fixture_walker  # noqa: F401
from tests.support import job_shape as js
from wmviz.analysis.blame import Walker
from wmviz.analysis.job_moment import graph_at
from wmviz.record.job import read_recording
from wmviz.view.jobgraph import COMPACT_AT, PICKED_COLOR, job_graph_figure
from wmviz.view.jobgraph_groups import chain_lines, group_line, group_rows
from wmviz.view.jobgraph_layout import MAX_COLUMNS, MAX_ROWS, fold
from wmviz.view.timefmt import TimeFormat, duration

T = TimeFormat("utc")


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> Walker:
    path: Path = tmp_path_factory.mktemp("job100") / "job100.json"
    write_job(path, 100, 10, 0, 30, False)
    return Walker(read_recording(path))


def test_a_hundred_layers_fold_into_bands_of_bounded_width():
    chain = fold([(f"v{i}", i) for i in range(100)])
    assert chain.columns == MAX_COLUMNS and chain.bands == 9
    assert len(set(chain.where.values())) == 100  # no two vertices on one spot
    # Flow stays readable: left to right within a band, the next band below the last.
    assert chain.where["v1"][0] == chain.where["v0"][0] + 1 and chain.where["v1"][1] == chain.where["v0"][1]
    assert (
        chain.where[f"v{MAX_COLUMNS}"][0] == 0
        and chain.where[f"v{MAX_COLUMNS}"][1] < chain.where["v0"][1] - 1
    )


def test_a_wide_layer_is_cut_into_columns_and_a_small_job_keeps_its_layers():
    wide = fold([("s", 0), *((f"k{i}", 1) for i in range(45))])
    ks = [wide.where[f"k{i}"] for i in range(45)]
    assert {x for x, _ in ks} == {1.0, 2.0, 3.0, 4.0, 5.0} and wide.rows == MAX_ROWS
    assert sum(1 for x, _ in ks if x == 1.0) == MAX_ROWS
    small = fold([("a", 0), ("b", 0), ("c", 1)])
    assert small.where == {"a": (0.0, 0.5), "b": (0.0, -0.5), "c": (1.0, 0.0)} and small.bands == 1


def test_every_vertex_reads_as_a_group_as_its_subtasks_reported(big):
    graph = graph_at(big, None)
    rec, t = big.rec, graph.at_ms
    for vertex in graph.vertices:
        outs = [rec.outputs_over(vertex.id, s, [t])[0] for s in range(vertex.parallelism)]
        low = min(outs)
        assert vertex.output_ms == low and vertex.high_ms == max(outs), vertex.id
        assert vertex.culprit == outs.index(low) and vertex.idle_subtasks == 0
    source = graph.vertices[0]
    assert source.culprit == 0 and source.spread_ms == source.high_ms - source.output_ms
    assert source.spread_ms > 60_000  # subtask 0 stopped half way; the others ran on
    line = group_line(source, T)
    assert line == (
        f"10 subtasks · min {T(source.output_ms)} (culprit: subtask 0) · max {T(source.high_ms)} · "
        f"spread {duration(source.spread_ms)}"
    )
    row = group_rows(graph, T)[0]
    assert row["culprit subtask"] == 0 and row["spread"] == duration(source.spread_ms)


def test_a_group_says_when_every_subtask_is_idle_or_none_reported(big):
    vertex = graph_at(big, None).vertices[5]
    assert group_line(replace(vertex, idle=True, idle_subtasks=10), T).startswith(
        "10 subtasks, 10 idle: every"
    )
    assert group_line(replace(vertex, output_ms=None), T) == "10 subtasks: no watermark reported"


def test_a_hundred_hop_chain_is_listed_in_three_lines_its_ends_kept(big):
    graph = graph_at(big, None)
    assert len(graph.chain) == 100 and graph.stalled
    lines = chain_lines(graph, T)
    assert [line.vertices for line in lines] == ["op 99", "op 98 → … → op 1 (98 vertices alike)", "Source: s"]
    assert sum(line.hops for line in lines) == 100
    assert lines[1].detail.startswith(f"each subtask 0 held by input 1 at {T(graph.chain[1].watermark_ms)}")
    assert "its own reading" in lines[-1].detail


def test_a_short_chain_is_never_folded(fixture_walker):  # noqa: F811
    graph = graph_at(fixture_walker, None)
    lines = chain_lines(graph, T)
    assert [line.hops for line in lines] == [1] * len(graph.chain)
    assert lines[-1].vertices == "Source: orders" and "split 'orders-5'" in lines[-1].detail
    assert [line.vertices for line in lines][:2] == [v.name for v in graph.vertices if v.id == js.WINDOW] + [
        v.name for v in graph.vertices if v.id == js.JOIN
    ]


def test_the_big_figure_is_compact_its_edges_hovered_and_the_picked_vertex_ringed(big):
    graph = graph_at(big, None)
    assert len(graph.vertices) > COMPACT_AT
    figure = job_graph_figure(graph, T, picked="v57")
    layout = figure["layout"]
    assert layout["height"] <= 760  # fits beside the chain on a 1440×900 screen, below the slider
    assert not [a for a in layout["annotations"] if a["text"]]  # no labels covering a small graph
    edges = figure["data"][1]
    assert len(edges["hovertext"]) == len(graph.edges) == 99
    assert "customdata" not in edges  # a click on an edge picks no vertex
    carried = {e.source: e.watermark_ms for e in graph.edges}
    assert f"carries {T(carried['v0'])}" in edges["hovertext"][0] and edges["hovertext"][0].startswith(
        "Source: s → op 1"
    )
    picked = figure["data"][2]
    assert picked["customdata"] == ["v57"] and picked["marker"]["color"] == PICKED_COLOR
    assert picked["text"] == ["<b>op 57</b>"]
    assert "lowest: subtask 0" in figure["data"][0]["hovertext"][0]
    assert "purple ring, bold name: the vertex you picked" in [d.get("name") for d in figure["data"]]
    x, y = figure["data"][0]["x"], figure["data"][0]["y"]
    assert max(x) - min(x) == MAX_COLUMNS - 1 and layout["xaxis"]["range"][1] > max(x)
    assert layout["yaxis"]["range"][0] < min(y) and layout["yaxis"]["range"][1] > max(y)
