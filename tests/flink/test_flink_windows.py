"""Differential test: wmviz's window operator against the REAL Flink 2.3.0 WindowOperator.

`WINDOW_TRACES` seeded random traces (tools/flink/window/corpus.py: keys 1–3 and ties of 2–5 keys,
disorder, irregular, repeated and falling watermarks, late and too-late records, tumbling and
sliding windows including slide > size, allowed lateness, list and count, per-record bounded
out-of-orderness through Flink's own generator, event times and watermarks at the ends of Java's
long) plus the cases named in issue 14 run as MiniCluster jobs from the flink-dist jar
(tools/flink/window). For every input, and for the end of input, the firings (key, window,
contents or count, late flag) and the late drops must be the same and in the same order.

The corpus tests and the tests that plant bugs in wmviz need the JVM's results; the coverage
test and the named cases' expectations do not. Without Java or the jar the JVM tests skip,
unless `CI` is set: then they fail (and CI may fetch the jar).
"""

from __future__ import annotations

import functools
from collections import Counter

import pytest

from tests.conftest import require_flink
from tools.flink.valve.jar import flink_jar_path
from tools.flink.window.corpus import STYLES, random_window_trace
from tools.flink.window.harness import Mark, Outcome, Record, WindowTrace, run_windows
from tools.flink.window.replay import first_difference, replay, trace_rows
from wmviz.core import timers, windows
from wmviz.core.types import MAX_MS, MIN_MS
from wmviz.view.checked import WINDOW_SEED_BASE, WINDOW_TRACES

MAX, MIN = MAX_MS, MIN_MS


def _case(label: str, size: int, slide: int | None, lateness: int, *inputs, agg="list", ooo=None):
    return WindowTrace(f"case: {label}", size, slide, lateness, agg, tuple(inputs), ooo)


NAMED_CASES: dict[str, tuple[WindowTrace, list]] = {
    # Issue 14: Flink sends a late gap element to the late side output.
    "late gap element": (_case("late gap element", 1, 2, 0, Mark(9), Record("a", 1)), [[], [("D", 1)], []]),
    # Issue 14: equal timers fire in the heap's order, not by key name.
    "b then a": (
        _case("b then a", 5, None, 0, Record("b", 1), Record("a", 2), Mark(4)),
        [[], [], [("F", "b", 0, 5, (0,), False), ("F", "a", 0, 5, (1,), False)], []],
    ),
    "x, z, y": (
        _case("x z y", 5, None, 0, Record("x", 1), Record("y", 2), Record("z", 3), Mark(4)),
        [
            [],
            [],
            [],
            [("F", "x", 0, 5, (0,), False), ("F", "z", 0, 5, (2,), False), ("F", "y", 0, 5, (1,), False)],
            [],
        ],
    ),
    # Issue 14: the window of MAX − 1 ends past MAX, wraps, and fires at watermark 0.
    "wrapped window": (
        _case("wrapped window", 5, None, 0, Record("a", MAX - 1), Mark(0)),
        [[], [("F", "a", MAX - 2, MIN + 2, (0,), False)], []],
    ),
}

EXTRA_CASES = (
    # A gap element that is not late vanishes silently.
    _case("silent gap element", 2, 5, 0, Record("a", 3), Mark(100)),
    # The cleanup time overflows: Flink's guard makes it MAX and sets no cleanup timer, so a late
    # element still re-fires the window after the watermark passed its end.
    _case("cleanup at MAX", 5, None, 10, Record("a", MAX - 7), Mark(MAX - 3), Record("a", MAX - 6)),
    # Event times next to MIN: the tumbling start wraps to near MAX.
    _case("start wraps below MIN", 5, None, 0, Record("a", MIN + 1), Mark(MIN + 2), Mark(0)),
    # slide equal to size is still Flink's sliding assigner (one window each).
    _case("slide equal to size", 5, 5, 2, Record("a", 3), Record("b", 4), Mark(4), Record("a", 1)),
)
"""More edges, compared with real Flink like the corpus; their expected output is Flink's."""


def test_named_cases_give_the_results_real_flink_gave():
    """The issue's observations of real Flink 2.3.0, replayed on wmviz alone (no JVM needed)."""
    for name, (trace, expected) in NAMED_CASES.items():
        assert replay(trace).segments == expected, name


@functools.cache
def corpus() -> tuple[WindowTrace, ...]:
    return tuple(random_window_trace(WINDOW_SEED_BASE + i) for i in range(WINDOW_TRACES))


@pytest.fixture(scope="module")
def flink_outcomes() -> list[tuple[WindowTrace, Outcome]]:
    """Every corpus trace and named case on the real window operator, in one JVM."""
    require_flink("real Flink {version} window operator", "the Flink window differential")
    traces = [*corpus(), *(t for t, _ in NAMED_CASES.values()), *EXTRA_CASES]
    return list(zip(traces, run_windows(traces, jar=flink_jar_path()), strict=True))


def _differences(runs: list[tuple[WindowTrace, Outcome]]) -> list[str]:
    return [d for trace, outcome in runs if (d := first_difference(trace, outcome))]


@pytest.mark.flink
def test_random_window_traces_match_real_flink(flink_outcomes):
    runs = flink_outcomes[:WINDOW_TRACES]
    assert len(runs) == WINDOW_TRACES >= 1000
    assert not any(outcome.error for _, outcome in runs), "the corpus must hold no trace Flink fails on"
    differences = _differences(runs)
    assert not differences, f"{len(differences)} of {len(runs)} traces differ; the first:\n{differences[0]}"


