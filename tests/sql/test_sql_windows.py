"""SQL's slicing window aggregate in the core (wmviz/core/sql_windows.py), without Flink.

Two of Flink's own unit tests of the operator, `SlicingWindowAggOperatorTest`
(flink-table-runtime, `testEventTimeHoppingWindows` and `testEventTimeCumulativeWindows`, in their
UTC variant and without the snapshot/restore in the middle, which wmviz does not model), replayed
as far as they go with event time: the same rows, watermarks and expected rows (sum, count,
window) and the one late drop each counts. Then the rules one at a time: two-phase counting a
merged partial once, a late row's narration, the daylight-saving rule of a TIMESTAMP_LTZ window,
a hand-written config, and snapshots.
"""

from __future__ import annotations

import pickle

import pytest

from tests.support.support_sql_window_ops import Step, pipeline_of, run_steps
from wmviz.core.sql_aggregates import parse_call
from wmviz.core.sql_rows import Fate
from wmviz.core.sql_window_time import ShiftZone
from wmviz.core.sql_windows_config import SqlWindowConfig
from wmviz.trace.config import parse_config
from wmviz.trace.config_write import config_to_dict

CALLS = (parse_call("SUM(v) AS s"), parse_call("COUNT(*) AS n"))


def _rows(*items: tuple[str, int, int]) -> list[tuple[dict, int]]:
    return [({"k": key, "v": value}, ts) for key, value, ts in items]


def _seen(config: SqlWindowConfig, steps: list[Step]) -> list[tuple[list[tuple], int]]:
    """Per step: the rows (key, sum, count, start, end) sorted, as Flink's test compares them
    (`assertOutputEqualsSorted`), and the late drops."""
    out = []
    for outcome in run_steps(config, steps):
        rows = sorted(
            (
                o.value("k"),
                o.value("s"),
                o.value("n"),
                o.value("window_start")[-12:],
                o.value("window_end")[-12:],
            )
            for o in outcome.outputs
        )
        out.append((rows, outcome.late_dropped))
    return out


def _t(ms: int) -> str:
    """A time of day as the window columns end (`HH:MM:SS.fff`), from ms after midnight."""
    seconds, millis = divmod(ms % 86_400_000, 1000)
    return f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}.{millis:03d}"


def test_flinks_event_time_hopping_windows():
    """testEventTimeHoppingWindows: HOP 3 s by 1 s; a row late for [1K, 4K) still counts in
    [2K, 5K) and [3K, 6K); a row late for all its windows is dropped (one drop in all)."""
    config = SqlWindowConfig(
        window="hop", size_ms=3000, slide_ms=1000, keys=("k",), aggregates=CALLS, two_phase=False
    )
    early = _rows(("key2", 1, 3999), ("key2", 1, 3000), ("key1", 1, 20), ("key1", 1, 0), ("key1", 1, 999),
                  ("key2", 1, 1998), ("key2", 1, 1999), ("key2", 1, 1000))  # fmt: skip
    steps = [Step(early, 999), Step((), 1999), Step((), 2999), Step((), 3999),
             Step(_rows(("key2", 1, 3500)), 4999), Step(_rows(("key1", 1, 2999)), 5999),
             Step((), 6999), Step((), 7999)]  # fmt: skip
    seen = _seen(config, steps)
    assert seen[0] == ([("key1", 3, 3, _t(-2000), _t(1000))], 0)
    assert seen[1] == ([("key1", 3, 3, _t(-1000), _t(2000)), ("key2", 3, 3, _t(-1000), _t(2000))], 0)
    assert seen[2] == ([("key1", 3, 3, _t(0), _t(3000)), ("key2", 3, 3, _t(0), _t(3000))], 0)
    assert seen[3] == ([("key2", 5, 5, _t(1000), _t(4000))], 0)
    assert seen[4] == ([("key2", 3, 3, _t(2000), _t(5000))], 0)
    assert seen[5] == ([("key2", 3, 3, _t(3000), _t(6000))], 1)
    assert seen[6:] == [([], 0), ([], 0)]


def test_flinks_event_time_cumulative_windows():
    """testEventTimeCumulativeWindows: CUMULATE up to 3 s by 1 s; a late row for [0, 2K) still
    counts in [0, 3K) without firing [0, 2K) again; a late row of [3K, 4K) goes to [3K, 5K)."""
    config = SqlWindowConfig(
        window="cumulate", size_ms=3000, step_ms=1000, keys=("k",), aggregates=CALLS, two_phase=False
    )
    early = _rows(("key2", 1, 2999), ("key2", 1, 3000), ("key1", 1, 20), ("key1", 1, 0), ("key1", 1, 999),
                  ("key2", 1, 1998), ("key2", 1, 1999), ("key2", 1, 1000))  # fmt: skip
    steps = [Step(early, 999), Step((), 1999), Step(_rows(("key2", 1, 1000)), 1999), Step((), 2999),
             Step((), 3999), Step(_rows(("key1", 2, 3500)), 4999),
             Step(_rows(("key1", 1, 2999)), None)]  # fmt: skip
    seen = _seen(config, steps)
    assert seen[0] == ([("key1", 3, 3, _t(0), _t(1000))], 0)
    assert seen[1] == ([("key1", 3, 3, _t(0), _t(2000)), ("key2", 3, 3, _t(0), _t(2000))], 0)
    assert seen[2] == ([], 0)
    assert seen[3] == ([("key1", 3, 3, _t(0), _t(3000)), ("key2", 5, 5, _t(0), _t(3000))], 0)
    assert seen[4] == ([("key2", 1, 1, _t(3000), _t(4000))], 0)
    assert seen[5] == ([("key1", 2, 1, _t(3000), _t(5000)), ("key2", 1, 1, _t(3000), _t(5000))], 0)
    assert seen[6] == ([], 1)


