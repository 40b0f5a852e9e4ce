"""Differential test: wmviz's session windows and window offsets against the REAL Flink 2.3.0
WindowOperator (`EventTimeSessionWindows.withGap`, `TumblingEventTimeWindows.of(size, offset)`,
`SlidingEventTimeWindows.of(size, slide, offset)`), run like tests/flink/test_flink_windows.py.

`SESSION_TRACES` seeded random session traces, `OFFSET_TRACES` offset traces
(tools/flink/window/session_corpus.py) and the cases issue 21 names run as MiniCluster jobs; for every
input, and the end of input, the firings (key, window, contents in order or count, late flag) and
the late drops must be the same and in the same order, and a trace that fails the Flink job must
fail wmviz's run on the same input, after the same outputs, naming Flink's exception. The order of a
merged session's elements is Java's hash order, not a Flink contract; wmviz repeats it (so the
comparison stays exact), and a planted check shows the corpus notices when it does not.
"""

from __future__ import annotations

import functools
from collections import Counter

import pytest

from tests.conftest import require_flink
from tools.flink.valve.jar import flink_jar_path
from tools.flink.window.harness import Mark, Outcome, Record, WindowTrace, run_windows
from tools.flink.window.replay import first_difference, replay, scenario_config, trace_rows
from tools.flink.window.session_corpus import SESSION_STYLES, random_offset_trace, random_session_trace
from wmviz.core import sessions, timers, windows
from wmviz.core.java import hashorder
from wmviz.core.operator_log import Dropped, SessionMerge
from wmviz.core.pipeline import InstancePipeline
from wmviz.core.types import MAX_MS, MIN_MS, Profile
from wmviz.core.windows import ScenarioError
from wmviz.view.checked import OFFSET_SEED_BASE, OFFSET_TRACES, SESSION_SEED_BASE, SESSION_TRACES

MAX, MIN = MAX_MS, MIN_MS


def _session(label: str, gap: int, lateness: int, *inputs, agg: str = "list") -> WindowTrace:
    return WindowTrace(f"case: {label}", 0, None, lateness, agg, tuple(inputs), session_gap_ms=gap)


NAMED_CASES: dict[str, tuple[WindowTrace, list | str]] = {
    # Issue 21's observations of real Flink 2.3.0 (a str: the job fails on the last input).
    "touching": (
        _session("records one gap apart share a session", 5, 0, Record("a", 0), Record("a", 5), Mark(20)),
        [[], [], [("F", "a", 0, 10, (0, 1), False)], []],
    ),
    "bridge": (
        _session(
            "a record bridges two sessions", 5, 0, Record("a", 0), Record("a", 10), Record("a", 5), Mark(30)
        ),
        [[], [], [], [("F", "a", 0, 15, (0, 1, 2), False)], []],
    ),
    "hash order": (
        _session(
            "merged elements in hash order", 5, 0, Record("a", 0), Record("a", 6), Record("a", 3), Mark(30)
        ),
        [[], [], [], [("F", "a", 0, 11, (1, 0, 2), False)], []],
    ),
    "late merge fires at once": (
        _session("late merge fires at once", 5, 10, Record("a", 0), Mark(10), Record("a", 2), Mark(30)),
        [[], [("F", "a", 0, 5, (0,), False)], [("F", "a", 0, 7, (0, 2), True)], [], []],
    ),
    "late merge waits": (
        _session(
            "late merge waits for the watermark", 5, 10, Record("a", 0), Mark(6), Record("a", 4), Mark(30)
        ),
        [[], [("F", "a", 0, 5, (0,), False)], [], [("F", "a", 0, 9, (0, 2), False)], []],
    ),
    "lateness after merging": (
        _session(
            "own window past cleanup joins a live session", 5, 3, Record("a", 10), Mark(12), Record("a", 5)
        ),
        [[], [], [], [("F", "a", 5, 15, (0, 2), False)]],
    ),
    "late side output": (
        _session("late record touching nothing", 5, 0, Record("a", 10), Mark(20), Record("a", 1)),
        [[], [("F", "a", 10, 15, (0,), False)], [("D", 2)], []],
    ),
    "gone after cleanup": (
        _session(
            "after cleanup the session is gone", 5, 2, Record("a", 0), Mark(6), Record("a", 3), Mark(30)
        ),
        [[], [("F", "a", 0, 5, (0,), False)], [], [("F", "a", 3, 8, (2,), False)], []],
    ),
    "wrap": (
        _session("t + gap wraps", 5, 0, Record("a", MAX - 1), Mark(0), Record("a", MAX - 3)),
        [[], [("F", "a", MAX - 1, MIN + 3, (0,), False)], [], []],
    ),
    "capped merge": (
        _session(
            "merge past a capped cleanup", 5, 10, Record("a", MAX - 8), Mark(MAX - 2), Record("a", MAX - 12)
        ),
        "cannot become earlier than the current watermark by merging",
    ),
    "MIN timestamp": (
        _session("a Long.MIN_VALUE timestamp is a session", 5, 0, Record("a", MIN), Mark(0)),
        [[], [("F", "a", MIN, MIN + 5, (0,), False)], []],
    ),
}

