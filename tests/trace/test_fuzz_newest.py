"""A seeded slice of issue 33's fuzz targets (`bench/fuzz.py --targets newest`): every target
reaches accepted inputs and clean errors, and none finds a traceback, hang, over-memory, crash,
unreadable output or markup. A planted bug shows the Late rows box's markup check bites."""

from __future__ import annotations

import sys
from collections import Counter

import pytest

from tests.support import paths

BENCH = paths.REPO / "bench"
sys.path.insert(0, str(BENCH))

import fuzz  # noqa: E402
import fuzz_sql  # noqa: E402

PER_TARGET = 30  # 180 inputs: about a minute in two workers at load 15-20


@pytest.fixture(scope="module")
def newest_slice(tmp_path_factory):
    out = tmp_path_factory.mktemp("fuzz-newest")
    options = fuzz.PoolOptions(jobs=2, time_limit=6, memory_mb=2048, out=str(out))
    return fuzz.run_fuzz(PER_TARGET * len(fuzz.NEWEST_SURFACES), 11, options, targets="newest")


def test_each_newest_target_reaches_accepted_inputs_and_clean_errors(newest_slice):
    summary = newest_slice
    assert summary.done == PER_TARGET * len(fuzz.NEWEST_SURFACES)
    for prefix in fuzz.NEWEST_SURFACES:
        counts: Counter[str] = Counter()
        for label, found in summary.by_format.items():
            if label.startswith(prefix):
                counts.update(found)
        # A link's bad part is left out with a note (the page opens what it can): no clean errors.
        assert counts[fuzz.ACCEPTED] and (counts[fuzz.CLEAN] or prefix == "graph"), (prefix, dict(counts))


def test_the_newest_slice_finds_nothing_bad(newest_slice):
    bad = {f: {k: v for k, v in c.items() if k not in fuzz.GOOD} for f, c in newest_slice.by_format.items()}
    # A "hang" is 18 s of wall clock too: on a loaded machine a slow clean input can reach it.
    assert not any(v for c in bad.values() for k, v in c.items() if k != fuzz.HANG), bad


def test_the_markup_check_finds_a_tag_the_late_rows_box_would_draw(monkeypatch, tmp_path):
    from wmviz.ui import late_view

    real = late_view.ledger_html
    monkeypatch.setattr(late_view, "ledger_html", lambda *a: real(*a) + '<img src="https://x.example/p.png">')
    trace = paths.REPO / "sample_data" / "late-data-allowed-lateness.jsonl"
    said = fuzz_sql.late_box(trace, None, {"step": "0"})
    assert said is not None and "<img>" in said
    monkeypatch.undo()
    assert fuzz_sql.late_box(trace, None, {"step": "0"}) is None