def test_two_phase_counts_a_merged_partial_once_at_the_flush():
    """SQL-W5: three late rows of one key and slice reach the global stage as one partial, at the
    watermark that fires a buffered slice: one drop, counted then, not at arrival."""
    config = SqlWindowConfig(window="tumble", size_ms=10, keys=("k",), aggregates=CALLS, two_phase=True)
    late = _rows(("a", 1, 1), ("a", 1, 2), ("a", 1, 3))
    outcomes = run_steps(
        config, [Step(_rows(("a", 1, 5)), 10), Step(late, 11), Step(_rows(("a", 1, 15)), 19)]
    )
    assert [o.late_dropped for o in outcomes] == [0, 0, 1]
    fates = [f for f in outcomes[2].fates if f.fate is Fate.DROPPED]
    assert len(fates) == 3 and [f.metric for f in fates] == ["numLateRecordsDropped", None, None]
    alone = SqlWindowConfig(window="tumble", size_ms=10, keys=("k",), aggregates=CALLS, two_phase=False)
    one_phase = run_steps(alone, [Step(_rows(("a", 1, 5)), 10), Step(late, 11)])
    assert [o.late_dropped for o in one_phase] == [0, 3]


def test_a_late_row_added_to_an_open_window_says_so():
    config = SqlWindowConfig(window="cumulate", size_ms=30, step_ms=10, aggregates=CALLS, two_phase=False)
    outcomes = run_steps(config, [Step(_rows(("a", 1, 12)), 10), Step(_rows(("a", 1, 5)), None)])
    (fate,) = outcomes[1].fates
    assert fate.fate is Fate.ADDED_LATE and fate.rule == "SQL-W4"
    assert fate.reason == (
        "late for slice [0, 10) but window [0, 20) is still open: added, no retraction of the fired [0, 10)"
    )


BERLIN_BACK = 1_792_890_000_000
"""2026-10-25 01:00 UTC: Berlin's clocks go back from 03:00 CEST to 02:00 CET."""


def test_an_ltz_window_ending_in_the_repeated_hour_waits_for_the_later_instant():
    """SQL-W2 with daylight saving: local 02:59:59.999 comes twice on 2026-10-25; the window
    [02:00, 03:00) fires at the later instant, so both local hours are in it."""
    zone = ShiftZone("Europe/Berlin")
    local_three = zone.local_ms(BERLIN_BACK)  # 03:00 CEST = 01:00 UTC = local 02:00 (second time)
    assert zone.timer_ms(local_three + 3_600_000 - 1) == BERLIN_BACK + 3_600_000 - 1
    assert not zone.fired(local_three + 3_600_000, BERLIN_BACK - 1)
    assert ShiftZone("UTC").timer_ms(5_999) == 5_999


def test_a_config_written_by_hand_is_read_checked_and_written_back():
    operator = {"type": "sql_window", "window": "hop", "size_ms": 15000, "slide_ms": 5000,
                "keys": ["user_id"], "aggregates": ["COUNT(*) AS n", "SUM(amount) AS total"]}  # fmt: skip
    config = parse_config({"operator": operator}, "by hand")
    assert isinstance(config.operator, SqlWindowConfig) and config.operator.two_phase
    assert config_to_dict(config)["operator"]["aggregates"] == ["COUNT(*) AS n", "SUM(amount) AS total"]
    with pytest.raises(Exception, match="multiple"):
        parse_config({"operator": {**operator, "slide_ms": 4000}}, "by hand")


def test_equal_snapshots_after_the_same_rows_and_a_pickled_copy_goes_on_alike():
    config = SqlWindowConfig(window="hop", size_ms=20, slide_ms=10, keys=("k",), aggregates=CALLS)
    first, second = pipeline_of(config), pipeline_of(config)
    steps = [Step(_rows(("a", 1, 3), ("b", 2, 14)), 9), Step(_rows(("a", 1, 1)), 12)]
    for pipeline in (first, second):
        run_steps_on(pipeline, steps)
    assert first.sql_operator is not None and second.sql_operator is not None
    assert first.sql_operator.snapshot() == second.sql_operator.snapshot()
    assert first.sql_operator.live_rows() == {1, 2, 4}
    copy = pickle.loads(pickle.dumps(first))
    assert copy.sql_operator.snapshot() == first.sql_operator.snapshot()


def run_steps_on(pipeline, steps: list[Step]) -> None:
    from wmviz.core.scenario import Kind, TraceRow

    number = 0
    for step in steps:
        for columns, ts in step.records:
            number += 1
            pipeline.run_row(
                TraceRow(
                    row=number, kind=Kind.RECORD, channel=0, event_ms=ts, payload=tuple(columns.items())
                ),
                explain=False,
            )
        if step.watermark_ms is not None:
            number += 1
            pipeline.run_row(
                TraceRow(row=number, kind=Kind.WATERMARK, channel=0, watermark_ms=step.watermark_ms),
                explain=False,
            )
