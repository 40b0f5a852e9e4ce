"""Session merging costs O(log n) a record, and what it merges is still what Flink's sweep over
every live window of the key merges (issue 33: one key's never-merging records were O(N²))."""

from __future__ import annotations

import pytest

from tests.conftest import require_flink
from tools.flink.valve.jar import flink_jar_path
from tools.flink.window.harness import Mark, Record, WindowTrace, run_windows
from tools.flink.window.replay import first_difference, replay
from wmviz.core import sessions
from wmviz.core.java.longs import wrap_long
from wmviz.core.types import MAX_MS

GAP = 1 << 62
B_MS, C_MS, D_MS = MAX_MS - 100, MAX_MS - 50, MAX_MS - 20
"""Records whose windows wrap past MAX (b, c, d); b's window ends at B_END."""
B_END = wrap_long(B_MS + GAP)
A_MS = (B_END + 1, B_END + 1 + GAP, B_END + 1 + 2 * GAP, MAX_MS - GAP - 10)
"""Records that merge into one session a from just after b's end to MAX − 10: it touches c (c's
wrapped end lies past a's start) but not b, and the sweep, meeting b between them, keeps a and c
apart. Removing b (its cleanup at the watermark B_END) leaves a and c next to each other."""

UNSETTLED = WindowTrace(
    "a removed session leaves its neighbours touching",
    0,
    None,
    0,
    "count",
    (
        Record("k", B_MS),
        Record("k", C_MS),
        *(Record("k", t) for t in A_MS),
        Mark(B_END),
        Record("k", D_MS),
    ),
    session_gap_ms=GAP,
)
"""Flink's next sweep (d's, which touches only a) merges a, c and d: one firing of 7 − 1 records
at the end (b fired alone at the watermark)."""


def test_never_merging_records_cost_a_few_comparisons_each(monkeypatch):
    """1,000 records 2 s apart with a 1 s gap: each touches nothing; before, each record swept
    every live session (500,000 comparisons), now only its neighbours."""
    calls = 0
    original = sessions.intersects

    def counting(a, b):
        nonlocal calls
        calls += 1
        return original(a, b)

    monkeypatch.setattr(sessions, "intersects", counting)
    n = 1_000
    trace = WindowTrace(
        "ascending",
        0,
        None,
        0,
        "count",
        tuple(Record("k", i * 2_000) for i in range(n)),
        session_gap_ms=1_000,
    )
    outcome = replay(trace)
    assert outcome.error is None
    assert sum(len(s) for s in outcome.segments) == n
    assert calls <= 8 * n


def test_a_session_removed_between_two_lets_the_next_record_merge_them():
    """The neighbours left touching merge on the next record, as Flink's whole sweep merges them."""
    outcome = replay(UNSETTLED)
    assert outcome.error is None, outcome.error
    firings = [e for segment in outcome.segments for e in segment]
    a_start = A_MS[0]
    assert ("F", "k", B_MS, B_END, 1, False) in firings
    assert ("F", "k", a_start, MAX_MS - 10, 6, False) in firings
    assert len(firings) == 2


def test_without_tracking_unsettled_windows_the_merge_is_missed(monkeypatch):
    """Planted: the set forgets which windows touch their predecessor; the case above notices."""
    monkeypatch.setattr(sessions.MergingWindowSet, "_settle", lambda self, at: None)
    firings = [e for segment in replay(UNSETTLED).segments for e in segment]
    assert ("F", "k", A_MS[0], MAX_MS - 10, 6, False) not in firings


@pytest.mark.flink
def test_the_unsettled_case_is_what_real_flink_does():
    require_flink("real Flink {version} window operator", "the unsettled session-merge case")
    (flink,) = run_windows([UNSETTLED], jar=flink_jar_path())
    assert flink.error is None, flink.error
    assert not first_difference(UNSETTLED, flink)
