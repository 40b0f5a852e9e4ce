"""Blame on a healthy job says nothing is stalled, and blame's cost grows with what it reads.

A healthy job here: a source of two subtasks, one 500 ms behind the other, both moving a second a
sample, into a one-subtask window. Under `LAG_THRESHOLD_MS` blame names the slowest path and says
nothing is stalled (issue 30 item 3); a subtask that stops, or a job that stands still, is a stall.
The cost tests count the work (channels listed, sample times looked through), not the time.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from wmviz.analysis.blame import LAG_THRESHOLD_MS, Walker
from wmviz.analysis.job_moment import graph_at
from wmviz.record.job import Edge, JobRecording, Vertex, write_recording
from wmviz.view.jobgraph import CHAIN_COLOR, PATH_COLOR, chain_rows, job_graph_figure
from wmviz.view.timefmt import TimeFormat

T0 = 1_795_633_000_000
SOURCE, WINDOW = Vertex("s", "src", 2), Vertex("w", "win", 1)


def job(stop_at: int | None = None, everything_stops: int | None = None, samples: int = 20) -> JobRecording:
    """The healthy job; subtask 1 stops at sample `stop_at`, or every subtask at `everything_stops`."""
    rec = JobRecording("j", (SOURCE, WINDOW), (Edge("s", "w", "HASH"),))
    for i in range(samples):
        t = T0 + i * 1000
        moving = min(i, everything_stops) if everything_stops is not None else i
        outs = [T0 + moving * 1000 - 1000, T0 + moving * 1000 - 1500]
        if stop_at is not None:
            outs[1] = T0 + min(i, stop_at) * 1000 - 1500
        for sub, wm in enumerate(outs):
            rec.add(("s", sub, "currentOutputWatermark", None), t, wm)
        rec.add(("w", 0, "currentOutputWatermark", None), t, min(outs))
    return rec


def test_a_healthy_job_is_not_blamed_and_its_slowest_path_is_named():
    blame = Walker(job()).blame(None, None)
    assert not blame.stalled and blame.lag_ms == 500
    assert blame.ending.startswith(
        "nothing is stalled; the slowest path is 'win' subtask 0 back to 'src' subtask 1"
    )
    assert "500ms behind the leading watermark" in blame.ending
    first, root = blame.chain
    # One watermark, one "behind": both hops carry the slow subtask's watermark, 500 ms behind.
    assert first.watermark_ms == root.watermark_ms and first.behind_ms == root.behind_ms == 500
    assert first.held_by == "input 1" and root.held_by == "its own reading (no split metrics)"
    assert first.since_ms == T0  # held since the recording began (the words say "at least")


def test_a_stopped_subtask_and_a_job_standing_still_are_stalls():
    stopped = Walker(job(stop_at=5)).blame(None, None)
    assert stopped.stalled and stopped.lag_ms >= LAG_THRESHOLD_MS
    assert stopped.ending == "source 'src' subtask 1 holds it"
    assert stopped.chain[-1].since_ms == T0  # the slowest subtask from the first sample on
    still = Walker(job(everything_stops=5)).blame(None, None)
    assert still.lag_ms == 500 and still.stalled  # only 500 ms behind, but standing still for 14 s
    assert still.ending == "source 'src' subtask 1 holds it"


def test_the_command_line_says_so_in_words_and_in_json(tmp_path):
    path = tmp_path / "healthy.json"
    write_recording(job(), path)
    text = subprocess.run([sys.executable, "-m", "wmviz", "blame", str(path)], capture_output=True, text=True)
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert lines[1].startswith("  'win' subtask 0: held by input 1 at ")
    assert "500ms behind the leading watermark, since at least " in lines[1]
    assert lines[1].endswith("(the recording's first sample)")
    assert "held by its own reading (no split metrics)" in lines[2] and "itself" not in text.stdout
    assert " 0ms behind" not in text.stdout
    assert lines[-1].startswith("  → nothing is stalled; the slowest path is")
    out = subprocess.run(
        [sys.executable, "-m", "wmviz", "blame", str(path), "--json"], capture_output=True, text=True
    )
    body = json.loads(out.stdout)
    assert body["stalled"] is False and body["lag_ms"] == 500 and body["lag_threshold_ms"] == LAG_THRESHOLD_MS
    assert body["ending"].startswith("nothing is stalled") and len(body["chain"]) == 2


def test_the_graph_draws_a_healthy_path_apart_from_a_stall_and_has_a_legend():
    t = TimeFormat("utc")
    healthy = graph_at(Walker(job()), None)
    assert [row["since"] for row in chain_rows(healthy, t)] == [
        t(T0) + " or earlier (the recording's start)"
    ] * 2
    figure = job_graph_figure(healthy, t)
    rings = figure["data"][0]["marker"]["line"]["color"]
    assert not healthy.stalled and CHAIN_COLOR not in rings and PATH_COLOR in rings
    legend = [trace for trace in figure["data"] if trace.get("showlegend")]  # after the vertices, edges
    names = [trace["name"] for trace in legend]
    assert "ring, thick edges: the slowest path (nothing is stalled)" in names
    assert {"idle (every subtask)", "finished (MAX)", "no watermark reported"} <= set(names)
    assert all(trace["x"] == [None] for trace in legend)  # nothing to click
    stalled = job_graph_figure(graph_at(Walker(job(stop_at=5)), None), t)
    assert CHAIN_COLOR in stalled["data"][0]["marker"]["line"]["color"]
    assert "ring, thick edges: what holds the watermark (a stall)" in [d.get("name") for d in stalled["data"]]


class CountingTimes(list):
    """A recording's sample times that count the elements a search or a slice looks through."""

    looked = 0

    def index(self, *args):  # type: ignore[override]
        found = super().index(*args)
        CountingTimes.looked += found + 1
        return found

    def __getitem__(self, key):  # type: ignore[override]
        if isinstance(key, slice):
            CountingTimes.looked += len(range(*key.indices(len(self))))
        return super().__getitem__(key)


