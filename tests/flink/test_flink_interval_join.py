"""Differential test: wmviz's interval join (early fire off) against the RELEASED one of Flink 2.3.0.

`INTERVAL_JOIN_TRACES` seeded traces (tools/flink/window/join.py: INNER, LEFT, RIGHT and FULL
joins, bounds on both sides of zero, a minimum cleanup interval, 1–3 keys, rows before and after
the watermarks, event times ≤ 0, repeated and falling watermarks, IDLE and ACTIVE inputs) run on
flink-table-runtime's RowTimeIntervalJoin inside KeyedCoProcessOperatorWithWatermarkDelay, in the
trace's exact order of left and right inputs (WmvizJoinHarness.java explains how), and through
wmviz's pipeline. For every input, and for the end of input, the output rows (kind, left row,
right row, record timestamp) and output watermarks must be the same, in the same order.

Needs flink-dist plus the flink-table-runtime and flink-table-api-java-uber jars (from the same
PyPI wheel, cached beside flink-dist). Skips without them, unless `CI` is set: then it fetches
them or fails.
"""

from __future__ import annotations

import functools
from collections import Counter

import pytest

from tests.conftest import require_flink
from tools.flink.window.join import (
    JOIN_TYPES,
    JoinOutcome,
    JoinTrace,
    first_difference,
    random_join_trace,
    replay,
    run_joins,
    unavailable,
)
from wmviz.core.java.javamap import JavaLongMap
from wmviz.view.checked import INTERVAL_JOIN_SEED_BASE, INTERVAL_JOIN_TRACES


@functools.cache
def corpus() -> tuple[JoinTrace, ...]:
    return tuple(random_join_trace(INTERVAL_JOIN_SEED_BASE + i) for i in range(INTERVAL_JOIN_TRACES))


@pytest.fixture(scope="module")
def flink_outcomes() -> list[JoinOutcome]:
    require_flink("the released Flink {version} interval join", "the interval-join differential", unavailable)
    return run_joins(list(corpus()))


def _differences(outcomes: list[JoinOutcome], **replay_options) -> list[str]:
    return [
        d
        for trace, outcome in zip(corpus(), outcomes, strict=True)
        if (d := first_difference(trace, outcome, replay(trace, **replay_options)))
    ]


@pytest.mark.flink
def test_interval_join_traces_match_the_released_operator(flink_outcomes):
    assert len(flink_outcomes) == INTERVAL_JOIN_TRACES >= 1000
    assert not any(o.error for o in flink_outcomes), next(o.error for o in flink_outcomes if o.error)
    differences = _differences(flink_outcomes)
    assert not differences, (
        f"{len(differences)} of {INTERVAL_JOIN_TRACES} differ; the first:\n{differences[0]}"
    )


@pytest.mark.flink
def test_flink_2_3_flushes_when_both_inputs_are_idle(flink_outcomes):
    """With wmviz's default (no all-idle flush) the traces where both inputs go idle differ."""
    assert len(_differences(flink_outcomes, all_idle_flush=False)) >= 20


@pytest.mark.flink
def test_the_harness_catches_caches_visited_in_time_order(flink_outcomes, monkeypatch):
    """Visiting the caches in ascending time, a simpler order than A4's HashMap walk, is not Flink's:
    the harness sees it."""
    monkeypatch.setattr(JavaLongMap, "__iter__", lambda self: iter(sorted(self._values)))
    assert len(_differences(flink_outcomes)) >= 20


def test_the_join_corpus_reaches_every_kind_of_output():
    """What the corpus makes the join do, counted on wmviz (no JVM needed)."""
    seen: Counter[str] = Counter()
    for trace in corpus():
        seen[trace.join] += 1
        outcome = replay(trace)
        for segment in outcome.segments:
            rows = [e for e in segment if e[0] == "O"]
            seen["joined row"] += sum(1 for e in rows if e[2] is not None and e[3] is not None)
            seen["padded row"] += sum(1 for e in rows if e[2] is None or e[3] is None)
            seen["output watermark"] += sum(1 for e in segment if e[0] == "W")
        if any(t is not None and t <= 0 for kind, _, t in trace.inputs if kind in ("L", "R")):
            seen["row time ≤ 0"] += 1
        if trace.lower_ms > 0 or trace.upper_ms < 0:
            seen["window on one side of zero"] += 1
        if trace.min_cleanup_ms:
            seen["min cleanup interval"] += 1
        idle = {"L": False, "R": False}
        for kind, what, _ in trace.inputs:
            if kind in ("SL", "SR"):
                idle[kind[1]] = what == "IDLE"
                if all(idle.values()):
                    seen["both inputs idle"] += 1
                    break
    wanted = {t: 150 for t in JOIN_TYPES}
    wanted |= {"joined row": 2000, "padded row": 1000, "output watermark": 3000, "row time ≤ 0": 100}
    wanted |= {"window on one side of zero": 200, "min cleanup interval": 200, "both inputs idle": 50}
    thin = {k: seen[k] for k, n in wanted.items() if seen[k] < n}
    assert not thin, f"corpus features below their minimum: {thin} (all: {dict(seen)})"
