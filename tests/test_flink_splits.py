"""Differential test: wmviz's per-split stage (wmviz/core/splits.py) against Flink 2.3.0's classes.

`SPLIT_TRACES` seeded traces of records on 1–4 splits of one source reader and clock ticks
(tools/flinkrecord/splits.py: splits with their own event clocks, some far behind, one mostly
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
from tools.flinkrecord.splits import (
    first_split_difference,
    random_split_trace,
    run_splits,
    split_config,
    split_rows,
)
from tools.flinkvalve.jar import flink_jar_path
from tools.flinkwindow.idleness import IdleTrace
from wmviz.core.pipeline import InstancePipeline
from wmviz.core.splits import SplitEvent, SplitReader
from wmviz.core.types import Profile
from wmviz.view.checked import SPLIT_SEED_BASE, SPLIT_TRACES


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
