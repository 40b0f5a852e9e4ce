"""Which samples of a whole-job recording show the silent split alone holding the job
(`tools/flink/record/job.py`, `Silent.holding_alone`): the real-Flink blame and lag tests ask only
there. The recording is one a CI run made beside a CPU hog (issue 30): at its last sample before the
sources end, the silent subtask's output already read MAX while REST still called every task
running, and the sinks still read the frozen value. Asked there, blame rightly named payments; the
test expected the silent split and failed. No Flink is needed to read it again."""

from __future__ import annotations

from tests.support.paths import DATA
from tools.flink.record.job import Silent
from wmviz.analysis.blame import Walker
from wmviz.analysis.job_moment import graph_at
from wmviz.core.types import MAX_MS
from wmviz.record.job import read_recording

RECORDING = DATA / "whole-job" / "silent-split-then-sources-end.json"
SILENT = Silent(source="orders", subtask=1, split="1", last_event_ms=1795992833150)
BOUND_MS = 200  # the test job's forBoundedOutOfOrderness


def blamed(rec, at: int) -> tuple[str, int]:
    graph = graph_at(Walker(rec), at)
    names = {v.id: v.name for v in graph.vertices}
    return names[graph.chain[-1].vertex], graph.chain[-1].subtask


def test_a_sample_where_the_silent_subtask_already_reads_max_is_not_one_it_holds_alone():
    rec = read_recording(RECORDING)
    orders = next(v.id for v in rec.vertices if v.name == "Source: orders")
    held = SILENT.holding_alone(rec, BOUND_MS)
    assert held, "the recording shows the premise"
    after = rec.times()[rec.times().index(held[-1]) + 1]
    # The sample the rule now leaves out: the silent subtask at MAX, nothing finished as REST says.
    assert rec.output_at(orders, SILENT.subtask, after) == MAX_MS
    assert not any(rec.finished(v.id, s, after) for v in rec.vertices for s in range(v.parallelism))
    assert blamed(rec, after) == ("Source: payments", 0)  # what the failing run's blame named
    assert blamed(rec, held[-1]) == ("Source: orders", SILENT.subtask)
    assert all(rec.output_at(orders, SILENT.subtask, t) == SILENT.frozen_ms(BOUND_MS) for t in held)
