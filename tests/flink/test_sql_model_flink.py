"""Differential test: SQL's separate watermark assigner and row-time mini-batch assigner against the
RELEASED operators of Flink 2.3.0 (flink-table-runtime's WatermarkAssignerOperator and
RowTimeMiniBatchAssginerOperator).

`ASSIGNER_TRACES` seeded assigner traces (tools/flink/sqlops/ops.py: auto-watermark intervals from
1 ms to 1 s, idle timeouts off or from 13 ms to 2.5 s, rows before and after 0, repeated and
falling rows, clock moves of 0 ms to 10 minutes, so the pipeline's skipping of long quiet jumps
runs too, upstream watermarks including MAX, upstream statuses) run on the real assigner with a
manual processing-time clock (WmvizSqlOpsHarness.java explains how time passes) and through wmviz's
pipeline; `MINIBATCH_TRACES` watermark and status sequences run on the real mini-batch assigner and
on wmviz's. For every input, the emitted watermarks and statuses must be the same, in order.

Needs flink-dist plus the flink-table-runtime and flink-table-api-java-uber jars. Skips without
them, unless `CI` is set: then it fetches them or fails.
"""

from __future__ import annotations

import functools

import pytest

from tests.conftest import require_flink
from tools.flink.sqlops.ops import (
    OpsOutcome,
    OpsTrace,
    first_difference,
    random_assigner_trace,
    random_minibatch_trace,
    replay,
    run_ops,
    unavailable,
)
from tools.flink.sqlops.source import SourceTrace, random_source_trace, run_sources
from tools.flink.sqlops.source import first_difference as source_difference
from tools.flink.sqlops.source import wmviz_emissions as source_emissions
from wmviz.core.java.longs import wrap_long
from wmviz.core.scenario import GeneratorConfig
from wmviz.core.sql_assigner import WatermarkAssigner
from wmviz.core.sql_minibatch import MiniBatchAssigner, minibatch_start_ms
from wmviz.core.types import Status
from wmviz.view.checked import SQL_ASSIGNER_TRACES as ASSIGNER_TRACES
from wmviz.view.checked import SQL_MINIBATCH_TRACES as MINIBATCH_TRACES
from wmviz.view.checked import SQL_SOURCE_TRACES as SOURCE_TRACES


@functools.cache
def corpus() -> tuple[OpsTrace, ...]:
    assigners = [random_assigner_trace(28_000 + i) for i in range(ASSIGNER_TRACES)]
    batches = [random_minibatch_trace(28_500 + i) for i in range(MINIBATCH_TRACES)]
    return (*assigners, *batches)


@pytest.fixture(scope="module")
def flink_outcomes() -> list[OpsOutcome]:
    require_flink(
        "the released Flink {version} SQL watermark operators", "the SQL operators differential", unavailable
    )
    return run_ops(list(corpus()))


def _differences(outcomes: list[OpsOutcome], operator: str | None = None) -> list[str]:
    return [
        d
        for trace, outcome in zip(corpus(), outcomes, strict=True)
        if operator in (None, trace.operator) and (d := first_difference(trace, outcome, replay(trace)))
    ]


@pytest.mark.flink
def test_sql_assigner_and_minibatch_traces_match_the_released_operators(flink_outcomes):
    assert len(flink_outcomes) == ASSIGNER_TRACES + MINIBATCH_TRACES
    assert not any(o.error for o in flink_outcomes), next(o.error for o in flink_outcomes if o.error)
    differences = _differences(flink_outcomes)
    assert not differences, f"{len(differences)} of {len(corpus())} differ; the first:\n{differences[0]}"


@pytest.mark.flink
def test_a_strict_idle_test_is_caught(flink_outcomes, monkeypatch):
    """Planted bug: IDLE only once the quiet spell is strictly longer than the timeout (DataStream's
    `>`, not the assigner's `≤`)."""

    def strict(self: WatermarkAssigner, now_ms: int) -> list:
        if self.processed != self.processed_at_check:
            self.quiet_since_ms, self.processed_at_check = now_ms, self.processed
        if (
            self.idleness_enabled
            and self.status is Status.ACTIVE
            and now_ms - self.quiet_since_ms > self.idle_timeout_ms
        ):
            return self.send_status(Status.IDLE)
        return []

    monkeypatch.setattr(WatermarkAssigner, "idleness_check", strict)
    assert len(_differences(flink_outcomes, "A")) >= 10


