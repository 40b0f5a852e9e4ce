"""Every scenario of conformance/interval_join_cases.json, through the real trace reader and pipeline."""

from __future__ import annotations

import pytest

from tests.join_cases import join_cases, notation, run_case

CASES = join_cases()


def clock_by_row(groups) -> dict[int, int]:
    clock, seen = 0, {}
    for results in groups:
        for r in results:
            if r.row.proc_ms is not None:
                clock = r.row.proc_ms
            seen[r.row.row] = clock
    return seen


def test_all_22_interval_join_cases_are_present():
    assert len(CASES) == 22


@pytest.mark.parametrize("case", CASES, ids=lambda c: c["name"].split()[0])
def test_interval_join_case_outputs_and_timers_match_step_by_step(case, tmp_path):
    groups = run_case(case, tmp_path)
    clocks = clock_by_row(groups)
    assert len(groups) == len(case["expected"])
    for step, (results, expected) in enumerate(zip(groups, case["expected"])):
        got = notation(results, clocks)
        where = f"{case['name']} step {step} input {case['inputs'][step]}"
        assert got["out"] == expected["out"], where
        assert got["timers_registered"] == expected.get("timers_registered", []), where
        assert got["timers_fired"] == expected.get("timers_fired", []), where
        assert got["timers_fired_processing"] == expected.get("timers_fired_processing", []), where