@pytest.mark.flink
def test_named_cases_match_real_flink(flink_outcomes):
    """The harness reproduces the issue's observations: it really runs Flink's operator."""
    named = flink_outcomes[WINDOW_TRACES : WINDOW_TRACES + len(NAMED_CASES)]
    for (_, outcome), (name, (_, expected)) in zip(named, NAMED_CASES.items(), strict=True):
        assert outcome.segments == expected, name


@pytest.mark.flink
def test_extra_edge_cases_match_real_flink(flink_outcomes):
    extra = flink_outcomes[WINDOW_TRACES + len(NAMED_CASES) :]
    assert len(extra) == len(EXTRA_CASES)
    differences = _differences(extra)
    assert not differences, "\n\n".join(differences)


def _planted(monkeypatch, runs, target, name, replacement) -> list[str]:
    monkeypatch.setattr(target, name, replacement)
    return _differences(runs)


@pytest.mark.flink
def test_the_harness_catches_gap_elements_that_are_never_late(flink_outcomes, monkeypatch):
    """wmviz's old rule (a gap element is never counted as late) is caught on the gap traces."""
    original = windows.WindowOperator.element_is_late

    def gap_never_late(self, ts_ms):
        in_gap = not windows.assign_windows(ts_ms, self.size_ms, self.slide_ms)
        return False if in_gap else original(self, ts_ms)

    found = _planted(monkeypatch, flink_outcomes, windows.WindowOperator, "element_is_late", gap_never_late)
    assert any("(gaps)" in d for d in found), found[:1]


@pytest.mark.flink
def test_the_harness_catches_ties_ordered_by_key(flink_outcomes, monkeypatch):
    """wmviz's old tie rule (equal timestamps fire by key, then window) is caught."""

    def sift_up_by_key(self, index):
        heap = self.heap

        def rank(timer):
            return (timer.timestamp_ms, timer.key, timer.namespace or (0, 0))

        current = heap[index]
        parent = index >> 1
        while parent > 0 and rank(current) < rank(heap[parent]):
            heap[index] = heap[parent]
            self._where[id(heap[index])] = index
            index, parent = parent, parent >> 1
        heap[index] = current
        self._where[id(current)] = index

    found = _planted(monkeypatch, flink_outcomes, timers.TimerHeap, "_sift_up", sift_up_by_key)
    assert len(found) >= 10, found[:1]


@pytest.mark.flink
def test_the_harness_catches_python_arithmetic_at_the_ends_of_long(flink_outcomes, monkeypatch):
    """Without Java's wrap-around, windows near Long.MAX_VALUE never fire: the edge traces catch it."""
    found = _planted(monkeypatch, flink_outcomes, windows, "wrap_long", lambda value: value)
    assert any("(edges)" in d for d in found), found[:1]


def test_the_corpus_reaches_every_window_rule():
    """The corpus is only as good as what it exercises; counted on wmviz, so it needs no JVM."""
    seen: Counter[str] = Counter()
    for trace in corpus():
        seen[f"style {trace.label.split('(')[1].rstrip(')')}"] += 1
        seen[trace.aggregate] += 1
        if trace.slide_ms is not None:
            seen["slide > size" if trace.slide_ms > trace.size_ms else "slide ≤ size"] += 1
        if any(isinstance(i, Record) and abs(i.event_ms) > 2**62 for i in trace.inputs):
            seen["event time at an end of long"] += 1
        outcome = replay(trace)
        rows = trace_rows(trace)
        for segment in outcome.segments:
            firings = [e for e in segment if e[0] == "F"]
            seen["late firing"] += sum(1 for e in firings if e[5])
            seen["late drop"] += sum(1 for e in segment if e[0] == "D")
            seen["wrapped window"] += sum(1 for e in firings if e[3] < e[2])
            by_end = Counter(windows.max_timestamp((e[2], e[3])) for e in firings if not e[5])
            if any(n >= 2 for n in by_end.values()):
                seen["equal timers fire together"] += 1
            on_time = [(e[1], e[2]) for e in firings if not e[5]]
            ends = [windows.max_timestamp((e[2], e[3])) for e in firings if not e[5]]
            if any(ends[i] == ends[i + 1] and on_time[i] > on_time[i + 1] for i in range(len(on_time) - 1)):
                seen["ties not in key order"] += 1
        late = {e[1] for segment in outcome.segments for e in segment if e[0] == "D"}
        for i, r in enumerate(rows[:-1]):
            if r.event_ms is None or trace.slide_ms is None:
                continue
            if not windows.assign_windows(r.event_ms, trace.size_ms, trace.slide_ms):
                seen["late gap element" if i in late else "silent gap element"] += 1
    wanted = {f"style {s}": 150 for s in STYLES}
    wanted |= {"list": 500, "count": 200, "slide > size": 200, "slide ≤ size": 200}
    wanted |= {"late firing": 300, "late drop": 300, "wrapped window": 30}
    wanted |= {"late gap element": 100, "silent gap element": 100}
    wanted |= {
        "equal timers fire together": 200,
        "ties not in key order": 50,
        "event time at an end of long": 100,
    }
    thin = {k: seen[k] for k, n in wanted.items() if seen[k] < n}
    assert not thin, f"corpus features below their minimum: {thin}"