@pytest.mark.flink
def test_an_assigner_starting_at_min_is_caught(flink_outcomes, monkeypatch):
    """Planted bug: the assigner starting at Long.MIN_VALUE like the pushed-down generator, so it
    emits watermarks ≤ 0."""
    original = WatermarkAssigner.__init__

    def from_min(self: WatermarkAssigner, *args, **kwargs) -> None:
        original(self, *args, **kwargs)
        self.current_ms = self.last_ms = -(2**63)

    monkeypatch.setattr(WatermarkAssigner, "__init__", from_min)
    assert len(_differences(flink_outcomes, "A")) >= 10


@pytest.mark.flink
def test_a_minibatch_that_always_skips_a_batch_is_caught(flink_outcomes, monkeypatch):
    """Planted bug: the next boundary always one batch further (ignoring a watermark inside a batch)."""

    def skip(self: MiniBatchAssigner) -> int:
        end = minibatch_start_ms(self.current_ms, self.interval_ms) + self.interval_ms - 1
        self.next_ms = wrap_long(end + self.interval_ms)
        return self.current_ms

    monkeypatch.setattr(MiniBatchAssigner, "advance", skip)
    assert len(_differences(flink_outcomes, "M")) >= 10


def test_the_corpus_reaches_every_rule():
    """What the corpus makes wmviz's assigner do, counted without a JVM."""
    seen: dict[str, int] = dict.fromkeys(("IDLE", "ACTIVE", "MAX", "eager", "long jump", "row ≤ 0"), 0)
    for trace in corpus():
        if trace.operator != "A":
            continue
        segments = replay(trace).segments
        events = [e for segment in segments for e in segment]
        seen["IDLE"] += ("S", "IDLE") in events
        seen["ACTIVE"] += ("S", "ACTIVE") in events
        seen["MAX"] += ("W", 2**63 - 1) in events
        seen["eager"] += any(
            k == "R" and seg and seg[-1][0] == "W" for (k, _, _), seg in zip(trace.lines, segments)
        )
        seen["long jump"] += any(b[1] - a[1] >= 100_000 for a, b in zip(trace.lines, trace.lines[1:]))
        seen["row ≤ 0"] += any(
            k == "R" and isinstance(v, int) and v - trace.delay_ms <= 0 for k, _, v in trace.lines
        )
    assert all(count >= 20 for count in seen.values()), seen


# ---- the pushed-down generator -------------------------------------------------------------------


@functools.cache
def source_corpus() -> tuple[SourceTrace, ...]:
    return tuple(random_source_trace(29_000 + i) for i in range(SOURCE_TRACES))


@pytest.fixture(scope="module")
def flink_source_outcomes() -> list[list[list[str]]]:
    require_flink(
        "the released Flink {version} pushed-down SQL generator", "the SQL source differential", unavailable
    )
    return run_sources(list(source_corpus()))


@pytest.mark.flink
def test_pushed_down_generator_traces_match_the_released_generator(flink_source_outcomes):
    """GeneratedWatermarkGeneratorSupplier's generator (on-event and on-periodic) inside
    WatermarksWithIdleness writing to the FLIP-27 source output, 1–3 channels, idle timeouts, quiet
    jumps of over 1,000 probes: the same watermarks, IDLE and ACTIVE for every row."""
    differences = [
        d
        for t, o in zip(source_corpus(), flink_source_outcomes, strict=True)
        if (d := source_difference(t, o))
    ]
    assert not differences, f"{len(differences)} of {SOURCE_TRACES} differ; the first:\n{differences[0]}"
    assert {t.emit for t in source_corpus()} == {"on-event", "on-periodic"}


@pytest.mark.flink
def test_datastreams_minus_one_is_caught(flink_source_outcomes):
    """Planted bug: the pushed-down watermark read as DataStream's bounded out-of-orderness
    (`maxSeen − delay − 1`, per-record or periodic): the traces that emit a watermark differ."""
    differences = []
    for source, outcome in zip(source_corpus(), flink_source_outcomes, strict=True):
        trace = source.trace
        datastream = GeneratorConfig.flip27(
            emit="per-record" if source.emit == "on-event" else "periodic",
            out_of_orderness_ms=trace.out_of_orderness_ms,
            interval_ms=trace.interval_ms,
            idle_timeout_ms=trace.idle_timeout_ms,
        )
        ours = source_emissions(source, datastream)
        if source_difference(source, outcome, ours):
            differences.append(source.trace.label)
    assert len(differences) >= SOURCE_TRACES // 2
