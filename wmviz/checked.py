"""What each operator was checked against: one claim per part of wmviz, for the page, `explain`
and the report.

A claim is only as good as the test behind it, so the numbers here are the ones the differential
suites run: `tests/test_flink_windows.py` and `tests/test_flink_idleness.py` take their corpus
sizes and seeds from this module, and `tests/test_checked.py` checks that the valve suite's own
constants add up to `VALVE_RANDOM_TRACES` and that every claim names a suite that exists. Change
a suite's size here, and both the test and the claim change with it. Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

FLINK_RELEASE = "2.3.0"

VALVE_RANDOM_TRACES = 2700
"""tests/test_flink_differential.py: N_TRACES general traces plus N_GAP_TRACES churn traces."""

WINDOW_TRACES = 1500
WINDOW_SEED_BASE = 7_000_000
"""tests/test_flink_windows.py: seeded random window traces, seeds SEED_BASE … SEED_BASE + N − 1."""

IDLENESS_TRACES = 1000
IDLENESS_SEED_BASE = 5_000_000
"""tests/test_flink_idleness.py: seeded traces of records and clock ticks on 1–3 channels."""


@dataclass(frozen=True)
class Claim:
    """What one part of wmviz was checked against, and by which test suite."""

    subject: str
    verified: bool
    """True: run side by side with the real Flink release (`FLINK_RELEASE`) and found equal."""
    statement: str
    suite: str | None = None
    """The test file that makes the claim true (None for what is only modelled)."""

    def line(self) -> str:
        """`valve: equal to Flink 2.3.0's StatusWatermarkValve on … (tests/…)`."""
        where = f" ({self.suite})" if self.suite else ""
        return f"{self.subject}: {self.statement}{where}"


def claims() -> tuple[Claim, ...]:
    """Every claim, in the order a pipeline meets the parts."""
    release = f"Flink {FLINK_RELEASE}"
    return (
        Claim(
            "generation and idleness",
            True,
            f"equal to {release}'s BoundedOutOfOrdernessWatermarks inside WatermarksWithIdleness "
            f"(manual clock) writing to the FLIP-27 source output, on {IDLENESS_TRACES:,} random traces "
            "of records and clock ticks: same watermarks, same IDLE, same ACTIVE (resume flip27-released)",
            "tests/test_flink_idleness.py",
        ),
        Claim(
            "resume eager",
            False,
            "modelled on the SQL watermark assigner and the legacy source contexts (ACTIVE before the "
            "first record after idleness); not run against Flink",
        ),
        Claim(
            "valve (profile flink-1.x-2.x)",
            True,
            f"equal to {release}'s StatusWatermarkValve on {VALVE_RANDOM_TRACES:,} random traces and every "
            "conformance case, state compared after every input",
            "tests/test_flink_differential.py",
        ),
        Claim(
            "valve (profiles flink-master, flip-38477)",
            False,
            "modelled from apache/flink master after FLINK-40475 and from the unmerged FLINK-38477 "
            "PR #27083; not run on those builds",
        ),
        Claim(
            "windows",
            True,
            f"equal to {release}'s WindowOperator (tumbling and sliding event-time windows, allowed "
            f"lateness, late side output, Java long arithmetic) on {WINDOW_TRACES:,} random traces: same "
            "firings (key, window, contents or count, late), late drops and their order per input, "
            "including the order of equal-timestamp timers of the heap timer service",
            "tests/test_flink_windows.py",
        ),
        Claim(
            "timer order",
            True,
            f"{release}'s default heap timer service (one binary heap per time domain); the RocksDB "
            "timer service orders ties differently and is not modelled",
            "tests/test_flink_windows.py",
        ),
        Claim(
            "interval join",
            False,
            "modelled from flink-table-runtime's TimeIntervalJoin (interval-join.md) and checked "
            "against the recorded conformance cases; not yet run against the released operator",
            "tests/test_interval_join_cases.py",
        ),
        Claim(
            "EARLY_FIRE",
            False,
            "modelled from FLIP-497's unmerged PR; no Flink release has it",
        ),
        Claim(
            "two-input all-idle flush",
            False,
            "FLINK-38454 for the two-input combination, unverified and off by default",
        ),
    )


def claim_lines() -> list[str]:
    """One line per claim, verified ones marked `[checked]`, the rest `[modelled]`."""
    return [f"[{'checked' if c.verified else 'modelled'}] {c.line()}" for c in claims()]
