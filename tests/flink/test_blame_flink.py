"""`wmviz record` without `--vertex` against a real Flink 2.3.0 job, then `wmviz blame`.

tools/flink/record/WmvizWholeJob.java: two FLIP-27 sources (orders, payments; 2 subtasks each);
orders feeds a keyed two-input operator (join) over a hash edge, payments feeds it through a
rescale edge into a 4-subtask map (widen) and a hash edge; a hash edge leads from the join into a
keyed 1 s event-time window chained to a discarding sink. Beside it, a multiple-input operator
(merge, chained to a sink) reads widen as input 1 over a rescale edge (4 subtasks into 2) and
orders as input 2 over a rebalance edge.
Payments' subtask 0 runs 1.5 s behind the clock; orders' subtask 1 goes silent 8 s after it starts
and stays silent (no idleness configured), so it holds the join, the window, the sink and merge
from then on. The whole job is recorded through REST until it ends; blame must name that subtask and
the split Flink reports it reading, and payments' subtask 0 at an early moment.

The job says which reader it silenced (`SILENT orders 1 <split> <last event ms>`), so the checks
ask blame at a sample where that split alone holds the job, as read (`Silent.holding_alone`: it
and both sinks stand where the job froze it, every other source subtask is past it, nothing has
finished yet): the answer is the same however many samples a busy machine let the recorder take.
Counts only ask for enough samples to answer (at least 5).

Flink 2.3.0's two-input task registers no `currentInput{N}Watermark` (only the minimum over both
inputs, `currentInputWatermark`), and the plan does not say which input an edge feeds, so the
recorder reads the join's two edges as one input: the culprit is the same (the minimum over
non-idle inputs of each input's minimum is the minimum over all non-idle channels), only the hop's
`input` number is 1 (docs/whole-job.md, Limits). The multiple-input task reports each input's
watermark, and the recording reads from those values which input each of merge's edges feeds.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import require_flink
from tools.flink.record.job import Silent, record_then_go, start_job
from wmviz.core.types import MAX_MS
from wmviz.record.job import JobRecording, read_recording

JOB_SECONDS = 18
BOUND_MS = 200  # the job's forBoundedOutOfOrderness


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> tuple[Path, Silent]:
    require_flink("real Flink {version}", "the whole-job recorder's Flink test")
    folder = tmp_path_factory.mktemp("whole")
    out, go = folder / "job.json", folder / "go"
    # The job's time starts once the recorder samples (record_then_go): its first phase is seen
    # however late a busy machine starts the recorder. The recording ends with the job.
    job = start_job(JOB_SECONDS, job_class="WmvizWholeJob", go=go)
    try:
        command = [sys.executable, "-m", "wmviz", "record", "--rest", job.rest, "--job", job.job,
                   "--every", "250ms", "--for", "90s", "--out", str(out)]  # fmt: skip
        proc = record_then_go(command, out, go)
        job.wait_finished(120)
    finally:
        job.stop()
    assert proc.returncode == 0, proc.stderr
    return out, job.silent()


@pytest.fixture(scope="module")
def whole_job(run) -> Path:
    return run[0]


def held_at(rec: JobRecording, silent: Silent) -> int:
    """The last sample at which the silent split alone holds the job, as read
    (`Silent.holding_alone`: after it the sources end, their subtasks finishing one by one)."""
    held = silent.holding_alone(rec, BOUND_MS)
    assert held, f"no sample shows {silent} alone holding the job (frozen, both sinks there, the rest past)"
    return held[-1]


@pytest.mark.flink
def test_the_whole_job_is_recorded_with_its_plan_and_split_metrics(whole_job):
    rec = read_recording(whole_job)
    names = {v.name: v for v in rec.vertices}
    sinks = {"window -> discard: Writer", "merge -> drop: Writer"}
    assert set(names) == {"Source: orders", "Source: payments", "widen", "join", *sinks}
    assert names["window -> discard: Writer"].operators == ("window", "discard: Writer")
    assert names["widen"].parallelism == 4
    strategies = {(rec.vertex(e.source).name, rec.vertex(e.target).name): e.strategy for e in rec.edges}
    assert strategies == {
        ("Source: orders", "join"): "HASH",
        ("Source: payments", "widen"): "RESCALE",
        ("widen", "join"): "HASH",
        ("join", "window -> discard: Writer"): "HASH",
        ("Source: orders", "merge -> drop: Writer"): "REBALANCE",
        ("widen", "merge -> drop: Writer"): "RESCALE",
    }
    orders = names["Source: orders"].id
    assert rec.splits_of(orders, 0) and rec.splits_of(orders, 1)
    assert len(rec.times()) >= 5  # enough to answer; how many follows the machine's load


@pytest.mark.flink
def test_blame_names_the_silent_source_subtask_and_its_split(run):
    whole_job, silent = run
    rec = read_recording(whole_job)
    at = held_at(rec, silent)
    proc = subprocess.run([sys.executable, "-m", "wmviz", "blame", str(whole_job), "--json", "--at", str(at)],
                          capture_output=True, text=True)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    chain = json.loads(proc.stdout)["chain"]
    assert chain[0]["vertex"] == "window -> discard: Writer"
    assert chain[1]["vertex"] == "join"
    root = chain[-1]
    orders = next(v.id for v in rec.vertices if v.name == "Source: orders")
    assert (root["vertex"], root["subtask"], root["split"]) == ("Source: orders", 1, silent.split)
    assert root["split"] in rec.splits_of(orders, 1)
    # Held where the job froze it, while the others kept going: behind them.
    assert root["watermark_ms"] == silent.frozen_ms(BOUND_MS) and root["behind_ms"] > 0, root


@pytest.mark.flink
def test_the_real_jobs_recording_opens_on_its_graph_and_each_vertex_replays_as_it_reported(run):
    from wmviz.analysis.blame import Walker
    from wmviz.analysis.job_moment import graph_at
    from wmviz.core.simulate import simulate
    from wmviz.record.agreement import UNEXPLAINED, ReplayCheck
    from wmviz.record.job_trace import vertex_trace
    from wmviz.record.output import jsonl_bytes
    from wmviz.trace.readers import read_trace_bytes
    from wmviz.view.timefmt import TimeFormat

    whole_job, silent = run
    rec = read_recording(whole_job)
    held = held_at(rec, silent)
    graph = graph_at(Walker(rec), held)
    names = {v.id: v.name for v in graph.vertices}
    assert [names[h.vertex] for h in graph.chain] == ["window -> discard: Writer", "join", "Source: orders"]
    assert graph.chain[-1].subtask == 1 and graph.chain[-1].held_by.startswith("split ")
    assert len({v.layer for v in graph.vertices}) == 4  # sources, widen, join, window
    for vertex in rec.vertices:
        if not rec.inputs_of(vertex.id):
            continue
        config, rows = vertex_trace(rec, vertex.id)
        check = ReplayCheck()
        sampled_at: dict[int, int | None] = {}
        for result in simulate(read_trace_bytes(jsonl_bytes(config, rows), "vertex.jsonl")):
            check.observe(result)
            sampled_at[result.step] = result.row.proc_ms
        # Where the job's value and what it reads stood still since the sample before (the join,
        # the window and merge once orders' subtask 1 is silent), the replay must equal it, however
        # far apart a busy machine read the vertices of one sample. At most two may differ, as
        # `record`'s agreement allows two unexplained: a quiet run (load 1-3) once found merge 39 ms
        # ahead of the replay at two steady samples (not understood yet; most likely its metrics
        # read a moment after its inputs'); a wrong rule or mapping differs at nearly every one.
        # Not widen: it reads only payments, which never stops while the job runs, so a widen
        # sample that stood still is a stalled machine, not a steady job (CI once held widen 200 ms
        # behind payments' reported output for 8 samples in a row: a watermark not yet delivered).
        # Only up to the held moment: after it the sources finish one by one, and a finished
        # subtask's MAX never shows in its own metrics (CI once found the join steady 10 s ahead of
        # the replay for 8 samples: orders' subtask 1 had finished, its last reported value frozen).
        if vertex.name != "widen":
            steady = [c for c in _steady(check) if (sampled_at[c.step] or MAX_MS) <= held]
            assert steady, vertex.name
            assert sum(not c.agrees for c in steady) <= 2, (vertex.name, [c for c in steady if not c.agrees])
        # Elsewhere most samples differ, if at all, for a named reason: read while a watermark was
        # in flight (the job still behind the replay, at or past its previous output), or with one
        # vertex's metrics read a moment after another's (a whole-job sample is several REST
        # calls). How many follows the machine's load: 5 % in flight on a quiet run, 12-17 % with
        # the suite beside the job, 35 % of the join's under the suite and a fuzz run, more with
        # two CPU hogs beside it; a wrong channel mapping or valve rule shows as the job ahead of
        # the replay or behind its previous output (unexplained), and at the steady samples above.
        explained = sum(c.agrees or c.cause != UNEXPLAINED for c in check.checks) / len(check.checks)
        assert explained >= 0.5, (vertex.name, check.summary(TimeFormat()))


def _steady(check) -> list:
    """The checks at which both the job's value and the replay's (what the upstream reported)
    stood where they were at the sample before (not the end: finished sources send MAX, which
    their own metrics never show)."""
    from wmviz.record.agreement import END_OF_INPUT

    before: dict[str, tuple[int, int]] = {}
    steady = []
    for c in check.checks:
        now = (c.reported_ms, c.replay_ms)
        if before.get(c.instance) == now and c.cause != END_OF_INPUT and c.reported_ms != MAX_MS:
            steady.append(c)
        before[c.instance] = now
    return steady


def _mapped_nearer(rec, edge, metric: str) -> tuple[int, int]:
    """Over the pairs of target subtasks whose upstream subtasks (by wmviz's mapping of the edge)
    differ by 1 s or more (payments' subtasks run 1.5 s apart) at a sample: how often the one the
    mapping says reads the slower upstream also reports the lower `metric`, and how often not.
    Each side compares values of one vertex, read in one REST call: how long a busy machine took
    between vertices of a sample does not matter."""
    target, upstream = rec.vertex(edge.target), rec.vertex(edge.source)
    nearer = farther = 0
    for t in rec.times():
        outs = [rec.output_at(upstream.id, s, t) for s in range(upstream.parallelism)]
        if None in outs:
            continue
        mapped = [min(outs[s] for s in rec.channels(edge, j)) for j in range(target.parallelism)]
        reported = [rec.value_at((target.id, j, metric, None), t) for j in range(target.parallelism)]
        for j in range(target.parallelism):
            for k in range(target.parallelism):
                if reported[j] is None or reported[k] is None or mapped[j] + 1000 > mapped[k]:
                    continue
                if reported[j] < reported[k]:
                    nearer += 1
                else:
                    farther += 1
    return nearer, farther


@pytest.mark.flink
def test_rescale_edges_map_upstream_subtasks_as_the_job_reads_them(whole_job):
    """Payments' two subtasks run 1.5 s apart, so do the widen subtasks reading each, and so do
    merge's two subtasks reading two widen subtasks each. Each target subtask reports the input
    watermark of the ones it reads: wmviz's pointwise mapping (2 -> 4 and 4 -> 2) must name them,
    at (nearly) every sample the subtask mapped to the slower upstream reporting the lower value."""
    rec = read_recording(whole_job)
    names = {v.name: v.id for v in rec.vertices}
    (widening,) = rec.inputs_of(names["widen"])[1]
    (narrowing,) = [e for e in rec.edges if e.source == names["widen"] and e.strategy == "RESCALE"]
    # Flink's pointwise pattern: 2 -> 4 one upstream subtask each, 4 -> 2 two each.
    assert [rec.channels(widening, j) for j in range(4)] == [[0], [0], [1], [1]]
    assert [rec.channels(narrowing, j) for j in range(2)] == [[0, 1], [2, 3]]
    for edge, metric in (
        (widening, "currentInputWatermark"),
        (narrowing, f"currentInput{narrowing.input}Watermark"),
    ):
        nearer, farther = _mapped_nearer(rec, edge, metric)
        # At least a few samples' worth (how many samples there are follows the machine's load).
        # A wrong mapping names the slower upstream for about half the pairs or fewer; the right
        # one for most, the rest watermarks still in flight when the metrics were read (CI under
        # load: 9 of 81 at a 500 ms gap; beside a CPU hog at a load of 15, 9 of 42 at a 1 s gap):
        # the right mapping names it at least twice as often as not.
        assert nearer >= 5 and farther <= max(1, nearer // 2), (edge, nearer, farther)


@pytest.mark.flink
def test_blame_names_another_culprit_early_on_through_the_rescale_edge(whole_job):
    """Before orders' subtask 1 falls silent, payments' subtask 0 (1.5 s behind) holds the job:
    blame at such a moment walks join -> widen (a subtask reading payments' 0) -> payments."""
    rec = read_recording(whole_job)
    names = {v.name: v.id for v in rec.vertices}
    orders, payments = names["Source: orders"], names["Source: payments"]

    def payments_behind(t: int) -> bool:
        outs = {(v, s): rec.output_at(v, s, t) for v in (orders, payments) for s in (0, 1)}
        if any(o is None or o < 0 for o in outs.values()):
            return False  # a reader has not emitted yet
        slow = outs.pop((payments, 0))
        return all(slow + 500 <= o for o in outs.values())  # type: ignore[operator]

    # The readers start together; orders' subtask 1 falls silent 8 s later, so the first seconds
    # of the recording have payments' subtask 0 the slowest source subtask by far.
    at = next((t for t in rec.times() if payments_behind(t)), None)
    assert at is not None, "no sample with payments' subtask 0 the slowest (the recording began late?)"
    proc = subprocess.run([sys.executable, "-m", "wmviz", "blame", str(whole_job), "--json",
                           "--vertex", "join", "--at", str(at)], capture_output=True, text=True)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    chain = json.loads(proc.stdout)["chain"]
    assert [h["vertex"] for h in chain] == ["join", "widen", "Source: payments"], chain
    assert chain[1]["subtask"] in (0, 1)
    assert chain[-1]["subtask"] == 0 and chain[-1]["behind_ms"] >= 1000


@pytest.mark.flink
def test_each_input_of_the_multiple_input_operator_is_read_from_its_watermarks(run):
    """The plan lists merge's edges orders first (`num` 0), but its input 1 is widen's: the
    recording must take each edge's input from merge's `currentInput{N}Watermark`, and the join,
    whose task reports no per-input watermark, reads its edges as one input."""
    whole_job, silent = run
    rec = read_recording(whole_job)
    names = {v.name: v.id for v in rec.vertices}
    merge, join = names["merge -> drop: Writer"], names["join"]
    in_plan_order = [rec.vertex(e.source).name for e in rec.edges if e.target == merge]
    assert in_plan_order == ["Source: orders", "widen"]  # `num` 0, 1: not the inputs' order
    inputs = {rec.vertex(e.source).name: e.input for e in rec.edges if e.target == merge}
    assert inputs == {"widen": 1, "Source: orders": 2}, rec.notes
    assert {e.input for e in rec.edges if e.target == join} == {1}
    assert not [
        k
        for k in rec.series
        if k[0] == join and k[2].startswith("currentInput") and k[2] != "currentInputWatermark"
    ]
    assert not rec.notes
    command = [sys.executable, "-m", "wmviz", "blame", str(whole_job), "--json", "--vertex", "merge",
               "--at", str(held_at(rec, silent))]  # fmt: skip
    proc = subprocess.run(command, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    chain = json.loads(proc.stdout)["chain"]
    assert [(h["vertex"], h["input"]) for h in chain] == [
        ("merge -> drop: Writer", 2),
        ("Source: orders", None),
    ]
    assert (chain[-1]["subtask"], chain[-1]["split"]) == (silent.subtask, silent.split)
