"""Differential test: wmviz's per-split stage (wmviz/core/splits.py) against Flink 2.3.0's classes.

`SPLIT_TRACES` seeded traces of records on 1–4 splits of one source reader and clock ticks
(tools/flink/record/splits.py: splits with their own event clocks, some far behind, one mostly
quiet, pauses longer than the timeout, quiet jumps over 1000 probes) run through wmviz's pipeline
with the channel's splits in its generator config and, in one JVM, through Flink's own
WatermarksWithIdleness / BoundedOutOfOrdernessWatermarks per split, WatermarkOutputMultiplexer
and WatermarkToDataOutput, composed as ProgressiveTimestampsAndWatermarks composes split-local
outputs (WmvizSplitHarness.java). For every row the reader must send the same watermarks, IDLE
and ACTIVE, in the same order.
"""

from __future__ import annotations

import functools
from collections import Counter

import pytest

from tests.conftest import require_flink
from tools.flink.record.split_lifecycle import (
    LifecycleTrace,
    first_lifecycle_difference,
    lifecycle_config,
    lifecycle_rows,
    random_lifecycle_trace,
    run_lifecycle,
)
from tools.flink.record.splits import (
    first_split_difference,
    random_split_trace,
    run_splits,
    split_config,
    split_rows,
)
from tools.flink.valve.jar import flink_jar_path
from tools.flink.window.idleness import IdleTrace
from wmviz.core.pipeline import InstancePipeline
from wmviz.core.splits import SplitEvent, SplitReader, SplitState
from wmviz.core.types import Profile, Status, StatusInput
from wmviz.view.checked import LIFECYCLE_SEED_BASE, LIFECYCLE_TRACES, SPLIT_SEED_BASE, SPLIT_TRACES


@functools.cache
def corpus() -> tuple[IdleTrace, ...]:
    return tuple(random_split_trace(SPLIT_SEED_BASE + i) for i in range(SPLIT_TRACES))


@pytest.fixture(scope="module")
def flink_emissions() -> list[list[list[str]]]:
    require_flink("real Flink {version} split outputs", "the split differential")
    return run_splits(list(corpus()), jar=flink_jar_path())


def _differences(flink) -> list[str]:
    return [
        d for trace, rows in zip(corpus(), flink, strict=True) if (d := first_split_difference(trace, rows))
    ]


@pytest.mark.flink
def test_split_readers_match_real_flink_on_every_row(flink_emissions):
    assert len(flink_emissions) == SPLIT_TRACES >= 1000
    differences = _differences(flink_emissions)
    assert not differences, (
        f"{len(differences)} of {SPLIT_TRACES} traces differ; the first:\n{differences[0]}"
    )


@pytest.mark.flink
def test_the_harness_catches_a_reader_without_the_all_idle_flush(flink_emissions, monkeypatch):
    """The pre-FLINK-38454 combination (nothing sent when every split goes idle) is caught."""

    def no_flush(self):
        active = [s.partial_ms for s in self.splits.values() if not s.partial_idle]
        self.combined_idle = not active
        if active and min(active) > self.combined_ms:
            self.combined_ms = min(active)
            return self.send_watermark(self.combined_ms)
        return self.send_idle() if self.combined_idle else []

    monkeypatch.setattr(SplitReader, "combine", no_flush)
    assert len(_differences(flink_emissions)) >= 20


@pytest.mark.flink
def test_the_harness_catches_idle_splits_holding_the_reader(flink_emissions, monkeypatch):
    """A minimum over every split, idle or not, is caught (an idle split must stop holding)."""

    def over_all(self):
        values = [s.partial_ms for s in self.splits.values()]
        self.combined_idle = all(s.partial_idle for s in self.splits.values())
        out = []
        if min(values) > self.combined_ms:
            self.combined_ms = min(values)
            out = self.send_watermark(self.combined_ms)
        return out + (self.send_idle() if self.combined_idle else [])

    monkeypatch.setattr(SplitReader, "combine", over_all)
    assert len(_differences(flink_emissions)) >= 20


def test_the_split_corpus_idles_resumes_behind_and_flushes():
    """What the corpus exercises, counted on wmviz (no JVM needed)."""
    seen: Counter[str] = Counter()
    for trace in corpus():
        pipeline = InstancePipeline("0", split_config(trace), Profile.FLINK_1X_2X, {"0": 1}, set())
        for step, row in enumerate(split_rows(trace)):
            result = pipeline.process(step, row, explain=False)
            for event in result.events:
                if isinstance(event, SplitEvent) and event.what != "record":
                    seen[event.what] += 1
                    if event.what == "resumed" and event.holds and event.watermark_ms < event.reader_ms:
                        seen["resumed behind and holds"] += 1
                    if event.all_idle:
                        seen["every split idle"] += 1
        seen[f"{trace.channels} split(s)"] += 1
    wanted = {"idle": 1000, "resumed": 500, "resumed behind and holds": 50, "every split idle": 300}
    wanted |= {f"{n} split(s)": 150 for n in (1, 2, 3, 4)}
    thin = {k: seen[k] for k, n in wanted.items() if seen[k] < n}
    assert not thin, f"corpus features below their minimum: {thin} (all: {dict(seen)})"


