"""Differential test: wmviz's watermark alignment (wmviz/core/alignment.py, split_alignment.py, splits.py)
against Flink 2.3.0's real SourceOperator, one per source subtask (WmvizAlignmentHarness.java,
driven by tools/flink/record/alignment.py), on named cases and `ALIGNMENT_TRACES` seeded random
traces. Per row: the watermarks and statuses each subtask sends, the records it reads or holds
back, the paused splits and waiting subtasks, and every reported watermark. The coordinator's rule
(`announce`) is wmviz's on both sides: modelled, not checked here.
"""

from __future__ import annotations

import functools
from collections import Counter

import pytest

from tests.conftest import require_flink
from tools.flink.record.alignment import (
    AlignTrace,
    Harness,
    first_difference,
    flink_steps,
    hand_written,
    random_trace,
    wmviz_steps,
)
from tools.flink.valve.jar import HarnessError, flink_jar_path
from wmviz.core import split_alignment
from wmviz.core.alignment import WatermarkSampler
from wmviz.core.splits import SplitReader
from wmviz.view.checked import ALIGNMENT_SEED_BASE, ALIGNMENT_TRACES


@functools.cache
def corpus() -> tuple[AlignTrace, ...]:
    return (*hand_written(), *(random_trace(ALIGNMENT_SEED_BASE + i) for i in range(ALIGNMENT_TRACES)))


@pytest.fixture(scope="module")
def harness():
    require_flink("real Flink {version} SourceOperator", "the alignment differential")
    running = Harness(jar=flink_jar_path())
    yield running
    running.close()


@pytest.fixture(scope="module")
def flink(harness):
    return [flink_steps(harness, trace) for trace in corpus()]


def _differences(flink) -> list[str]:
    return [
        d
        for trace, (steps, problems) in zip(corpus(), flink, strict=True)
        if (d := first_difference(trace, steps, problems))
    ]


@pytest.mark.flink
def test_wmviz_alignment_equals_flinks_source_operator(flink):
    differences = _differences(flink)
    assert not differences, f"{len(differences)} of {len(corpus())} traces differ; first:\n{differences[0]}"


@pytest.mark.flink
def test_comparing_the_latest_watermark_instead_of_the_sampled_one_is_caught(flink, monkeypatch):
    """wmviz before this check compared the latest watermark; Flink 2.3 compares the one sampled
    `buffer_size` updates ago."""
    monkeypatch.setattr(WatermarkSampler, "oldest_ms", lambda self: self.latest_ms)
    assert len(_differences(flink)) >= 10


@pytest.mark.flink
def test_stopping_every_split_clock_while_the_subtask_waits_is_caught(flink, monkeypatch):
    """wmviz before this check stopped the splits' idleness clocks while their subtask waited;
    Flink stops only the main output's."""
    set_paused = SplitReader.set_paused

    def all_clocks(self, state, paused):
        set_paused(self, state, paused)
        if state is None:
            for split in self.splits.values():
                (split.clock.pause if paused else split.clock.resume)(self.now_ms)

    monkeypatch.setattr(SplitReader, "set_paused", all_clocks)
    assert _differences(flink)


@pytest.mark.flink
def test_pausing_only_at_updates_is_caught(flink, monkeypatch):
    """Flink also pauses between updates: a split that turns active while ahead, and (without a
    sampling ring) a watermark that passes the allowance."""
    monkeypatch.setattr(SplitReader, "maybe_pause", lambda self: None)
    assert len(_differences(flink)) >= 10


@pytest.mark.flink
def test_pausing_and_resuming_idle_splits_is_caught(flink, monkeypatch):
    """Flink leaves an idle split as it is at an update; wmviz did not."""
    align = split_alignment.align

    def idle_too(reader, announcement, now_ms, group, drift_ms):
        idle = {name: state.partial_idle for name, state in reader.splits.items()}
        for state in reader.splits.values():
            state.partial_idle = False
        align(reader, announcement, now_ms, group, drift_ms)
        for name, was in idle.items():
            reader.splits[name].partial_idle = was

    monkeypatch.setattr(split_alignment, "align", idle_too)
    assert len(_differences(flink)) >= 10


@pytest.mark.flink
def test_the_harness_fails_on_what_flink_refuses(harness):
    """The harness reports Flink's exceptions (here: the clock sent backwards) as failures."""
    assert harness.ask("N 0 - 3 200 1000 a") == ["ok"]
    harness.ask("P 400")
    with pytest.raises(HarnessError, match="cannot go back"):
        harness.ask("P 200")


def test_the_corpus_pauses_holds_and_resumes():
    """What the corpus exercises, counted on wmviz (no JVM needed)."""
    seen: Counter[str] = Counter()
    for trace in corpus():
        seen[f"buffer {min(trace.buffer_size, 1)}"] += 1
        seen["idle timeout"] += trace.idle_timeout_ms is not None
        for step in wmviz_steps(trace):
            seen["split paused"] += any(
                s.startswith(tuple("0123")) and "paused=" in s and not s.endswith("=-") for s in step.state
            )
            seen["subtask waits"] += any(s.endswith(":wait") for s in step.state)
            seen["idle"] += any(s.endswith("S:IDLE") for s in step.sent)
            seen["read"] += len(step.read)
    wanted = {"buffer 0": 40, "buffer 1": 100, "idle timeout": 60, "split paused": 1000, "subtask waits": 500}
    wanted |= {"idle": 100, "read": 5000}
    thin = {k: seen[k] for k, n in wanted.items() if seen[k] < n}
    assert not thin, f"corpus features below their minimum: {thin} (all: {dict(seen)})"
