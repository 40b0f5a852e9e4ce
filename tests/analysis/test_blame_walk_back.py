"""The walk back to where a hold or a stall began: the exact sample, on a long stall, read once.

A source of one subtask with two splits, into a one-subtask window over a HASH edge, 600 samples a
second apart. Split "b" is the lower one until sample `SWITCH`, then split "a" falls behind it and
holds the job from there; split "a" stops at sample `STOP` and its watermark stands still to the
end. So at the last sample the chain's root is held by split "a" since `SWITCH`, the window's
output has stood still since `STOP` (the first sample of the run it did not move over), and the
budget's root has stood still since `STOP` too. One sample early or late is a wrong answer: the
tests ask at moments either side of both edges. The cost test counts the series read, not time.
"""

from __future__ import annotations

import numpy as np
import pytest

from wmviz.analysis import blame_columns
from wmviz.analysis.blame import Walker
from wmviz.analysis.blame_columns import run_starts
from wmviz.analysis.job_moment import graph_at
from wmviz.analysis.lag_budget import LagBudget
from wmviz.record.job import Edge, JobRecording, Vertex

T0 = 1_795_633_000_000
SAMPLES, SWITCH, STOP = 600, 100, 250
SOURCE, WINDOW = Vertex("s", "Source: s", 1), Vertex("w", "Window: w", 1)


def at(i: int) -> int:
    return T0 + i * 1000


def job() -> JobRecording:
    rec = JobRecording("j", (SOURCE, WINDOW), (Edge("s", "w", "HASH"),))
    for i in range(SAMPLES):
        a = at(min(i, STOP)) - (60_000 if i >= SWITCH else 0) - 2_000
        b = at(i) - 30_000
        rec.add(("s", 0, "currentWatermark", "a"), at(i), a)
        rec.add(("s", 0, "currentWatermark", "b"), at(i), b)
        rec.add(("s", 0, "currentOutputWatermark", None), at(i), min(a, b))
        rec.add(("w", 0, "currentOutputWatermark", None), at(i), min(a, b))
    return rec


def test_run_starts_finds_each_runs_first_sample():
    same = [False, True, True, False, True, False, False, True]
    assert run_starts(np.array(same)).tolist() == [0, 0, 0, 3, 3, 5, 6, 6]
    assert run_starts(np.array([True, True])).tolist() == [0, 0]  # sample 0 starts
    assert run_starts(np.array([], bool)).tolist() == []


@pytest.mark.parametrize("i", [SWITCH, SWITCH + 1, STOP - 1, STOP, STOP + 1, SAMPLES - 1])
def test_the_root_is_held_by_its_split_since_the_switch(i):
    blame = Walker(job()).blame(None, at(i))
    assert [h.vertex for h in blame.chain] == ["Window: w", "Source: s"]
    root = blame.chain[-1]
    assert root.split == "a" and root.since_ms == at(SWITCH)
    assert blame.chain[0].since_ms == at(0)  # the window's one channel held it from the start


@pytest.mark.parametrize("i", [1, SWITCH - 1])
def test_before_the_switch_the_other_split_holds_it_from_the_start(i):
    root = Walker(job()).blame(None, at(i)).chain[-1]
    assert root.split == "b" and root.since_ms == at(0)


@pytest.mark.parametrize("i", [STOP, STOP + 1, STOP + 2, 400, SAMPLES - 1])
def test_a_stall_stood_still_since_the_first_sample_it_did_not_move_over(i):
    walker = Walker(job())
    assert walker.still_since("w", at(i)) == at(STOP)
    assert walker.same_since(("s", 0, "currentWatermark", "a"), at(i)) == at(STOP)
    assert walker.blame(None, at(i)).chain[0].vertex == "Window: w"  # the vertex standing still


def test_a_moving_watermark_stands_still_since_now():
    walker = Walker(job())
    assert walker.still_since("w", at(STOP - 1)) == at(STOP - 1)
    assert walker.still_since("w", at(SWITCH)) == at(SWITCH)  # it fell, which is a move


def test_the_page_and_the_budget_read_the_same_walk_back():
    rec = job()
    walker = Walker(rec)
    graph = graph_at(walker, None)
    assert [h.since_ms for h in graph.chain] == [at(0), at(SWITCH)]
    budget = LagBudget(rec, walker).at(walker.vertex("w"), None)
    stall = next(p for p in budget.parts if p.cause == "stall")
    assert "has not moved for 5m 49s " in stall.why  # SAMPLES - 1 - STOP = 349 samples of 1 s


def test_a_walk_back_over_every_moment_reads_each_series_once(monkeypatch):
    reads: list[int] = []
    real = blame_columns.over_times

    def counting(rec, keys, times):
        reads.append(len(keys))
        return real(rec, keys, times)

    monkeypatch.setattr(blame_columns, "over_times", counting)
    walker = Walker(job())
    answers = [walker.blame(None, at(i)) for i in range(SAMPLES)]
    assert answers[-1].chain[-1].since_ms == at(SWITCH)
    # Two vertices' outputs and finished flags, the splits' three series, nothing per moment.
    assert len(reads) <= 8, reads


def test_growth_from_min_or_to_max_is_exact_not_wrapped():
    # np.abs(-2^63) is -2^63: read as "small", a step up from MIN was subtracted in int64 and
    # wrapped; a sample time at MIN likewise. Both are now compared as Python ints.
    import numpy as np

    from wmviz.analysis.blame_columns import twice_grew_at_least

    low, high = -(2**63), 2**63 - 1
    values = np.array([[low, 0], [0, high], [5, 6]], dtype=np.int64)
    present = np.ones_like(values, dtype=bool)
    grew, both = twice_grew_at_least(values, present, np.array([0, 1_000], dtype=np.int64))
    assert grew[:, 1].tolist() == [True, True, False] and both[:, 1].all()
    grew, _ = twice_grew_at_least(values, present, np.array([low, 1_000], dtype=np.int64))
    # 2^63 + 1000 ms between the samples: twice a rise of 2^63 (from MIN, to MAX) is still more
    assert grew[:, 1].tolist() == [True, True, False]