# ---- splits that come and go: the real ProgressiveTimestampsAndWatermarks ----------------------------


@functools.cache
def lifecycle_corpus() -> tuple[LifecycleTrace, ...]:
    return tuple(random_lifecycle_trace(LIFECYCLE_SEED_BASE + i) for i in range(LIFECYCLE_TRACES))


@pytest.fixture(scope="module")
def flink_lifecycle() -> list[list[list[str]]]:
    require_flink(
        "real Flink {version} ProgressiveTimestampsAndWatermarks", "the split lifecycle differential"
    )
    return run_lifecycle(list(lifecycle_corpus()), jar=flink_jar_path())


def _lifecycle_differences(flink) -> list[str]:
    pairs = zip(lifecycle_corpus(), flink, strict=True)
    return [d for trace, rows in pairs if (d := first_lifecycle_difference(trace, rows))]


@pytest.mark.flink
def test_splits_that_come_and_go_match_real_flink_on_every_row(flink_lifecycle):
    assert len(flink_lifecycle) == LIFECYCLE_TRACES >= 500
    errors = [t for trace in flink_lifecycle for row in trace for t in row if t == "E"]
    assert not errors, "the harness threw on a trace wmviz accepts"
    differences = _lifecycle_differences(flink_lifecycle)
    assert not differences, f"{len(differences)} of {LIFECYCLE_TRACES} differ; the first:\n{differences[0]}"


@pytest.mark.flink
def test_the_lifecycle_harness_catches_an_idle_reader_without_its_main_output(flink_lifecycle, monkeypatch):
    """A reader that goes IDLE once its splits are idle, whatever its own output does, is caught."""
    monkeypatch.setattr(SplitReader, "idle_if_both", _idle_on_split_side_alone)
    assert len(_lifecycle_differences(flink_lifecycle)) >= 10


def _idle_on_split_side_alone(self):
    if self.idle or not self.split_side_idle:
        return []
    self.idle = True
    return [StatusInput(self.channel, Status.IDLE)]


@pytest.mark.flink
def test_the_lifecycle_harness_catches_a_finished_split_that_still_holds(flink_lifecycle, monkeypatch):
    """Keeping a finished split in the combination is caught."""
    change = SplitReader.change

    def keep_finished(self, split, what):
        return self.told(split, "finished", []) if what == "finished" else change(self, split, what)

    monkeypatch.setattr(SplitReader, "change", keep_finished)
    assert len(_lifecycle_differences(flink_lifecycle)) >= 10


@pytest.mark.flink
def test_the_lifecycle_harness_catches_marks_deferred_to_the_next_emission(flink_lifecycle, monkeypatch):
    """Explicit idle/active that wait for the periodic emission (a deferred output) are caught."""
    change = SplitReader.change

    def deferred(self, split, what):
        if what in ("idle", "active") and split in self.splits:
            self.splits[split].partial_idle = what == "idle"
            return self.told(split, f"marked {what}", [])
        return change(self, split, what)

    monkeypatch.setattr(SplitReader, "change", deferred)
    assert len(_lifecycle_differences(flink_lifecycle)) >= 10


@pytest.mark.flink
def test_the_lifecycle_harness_catches_punctuated_splits_that_only_emit_when_higher(
    flink_lifecycle, monkeypatch
):
    """A punctuated record's watermark clears its split's idle flag even when not higher; a model
    that skips it is caught."""
    set_partial = SplitState.set_partial

    def only_higher(self, watermark_ms):
        return set_partial(self, watermark_ms) if watermark_ms > self.partial_ms else False

    monkeypatch.setattr(SplitState, "set_partial", only_higher)
    assert len(_lifecycle_differences(flink_lifecycle)) >= 3


def test_the_lifecycle_corpus_adds_finishes_marks_and_empties():
    """What the lifecycle corpus exercises, counted on wmviz (no JVM needed)."""
    seen: Counter[str] = Counter()
    for trace in lifecycle_corpus():
        seen["zero splits at the start"] += not trace.initial
        seen["punctuated"] += trace.punctuated
        seen["no idle timeout"] += trace.idle_timeout_ms is None
        pipeline = InstancePipeline("0", lifecycle_config(trace), Profile.FLINK_1X_2X, {"0": 1}, set())
        for step, row in enumerate(lifecycle_rows(trace)):
            result = pipeline.process(step, row, explain=False)
            for event in result.events:
                if isinstance(event, SplitEvent) and event.what != "record":
                    seen[event.what] += 1
            for vs in result.valve_steps:
                seen[type(vs.valve_input).__name__] += 1
            reader = pipeline.generators[("0", 0)]
            seen["empty reader"] += isinstance(reader, SplitReader) and not reader.splits
    wanted = {"added": 2000, "finished": 1000, "marked idle": 1000, "marked active": 1000, "idle": 300}
    wanted |= {"zero splits at the start": 100, "punctuated": 100, "no idle timeout": 50, "empty reader": 300}
    wanted |= {"WatermarkInput": 2000, "StatusInput": 300}
    thin = {k: seen[k] for k, n in wanted.items() if seen[k] < n}
    assert not thin, f"corpus features below their minimum: {thin} (all: {dict(seen)})"