@pytest.mark.parametrize("samples", [400, 800])
def test_walking_back_a_long_hold_looks_at_each_sample_a_bounded_number_of_times(monkeypatch, samples):
    # Issue 33: `held_since` sliced the times before every sample and `previous` searched them.
    rec = JobRecording("j", (Vertex("s", "src", 1),), ())
    for i in range(samples):
        for k in range(4):
            rec.add(
                ("s", 0, "currentWatermark", f"p{k}"), T0 + i * 1000, T0 + (min(i, 5) if k == 0 else i) * 1000
            )
            rec.add(("s", 0, "accumulatedIdleTimeMs", f"p{k}"), T0 + i * 1000, 0)
        rec.add(("s", 0, "currentOutputWatermark", None), T0 + i * 1000, T0 + min(i, 5) * 1000)
    monkeypatch.setattr(
        JobRecording,
        "times",
        lambda self: CountingTimes(sorted({t for p in self.series.values() for t, _ in p})),
    )
    CountingTimes.looked = 0
    blame = Walker(rec).blame(None, None)
    assert blame.chain[-1].split == "p0" and blame.chain[-1].since_ms == T0  # the lowest id of a tie
    assert CountingTimes.looked <= 4 * samples, CountingTimes.looked


def test_an_all_to_all_edge_is_not_listed_once_per_downstream_subtask(monkeypatch):
    # Issue 33: two vertices of parallelism P behind an idle source asked each downstream subtask
    # about every upstream one: P * P channels (10^9 at 32,768).
    p = 2048
    rec = JobRecording("j", (Vertex("s", "src", p), Vertex("w", "win", p)), (Edge("s", "w", "REBALANCE"),))
    rec.idleness_ms = 1000
    for t in (T0, T0 + 10_000):
        for sub in range(p):
            rec.add(("s", sub, "currentOutputWatermark", None), t, T0)
            rec.add(("s", sub, "sourceIdleTime", None), t, 60_000)
            rec.add(("w", sub, "currentOutputWatermark", None), t, T0)
    listed = 0
    channels = Edge.channels

    def counting(self, *args):
        nonlocal listed
        found = channels(self, *args)
        listed += len(found)
        return found

    monkeypatch.setattr(Edge, "channels", counting)
    graph = graph_at(Walker(rec), None)
    assert graph.ending == "every input channel of 'win' subtask 0 is idle"
    assert listed <= 4 * p, listed


def test_a_chain_of_hundreds_of_vertices_is_walked_without_recursion():
    n = 600
    vertices = tuple(Vertex(f"v{i}", f"op {i}", 1) for i in range(n))
    edges = tuple(Edge(f"v{i - 1}", f"v{i}", "FORWARD") for i in range(1, n))
    rec = JobRecording("j", vertices, edges)
    for t in (T0, T0 + 1000):
        for i in range(n):
            rec.add((f"v{i}", 0, "currentOutputWatermark", None), t, T0)
    assert rec.depth()[f"v{n - 1}"] == n - 1
    blame = Walker(rec).blame(None, None)
    assert len(blame.chain) == n and blame.chain[-1].vertex == "op 0"
    assert len(graph_at(Walker(rec), None).vertices) == n
