"""Every scenario of tests/data/conformance/interval_join_cases.json, through the real trace reader
and pipeline."""

from __future__ import annotations

import json

import pytest

from tests.conftest import CONFORMANCE, cases_digest
from tests.support.join_cases import join_cases, notation, run_case

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


def test_the_join_cases_are_the_ones_recorded_counted_and_digested():
    """Moved into the repo unchanged: the counts and the canonical-JSON digest show a lost, edited or
    added input or output."""
    expected = [e for case in CASES for e in case["expected"]]
    assert sum(len(case["inputs"]) for case in CASES) == len(expected) == 94
    assert sum(len(e["out"]) for e in expected) == 90
    assert sum(len(e.get("timers_registered", [])) for e in expected) == 55
    assert cases_digest(CASES) == "63518f6e2d8ef5e00913e9ad6f3e5f69c983da04456bb85f85fed8e3c075e364"


def test_the_join_cases_file_says_its_own_format_at_the_top():
    text = (CONFORMANCE / "interval_join_cases.json").read_text("utf-8")
    assert text.index('"format"') < text.index('"cases"')
    fmt = " ".join(json.loads(text)["format"])
    for field in ("config", "inputs", "expected", "timers_registered", "cause", "tL - tR lies in [lo, hi]"):
        assert field in fmt, field


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