EXTRA_CASES = (
    # Merges delete timers from the shared heap: the ties of three keys fire in the heap's order.
    _session(
        "ties after merges",
        3,
        0,
        *(Record(k, t) for k, t in [("x", 1), ("y", 1), ("z", 2)]),
        Record("x", 3),
        Record("y", 4),
        Mark(10),
    ),
    # Where the merge check fails the job, and where it does not (observed on Flink 2.3.0): a record
    # inside a capped session merges nothing; a merge that makes an uncapped session's cleanup
    # overflow fails; a capped merge under a MIN watermark passes.
    _session(
        "inside a capped session",
        5,
        10,
        Record("a", MAX - 12),
        Record("a", MAX - 8),
        Mark(MAX - 2),
        Record("a", MAX - 10),
    ),
    _session(
        "merge makes the cleanup overflow",
        5,
        24,
        Record("a", MAX - 30),
        Mark(MAX - 20),
        Record("a", MAX - 26),
    ),
    _session("capped merge under a MIN watermark", 5, 10, Record("a", MAX - 8), Record("a", MAX - 12)),
    WindowTrace(
        "case: tumbling offset MIN", 5, None, 0, "list", (Record("a", 1), Record("a", 3), Mark(9)), None, MIN
    ),
    WindowTrace(
        "case: sliding offset MIN", 5, 2, 0, "list", (Record("a", 1), Record("a", 3), Mark(9)), None, MIN
    ),
    WindowTrace(
        "case: negative offset", 5, 2, 1, "list", (Record("a", 1), Mark(9), Record("a", 4)), None, -1
    ),
)


@functools.cache
def session_corpus() -> tuple[WindowTrace, ...]:
    return tuple(random_session_trace(SESSION_SEED_BASE + i) for i in range(SESSION_TRACES))


@functools.cache
def offset_corpus() -> tuple[WindowTrace, ...]:
    return tuple(random_offset_trace(OFFSET_SEED_BASE + i) for i in range(OFFSET_TRACES))


def _named_outcome(expected: list | str, outcome: Outcome) -> bool:
    if isinstance(expected, str):
        return outcome.error is not None and expected in outcome.error
    return outcome.error is None and outcome.segments == expected


def test_named_cases_give_the_results_real_flink_gave():
    """The issue's observations of real Flink 2.3.0, replayed on wmviz alone (no JVM needed)."""
    for name, (trace, expected) in NAMED_CASES.items():
        assert _named_outcome(expected, replay(trace)), name
    failed = replay(NAMED_CASES["capped merge"][0]).error or ""
    assert "wraps past Long.MAX_VALUE" in failed and "UnsupportedOperationException" in failed


@pytest.fixture(scope="module")
def flink_outcomes() -> list[tuple[WindowTrace, Outcome]]:
    """Every trace on the real window operator, in one JVM (traces wmviz expects to fail run alone)."""
    require_flink("real Flink {version} window operator", "the Flink session-window differential")
    traces = [*session_corpus(), *offset_corpus(), *(t for t, _ in NAMED_CASES.values()), *EXTRA_CASES]
    alone = frozenset(i for i, trace in enumerate(traces) if replay(trace).error)
    return list(zip(traces, run_windows(traces, jar=flink_jar_path(), alone=alone), strict=True))


