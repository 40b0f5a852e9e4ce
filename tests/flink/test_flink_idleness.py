"""Differential test: wmviz's generators and idleness against Flink 2.3.0's own classes.

`IDLENESS_TRACES` seeded traces of records and clock ticks on 1–3 channels
(tools/flink/window/idleness.py) run through wmviz's pipeline (periodic bounded out-of-orderness,
idle timeout, resume `flip27-released`) and, in one JVM, through Flink's
BoundedOutOfOrdernessWatermarks inside WatermarksWithIdleness with a manual RelativeClock,
writing to Flink's FLIP-27 source output (WmvizIdlenessHarness.java). For every row each
channel must emit the same watermarks, the same IDLE and the same ACTIVE, in the same order.
"""

from __future__ import annotations

import functools
from collections import Counter

import pytest

from tests.conftest import require_flink
from tools.flink.valve.jar import flink_jar_path
from tools.flink.window.idleness import (
    IdleTrace,
    first_difference,
    probe_schedule,
    random_idle_trace,
    run_idleness,
    wmviz_emissions,
)
from wmviz.core.generator import ChannelGenerator
from wmviz.core.types import Status, StatusInput
from wmviz.view.checked import IDLENESS_SEED_BASE, IDLENESS_TRACES


@functools.cache
def corpus() -> tuple[IdleTrace, ...]:
    return tuple(random_idle_trace(IDLENESS_SEED_BASE + i) for i in range(IDLENESS_TRACES))


@pytest.fixture(scope="module")
def flink_emissions() -> list[list[list[str]]]:
    require_flink("real Flink {version} idleness", "the Flink idleness differential")
    return run_idleness(list(corpus()), jar=flink_jar_path())


def _differences(flink) -> list[str]:
    return [d for trace, rows in zip(corpus(), flink, strict=True) if (d := first_difference(trace, rows))]


@pytest.mark.flink
def test_idleness_matches_real_flink_on_every_row(flink_emissions):
    assert len(flink_emissions) == IDLENESS_TRACES >= 1000
    differences = _differences(flink_emissions)
    assert not differences, (
        f"{len(differences)} of {IDLENESS_TRACES} traces differ; the first:\n{differences[0]}"
    )


@pytest.mark.flink
def test_the_harness_catches_an_idleness_countdown_off_by_one(flink_emissions, monkeypatch):
    """Idle at `now − start ≥ timeout` instead of Flink's strict `>` is caught."""

    def not_strict(self, now_ms, saw_activity):
        timeout = self.config.idle_timeout_ms
        if saw_activity:
            self._activity_at_last_probe = self._activity
            self.countdown_start_ms = None
            return False
        if self.countdown_start_ms is None:
            self.countdown_start_ms = now_ms
            return False
        return now_ms - self.countdown_start_ms >= timeout

    monkeypatch.setattr(ChannelGenerator, "is_idle_at_probe", not_strict)
    assert len(_differences(flink_emissions)) >= 20


@pytest.mark.flink
def test_the_harness_catches_an_eager_resume(flink_emissions, monkeypatch):
    """ACTIVE before the first record after idleness (the eager rule) is not what a FLIP-27 source does."""
    original = ChannelGenerator.before_record

    def eager(self):
        if self.idle:
            self.idle = False
            return [StatusInput(self.channel, Status.ACTIVE)]
        return original(self)

    monkeypatch.setattr(ChannelGenerator, "before_record", eager)
    assert len(_differences(flink_emissions)) >= 20


def test_the_idleness_corpus_goes_idle_resumes_and_stays_idle_behind():
    """What the corpus exercises, counted on wmviz (no JVM needed)."""
    seen: Counter[str] = Counter()
    for trace in corpus():
        idle = set()
        for row, tokens in zip(trace.rows, wmviz_emissions(trace), strict=True):
            channel = row[1]
            if channel is not None and channel in idle and f"{channel}:S:ACTIVE" not in tokens:
                seen["record on an idle channel that stays idle"] += 1
            for token in tokens:
                c, _, what = token.partition(":")
                if what == "S:IDLE":
                    idle.add(int(c))
                    seen["IDLE"] += 1
                elif what == "S:ACTIVE":
                    idle.discard(int(c))
                    seen["ACTIVE with a higher watermark"] += 1
                else:
                    seen["watermark"] += 1
        if any(len(due) > 1000 for due in probe_schedule(trace)):
            seen["quiet jump over 1000 probes"] += 1
        seen[f"{trace.channels} channel(s)"] += 1
    wanted = {"IDLE": 500, "ACTIVE with a higher watermark": 200, "watermark": 2000}
    wanted |= {"record on an idle channel that stays idle": 100, "quiet jump over 1000 probes": 100}
    wanted |= {"1 channel(s)": 200, "2 channel(s)": 200, "3 channel(s)": 200}
    thin = {k: seen[k] for k, n in wanted.items() if seen[k] < n}
    assert not thin, f"corpus features below their minimum: {thin} (all: {dict(seen)})"
