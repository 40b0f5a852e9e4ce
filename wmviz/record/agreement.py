"""Replay agreement: does the replayed valve output equal the watermark the job itself reported?

A recorded or imported trace carries, on the last row of every sample of an instance, the
watermark the operator reported (`reported_ms`, its `currentInputWatermark`). Replaying the trace
through the valve gives what the operator should have had from the upstream watermarks and the
inferred statuses; where the two differ, the import is wrong somewhere: a sample caught a
watermark in flight, an IDLE was inferred a little early or late, or the channel mapping does not
match the job. Counting and naming those samples is what makes an import checked rather than
trusted.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from wmviz.core.pipeline import StepResult
from wmviz.core.types import MIN_MS, EmittedWatermark
from wmviz.timefmt import TimeFormat
from wmviz.trace.timefmt import parse_time_ms

CHECK_COLUMN = "reported_ms"


@dataclass(frozen=True, slots=True)
class Check:
    """One sample of one instance: the replay's output next to the job's report."""

    instance: str
    step: int
    replay_ms: int
    reported_ms: int

    @property
    def agrees(self) -> bool:
        """The replay and the job hold the same watermark."""
        return self.replay_ms == self.reported_ms


def reported_of(result: StepResult) -> int | None:
    """The check column of the step's row, if it has one."""
    for name, value in result.row.payload:
        if name == CHECK_COLUMN and value not in (None, ""):
            return parse_time_ms(value, sentinels=True)
    return None


@dataclass
class ReplayCheck:
    """Follows a replay step by step and compares it with the check column where there is one."""

    output: dict[str, int] = field(default_factory=dict)
    checks: list[Check] = field(default_factory=list)

    def observe(self, result: StepResult) -> Check | None:
        """Fold one step in; the check of this step, if its row carries one."""
        for emission in result.out:
            if isinstance(emission, EmittedWatermark):
                self.output[result.instance] = emission.watermark_ms
        reported = reported_of(result)
        if reported is None:
            return None
        check = Check(result.instance, result.step, self.output.get(result.instance, MIN_MS), reported)
        self.checks.append(check)
        return check

    @property
    def agreed(self) -> int:
        """How many checks agree."""
        return sum(c.agrees for c in self.checks)

    @property
    def share(self) -> float:
        """The share of checks that agree (1.0 when there are none)."""
        return self.agreed / len(self.checks) if self.checks else 1.0

    def summary(self, times: TimeFormat, limit: int = 10) -> list[str]:
        """What `explain` prints after the steps: the agreement, then the first disagreements."""
        if not self.checks:
            return []
        lines = [
            f"# replay agrees with the job's reported watermark at {self.agreed} of "
            f"{len(self.checks)} samples ({self.share:.1%})"
        ]
        disagreements = [c for c in self.checks if not c.agrees]
        for check in disagreements[:limit]:
            lines.append(f"#   instance {check.instance} step {check.step}: {disagreement(check, times)}")
        if len(disagreements) > limit:
            lines.append(f"#   … and {len(disagreements) - limit} more")
        return lines


def verdict(check: Check, times: TimeFormat) -> str:
    """The clause `explain` appends to a step that carries a check."""
    if check.agrees:
        return f"the job reported {times(check.reported_ms)} too (agrees)"
    return f"DISAGREES with the job: {disagreement(check, times)}"


def disagreement(check: Check, times: TimeFormat) -> str:
    """Why a replay and a report may differ, by which one is ahead."""
    replay, reported = times(check.replay_ms), times(check.reported_ms)
    if check.replay_ms > check.reported_ms:
        return (
            f"replay {replay}, job {reported}: the replay is ahead (the operator had not yet "
            "received the upstream watermark when it was sampled, or IDLE was inferred early)"
        )
    return (
        f"replay {replay}, job {reported}: the replay is behind (a sample missed an upstream "
        "watermark, IDLE was inferred late, or the channel mapping does not match the job)"
    )