def _differences(runs: list[tuple[WindowTrace, Outcome]]) -> list[str]:
    return [d for trace, outcome in runs if (d := first_difference(trace, outcome))]


def _report(differences: list[str], runs: list) -> str:
    return (
        f"{len(differences)} of {len(runs)} traces differ; the first:\n{differences[0]}"
        if differences
        else ""
    )


@pytest.mark.flink
def test_random_session_traces_match_real_flink(flink_outcomes):
    runs = flink_outcomes[:SESSION_TRACES]
    assert len(runs) == SESSION_TRACES >= 500
    differences = _differences(runs)
    assert not differences, _report(differences, runs)


@pytest.mark.flink
def test_random_offset_traces_match_real_flink(flink_outcomes):
    runs = flink_outcomes[SESSION_TRACES : SESSION_TRACES + OFFSET_TRACES]
    assert len(runs) == OFFSET_TRACES >= 200
    assert not any(outcome.error for _, outcome in runs), "the offset corpus holds no trace Flink fails on"
    differences = _differences(runs)
    assert not differences, _report(differences, runs)


@pytest.mark.flink
def test_named_and_extra_cases_match_real_flink(flink_outcomes):
    """The harness reproduces the issue's observations: it really runs Flink's operator."""
    named = flink_outcomes[SESSION_TRACES + OFFSET_TRACES :][: len(NAMED_CASES)]
    for (_, outcome), (name, (_, expected)) in zip(named, NAMED_CASES.items(), strict=True):
        assert _named_outcome(expected, outcome), (name, outcome)
    extra = flink_outcomes[SESSION_TRACES + OFFSET_TRACES + len(NAMED_CASES) :]
    assert len(extra) == len(EXTRA_CASES)
    assert not _differences(extra + named), "\n\n".join(_differences(extra + named))


def _planted(monkeypatch, runs, target, name, replacement) -> list[str]:
    monkeypatch.setattr(target, name, replacement)
    return _differences(runs)


@pytest.mark.flink
def test_the_harness_catches_sessions_that_merge_only_when_they_overlap(flink_outcomes, monkeypatch):
    """Without the touch rule (`start <= other.end`), sessions one gap apart stay apart."""
    found = _planted(
        monkeypatch, flink_outcomes, sessions, "intersects", lambda a, b: a[0] < b[1] and a[1] > b[0]
    )
    assert len(found) >= 20, found[:1]


@pytest.mark.flink
def test_the_harness_catches_a_gap_off_by_one(flink_outcomes, monkeypatch):
    found = _planted(
        monkeypatch,
        flink_outcomes,
        sessions,
        "session_window",
        lambda ts, gap: (ts, windows.wrap_long(ts + gap - 1)),
    )
    assert len(found) >= 100, found[:1]


@pytest.mark.flink
def test_the_harness_catches_lateness_judged_before_merging(flink_outcomes, monkeypatch):
    """A record whose own window is past cleanup but touches a live session must still join it."""
    original = sessions.SessionWindowOperator.on_record

    def judge_first(self, row, log):
        own = sessions.session_window(row.event_ms, self.gap_ms)
        if windows.cleanup_time(own, self.lateness_ms) <= self.watermark_ms:
            log.dropped.append(Dropped(row, "planted", late=self.element_is_late(row.event_ms)))
            return
        original(self, row, log)

    found = _planted(monkeypatch, flink_outcomes, sessions.SessionWindowOperator, "on_record", judge_first)
    assert any("(session-late)" in d for d in found), found[:1]


@pytest.mark.flink
def test_the_harness_catches_merged_elements_in_arrival_order(flink_outcomes, monkeypatch):
    """With every window in one hash bucket the sets iterate in start order: the list contents (and
    the timer heap) then differ from Flink's, so the exact-order comparison is not vacuous."""
    found = _planted(monkeypatch, flink_outcomes, hashorder, "window_spread", lambda window: 0)
    assert len(found) >= 5, found[:1]


