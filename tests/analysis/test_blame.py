"""Job recordings, the whole-job Prometheus import and `wmviz blame`, without a JVM.

The fixture (tests/support/job_shape.py, written to tests/data/prometheus/orders-job-*.json) is a 4-vertex
job whose culprit changes: payments subtask 1 lags until 300 s, then orders split orders-5 stops.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import job_shape as js
from wmviz.analysis.blame import Walker
from wmviz.record.job import (
    Edge,
    JobFormatError,
    JobRecording,
    Vertex,
    read_recording,
    write_recording,
)
from wmviz.record.job_inputs import assign_inputs
from wmviz.record.job_plan import plan_of
from wmviz.record.names import name_key

DATA = Path("tests/data/prometheus")
EXPORT, PLAN = DATA / "orders-job-query-range.json", DATA / "orders-job-plan.json"


def _wmviz(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "wmviz", *args], capture_output=True, text=True)


@pytest.fixture(scope="module")
def imported(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("job") / "orders-job.json"
    proc = _wmviz(
        "import", "prometheus", str(EXPORT), "--plan", str(PLAN), "--idleness", "30s", "--out", str(out)
    )
    assert proc.returncode == 0, proc.stderr
    assert "4 vertices, 3 edges" in proc.stdout and "61 samples" in proc.stdout
    return out


def test_the_committed_fixture_is_what_the_generator_writes():
    assert json.loads(PLAN.read_text()) == js.plan()
    assert json.loads(EXPORT.read_text()) == json.loads(json.dumps(js.query_range()))


def test_rescale_and_forward_connect_as_flinks_pointwise_pattern():
    rescale = Edge("a", "b", "RESCALE")
    assert [rescale.channels(j, 4, 2) for j in range(2)] == [[0, 1], [2, 3]]
    assert [rescale.channels(j, 2, 4) for j in range(4)] == [[0], [0], [1], [1]]
    assert [rescale.channels(j, 3, 2) for j in range(2)] == [[0], [1, 2]]
    assert [rescale.channels(j, 2, 3) for j in range(3)] == [[0], [0], [1]]
    assert Edge("a", "b", "FORWARD").channels(1, 2, 2) == [1]
    assert Edge("a", "b", "HASH").channels(1, 3, 2) == [0, 1, 2]


def test_names_meet_as_typed_and_as_the_reporter_filters_them():
    assert name_key("Source: orders") == name_key("Source:_orders")
    assert name_key("Window: revenue -> Sink: warehouse") == name_key("Window:_revenue____Sink:_warehouse")


def test_the_plan_reads_vertices_chains_and_inputs():
    vertices, edges = plan_of(js.plan())
    window = next(v for v in vertices if v.id == js.WINDOW)
    assert window.name == "Window: revenue -> Sink: warehouse"
    assert window.operators == ("Window: revenue", "Sink: warehouse")
    # The plan does not say which input an edge feeds: every edge is read into input 1 ...
    assert [(e.source, e.input) for e in edges if e.target == js.JOIN] == [(js.ORDERS, 1), (js.PAYMENTS, 1)]
    # ... until the join's own per-input watermarks name them.
    rec = JobRecording("j", vertices, edges, dict(js.series()))
    assign_inputs(rec)
    assert [(e.source, e.input) for e in rec.edges if e.target == js.JOIN] == [
        (js.ORDERS, 1),
        (js.PAYMENTS, 2),
    ]
    assert not rec.notes
    with pytest.raises(JobFormatError, match="nodes"):
        plan_of({"vertices": []})
    # An input naming no node of the plan is refused here, not left for the input vote to trip on.
    body = js.plan()
    body["plan"]["nodes"][-1]["inputs"][0]["id"] = "100000"
    with pytest.raises(JobFormatError, match="input '100000' is not a node of the plan"):
        plan_of(body)


def _two_inputs(first: list[int], second: list[int], reported: dict[int, list[int]]) -> JobRecording:
    """Sources a and b (one subtask each) into vertex j (input edges a, b in the plan's order),
    which reports `currentInput{N}Watermark` at each of the samples given."""
    vertices = (Vertex("a", "a", 1), Vertex("b", "b", 1), Vertex("j", "j", 1))
    rec = JobRecording("x", vertices, (Edge("a", "j", "HASH"), Edge("b", "j", "HASH")))
    for t, (wa, wb) in enumerate(zip(first, second, strict=True)):
        rec.add(("a", 0, "currentOutputWatermark", None), t, wa)
        rec.add(("b", 0, "currentOutputWatermark", None), t, wb)
        for number, values in reported.items():
            rec.add(("j", 0, f"currentInput{number}Watermark", None), t, values[t])
    return rec


def test_each_edge_feeds_the_input_whose_watermark_it_carries():
    # b is input 1 although the plan lists a first (as a real job can: docs/whole-job.md).
    rec = _two_inputs([10, 20, 30], [5, 15, 25], {1: [5, 15, 25], 2: [10, 20, 30]})
    assign_inputs(rec)
    assert [(e.source, e.input) for e in rec.edges] == [("a", 2), ("b", 1)]
    assert not rec.notes


def test_inputs_the_values_cannot_tell_apart_are_read_as_one_with_a_note():
    same = _two_inputs([10, 20, 30], [10, 20, 30], {1: [10, 20, 30], 2: [10, 20, 30]})
    assign_inputs(same)
    assign_inputs(same)  # the note is written once
    assert [e.input for e in same.edges] == [1, 1]
    assert same.notes == ["'j' reports 2 input watermarks, but its values do not tell which input each "
                          "of its edges feeds: its edges are read as one input"]  # fmt: skip
    # A single agreeing sample is not enough evidence.
    once = _two_inputs([10], [5], {1: [5], 2: [10]})
    assign_inputs(once)
    assert [e.input for e in once.edges] == [1, 1] and once.notes


def test_blame_at_the_end_names_the_silent_split(imported):
    proc = _wmviz("blame", str(imported), "--json")
    assert proc.returncode == 0, proc.stderr
    chain = json.loads(proc.stdout)["chain"]
    assert list(chain[0]) == [
        "vertex", "subtask", "input", "split", "watermark_ms", "behind_ms", "since_ms", "held_by"
    ]  # fmt: skip
    assert [(h["vertex"], h["subtask"], h["input"], h["split"]) for h in chain] == [
        ("Window: revenue -> Sink: warehouse", 0, 1, None),
        ("Join: orders x payments", 0, 1, None),
        ("Source: orders", 2, None, "orders-5"),
    ]
    root = chain[-1]
    assert root["watermark_ms"] == js.T0 + 290_000
    assert root["since_ms"] == js.T0 + 300_000
    # Behind the job's leading watermark, the one mark every hop and the graph measure from.
    walker = Walker(read_recording(imported))
    lead = walker.leading(js.T0 + 600_000)
    assert lead is not None and lead > js.T0 + 590_000
    assert [h["behind_ms"] for h in chain] == [lead - h["watermark_ms"] for h in chain]
    assert root["behind_ms"] == lead - (js.T0 + 290_000)
    # Payments subtask 0 is lower still, but idle: the valve leaves it out.
    rec = read_recording(imported)
    assert (
        rec.value_at((js.PAYMENTS, 0, "currentOutputWatermark", None), js.T0 + 600_000) < root["watermark_ms"]
    )


def test_blame_earlier_names_a_different_culprit(imported):
    proc = _wmviz("blame", str(imported), "--json", "--at", "2026-11-25T19:00:00Z")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["chain"][-1]["vertex"] == "Source: payments"
    earlier = json.loads(_wmviz("blame", str(imported), "--json", "--at", str(js.T0 + 200_000)).stdout)[
        "chain"
    ]
    assert [(h["vertex"], h["subtask"], h["input"]) for h in earlier] == [
        ("Window: revenue -> Sink: warehouse", 0, 1),
        ("Join: orders x payments", 0, 2),
        ("Source: payments", 1, None),
    ]
    # Payments subtask 0 stopped at 198 s (watermark 196 s, not idle yet): 56 s ahead of subtask 1.
    assert earlier[-1]["behind_ms"] == 56_000 and earlier[-1]["since_ms"] == js.T0


def test_blame_from_a_named_vertex_and_in_words(imported):
    proc = _wmviz("blame", str(imported), "--vertex", "Join:_orders_x_payments", "--at", str(js.T0 + 100_000))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[1].startswith("  'Join: orders x payments' subtask 0: held by input 2")
    assert lines[-1] == "  → source 'Source: payments' subtask 1 holds it"
    bad = _wmviz("blame", str(imported), "--vertex", "nope")
    assert bad.returncode == 2 and "Source: orders" in bad.stderr
    early = _wmviz("blame", str(imported), "--at", str(js.T0 - 1))
    assert early.returncode == 2 and "before the recording's first sample" in early.stderr


def test_rescale_routes_the_walk_to_the_right_upstream_subtask():
    vertices = (Vertex("s", "src", 4), Vertex("w", "win", 2))
    rec = JobRecording("j", vertices, (Edge("s", "w", "RESCALE"),))
    for t in (0, 10):
        for sub in range(4):
            # Source 0 is the slowest of all, but window 1 does not read it; of 2 and 3, 3 is slower.
            rec.add(("s", sub, "currentOutputWatermark", None), t, t + {0: 100, 1: 150, 2: 150, 3: 140}[sub])
        for sub in range(2):
            rec.add(("w", sub, "currentInputWatermark", None), t, 100 + t + (50 if sub == 0 else 0))
    chain = Walker(rec).blame(vertices[1], None).chain
    # Window subtask 1 reads sources 2 and 3 (a contiguous range), not 0 (all to all would).
    assert [(h.vertex, h.subtask) for h in chain] == [("win", 1), ("src", 3)]


def test_every_input_idle_is_said_so():
    vertices = (Vertex("s", "src", 2), Vertex("w", "win", 1))
    rec = JobRecording("j", vertices, (Edge("s", "w", "HASH"),), idleness_ms=1000)
    for t in (0, 10_000):
        for sub in range(2):
            rec.add(("s", sub, "currentOutputWatermark", None), t, 5)
            rec.add(("s", sub, "sourceIdleTime", None), t, t)
        rec.add(("w", 0, "currentOutputWatermark", None), t, 5)
    blame = Walker(rec).blame(None, None)
    assert blame.ending == "every input channel of 'win' subtask 0 is idle"
    assert Walker(rec).blame(None, 0).chain[-1].vertex == "src"  # before it went idle


def test_a_plan_with_a_cycle_through_idle_inputs_ends_the_walk_saying_so():
    # The issue-24 fuzz run (seed 1 #94419): an edge's source renamed into a cycle made the
    # idleness of a subtask ask itself without end (RecursionError).
    vertices = (Vertex("s", "src", 1), Vertex("a", "op", 1), Vertex("b", "sink", 1))
    edges = (Edge("s", "a", "FORWARD"), Edge("a", "b", "FORWARD"), Edge("b", "a", "FORWARD"))
    rec = JobRecording("j", vertices, edges, idleness_ms=1000)
    for t in (0, 10_000):
        rec.add(("s", 0, "currentOutputWatermark", None), t, 5)
        rec.add(("s", 0, "sourceIdleTime", None), t, t)
        for vid in ("a", "b"):
            rec.add((vid, 0, "currentOutputWatermark", None), t, 3)
    assert Walker(rec).blame(None, None).ending == "the plan has a cycle"


def test_a_recording_survives_writing_and_reading(tmp_path):
    vertices, edges = plan_of(js.plan())
    rec = JobRecording("j", vertices, edges, dict(js.series()), idleness_ms=30_000, notes=["n"])
    assign_inputs(rec)
    assert {e.input for e in rec.edges} == {1, 2}
    write_recording(rec, tmp_path / "r.json")
    again = read_recording(tmp_path / "r.json")
    assert again.series == rec.series and again.edges == rec.edges and again.vertices == rec.vertices
    (tmp_path / "bad.json").write_text('{"format": "other"}')
    with pytest.raises(JobFormatError, match="not a job recording"):
        read_recording(tmp_path / "bad.json")


def test_one_operator_import_reads_operator_scope_and_lists_what_it_found(tmp_path):
    out = tmp_path / "window.jsonl"
    proc = _wmviz(
        "import",
        "prometheus",
        str(EXPORT),
        "--vertex",
        "Window: revenue",
        "--upstream",
        "Join: orders x payments",
        "--out",
        str(out),
    )
    assert proc.returncode == 0, proc.stderr
    assert "61 samples" in proc.stdout
    bad = _wmviz("import", "prometheus", str(EXPORT), "--out", str(out))
    assert bad.returncode == 2
    assert "--vertex is needed" in bad.stderr and "Window:_revenue____Sink:_warehouse" in bad.stderr
    assert "task_operator_split_watermark_currentWatermark: ['Source:_orders']" in bad.stderr
    plan_out = _wmviz(
        "import", "prometheus", str(EXPORT), "--plan", str(PLAN), "--out", str(tmp_path / "x.csv")
    )
    assert plan_out.returncode == 2 and ".json" in plan_out.stderr
