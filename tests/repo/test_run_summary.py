"""The run's closing word on the real-Flink tests (issue 30, item 9): a run that skipped or
deselected tests marked `flink` says how many and the one line that runs them; a run where they
all ran says nothing about them. An inner pytest session (`pytester`) with the same hook."""

from __future__ import annotations

import pytest

from tests.conftest import FLINK_COMMAND

INNER = """
import pytest

@pytest.mark.flink
@pytest.mark.parametrize("n", range(3))
def test_against_flink(n):
    if {skip!r}:
        pytest.skip("real Flink 2.3.0 valve unavailable: java and javac (JDK 11+) must be on PATH")

@pytest.mark.flink
def test_also_against_flink():
    pass

def test_model_only():
    pass
"""


@pytest.fixture
def inner(pytester):
    pytester.makeconftest("from tests.conftest import pytest_terminal_summary  # noqa: F401\n")
    pytester.makeini("[pytest]\nmarkers =\n    flink: against the real Flink classes\n")
    return pytester


def test_a_run_that_skipped_real_flink_tests_says_how_many_why_and_how_to_run_them(inner):
    inner.makepyfile(test_inner=INNER.format(skip=True))
    result = inner.runpytest("-q")
    result.assert_outcomes(passed=2, skipped=3)
    result.stdout.fnmatch_lines(
        [
            "*= tests against the real Flink 2.3.0 classes =*",
            "3 real-Flink test(s) (marker flink) skipped: real Flink 2.3.0 valve unavailable: java*",
            f"run them with: {FLINK_COMMAND}",
        ]
    )


def test_a_run_that_deselected_them_says_so_too(inner):
    inner.makepyfile(test_inner=INNER.format(skip=False))
    result = inner.runpytest("-q", "-m", "not flink")
    result.assert_outcomes(passed=1, deselected=4)
    result.stdout.fnmatch_lines(
        ["4 real-Flink test(s) (marker flink) deselected", f"run them with: {FLINK_COMMAND}"]
    )


def test_a_run_where_every_real_flink_test_ran_says_nothing_of_them(inner):
    inner.makepyfile(test_inner=INNER.format(skip=False))
    result = inner.runpytest("-q")
    result.assert_outcomes(passed=5)
    assert "real Flink" not in result.stdout.str() and FLINK_COMMAND not in result.stdout.str()