@pytest.mark.flink
def test_the_harness_catches_merged_timers_left_in_the_heap(flink_outcomes, monkeypatch):
    """Merged sessions' timers must leave the heap: stale ones reorder later equal-time firings."""
    found = _planted(monkeypatch, flink_outcomes, timers.TimerService, "delete", lambda self, *a: False)
    assert any("(session-ties)" in d for d in found), found[:1]


@pytest.mark.flink
def test_the_harness_catches_a_merge_that_never_fails(flink_outcomes, monkeypatch):
    """Python arithmetic at the merge check (no wrap past MAX) lets wmviz run on where Flink fails."""
    found = _planted(
        monkeypatch, flink_outcomes, sessions, "merge_fails", lambda end, late, wm: end + late <= wm
    )
    assert any("(session-edges)" in d for d in found), found[:1]


@pytest.mark.flink
def test_the_harness_catches_an_offset_with_the_wrong_sign(flink_outcomes, monkeypatch):
    original = windows.assign_windows

    def negated(ts, size, slide, offset=0):
        return original(ts, size, slide, windows.wrap_long(-offset))

    found = _planted(monkeypatch, flink_outcomes, windows, "assign_windows", negated)
    assert len(found) >= 50, found[:1]


def test_the_session_corpus_reaches_every_session_rule():
    """Counted on wmviz (no JVM): merges of every kind, late firings, drops, wraps and failures."""
    seen: Counter[str] = Counter()
    for trace in session_corpus():
        seen[f"style {trace.label.split('(')[1].rstrip(')')}"] += 1
        seen[trace.aggregate] += 1
        outcome = replay(trace)
        seen["job fails"] += bool(outcome.error)
        firings = [e for segment in outcome.segments for e in segment if e[0] == "F"]
        seen["late firing"] += sum(1 for e in firings if e[5])
        seen["late firing of a merged session"] += sum(1 for e in firings if e[5] and _records(e) > 1)
        seen["late drop"] += sum(1 for segment in outcome.segments for e in segment if e[0] == "D")
        seen["wrapped session"] += sum(1 for e in firings if e[3] < e[2])
        seen["elements not in arrival order"] += sum(
            1 for e in firings if isinstance(e[4], tuple) and list(e[4]) != sorted(e[4])
        )
        events = _events(trace)
        seen["silent drop"] += sum(1 for e in events if isinstance(e, Dropped) and not e.late)
        for merge in (e for e in events if isinstance(e, SessionMerge)):
            seen["bridging merge" if len(merge.merged) > 1 else "merge"] += 1
    wanted = {f"style {s}": 90 for s in SESSION_STYLES}
    wanted |= {"list": 300, "count": 100, "merge": 1500, "bridging merge": 100}
    wanted |= {"late firing": 300, "late firing of a merged session": 150, "late drop": 700}
    wanted |= {"wrapped session": 30, "job fails": 10, "silent drop": 15, "elements not in arrival order": 40}
    thin = {k: seen[k] for k, n in wanted.items() if seen[k] < n}
    assert not thin, f"corpus features below their minimum: {thin} (seen {dict(seen)})"


def test_the_offset_corpus_reaches_every_offset_kind():
    seen: Counter[str] = Counter()
    for trace in offset_corpus():
        offset = trace.offset_ms
        seen["MIN" if offset == MIN else "negative" if offset < 0 else "positive" if offset else "zero"] += 1
        seen["sliding" if trace.slide_ms else "tumbling"] += 1
    thin = {k: seen[k] for k in ("MIN", "negative", "positive", "sliding", "tumbling") if seen[k] < 15}
    assert not thin, thin


def _records(firing) -> int:
    return firing[4] if isinstance(firing[4], int) else len(firing[4])


def _events(trace: WindowTrace) -> list:
    """Every operator event wmviz's pipeline logs for the trace, up to a failure."""
    generated = trace.out_of_orderness_ms is not None
    pipeline = InstancePipeline(
        "0", scenario_config(trace), Profile.FLINK_1X_2X, {"0": 1}, set() if generated else {("0", 0)}
    )
    found = []
    for step, row in enumerate(trace_rows(trace)):
        try:
            result = pipeline.process(step, row, explain=False)
        except ScenarioError:
            break
        found += result.events
    return found
